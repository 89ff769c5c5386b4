#!/usr/bin/env bash
# Fault-injection matrix for `zaya supervise`: every fault below is injected into a tiny training
# run; the supervisor must finish the run without a human. Crash, hang, kill during save, corrupt
# checkpoint and preemption must end bit-identical to an uninterrupted run (model and optimizer
# state files of the final checkpoint), with detection latency <= timeout + 5 s. NaN and loss spike
# end with the skipped batch recorded; a straggler is reported; a crash on every attempt ends with a
# diagnosis. Prints the matrix (fault, detection latency, recovery time, steps lost, goodput).
#   ft_matrix.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_ft_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
unset ZAYA_HEARTBEAT_DIR ZAYA_ATTEMPT
mpi=(mpirun -np 2 --allow-run-as-root --oversubscribe -x OMP_WAIT_POLICY)
STEPS=30
TIMEOUT=3 # the hang floor: tiny steps take milliseconds, so every section timeout is the floor
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q
   --max-steps $STEPS --save-every 4)
SUP=(--backoff 0.2 --backoff-max 1 --hang-floor $TIMEOUT --hang-cap 60 --grace 2)
final=$(printf "step-%08d" $STEPS)
same_files() { cmp -s "$1/model-r00000.safetensors" "$2/model-r00000.safetensors" && for f in "$1"/state-r*.safetensors; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done; }
# incident field: incident RUN KIND FIELD -> the value of the first incident of KIND
incident() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j["kind"] == sys.argv[2]: print(j[sys.argv[3]]); break' "$dir/$1/sup/incidents.jsonl" "$2" "$3" 2>/dev/null; }
table="$dir/table.txt"
row() { # row NAME RUN KIND
    python3 - "$dir/$2/sup" "$1" "$3" >> "$table" <<'PY'
import json, sys
d, name, kind = sys.argv[1:]
inc = [json.loads(l) for l in open(d + "/incidents.jsonl")]
s = json.load(open(d + "/summary.json"))
i = next((x for x in inc if x["kind"] == kind), None)
f = lambda v, fmt: "-" if v is None else fmt % v
print("%-22s %-18s %10s %10s %10s %8d %8.1f%%" % (name, kind, f(i and i["detection_latency_s"], "%.2f"),
      f(i and i["recovery_s"], "%.2f"), f(i and i["steps_lost"], "%d"), s["attempts"], 100 * s["goodput"]))
PY
}
lat_ok() { python3 -c 'import sys; v=float(sys.argv[1]); sys.exit(0 if 0 <= v <= float(sys.argv[2]) + 5 else 1)' "${1:-nan}" $TIMEOUT 2>/dev/null; }
# run NAME NP "ENV=..." -> supervised run into $dir/NAME (out: sup/, train/)
run() {
    local name=$1 np=$2; shift 2
    local launch=("$zaya"); [ "$np" = 2 ] && launch=("${mpi[@]}" "$zaya")
    env "$@" "$zaya" supervise -o "$dir/$name/sup" "${SUP[@]}" -- "${launch[@]}" train "${C[@]}" -o "$dir/$name/train" \
        > "$dir/$name.log" 2>&1
}
recovered() { # recovered NAME REF KIND: completed, identical, latency bound, recovery recorded
    local rc=$1 name=$2 ref=$3 kind=$4
    check "$name: supervised run completed all $STEPS steps (exit $rc)" '[ $rc = 0 ] && [ -f "$dir/$name/train/ckpt/$final/manifest.json" ]'
    check "$name: final weights and optimizer state bit-identical to the uninterrupted run" \
        'same_files "$dir/$ref/ckpt/$final" "$dir/$name/train/ckpt/$final"'
    local lat; lat=$(incident "$name" "$kind" detection_latency_s)
    check "$name: $kind detected in ${lat:-?} s (<= timeout $TIMEOUT s + 5 s)" 'lat_ok "$lat"'
    check "$name: recovery time and steps lost recorded" '[ -n "$(incident "$name" "$kind" recovery_s)" ] && [ "$(incident "$name" "$kind" recovery_s)" != None ]'
}

