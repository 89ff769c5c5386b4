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
# the nccl-tests flags on the NCCL backend: -m 3 in one group (3 x 2 timed calls), -a 3 (max), -N 2, -J
"$zaya" bench coll --backend nccl -b 1K -e 64K -f 8 -n 2 -w 1 -m 3 -a 3 -N 2 -J "$out/r.json" --out "$out/flags" \
  || fail "bench coll nccl -m -a -N -J"
[ "$(json "$out/r.json" "all(x['out_of_place']['calls']==6 and x['out_of_place']['time_us']==x['out_of_place']['max_us'] for x in d['results'])")" = True ] || fail "nccl -m 3 / -a 3"
[ "$(json "$out/r.json" "(d['cycles'], sorted(set(x['cycle'] for x in d['results'])), d['libraries']['nccl'] is not None, all(v['kind']=='cuda' for v in d['devices']))")" = "(2, [1, 2], True, True)" ] || fail "nccl -N 2 / -J report"
"$zaya" bench coll --backend nccl -b 1K -e 4K -n 2 -w 1 -C 1 --out "$out/cpu" | grep -q "host time to enqueue" || fail "nccl -C 1 label"
echo "ok: gpu bench short"
