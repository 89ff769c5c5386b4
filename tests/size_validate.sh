#!/usr/bin/env bash
# zaya size validate. Default: argument and input errors only (fast, no training).
# With --measure: a real short measurement of zaya1-tiny on the built-in corpus and a check of validate.json.
set -u
zaya="$1"; fx="$2/fixtures/size"; mode="${3:-}"
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
"$zaya" model info -c zaya1-tiny --json > "$tmp/info.json" || { echo "FAIL: model info"; exit 1; }
/usr/bin/python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['config']; c['vocab_size']=4096; json.dump(c, open(sys.argv[2],'w'))" \
  "$tmp/info.json" "$tmp/tiny.json" || { echo "FAIL: config"; exit 1; }
prof="$fx/profile-host.json"
if [ "$mode" != "--measure" ]; then
  mkdir -p "$tmp/empty"
  expect 2 "--data is required" -- "$zaya" size validate "$tmp/tiny.json" --hw "$prof"
  expect 2 "--hw is required" -- "$zaya" size validate "$tmp/tiny.json" --data "$tmp/empty"
  expect 2 "expected one CONFIG" -- "$zaya" size validate --hw "$prof" --data "$tmp/empty"
  expect 2 "--dtype 'fp8' (use bf16 or f32)" -- "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/empty" --dtype fp8
  expect 2 "--warmup must be in [0, --steps)" -- "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/empty" --steps 3 --warmup 3
  expect 2 "--micro-batch dividing --batch" -- "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/empty" --micro-batch 5
  expect 1 "zaya size validate: error: --data '$tmp/empty' holds no NAME-train-00000.ztok shards" -- \
    "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/empty" -o "$tmp/v0"
  expect 1 "--data '$tmp/none': No such file or directory" -- "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/none" -o "$tmp/v0"
  : > "$tmp/empty/prose-train-00000.ztok"
  mkdir -p "$tmp/v1/train"
  expect 1 "'$tmp/v1/train' exists (an earlier measurement); choose a new -o DIR" -- \
    "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/empty" -o "$tmp/v1"
  expect 1 "zaya size validate: error: the training run failed (exit 1); see $tmp/v2/train.log" -- \
    "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/empty" -o "$tmp/v2" --threads 1
  expect 0 "bf16 GEMMs" -- "$zaya" size predict "$tmp/tiny.json" --hw "$prof" --batch 32 --seq 128 --optimizer muon
  expect 0 "f32 GEMMs" -- "$zaya" size predict "$tmp/tiny.json" --hw "$prof" --batch 32 --seq 128 --dtype f32
  expect 1 "dtype 'fp8' (use bf16 or f32)" -- "$zaya" size predict "$tmp/tiny.json" --hw "$prof" --dtype fp8
else
  "$zaya" train -o "$tmp/t" --max-steps 1 --eval-every 0 --eval-batches 1 --samples 0 -q > "$tmp/t.log" 2>&1 \
    || { echo "FAIL: building the corpus"; tail -5 "$tmp/t.log"; exit 1; }
  expect 0 "predicted / measured:" -- "$zaya" size validate "$tmp/tiny.json" --hw "$prof" --data "$tmp/t/data" \
    --batch 8 --seq 64 --steps 4 --warmup 1 -o "$tmp/v"
  /usr/bin/python3 - "$tmp/v/validate.json" <<'PY' || fail=$((fail+1))
import json, sys
v = json.load(open(sys.argv[1]))
assert v["measured"]["samples"] == 3, v["measured"]
assert v["measured"]["step_ms_median"] > 0 and v["predicted"]["step_ms"] > 0
assert abs(v["ratio"] - v["predicted"]["step_ms"] / v["measured"]["step_ms_median"]) < 1e-9
print("ok: validate.json", v["predicted"]["step_ms"], v["measured"]["step_ms_median"], v["ratio"])
PY
fi
echo "size_validate: $fail failed"
[ "$fail" = 0 ]
