#!/usr/bin/env bash
# Process hygiene and adaptive hang detection of `zaya supervise`, with faults from outside the
# trainer (kill -9 of the supervisor or of mpirun, a second supervisor or trainer on the same
# directory) and two timing cases (a phase with much longer steps; a hang during evaluation):
#   - a second supervisor on the same -o, and a second trainer on the same -o, are refused at once
#     with an error naming the holder's pid; a second supervisor whose job's output directory is
#     held gives up at once with that diagnosis, and the first run completes undisturbed;
#   - kill -9 of the supervisor: its trainer (1 rank) or all ranks under mpirun die within 2 s;
#   - kill -9 of mpirun: no rank of that attempt is alive when the next attempt starts, and the run
#     completes bit-identical to an uninterrupted one;
#   - steps 20x longer from the phase change at step 56 (over a 0.25 s hang floor), and a restart in
#     that phase: no false hang; a hang inside an evaluation is detected within the step-calibrated
#     timeout (hang floor + 5 s), not the eval cap.
#   ft_hygiene.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_ft_hygiene.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
fail=0
t0=$(date +%s)
check() { if eval "$2"; then echo "ok [$(( $(date +%s) - t0 )) s]: $1"; else echo "FAIL [$(( $(date +%s) - t0 )) s]: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
. "$(dirname "$0")/ft_lib.sh"
mpi=(mpirun -np 2 --allow-run-as-root --oversubscribe -x OMP_WAIT_POLICY)
count() { grep -c "\"kind\":\"$2\"" "$dir/$1/sup/incidents.jsonl" 2>/dev/null; }
# hb_pids NAME ATTEMPT: the rank pids of an attempt's heartbeats
hb_pids() { cat "$dir/$1/sup/heartbeat/attempt-$(printf %03d $2)"/rank-*.json 2>/dev/null | sed -n 's/.*"pid":\([0-9]*\).*/\1/p'; }
# wait_step NAME STEP: until rank 0 of attempt 1 reported STEP steps done (at most 20 s)
wait_step() { local i; for i in $(seq 1 400); do
    python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["steps_done"] >= int(sys.argv[2]) else 1)' \
        "$dir/$1/sup/heartbeat/attempt-001/rank-00000.json" "$2" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
# held NAME STEP [NP]: the environment that holds every rank of NAME's first attempt as it enters step
# STEP (the trainer's pause handshake); wait_held NAME [NP] until all are held; let_go NAME releases them
held() { echo ZAYA_PAUSE_AT=$2 ZAYA_PAUSE_FILE="$dir/$1/pause"; }
wait_held() { local i r ok; for i in $(seq 1 6000); do ok=1
        for r in $(seq 0 $(( ${2:-1} - 1 ))); do [ -f "$dir/$1/pause.r$(printf %05d $r)" ] || ok=0; done
        [ $ok = 1 ] && return 0; sleep 0.01; done; return 1; }
let_go() { rm -f "$dir/$1"/pause.r*; }
alive() { local p; for p in "$@"; do kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != Z ] && return 0; done; return 1; }
gone_within() { # gone_within SECONDS PID...: 0 when none of the pids is alive within the time
    local t=$1 i; shift; for i in $(seq 1 $((t * 20))); do alive "$@" || return 0; sleep 0.05; done; return 1; }

"${mpi[@]}" "$zaya" train "${C[@]}" --max-steps $STEPS -o "$dir/ref2" > /dev/null 2>&1
check "reference (2 ranks) trained" '[ -f "$dir/ref2/ckpt/$final/manifest.json" ]'

# --- locks: one supervisor per -o, one trainer per -o
mkdir -p "$dir/lock"
env $(held lock 2) "$zaya" supervise -o "$dir/lock/sup" "${SUP[@]}" -- "$zaya" train "${C[@]}" --max-steps $STEPS -o "$dir/lock/train" \
    > "$dir/lock.log" 2>&1 &
sp=$!; pids+=($sp)
wait_held lock
tp=$(hb_pids lock 1)
out=$("$zaya" supervise -o "$dir/lock/sup" "${SUP[@]}" -- "$zaya" train "${C[@]}" -o "$dir/other" 2>&1); rc=$?
check "a second supervisor on the same -o is refused, naming the holder pid $sp (exit $rc)" \
    '[ $rc = 1 ] && grep -q "in use by pid $sp (zaya-supervise" <<<"$out" && [ ! -d "$dir/other" ]'
out=$("$zaya" train "${C[@]}" --max-steps $STEPS -o "$dir/lock/train" 2>&1); rc=$?
check "a second trainer on the same -o is refused, naming the holder pid $tp (exit $rc)" \
    '[ $rc = 1 ] && grep -q "in use by pid $tp (zaya-train" <<<"$out"'
