#!/usr/bin/env bash
# zaya supervise --hosts on the simulated cluster (docs/cluster.md, docs/fault-tolerance.md "Hosts"):
# bad host lists refused before anything starts (checkpoints untouched); a host lost mid-run (its
# processes killed and its link cut) is detected, named, and the job resumes on the healthy host at
# the smaller world; when the host is back it checkpoints and grows back; the final checkpoint is
# bit-identical to an uninterrupted run with the same world-size schedule. Synchronised on heartbeats,
# never on sleeps. Exit 77 where namespaces cannot be created.
set -u
zaya="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir=$(mktemp -d /tmp/zaya_supervise_hosts.XXXXXX)
. "$(dirname "$0")/cluster_lib.sh"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
cluster_up 2 --slots 1
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" > /dev/null 2>&1 || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
steps=24
common=(--config "$dir/config.json" --run "$dir/run.json" --dtype f32 --threads 1 --max-steps $steps --save-every 4
        --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q)
sup=(--hang-floor 3 --grace 1 --backoff 0.2 --host-check-timeout 4 --host-probe 0.5 -q)
# Rank 0 takes at least 0.6 s a step (a sleep in its data section: the numbers do not change), so the
# smaller world still has steps to run when the host is back.
job=(-- mpirun --allow-run-as-root --bind-to none -x OMP_WAIT_POLICY -x ZAYA_FAULT_SLOW=0:0.6 -x ZAYA_FAULT_ATTEMPTS=0
     "$zaya" train "${common[@]}")
printf '10.77.0.1 slots=1\n10.77.0.2 slots=1\n' > "$dir/hosts"

# --- bad input: each refused before training, naming the problem; the checkpoints stay as they are
cx "$zaya" train "${common[@]}" --max-steps 4 -o "$dir/pre" > "$dir/pre.log" 2>&1 || { tail -3 "$dir/pre.log"; }
sum_before=$(cd "$dir/pre" && find ckpt -type f | sort | xargs sha256sum | sha256sum)
bad() { # bad NAME HOSTFILE-CONTENT PATTERN [extra train args]
    local name=$1 content=$2 pat=$3; shift 3
    printf "$content" > "$dir/$name.hosts"
    cx "$zaya" supervise --hosts "$dir/$name.hosts" "${sup[@]}" -o "$dir/sup-$name" -- mpirun --allow-run-as-root --bind-to none \
        "$zaya" train "${common[@]}" -o "$dir/pre" "$@" > "$dir/$name.log" 2>&1
    local rc=$?
    [ $rc = 1 ] && grep -q "$pat" "$dir/$name.log" && ! ls "$dir/sup-$name"/attempt-*.log > /dev/null 2>&1 || { echo "  exit $rc:"; tail -3 "$dir/$name.log"; return 1; }
}
check "a host name that does not resolve" 'bad unknown "10.77.0.1 slots=1\nno-such-host.invalid slots=1\n" "unknown host .no-such-host.invalid."'
check "a host with no slots" 'bad noslots "10.77.0.1 slots=1\n10.77.0.2 slots=0\n" "host 10.77.0.2 has no slots"'
check "a host listed twice" 'bad dup "10.77.0.1 slots=1\n10.77.0.2\n10.77.0.1 slots=2\n" "listed twice (lines 1 and 3)"'
check "an unreachable host" 'bad unreach "10.77.0.1 slots=1\n10.77.0.9 slots=1\n" "host 10.77.0.9 is unreachable"'
check "a world that cannot hold the CP size" 'bad cp "10.77.0.1 slots=1\n" "cannot hold one CP group of --cp 2" --cp 2'
check "the launcher's own -np refused" 'printf "10.77.0.1\n" > "$dir/one.hosts"; cx "$zaya" supervise --hosts "$dir/one.hosts" -q -o "$dir/sup-np" -- mpirun -np 2 "$zaya" train > "$dir/np.log" 2>&1; [ $? = 1 ] && grep -q "launcher option .-np. is the supervisor" "$dir/np.log"'
check "the checkpoints are untouched by the refusals" '[ "$(cd "$dir/pre" && find ckpt -type f | sort | xargs sha256sum | sha256sum)" = "$sum_before" ]'