t0=$(date +%s)
# uninterrupted references at world 1 and 2
"$zaya" train "${C[@]}" -o "$dir/ref1" > /dev/null 2>&1
"${mpi[@]}" "$zaya" train "${C[@]}" -o "$dir/ref2" > /dev/null 2>&1
check "references trained" '[ -f "$dir/ref1/ckpt/$final/manifest.json" ] && [ -f "$dir/ref2/ckpt/$final/manifest.json" ]'

run crash1 1 ZAYA_FAULT_CRASH=0:10; recovered $? crash1 ref1 crash; row "crash (1 rank)" crash1 crash
run crash2 2 ZAYA_FAULT_CRASH=1:10; recovered $? crash2 ref2 crash; row "crash (2 ranks)" crash2 crash
run hang1 1 ZAYA_FAULT_HANG=0:13:backward; recovered $? hang1 ref1 hang; row "hang (1 rank)" hang1 hang
run hang2 2 ZAYA_FAULT_HANG=1:13:forward; recovered $? hang2 ref2 hang; row "hang (2 ranks)" hang2 hang
check "hang2: the hung rank is named" '[ "$(incident hang2 hang rank)" = 1 ]'
run killsave 1 ZAYA_FAULT_KILL_SAVE=0:12; recovered $? killsave ref1 crash; row "kill during save" killsave crash
grep -h "injected SIGKILL" "$dir/killsave/sup/attempt-001.log"
check "killsave: the job was SIGKILLed at the save of step 12" 'grep -q "signal 9" "$dir/killsave/sup/incidents.jsonl" && grep -q "injected SIGKILL .* checkpoint .*step-00000012" "$dir/killsave/sup/attempt-001.log"'
run corrupt 1 ZAYA_FAULT_CORRUPT_CKPT=12 ZAYA_FAULT_CRASH=0:14; recovered $? corrupt ref1 crash; row "corrupt checkpoint" corrupt corrupt_checkpoint
check "corrupt: the fallback to step 8 was recorded" '[ "$(incident corrupt corrupt_checkpoint step)" = 12 ] && grep -q "fell back to step-00000008" "$dir/corrupt/sup/incidents.jsonl"'

# preemption: SIGTERM to the supervisor mid-run -> checkpoint + exit 75; the same command resumes
preempt() { # preempt NAME NP REF
    local name=$1 np=$2 ref=$3 launch=("$zaya"); [ "$np" = 2 ] && launch=("${mpi[@]}" "$zaya")
    local pre=("$zaya" supervise -o "$dir/$name/sup" "${SUP[@]}" -- "${launch[@]}" train "${C[@]}" -o "$dir/$name/train")
    # every rank is held as it enters step 10 (the trainer's pause handshake) until the stop request
    # has been forwarded: the run cannot end before it, however loaded the machine
    mkdir -p "$dir/$name"
    ZAYA_PAUSE_AT=10 ZAYA_PAUSE_FILE="$dir/$name/pause" "${pre[@]}" > "$dir/$name.log" 2>&1 &
    local spid=$! i r rc saved ok
    for i in $(seq 1 6000); do ok=1
        for r in $(seq 0 $((np - 1))); do [ -f "$dir/$name/pause.r$(printf %05d $r)" ] || ok=0; done
        [ $ok = 1 ] && break; sleep 0.01
    done
    kill -TERM $spid
    for i in $(seq 1 3000); do grep -qs "asked the job to checkpoint" "$dir/$name.log" && break; sleep 0.01; done
    rm -f "$dir/$name"/pause.r*
    wait $spid; rc=$?
    check "$name: supervisor exits 75 after the job saved" '[ $rc = 75 ] && grep -q "preempted" "$dir/$name.log"'
    saved=$(cat "$dir/$name/train/ckpt/latest" 2>/dev/null)
    check "$name: a checkpoint mid-run ($saved) was saved, none lost" '[ -n "$saved" ] && [ "$saved" != "$final" ] && [ -f "$dir/$name/train/ckpt/$saved/manifest.json" ]'
    check "$name: no process of the job is left" '! pgrep -f "$dir/$name/train" > /dev/null'
    "${pre[@]}" > "$dir/$name-2.log" 2>&1; rc=$?
    check "$name: running the same command again resumes and completes" '[ $rc = 0 ] && grep -q "resumed from" "$dir/$name/sup/attempt-001.log"'
    check "$name: bit-identical to the uninterrupted run" 'same_files "$dir/$ref/ckpt/$final" "$dir/$name/train/ckpt/$final"'
    printf "%-22s %-18s %10s %10s %10s %8s %9s\n" "preemption ($np rank$([ $np = 2 ] && echo s))" "-" "-" "-" 0 \
        "2 runs" "saved ${saved#step-}" >> "$table"
}
preempt preempt1 1 ref1
preempt preempt2 2 ref2

