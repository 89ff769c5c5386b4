#!/usr/bin/env bash
# The trainer on the engine against the CPU trainer, on the tiny corpus (two phases, a batch ramp, a
# RoPE change, balancing in the forward):
#   train_engine.sh ZAYA engine   the deprecated --engine alias against the default step (both the engine
#                                 over the CPU backend since the CPU model's step went: the alias must
#                                 change nothing); no device needed
#   train_engine.sh ZAYA cuda     the engine on the GPU (--device cuda); 77 (skipped) without one
# Checks: 20 steps' losses against the CPU trainer (the CPU backend: identical; the GPU: f32 relative
# 1e-4, bf16 2e-2), the same run twice
# gives the same losses (determinism), a checkpoint written by the engine resumes on the CPU trainer
# and one written by the CPU trainer resumes on the engine (losses of the continued steps as the
# straight CPU run's), and a bad device string is a usage error.
set -u
zaya="$1"
mode="${2:-engine}"
dir=$(mktemp -d /tmp/zaya_train_engine.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
case "$mode" in
  engine) dev=(--engine); xtol=0 ;; # the CPU backend runs the CPU trainer's kernels: the same bits
  cuda) dev=(--device cuda); xtol=1e-4 ;;
  *) echo "usage: train_engine.sh ZAYA engine|cuda"; exit 2 ;;
esac
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 10 --eval-batches 1 --samples 0 --peak-gflops 100 -q
   --threads 2)
if [ "$mode" = cuda ]; then
  msg=$("$zaya" train "${C[@]}" "${dev[@]}" -o "$dir/probe" --max-steps 1 2>&1)
  if grep -q "0 CUDA devices visible\|built without CUDA\|no CUDA-capable device" <<<"$msg"; then echo "no CUDA device: skipped"; exit 77; fi
fi
# compare A B TOL [FIRST LAST]: the steps both metrics files log agree within TOL (relative)
compare() {
  python3 - "$@" <<'PY'
import json, sys
def losses(p):
    return {json.loads(l)["step"]: json.loads(l)["loss"] for l in open(p) if '"loss"' in l and '"step"' in l}
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
lo = int(sys.argv[4]) if len(sys.argv) > 4 else 0
hi = int(sys.argv[5]) if len(sys.argv) > 5 else 10**9
common = sorted(s for s in set(a) & set(b) if lo <= s <= hi)
worst = max((abs(a[s] - b[s]) / abs(a[s]) for s in common), default=1)
print("  %d common steps %s..%s, worst relative loss difference %.2e (bound %.0e)" %
      (len(common), common[0] if common else "-", common[-1] if common else "-", worst, tol))
sys.exit(0 if len(common) >= 5 and worst <= tol else 1)
PY
}
for dt in f32 bf16; do
  tol=0; [ "$mode" = cuda ] && { tol=1e-4; [ $dt = bf16 ] && tol=2e-2; }
  "$zaya" train "${C[@]}" --dtype $dt -o "$dir/cpu-$dt" --max-steps 20 --log-every 1 > "$dir/cpu-$dt.log" 2>&1
  "$zaya" train "${C[@]}" "${dev[@]}" --dtype $dt -o "$dir/eng-$dt" --max-steps 20 --log-every 1 > "$dir/eng-$dt.log" 2>&1
  rc=$?
  check "$dt: the engine trains 20 steps" '[ $rc = 0 ] && grep -q "engine over backend" "$dir/eng-$dt.log"'
  check "$dt: 20 steps' losses match the CPU trainer" 'compare "$dir/cpu-$dt/metrics.jsonl" "$dir/eng-$dt/metrics.jsonl" $tol'
done
"$zaya" train "${C[@]}" "${dev[@]}" --dtype f32 -o "$dir/eng-again" --max-steps 20 --log-every 1 > /dev/null 2>&1
check "the same engine run twice: identical losses" 'compare "$dir/eng-f32/metrics.jsonl" "$dir/eng-again/metrics.jsonl" 0'

# checkpoints cross over: engine 10 steps -> CPU to 20; CPU 10 steps -> engine to 20
"$zaya" train "${C[@]}" "${dev[@]}" --dtype f32 -o "$dir/x1" --max-steps 10 --log-every 1 > /dev/null 2>&1
"$zaya" train "${C[@]}" --dtype f32 -o "$dir/x1" --max-steps 20 --log-every 1 > "$dir/x1.log" 2>&1
check "an engine checkpoint resumes on the CPU trainer" 'compare "$dir/cpu-f32/metrics.jsonl" "$dir/x1/metrics.jsonl" $xtol 10 19'
"$zaya" train "${C[@]}" --dtype f32 -o "$dir/x2" --max-steps 10 --log-every 1 > /dev/null 2>&1
"$zaya" train "${C[@]}" "${dev[@]}" --dtype f32 -o "$dir/x2" --max-steps 20 --log-every 1 > "$dir/x2.log" 2>&1
check "a CPU checkpoint resumes on the engine" 'compare "$dir/cpu-f32/metrics.jsonl" "$dir/x2/metrics.jsonl" $xtol 10 19'

# data parallel, 2 ranks (ZeRO-1 and all-reduce): the engine's reductions against the CPU trainer's
if [ "$mode" = engine ] || [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -ge 2 ]; then
  mpi=(mpirun --allow-run-as-root --oversubscribe -x OMP_WAIT_POLICY -np 2)
  for dp in zero1 allreduce; do
    "${mpi[@]}" "$zaya" train "${C[@]}" --threads 1 --dtype f32 --dp $dp -o "$dir/dp-cpu-$dp" --max-steps 12 --log-every 1 > /dev/null 2>&1
    "${mpi[@]}" "$zaya" train "${C[@]}" "${dev[@]}" --threads 1 --dtype f32 --dp $dp -o "$dir/dp-eng-$dp" --max-steps 12 --log-every 1 > "$dir/dp-$dp.log" 2>&1
    check "2 ranks, $dp: the engine's losses match the CPU trainer's" 'compare "$dir/dp-cpu-$dp/metrics.jsonl" "$dir/dp-eng-$dp/metrics.jsonl" $xtol'
  done
fi

# bad input
out=$("$zaya" train "${C[@]}" --device tpu -o "$dir/bad" --max-steps 1 2>&1); rc=$?
check "a bad --device is a usage error naming it" '[ $rc = 2 ] && grep -q "tpu" <<<"$out"'
out=$("$zaya" train "${C[@]}" --device cuda --engine -o "$dir/bad" --max-steps 1 2>&1); rc=$?
check "--engine with a CUDA device is a usage error" '[ $rc = 2 ] && grep -q "implied" <<<"$out"'
if [ "$mode" = engine ] && ! nvidia-smi -L >/dev/null 2>&1; then
  out=$("$zaya" train "${C[@]}" --device cuda:1 -o "$dir/nodev" --max-steps 1 2>&1); rc=$?
  check "no CUDA device: exit 1 with a message naming the device" '[ $rc = 1 ] && grep -q "cuda:1\|built without CUDA" <<<"$out"'
fi
echo "train_engine ($mode): $fail failed"
[ $fail = 0 ]