# --- a host lost mid-run, then back
hb() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2" 2>/dev/null || echo -1; }
wait_for() { # wait_for FILE KEY MIN: until the heartbeat value reaches MIN (or the supervisor ended)
    local i
    for i in $(seq 1 3000); do
        [ "$(hb "$1" "$2")" -ge "$3" ] 2>/dev/null && return 0
        kill -0 $sup_pid 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
cx "$zaya" supervise --hosts "$dir/hosts" "${sup[@]:0:${#sup[@]}-1}" -o "$dir/sup" "${job[@]}" -o "$dir/run" > "$dir/sup.log" 2>&1 &
sup_pid=$!
wait_for "$dir/sup/heartbeat/attempt-001/rank-00001.json" step 7 || echo "  attempt 1 did not reach step 7"
"$cluster" kill 1 > /dev/null; "$cluster" cut 1 > /dev/null # the host dies: processes gone, no answer
wait_for "$dir/sup/heartbeat/attempt-002/rank-00000.json" steps_done 2 || echo "  attempt 2 made no progress"
"$cluster" heal 1 > /dev/null
wait $sup_pid; rc=$?
cat "$dir/sup/incidents.jsonl" 2>/dev/null | cut -c1-220
check "the supervised run completed" '[ $rc = 0 ] && grep -q "\"completed\":[[:space:]]*true" "$dir/sup/summary.json"'
check "the loss is an incident naming the host" 'grep -q "\"kind\":\"host_lost\".*host 10.77.0.2 lost" "$dir/sup/incidents.jsonl"'
check "the return is an incident too" 'grep -q "\"kind\":\"host_back\".*host 10.77.0.2" "$dir/sup/incidents.jsonl"'
check "attempt 2 ran at world 1, attempt 3 at world 2" 'grep -q "attempt 2: launched .*world 1 on 1 of 2 hosts" "$dir/sup.log" && grep -q "attempt 3: launched .*world 2 on 2 of 2 hosts" "$dir/sup.log"'
resumed() { sed -n "s/.*resumed from .*step-0*\([0-9][0-9]*\).*/\1/p" "$1" | tail -1; }
a=$(resumed "$dir/sup/attempt-002.log"); b=$(resumed "$dir/sup/attempt-003.log")
echo "  schedule: world 2 for steps 0..${a:-?}, world 1 for ${a:-?}..${b:-?}, world 2 for ${b:-?}..$steps"
check "the schedule was read from the attempts" '[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ]'
# the uninterrupted run with the same world-size schedule, on one host
lm=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_WAIT_POLICY)
ref=(--config "$dir/config.json" --run "$dir/run.json" --dtype f32 --threads 1 --save-every 4 --eval-every 0 --eval-batches 1
     --samples 0 --peak-gflops 100 -q -o "$dir/ref")
"${lm[@]}" -np 2 "$zaya" train "${ref[@]}" --max-steps "${a:-0}" > "$dir/ref1.log" 2>&1
"$zaya" train "${ref[@]}" --max-steps "${b:-0}" > "$dir/ref2.log" 2>&1
"${lm[@]}" -np 2 "$zaya" train "${ref[@]}" --max-steps $steps > "$dir/ref3.log" 2>&1
same_final() {
    local s; s=$(printf "step-%08d" $steps); local n=0 f
    for f in "$dir/ref/ckpt/$s"/*.safetensors; do cmp -s "$f" "$dir/run/ckpt/$s/$(basename "$f")" || { echo "  differs: $(basename "$f")"; return 1; }; n=$((n+1)); done
    [ $n -gt 0 ]
}
check "final checkpoint bit-identical to the uninterrupted run with the same world-size schedule" 'same_final'
echo "supervise_hosts: $fail failed"
[ $fail = 0 ]