s=$(date +%s)
out=$("$zaya" supervise -o "$dir/lock/sup2" "${SUP[@]}" -- "$zaya" train "${C[@]}" --max-steps $STEPS -o "$dir/lock/train" 2>&1); rc=$?
check "a supervisor whose job's directory is held gives up at once ($(( $(date +%s) - s )) s, exit $rc)" \
    '[ $rc = 1 ] && grep -q "held by another run: .*in use by pid $tp" <<<"$out" && [ "$(grep -c "attempt [0-9]*: launched" <<<"$out")" = 1 ]'
let_go lock
wait $sp; rc=$?
check "the first run completed undisturbed (exit $rc), no incident" '[ $rc = 0 ] && [ ! -s "$dir/lock/sup/incidents.jsonl" ]'

# --- kill -9 of the supervisor: the job dies with it
for np in 1 2; do
    name=orphan$np; launch=("$zaya"); [ $np = 2 ] && launch=("${mpi[@]}" "$zaya")
    mkdir -p "$dir/$name"
    env $(held $name 2) "$zaya" supervise -o "$dir/$name/sup" "${SUP[@]}" -- "${launch[@]}" train "${C[@]}" --max-steps $STEPS \
        -o "$dir/$name/train" > "$dir/$name.log" 2>&1 &
    sp=$!; pids+=($sp)
    wait_held $name $np
    ranks=$(hb_pids $name 1)
    kill -9 $sp
    check "kill -9 of the supervisor: its $np rank(s) ($(echo $ranks)) die within 2 s" '[ -n "$ranks" ] && gone_within 2 $ranks'
done

# --- kill -9 of mpirun: the attempt's ranks are gone before the restart, the run completes identical
mkdir -p "$dir/mpikill"
env $(held mpikill 10) "$zaya" supervise -o "$dir/mpikill/sup" "${SUP[@]}" -- "${mpi[@]}" "$zaya" train "${C[@]}" --max-steps $STEPS \
    -o "$dir/mpikill/train" > "$dir/mpikill.log" 2>&1 &
sp=$!; pids+=($sp)
wait_held mpikill 2
ranks=$(hb_pids mpikill 1)
kill -9 "$(pgrep -P $sp -f mpirun | head -1)"
let_go mpikill
left=x
for i in $(seq 1 400); do [ -d "$dir/mpikill/sup/heartbeat/attempt-002" ] && { alive $ranks && left=yes || left=no; break; }; sleep 0.01; done
wait $sp; rc=$?
check "kill -9 of mpirun: no rank of attempt 1 ($(echo $ranks)) alive when attempt 2 started (alive: $left)" '[ $left = no ]'
check "kill -9 of mpirun: completed (exit $rc), bit-identical to the uninterrupted run" \
    '[ $rc = 0 ] && same_files "$dir/ref2/ckpt/$final" "$dir/mpikill/train/ckpt/$final"'

# --- a phase (phase b starts at step 56) with 20x longer steps, and a restart inside it, is not a hang
P=(--backoff 0.2 --hang-floor 0.25 --hang-cap 60 --grace 2)
mkdir -p "$dir/phase"
env $(held phase 62) ZAYA_FAULT_SLOW=0:0.5:56 ZAYA_FAULT_ATTEMPTS=0 "$zaya" supervise -o "$dir/phase/sup" "${P[@]}" -- "$zaya" train "${C[@]}" --max-steps 68 \
    -o "$dir/phase/train" > "$dir/phase.log" 2>&1 &
sp=$!; pids+=($sp)
wait_held phase
kill -9 $(hb_pids phase 1)
let_go phase
wait $sp; rc=$?
check "slow phase from step 56 + restart inside it: completed (exit $rc) with one crash and no hang incident" \
    '[ $rc = 0 ] && [ "$(count phase crash)" = 1 ] && [ "$(count phase hang)" = 0 ]'

# --- a hang inside an evaluation is detected within the step-calibrated timeout
s=$(date +%s)
ZAYA_FAULT_HANG=0:20:eval "$zaya" supervise -o "$dir/evalhang/sup" "${SUP[@]}" -- "$zaya" train "${C[@]}" --max-steps $STEPS \
    --eval-every 10 --eval-batches 2 -o "$dir/evalhang/train" > "$dir/evalhang.log" 2>&1; rc=$?
lat=$(incident evalhang hang detection_latency_s)
check "hang in eval: completed (exit $rc) in $(( $(date +%s) - s )) s, detected in ${lat:-?} s (<= floor 3 s + 5 s, eval cap 60 s)" \
    '[ $rc = 0 ] && python3 -c "import sys; sys.exit(0 if 0 <= float(sys.argv[1]) <= 8 else 1)" "${lat:-nan}" && grep -q "section .eval." "$dir/evalhang/sup/incidents.jsonl"'

echo "ft_hygiene: $fail failed"
[ $fail = 0 ]
