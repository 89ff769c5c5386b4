#!/usr/bin/env bash
# zaya bench kernels / model / all: usage errors (exit 2 naming the flag), runtime errors (exit 1 with
# "zaya bench <cmd>: error:"), and bench model's fallback when the PyTorch reference is missing.
set -u
zaya="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -qF -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | tail -5; fail=$((fail+1))
  else echo "ok: $*"; fi
}
expect 0 "--quick" -- "$zaya" bench kernels --help
expect 2 "--bogus" -- "$zaya" bench kernels --bogus
expect 2 "--reps must be in 1..1000 (got -1)" -- "$zaya" bench kernels --reps -1
expect 2 "unexpected argument 'extra'" -- "$zaya" bench kernels extra
expect 2 "option '--threads': -3 is out of range" -- "$zaya" bench kernels --threads -3
expect 0 "--torch-script" -- "$zaya" bench model --help
expect 2 "--dtype: unknown dtype 'f16' (f32, bf16 or both)" -- "$zaya" bench model --dtype f16
expect 2 "--batch must be in 1..4096 (got 0)" -- "$zaya" bench model --batch 0
expect 2 "--iters must be in 1..1000 (got 0)" -- "$zaya" bench model -n 0
expect 1 "zaya bench model: error: cannot open 'zaya9'" -- "$zaya" bench model --config zaya9
expect 1 "zaya bench model: error: cannot open '$tmp/none.json'" -- "$zaya" bench model --config "$tmp/none.json"
expect 1 "--seq 100000 exceeds max_position_embeddings 2048 of zaya1-tiny" -- "$zaya" bench model --seq 100000
# A missing reference script is a note, not a failure: zaya's figures are still reported and written.
expect 0 "PyTorch reference $tmp/nope.py not found (use --torch-script): reporting zaya only" -- \
  "$zaya" bench model --batch 1 --seq 8 -n 1 --dtype f32 --torch-script "$tmp/nope.py" -o "$tmp/m" --threads 1
grep -q '"impl":	"zaya"' "$tmp/m/model.json" || { echo "FAIL: model.json lacks the zaya row"; fail=$((fail+1)); }
grep -q '"note":' "$tmp/m/model.json" || { echo "FAIL: model.json lacks the note"; fail=$((fail+1)); }
# The peer's report as bench train reads it: a stand-in interpreter prints what zaya_ref.py --bench prints
# (an old PyTorch, one variant with figures, one failed): the fallback label, the failure's reason, the
# ratios per dtype, the JSON fields.
cat > "$tmp/fakepy" <<'SH'
#!/bin/sh
echo '{"forward_s": 0.5, "fwdbwd_s": 1.5, "torch": "1.13.0a0", "mm_gflops_f32": 3.0, "mm_gflops_bf16": 300.0, "variants": {"eager_bf16": {"forward_s": 0.4, "fwdbwd_s": 1.0}, "compile_f32": {"error": "RuntimeError: boom"}, "compile_bf16": {"error": "TimeoutError: not done within 5 s"}}}'
SH
chmod +x "$tmp/fakepy"
out=$("$zaya" bench train --batch 1 --seq 8 -n 1 --threads 1 --torch-python "$tmp/fakepy" --torch-script "$tmp/fakepy" -o "$tmp/t" 2>/dev/null)
for want in "FALLBACK PEER: PyTorch < 2" "its torch.mm at 2048^3: f32 3.0, bf16 300.0 GFLOP/s" \
            "peer torch.compile f32: RuntimeError: boom" "peer torch.compile bf16: TimeoutError: not done within 5 s" \
            "zaya bf16 vs torch         bf16:" "zaya f32  vs torch         f32 :"; do
  grep -qF -- "$want" <<<"$out" && echo "ok: peer report has '$want'" || { echo "FAIL: peer report lacks '$want'"; echo "$out" | tail -12; fail=$((fail+1)); }
done
grep -q '"torch_fallback":	true' "$tmp/t/train.json" && grep -q '"peer_dtype":	"bf16"' "$tmp/t/train.json" \
  && echo "ok: train.json has the peer fields" || { echo "FAIL: train.json lacks the peer fields"; fail=$((fail+1)); }
expect 2 "--torch-timeout must be in 1..86400 seconds (got 0)" -- "$zaya" bench train --torch-timeout 0
expect 2 "--optimizer must be muon or adamw, got 'sgd'" -- "$zaya" bench train --optimizer sgd
expect 2 "unknown option '--optimizer'" -- "$zaya" bench model --optimizer adamw
# --optimizer adamw reaches the peer (its arguments recorded) and the report
cat > "$tmp/argpy" <<SH
#!/bin/sh
echo "\$@" > "$tmp/peer-args"
echo '{"forward_s": 0.5, "fwdbwd_s": 1.5, "torch": "2.6.0", "mm_gflops_f32": 80.0, "mm_gflops_bf16": 190.0, "variants": {}}'
SH
chmod +x "$tmp/argpy"
out=$("$zaya" bench train --batch 1 --seq 8 -n 1 --threads 1 --dtype f32 --no-compile --optimizer adamw \
      --torch-python "$tmp/argpy" --torch-script "$tmp/argpy" -o "$tmp/ta" 2>/dev/null)
grep -qw adamw "$tmp/peer-args" && grep -qF "optimizer update: AdamW everywhere" <<<"$out" \
  && grep -q '"optimizer":	"adamw"' "$tmp/ta/train.json" && echo "ok: --optimizer adamw in the peer, the report and train.json" \
  || { echo "FAIL: --optimizer adamw: peer args '$(cat "$tmp/peer-args" 2>/dev/null)'"; echo "$out" | head -3; fail=$((fail+1)); }
expect 0 "$tmp/none-python not found: reporting zaya only" -- \
  "$zaya" bench model --batch 1 --seq 8 -n 1 --dtype f32 --torch-python "$tmp/none-python" -o "$tmp/m2" --threads 1
# the engine: --engine on the CPU backend runs and is named; the peer on the same GPU only with --device cuda
out=$("$zaya" bench train --engine --batch 1 --seq 8 -n 1 --threads 1 --dtype f32 --torch-python "$tmp/argpy" \
      --torch-script "$tmp/argpy" -o "$tmp/te" 2>/dev/null)
grep -qF "the engine on backend cpu" <<<"$out" && grep -q '"backend":	"cpu"' "$tmp/te/train.json" \
  && ! grep -q "device=" "$tmp/peer-args" && echo "ok: bench train --engine (the CPU backend, the peer on the CPU)" \
  || { echo "FAIL: bench train --engine"; echo "$out" | head -5; fail=$((fail+1)); }
expect 2 "--device must be cpu, cuda or cuda:N, got 'tpu'" -- "$zaya" bench train --device tpu
expect 2 "--engine selects the engine on the CPU" -- "$zaya" bench train --device cuda --engine
expect 1 "zaya bench train: error:" -- "$zaya" bench train --device cuda:3 --batch 1 --seq 8 -n 1 --no-torch -o "$tmp/tc"
expect 0 "--quick" -- "$zaya" bench all --help
expect 2 "--mpi takes 0 or 1 (got 3)" -- "$zaya" bench all --mpi 3
expect 1 "zaya bench all: error: --mpirun $tmp/no-mpirun is not an executable" -- "$zaya" bench all --mpirun "$tmp/no-mpirun"
[ "$fail" = 0 ] && echo "all passed" || { echo "$fail failed"; exit 1; }