# numeric faults: the trainer skips the update, the supervisor records it, the run completes
run nan 1 ZAYA_FAULT_NAN=10; rc=$?
check "nan: run completed with the skipped batch of step 10 recorded" '[ $rc = 0 ] && [ "$(incident nan nonfinite step)" = 10 ] && [ -f "$dir/nan/train/ckpt/$final/manifest.json" ]'
row "NaN gradients" nan nonfinite
run spike 1 ZAYA_FAULT_SPIKE=25; rc=$?
check "spike: run completed with the skipped batch of step 25 recorded" '[ $rc = 0 ] && [ "$(incident spike loss_spike step)" = 25 ]'
row "loss spike" spike loss_spike
# rollback policy: back to the checkpoint before the fault, skip that step: the same weights as the
# in-place skip above (the skipped step leaves the optimizer, balancer and spike guards untouched)
SUP+=(--numeric-policy rollback)
run nanrb 1 ZAYA_FAULT_NAN=10; rc=$?
check "nan rollback: run completed, rolled back before step 10, same weights as the in-place skip" \
    '[ $rc = 0 ] && grep -q "rolled back past a numeric fault" "$dir/nanrb/sup/attempt-002.log" && same_files "$dir/nan/train/ckpt/$final" "$dir/nanrb/train/ckpt/$final"'
row "NaN, rollback" nanrb nonfinite
SUP+=(--lr-lower 0.5 --lr-lower-steps 4)
run spikerb 2 ZAYA_FAULT_SPIKE=25; rc=$?
check "spike rollback (2 ranks, LR x0.5 for 4 steps): run completed with the skip recorded" \
    '[ $rc = 0 ] && [ "$(incident spikerb loss_spike step)" = 25 ] && grep -q "rolled back past" "$dir/spikerb/sup/attempt-002.log"'
row "spike, rollback+LR" spikerb loss_spike
SUP=(--backoff 0.2 --backoff-max 1 --hang-floor $TIMEOUT --hang-cap 60 --grace 2)

run slow 2 ZAYA_FAULT_SLOW=1:0.08; rc=$?
check "straggler: rank 1 reported, not killed; run completed" '[ $rc = 0 ] && [ "$(incident slow straggler rank)" = 1 ] && ! grep -q "\"crash\"\|\"hang\"" "$dir/slow/sup/incidents.jsonl"'
row "straggler (2 ranks)" slow straggler

# a crash on every attempt: stops with a diagnosis after 3 failures at the same step
s=$(date +%s)
run repeat 1 ZAYA_FAULT_CRASH=0:10 ZAYA_FAULT_ATTEMPTS=0; rc=$?
check "repeat: deterministic failure ends with a diagnosis in $(( $(date +%s) - s )) s" \
    '[ $rc = 1 ] && grep -q "deterministic failure: 3 crash incidents in a row at step 10" "$dir/repeat.log"'
row "crash every attempt" repeat crash

echo
printf "%-22s %-18s %10s %10s %10s %8s %9s\n" fault incident "detect s" "recover s" "steps lost" attempts goodput
cat "$table"
echo "matrix time $(( $(date +%s) - t0 )) s (timeout $TIMEOUT s, goodput of these tiny runs is dominated by process start-up)"
echo "ft_matrix: $fail failed"
[ $fail = 0 ]
