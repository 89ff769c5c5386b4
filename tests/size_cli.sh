#!/usr/bin/env bash
# zaya size: exit codes, messages and outputs of info / check / predict / search.
set -u
zaya="$1"; fx="$2/fixtures/size"
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
expect 0 "non-embedding                                                     8303355728        753608528" -- "$zaya" size info "$fx/zaya1-8b.json"
expect 0 "40960 bytes/token = 40.00 KiB/token" -- "$zaya" size info "$fx/zaya1-8b-hf.json"
expect 0 "wrote $tmp/info/info.json" -- "$zaya" size info "$fx/qwen3-30b-a3b.json" -o "$tmp/info"
grep -q '"active":	3353032704' "$tmp/info/info.json" || { echo "FAIL: info.json lacks the active count"; fail=$((fail+1)); }
echo '{"model_type":"gpt2","n_embd":768}' > "$tmp/gpt2.json"
expect 1 "zaya size info: error: $tmp/gpt2.json: unknown model_type 'gpt2' (supported:" -- "$zaya" size info "$tmp/gpt2.json"
grep -v hidden_size "$fx/llama-3-8b.json" > "$tmp/nohidden.json"
expect 1 "zaya size info: error: $tmp/nohidden.json: model_type 'llama': missing required key 'hidden_size'" -- "$zaya" size info "$tmp/nohidden.json"
expect 2 "expected one CONFIG" -- "$zaya" size info
expect 0 "all GEMMs of one step" -- "$zaya" size check "$fx/zaya1-8b.json" --hw mi300x --batch 4
sed 's/"vocab_size": 128256/"vocab_size": 128001/' "$fx/llama-3-8b.json" > "$tmp/oddvocab.json"
expect 0 "nearest compliant: vocab 128128 (pad 127 rows)" -- "$zaya" size check "$tmp/oddvocab.json" --hw h100
expect 0 "nearest compliant: TP in {1,2,4,8,16,32}" -- "$zaya" size check "$fx/llama-3-8b.json" --hw h100 --tp 3
expect 2 "--hw is required" -- "$zaya" size check "$fx/zaya1-8b.json"
expect 1 "run \`zaya bench all -o DIR\`" -- "$zaya" size check "$fx/zaya1-8b.json" --hw host --profile "$tmp/none.json"
expect 0 "tokens/s:" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw mi300x --batch 4 --dp 64 --max-batch 8
expect 0 "fixture-host" -- "$zaya" size predict "$fx/olmoe-1b-7b.json" --hw host --profile "$fx/profile-host.json" --seq 512 --dp 2
expect 0 "wrote $tmp/p/predict.json" -- "$zaya" size predict "$fx/mixtral-8x7b.json" --hw "$fx/profile-host.json" --seq 256 -o "$tmp/p"
expect 2 "--optimizer 'sgd' (use adamw or muon)" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw mi300x --optimizer sgd
expect 0 "reference shape: hidden 2048, 40 layers, 16 experts x 2048, top-1" -- \
  "$zaya" size search --hw mi300x --total-params 8.3B --active-params 760M --compare "$fx/zaya1-8b.json" -o "$tmp/s"
[ -s "$tmp/s/search.json" ] || { echo "FAIL: search.json missing"; fail=$((fail+1)); }
expect 1 "zaya size search: error: no candidate satisfies active params 2.00B <= total params 1.00B" -- \
  "$zaya" size search --hw mi300x --total-params 1B --active-params 2B -o "$tmp/s2"
expect 1 "no candidate satisfies total params 100.00T" -- "$zaya" size search --hw mi300x --total-params 100T --active-params 1B -o "$tmp/s3"
expect 2 "'8.3Q': unknown suffix 'Q'" -- "$zaya" size search --hw mi300x --total-params 8.3Q --active-params 1B
echo "size_cli: $fail failed"
[ "$fail" = 0 ]
