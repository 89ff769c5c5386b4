#!/usr/bin/env bash
# The architecture variants (docs/model.md "Variants") through the real binary: for each of
# zaya_router "zaya_no_eda" / "linear", zaya_mlp "dense" and zaya_residual_scaling false, zaya train
# runs, writes the key into its checkpoint's config, resumes bit-exactly, and generate / eval /
# model info / size read it; export-hf refuses it naming the key; bad values fail naming the key.
#   variants_cli.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_variants_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive

# config.json of the tiny corpus plus the variant keys
variant() { # NAME JSON-FRAGMENT
    python3 - "$dir/config.json" "$dir/$1.json" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c.update(json.loads("{" + sys.argv[3] + "}")); json.dump(c, open(sys.argv[2], "w"))
PY
}
variant no_eda '"zaya_router": "zaya_no_eda"'
variant linear '"zaya_router": "linear"'
variant dense '"zaya_mlp": "dense", "zaya_dense_intermediate_size": 96'
variant plain '"zaya_residual_scaling": false'

C=(--run "$dir/run.json" --eval-every 10 --eval-batches 1 --samples 0 --peak-gflops 100 -q --threads 2)
same_files() { cmp -s "$1/model-r00000.safetensors" "$2/model-r00000.safetensors" && for f in "$1"/state-r*.safetensors; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done; }
tok="$dir/data/tokenizer.json"
for v in no_eda linear dense plain; do
    "$zaya" train --config "$dir/$v.json" "${C[@]}" -o "$dir/$v-full" --max-steps 16 > "$dir/$v-full.log" 2>&1; rc=$?
    check "$v: zaya train runs (rc $rc)" '[ $rc -eq 0 ]'
    check "$v: validation loss is finite" 'grep -q "\"val_loss\"" "$dir/$v-full/metrics.jsonl" && ! grep -q "nan" "$dir/$v-full/metrics.jsonl"'
    "$zaya" train --config "$dir/$v.json" "${C[@]}" -o "$dir/$v-part" --max-steps 7 > /dev/null 2>&1
    "$zaya" train --config "$dir/$v.json" "${C[@]}" -o "$dir/$v-part" --max-steps 16 > /dev/null 2>&1
    check "$v: interrupted + resumed == uninterrupted" 'same_files "$dir/$v-full/ckpt/step-00000016" "$dir/$v-part/ckpt/step-00000016"'
    out=$("$zaya" generate --checkpoint "$dir/$v-full/ckpt" -t "$tok" --prompt "the" -n 6 --temperature 0 2>&1); rc=$?
    check "$v: generate from the checkpoint (rc $rc)" '[ $rc -eq 0 ]'
    out=$("$zaya" model info --config "$dir/$v.json" 2>&1); rc=$?
    check "$v: model info names the variant" '[ $rc -eq 0 ] && echo "$out" | grep -q "^variant: "'
    info_total=$("$zaya" model info --config "$dir/$v.json" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["parameters"]["total"])')
    "$zaya" size info "$dir/$v.json" --seq 64 -o "$dir/$v-size" > /dev/null 2>&1
    size_total=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["params"]["total"])' "$dir/$v-size/info.json" 2>/dev/null)
    check "$v: zaya size counts what the model stores ($size_total vs $info_total)" '[ -n "$size_total" ] && [ "$size_total" = "$info_total" ]'
    out=$("$zaya" ckpt export-hf "$dir/$v-full/ckpt" -o "$dir/$v-hf" 2>&1); rc=$?
    check "$v: export-hf refuses the variant naming the keys (rc $rc)" '[ $rc -eq 1 ] && echo "$out" | grep -q "zaya_router" && [ ! -e "$dir/$v-hf/config.json" ]'
done
check "linear: no token skipped" 'python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1]) if \"layer_skip_share\" in l]; sys.exit(0 if r and all(max(x[\"layer_skip_share\"])==0 for x in r) else 1)" "$dir/linear-full/metrics.jsonl"'
check "dense: the step log says dense, no expert fields" 'grep -q "\"loss\"" "$dir/dense-full/metrics.jsonl" && ! grep -q "balance_max_share" "$dir/dense-full/metrics.jsonl" && [ ! -e "$dir/dense-full/expert_load.png" ]'
check "dense: the checkpoint config carries the keys" 'grep -rq "zaya_dense_intermediate_size" "$dir/dense-full/ckpt/step-00000016"'

# a variant that does not match the checkpoint is another model
out=$("$zaya" train --config "$dir/plain.json" "${C[@]}" -o "$dir/linear-full" --max-steps 20 2>&1); rc=$?
check "resume with another variant is refused (rc $rc)" '[ $rc -ne 0 ] && echo "$out" | grep -q "different model configuration"'

# bad values name the key and the allowed values
variant bad_router '"zaya_router": "mixtral"'
variant bad_mlp '"zaya_mlp": "ssm"'
variant bad_fit '"zaya_mlp": "dense", "zaya_router": "linear"'
for b in bad_router:zaya_router bad_mlp:zaya_mlp bad_fit:zaya_router; do
    f=${b%%:*}; key=${b##*:}
    out=$("$zaya" model info --config "$dir/$f.json" 2>&1); rc=$?
    check "$f: model info fails naming '$key' (rc $rc)" '[ $rc -ne 0 ] && echo "$out" | grep -q "$key"'
    out=$("$zaya" train --config "$dir/$f.json" "${C[@]}" -o "$dir/$f" --max-steps 2 2>&1); rc=$?
    check "$f: train fails naming '$key' (rc $rc)" '[ $rc -ne 0 ] && echo "$out" | grep -q "$key"'
done
echo "variants_cli: $fail failed"
[ $fail -eq 0 ]
