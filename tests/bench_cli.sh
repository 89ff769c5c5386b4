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
expect 2 "--threads must be >= 0 (got -3)" -- "$zaya" bench kernels --threads -3
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
expect 0 "--quick" -- "$zaya" bench all --help
expect 2 "--mpi takes 0 or 1 (got 3)" -- "$zaya" bench all --mpi 3
expect 1 "zaya bench all: error: --mpirun $tmp/no-mpirun is not an executable" -- "$zaya" bench all --mpirun "$tmp/no-mpirun"
[ "$fail" = 0 ] && echo "all passed" || { echo "$fail failed"; exit 1; }
