#!/usr/bin/env bash
# Checkpoint/resume of zaya train: interrupted at step k and resumed == uninterrupted (bit-identical
# weights and optimizer state) at world size 1 and 2; a run saved on 2 ranks continues on 1 with the
# same losses (within reduction-order tolerance); a corrupt latest checkpoint falls back to the
# previous one; a mismatched model config is refused.
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_resume_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
mpi=(mpirun --allow-run-as-root --oversubscribe -x OMP_WAIT_POLICY)
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q)
same_files() { cmp -s "$1/model-r00000.safetensors" "$2/model-r00000.safetensors" && for f in "$1"/state-r*.safetensors; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done; }

# world 1: straight to 30 vs 13 then 30 (the interruption falls inside phase a, mid-epoch)
"$zaya" train "${C[@]}" -o "$dir/full" --max-steps 30 > /dev/null 2>&1
"$zaya" train "${C[@]}" -o "$dir/part" --max-steps 13 > /dev/null 2>&1
"$zaya" train "${C[@]}" -o "$dir/part" --max-steps 30 > "$dir/resume.log" 2>&1
check "world 1: resumed run reports where it resumed" 'grep -q "step-00000013" "$dir/resume.log" || grep -q "resumed" "$dir/resume.log"'
check "world 1: interrupted + resumed == uninterrupted (weights and optimizer state)" 'same_files "$dir/full/ckpt/step-00000030" "$dir/part/ckpt/step-00000030"'

# world 2 (ZeRO-1: optimizer state sharded per rank), interrupted across the phase boundary (step 48)
"${mpi[@]}" -np 2 "$zaya" train "${C[@]}" -o "$dir/full2" --max-steps 56 > /dev/null 2>&1
"${mpi[@]}" -np 2 "$zaya" train "${C[@]}" -o "$dir/part2" --max-steps 40 > /dev/null 2>&1
"${mpi[@]}" -np 2 "$zaya" train "${C[@]}" -o "$dir/part2" --max-steps 56 > /dev/null 2>&1
check "world 2: interrupted + resumed == uninterrupted" 'same_files "$dir/full2/ckpt/step-00000056" "$dir/part2/ckpt/step-00000056"'

# reshape by range reads: saved on 2 ranks at step 40, continued on 1 rank
cp -r "$dir/part2/ckpt" "$dir/r1ckpt"
rm -rf "$dir/r1ckpt/step-00000056"; echo "step-00000040" > "$dir/r1ckpt/latest"
"$zaya" train "${C[@]}" -o "$dir/reshaped" --ckpt-dir "$dir/r1ckpt" --max-steps 56 > /dev/null 2>&1
check "2 -> 1 ranks: same losses as the 2-rank run" 'python3 - "$dir/full2/metrics.jsonl" "$dir/reshaped/metrics.jsonl" <<PY
import json, sys
a = {json.loads(l)["step"]: json.loads(l)["loss"] for l in open(sys.argv[1]) if "\"loss\"" in l}
b = {json.loads(l)["step"]: json.loads(l)["loss"] for l in open(sys.argv[2]) if "\"loss\"" in l}
common = sorted(set(a) & set(b))
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in common) if common else 1
print("  steps", common[0] if common else None, "..", common[-1] if common else None, "worst relative difference %.2e" % worst)
sys.exit(0 if len(common) == 16 and worst < 1e-3 else 1)
PY'

# a corrupt latest checkpoint: fall back to the previous one, with a message naming the problem
"$zaya" train "${C[@]}" -o "$dir/cor" --max-steps 12 --save-every 6 --sync-save > /dev/null 2>&1
python3 - "$dir/cor/ckpt/step-00000012/model-r00000.safetensors" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0xFF; open(p, "wb").write(b)
PY
out=$("$zaya" train "${C[@]}" -o "$dir/cor" --max-steps 14 2>&1); rc=$?
check "corrupt latest falls back to the previous checkpoint and continues" '[ $rc = 0 ] && grep -q "step-00000006" <<<"$out"'

# a different model refuses to resume
sed 's/"hidden_size": 48/"hidden_size": 64/' "$dir/config.json" > "$dir/other.json"
out=$("$zaya" train --config "$dir/other.json" --run "$dir/run.json" -o "$dir/full" --max-steps 31 -q 2>&1); rc=$?
check "mismatched model config is refused with a clear error" '[ $rc = 1 ] && grep -q "different model configuration" <<<"$out"'
echo "train_resume: $fail failed"
[ $fail = 0 ]
