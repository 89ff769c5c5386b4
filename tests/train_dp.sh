#!/usr/bin/env bash
# Data-parallel training under mpirun: the same global batches on 1, 2 and 4 ranks give the same losses
# (within f32 reduction-order tolerance), a fixed world size is bit-identical run to run, and ZeRO-1
# and plain all-reduce agree.
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_dp_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
mpi=(mpirun --allow-run-as-root --oversubscribe -x OMP_WAIT_POLICY)
common=(--config "$dir/config.json" --run "$dir/run.json" --max-steps 24 --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q)
"$zaya" train "${common[@]}" -o "$dir/r1" > "$dir/r1.log" 2>&1; rc1=$?
"${mpi[@]}" -np 2 "$zaya" train "${common[@]}" -o "$dir/r2" > "$dir/r2.log" 2>&1; rc2=$?
"${mpi[@]}" -np 2 "$zaya" train "${common[@]}" -o "$dir/r2b" > "$dir/r2b.log" 2>&1; rc2b=$?
"${mpi[@]}" -np 4 "$zaya" train "${common[@]}" --threads 1 -o "$dir/r4" > "$dir/r4.log" 2>&1; rc4=$?
"${mpi[@]}" -np 2 "$zaya" train "${common[@]}" --dp allreduce -o "$dir/a2" > "$dir/a2.log" 2>&1; rca=$?
check "runs on 1, 2, 4 ranks and with all-reduce succeed" '[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ $rc2b = 0 ] && [ $rc4 = 0 ] && [ $rca = 0 ]'
for f in r1 r2 r4 a2; do [ -s "$dir/$f.log" ] && grep -q -i error "$dir/$f.log" && tail -5 "$dir/$f.log"; done
losses() { python3 -c "import json,sys; print(' '.join(repr(json.loads(l)['loss']) for l in open(sys.argv[1]) if '\"loss\"' in l))" "$1"; }
close() { python3 - "$1" "$2" <<'PY'
import json, sys
a = [json.loads(l)["loss"] for l in open(sys.argv[1]) if '"loss"' in l]
b = [json.loads(l)["loss"] for l in open(sys.argv[2]) if '"loss"' in l]
worst = max(abs(x - y) / abs(x) for x, y in zip(a, b)) if a and len(a) == len(b) else 1
print(f"  {sys.argv[1].split('/')[-2]} vs {sys.argv[2].split('/')[-2]}: {len(a)} steps, worst relative loss difference {worst:.2e}")
sys.exit(0 if worst < 1e-3 else 1)
PY
}
check "2 ranks bit-identical run to run" '[ "$(losses $dir/r2/metrics.jsonl)" = "$(losses $dir/r2b/metrics.jsonl)" ]'
check "1 vs 2 ranks agree" 'close $dir/r1/metrics.jsonl $dir/r2/metrics.jsonl'
check "1 vs 4 ranks agree" 'close $dir/r1/metrics.jsonl $dir/r4/metrics.jsonl'
check "ZeRO-1 vs all-reduce agree" 'close $dir/r2/metrics.jsonl $dir/a2/metrics.jsonl'
check "only rank 0 writes results" '[ -s "$dir/r2/metrics.jsonl" ] && [ "$(grep -c "\"step\":0,\"phase\"" $dir/r2/metrics.jsonl)" = 1 ]'
echo "train_dp: $fail failed"
[ $fail = 0 ]
