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
# inference weight formats: gpt-oss-120b as published (MXFP4 experts) fits one 80 GB H100, bf16 does not
expect 0 "weights 60.8 GiB (114.66B params at 4.250 bits + 2.17B at 16 bits) + KV cache of 1 x 4096 tokens 0.15 GiB = 60.9 GiB of 74.5 GiB: fits one h100" -- "$zaya" size predict "$fx/gpt-oss-120b.json" --hw h100 --weights mxfp4 --max-batch 2
expect 0 "= 217.8 GiB of 74.5 GiB: DOES NOT FIT on one h100" -- "$zaya" size predict "$fx/gpt-oss-120b.json" --hw h100 --max-batch 2
expect 0 "int4 + one bf16 scale per 128 inputs (4.125 bits) on the linear weights" -- "$zaya" size check "$fx/llama-3-8b.json" --hw h100 --weights int4
expect 0 "on the linear weights" -- "$zaya" size check "$fx/gpt-oss-20b.json" --hw h100 --weights mxfp4 --quantize linear
expect 2 "weight format 'nf4' is not one of" -- "$zaya" size predict "$fx/gpt-oss-20b.json" --hw h100 --weights nf4
expect 2 "quantization scope 'all' is not one of" -- "$zaya" size check "$fx/gpt-oss-20b.json" --hw h100 --weights int8 --quantize all
expect 0 "fixture-host" -- "$zaya" size predict "$fx/olmoe-1b-7b.json" --hw host --profile "$fx/profile-host.json" --seq 512 --dp 2
expect 0 "wrote $tmp/p/predict.json" -- "$zaya" size predict "$fx/mixtral-8x7b.json" --hw "$fx/profile-host.json" --seq 256 -o "$tmp/p"
# context parallelism: per-rank activations, the exchanges per layer, the MHA comparison, refusals
expect 0 "K/V all-gather 117.44 MB (fwd + bwd), dK/dV reduce-scatter 58.72 MB, halo 43.0 KB; an MHA of the same width would gather 939.52 MB" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw h200 --seq 32768 --cp 8 --max-batch 1
expect 0 "(busiest rank's attention 1.88x the mean)" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw h200 --seq 32768 --cp 8 --cp-layout contiguous --max-batch 1
expect 0 "(busiest rank's attention 1.00x the mean)" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw h200 --seq 32768 --cp 8 --max-batch 1
expect 0 "DP 1 x CP 8 (zig-zag, 4096 tokens per rank)" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw h200 --seq 32768 --cp 8 --max-batch 1
expect 0 "context parallel: CP 8, each rank holds 4096 tokens of every sequence" -- "$zaya" size info "$fx/zaya1-8b.json" --seq 32768 --cp 8
a1=$("$zaya" size info "$fx/zaya1-8b.json" --seq 32768 | awk '/AdamW  DP 1 /{print $9}')
a8=$("$zaya" size info "$fx/zaya1-8b.json" --seq 32768 --cp 8 | awk '/AdamW  DP 1 /{print $9}')
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if 7 < a / b < 8.1 else 1)" "$a1" "$a8" \
  && echo "ok: CP 8 activations per rank $a8 GiB vs $a1 GiB" || { echo "FAIL: CP 8 activations $a8 vs $a1 GiB"; fail=$((fail+1)); }
expect 2 "--seq 32768 is not divisible by --cp 3" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw h200 --seq 32768 --cp 3
expect 2 "--optimizer 'sgd' (use adamw or muon)" -- "$zaya" size predict "$fx/zaya1-8b.json" --hw mi300x --optimizer sgd
expect 0 "reference shape: hidden 2048, 40 layers, 16 experts x 2048, top-1" -- \
  "$zaya" size search --hw mi300x --total-params 8.3B --active-params 760M --compare "$fx/zaya1-8b.json" -o "$tmp/s"
