#!/usr/bin/env bash
# Short device runs of bench gemm / mem / coll (label gpu): 77 (skipped) without a visible device.
set -u
zaya="$1"
out=$(mktemp -d /tmp/zaya_gpu_XXXXXX)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
json() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }
msg=$("$zaya" bench gemm --device cuda --only square -n 1 -w 0 --quick -d bf16 --out "$out/probe" 2>&1)
if grep -q "0 CUDA devices visible\|built without CUDA" <<<"$msg"; then echo "no CUDA device: skipped"; exit 77; fi
"$zaya" bench gemm --device cuda --quick --only square,align -n 3 -w 1 --out "$out/gemm" || fail "bench gemm"
[ "$(json "$out/gemm/gemm.json" "d['wrong_total']")" = 0 ] || fail "gemm wrong values"
"$zaya" bench mem --device cuda --ntimes 4 --array-bytes 64M --copy-bytes 16M --out "$out/mem" || fail "bench mem"
[ "$(json "$out/mem/mem.json" "d['stream']['validated']")" = True ] || fail "mem not validated"
"$zaya" bench coll --backend nccl -b 8 -e 1M -f 8 -n 3 -w 1 --coll all -d all --out "$out/coll" || fail "bench coll nccl"
[ "$(json "$out/coll/coll.json" "d['wrong_total']")" = 0 ] || fail "coll wrong values"
"$zaya" bench coll --backend nccl -b 1K -e 4K -n 2 -w 1 --coll allreduce,reduce --inject-wrong --out "$out/inj" && fail "inject did not fail"
echo "ok: gpu bench short"