[ -s "$tmp/s/search.json" ] || { echo "FAIL: search.json missing"; fail=$((fail+1)); }
expect 1 "zaya size search: error: no candidate satisfies active params 2.00B <= total params 1.00B" -- \
  "$zaya" size search --hw mi300x --total-params 1B --active-params 2B -o "$tmp/s2"
expect 1 "no candidate satisfies total params 100.00T" -- "$zaya" size search --hw mi300x --total-params 100T --active-params 1B -o "$tmp/s3"
expect 2 "'8.3Q': unknown suffix 'Q'" -- "$zaya" size search --hw mi300x --total-params 8.3Q --active-params 1B
# families, memory as a constraint, bounded inputs
expect 0 "MTP modules (apart)" -- "$zaya" size info "$fx/deepseek-v3.json"
expect 0 "(12 local layers hold 128 tokens)" -- "$zaya" size info "$fx/gpt-oss-20b.json" --seq 8192
expect 0 "fp32 states = 16 B/param before sharding" -- "$zaya" size info "$fx/mixtral-8x7b.json" --dp 8 --zero 3 --grad-dtype bf16 --micro-batch 2
expect 0 "selected layout (AdamW, DP 8, ZeRO-3)" -- "$zaya" size info "$fx/mixtral-8x7b.json" --dp 8 --zero 3
expect 2 "dtype 'fp8' (use fp32 or bf16)" -- "$zaya" size info "$fx/mixtral-8x7b.json" --grad-dtype fp8
expect 2 "--seq must be 1..67108864" -- "$zaya" size info "$fx/llama-3-8b.json" --seq 99999999999999
expect 0 "warning: --seq 200000 exceeds the config's max_position_embeddings 131072" -- "$zaya" size info "$fx/gpt-oss-20b.json" --seq 200000
expect 1 "is a directory; pass the config.json inside it" -- "$zaya" size info "$fx"
expect 1 "is not a regular file (a pipe or a device)" -- "$zaya" size info /dev/null
printf '{"model_type":"llama","hidden_size":1,"hidden_size":2}' > "$tmp/dup.json"
expect 1 "duplicate key 'hidden_size'" -- "$zaya" size info "$tmp/dup.json"
echo '{"model_type":"qwen3_next"}' > "$tmp/next.json"
expect 1 "model_type 'qwen3_next': key 'layer_types' is not modelled" -- "$zaya" size info "$tmp/next.json"
expect 0 "training memory: DOES NOT FIT: 356." -- "$zaya" size predict "$fx/mixtral-8x7b.json" --hw h100 --dp 8 --zero 1 --max-batch 1
expect 0 "needs ZeRO-3 at DP >= " -- "$zaya" size predict "$fx/mixtral-8x7b.json" --hw h100 --dp 8 --zero 1 --max-batch 1
expect 0 "DOES NOT FIT on one h100: the weights alone need" -- "$zaya" size predict "$fx/mixtral-8x7b.json" --hw h100 --max-batch 1
expect 0 "training memory: DOES NOT FIT" -- "$zaya" size check "$fx/deepseek-v2-lite.json" --hw h100 --batch 4
expect 0 ": fits (largest term:" -- "$zaya" size check "$fx/llama-3-8b.json" --hw h100 --dp 8 --zero 3 --recompute
# the explanation's step difference is the sum of its terms (within print rounding)
out=$("$zaya" size search --hw mi300x --total-params 8.3B --active-params 760M --compare "$fx/zaya1-8b.json" -o "$tmp/s4" 2>&1)
line=$(grep -o "step is .* ms;" <<<"$out")
if awk -v l="$line" 'BEGIN { n = split(l, w, " "); d = w[3]; if (w[5] == "longer") d = -d;
      s = w[8] + w[12] + w[15] + w[20]; exit !(n >= 21 && (d - s < 0.25 && s - d < 0.25)) }'; then echo "ok: explanation adds up ($line)"
else echo "FAIL: explanation terms do not add up: $line"; fail=$((fail+1)); fi
echo "size_cli: $fail failed"
[ "$fail" = 0 ]
