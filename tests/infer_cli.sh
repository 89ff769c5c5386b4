#!/usr/bin/env bash
# zaya generate / eval / bench infer through the real binary.
#   infer_cli.sh ZAYA WORKDIR          streaming, stops, batches, eval results and every error exit (unit)
#   infer_cli.sh ZAYA WORKDIR bench    zaya bench infer on zaya1-small, f32 and bf16 (bench)
set -u
zaya="$1"
work="$2"
mode="${3:-unit}"
rm -rf "$work" && mkdir -p "$work" || exit 1
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | head -5; fail=$((fail+1))
  else echo "ok: $*"; fi
}

if [ "$mode" = bench ]; then
  "$zaya" bench infer -c zaya1-small -p 128 -n 32 -d 0,512 -b 1,4 -r 3 -o "$work/bench" || fail=$((fail+1))
  [ -f "$work/bench/infer.json" ] && [ -f "$work/bench/infer.csv" ] || { echo "FAIL: results missing"; fail=$((fail+1)); }
  echo "infer_bench: $fail failed"
  [ "$fail" = 0 ]
  exit
fi

for i in $(seq 1 100); do echo "the quick brown fox $i jumps over the lazy dog, and the dog sleeps."; done > "$work/text.txt"
"$zaya" tokenizer train --vocab-size 400 --eos '<|eos|>' -o "$work/tok" "$work/text.txt" > /dev/null || fail=$((fail+1))
tok="$work/tok/tokenizer.json"
cat > "$work/config.json" <<'JSON'
{"model_type": "zaya", "vocab_size": 400, "hidden_size": 40, "num_hidden_layers": 2, "num_attention_heads": 2,
 "num_key_value_heads": 1, "head_dim": 16, "num_experts": 2, "moe_intermediate_size": 24, "router_hidden_size": 8,
 "max_position_embeddings": 48, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 0}
JSON
cfg=(--config "$work/config.json" --random-init 7)

# generation: streamed prompt + completion, greedy is reproducible, seeds reproduce, batches print each
expect 0 "^the quick" -- "$zaya" generate "${cfg[@]}" -t "$tok" --prompt "the quick" --max-tokens 8 --temperature 0
a=$("$zaya" generate "${cfg[@]}" -t "$tok" --prompt "the dog" -n 12 --seed 5 --top-k 20 --top-p 0.9 2>/dev/null)
b=$("$zaya" generate "${cfg[@]}" -t "$tok" --prompt "the dog" -n 12 --seed 5 --top-k 20 --top-p 0.9 2>/dev/null)
[ -n "$a" ] && [ "$a" = "$b" ] && echo "ok: seeded generation reproduces" || { echo "FAIL: seeded runs differ"; fail=$((fail+1)); }
expect 0 "--- \[2\] ---" -- "$zaya" generate "${cfg[@]}" -t "$tok" --prompt "a" --prompt "the fox" -n 4 --dtype bf16
expect 0 "decode:" -- "$zaya" generate "${cfg[@]}" -t "$tok" --prompt "the" -n 3 --stop "x" --stop "zz"
# a stop string: the completion ends before it (greedy output of this model, then cut at its 3rd char)
full=$("$zaya" generate "${cfg[@]}" -t "$tok" --prompt "fox" -n 10 --temperature 0 --ignore-eos 2>/dev/null)
comp="${full#fox}"
if [ ${#comp} -ge 4 ]; then
  stop="${comp:2:2}"
  cut=$("$zaya" generate "${cfg[@]}" -t "$tok" --prompt "fox" -n 10 --temperature 0 --ignore-eos --stop "$stop" 2>/dev/null)
  want="fox${comp%%"$stop"*}"
  [ "$cut" = "$want" ] && echo "ok: stop string" || { echo "FAIL: stop string '$stop': got '$cut' want '$want'"; fail=$((fail+1)); }
fi

# bf16 inference holds bf16 weights only (no f32 copy, no gradients): on zaya1-small (~100M parameters)
# the peak RSS stays below what the f32 parameters alone would take (2 x the bf16 matrices)
out=$("$zaya" generate --config zaya1-small --random-init 1 --dtype bf16 -t "$tok" --prompt "the" -n 4 --temperature 0 \
      --ignore-eos 2>&1 >/dev/null)
mat=$(sed -n 's/^weights: bf16, \([0-9.]*\) MiB of matrices.*/\1/p' <<<"$out")
rss=$(sed -n 's/^peak RSS: \([0-9.]*\) MiB.*/\1/p' <<<"$out")
if awk -v r="$rss" -v m="$mat" 'BEGIN { exit !(r > 0 && m > 100 && r < 2 * m) }'; then
  echo "ok: bf16 peak RSS $rss MiB for $mat MiB of bf16 matrices"
else echo "FAIL: bf16 peak RSS '$rss' MiB vs '$mat' MiB of bf16 matrices"; echo "$out" | head -8; fail=$((fail+1)); fi

# generate errors
expect 2 "--prompt is required" -- "$zaya" generate "${cfg[@]}" -t "$tok"
expect 2 "--tokenizer is required" -- "$zaya" generate "${cfg[@]}" --prompt hi
expect 1 "zaya generate: error: tokenizer '$work/none.json'" -- "$zaya" generate "${cfg[@]}" -t "$work/none.json" --prompt hi
expect 1 "longer than the model's context (max_position_embeddings = 48)" -- "$zaya" generate "${cfg[@]}" -t "$tok" --prompt "$(head -c 2000 "$work/text.txt")"
expect 1 "$work/ckpt" -- "$zaya" generate --checkpoint "$work/ckpt" -t "$tok" --prompt hi
expect 1 "give --checkpoint PATH, or --config SPEC --random-init SEED" -- "$zaya" generate -t "$tok" --prompt hi
expect 0 "hi" -- "$zaya" generate --config zaya1-tiny --random-init 1 -t "$tok" --prompt hi -n 2
# the short spelling of --prompt, mixed with the long one, is the same batch (greedy, so byte-identical)
a=$("$zaya" generate "${cfg[@]}" -t "$tok" -p "the fox" --prompt "a" -n 4 --temperature 0 2>/dev/null)
b=$("$zaya" generate "${cfg[@]}" -t "$tok" --prompt "the fox" -pa -n 4 --temperature 0 2>/dev/null)
grep -q -- "--- \[2\] ---" <<<"$a" && [ "$a" = "$b" ] && echo "ok: generate -p == --prompt" ||
  { echo "FAIL: generate -p: '$a' vs '$b'"; fail=$((fail+1)); }

# eval: perplexity on text, multiple choice
cat > "$work/mc.jsonl" <<'JSONL'
{"context": "the quick brown", "choices": [" fox", " dog"], "label": 0}
{"context": "the dog", "choices": [" sleeps", " jumps", " runs"], "label": 0}

{"context": "the lazy", "choices": [" dog", " fox"], "label": 0}
JSONL
head -1 "$work/mc.jsonl" > "$work/mc2.jsonl"
expect 0 "results: $work/ev/eval.json" -- "$zaya" eval "${cfg[@]}" -t "$tok" --text "$work/text.txt" --ctx 32 --task "$work/mc.jsonl" -o "$work/ev"
grep -q '"bpb"' "$work/ev/eval.json" && grep -q '"acc_norm"' "$work/ev/eval.json" && echo "ok: eval.json" ||
  { echo "FAIL: eval.json content"; fail=$((fail+1)); }
# --task repeated (both forms): one result per file, in order
expect 0 "mc2.jsonl" -- "$zaya" eval "${cfg[@]}" -t "$tok" --task "$work/mc.jsonl" --task="$work/mc2.jsonl" -o "$work/ev2"
# LAMBADA ({"text"} lines, lm-eval lambada_openai): detected, acc and perplexity reported
printf '%s\n' '{"text": "the quick brown fox"}' '{"text": "the dog sleeps in the sun"}' > "$work/lambada.jsonl"
expect 0 "lambada.jsonl .*lambada .* 2 .* ppl" -- "$zaya" eval "${cfg[@]}" -t "$tok" --task "$work/lambada.jsonl" -o "$work/evl"
grep -q '"perplexity"' "$work/evl/eval.json" && grep -q '"format":[[:space:]]*"lambada"' "$work/evl/eval.json" && echo "ok: lambada eval.json" ||
  { echo "FAIL: lambada eval.json content"; fail=$((fail+1)); }
expect 1 "lambada2.jsonl:1: field 'text' has no space" -- bash -c "echo '{\"text\": \"word\"}' > '$work/lambada2.jsonl' && '$zaya' eval ${cfg[*]} -t '$tok' --task '$work/lambada2.jsonl' -o '$work/x'"
# eval errors: line numbers, exit 1, no result printed or written
printf '%s\n' '{"context": "a", "choices": [" b", " c"], "label": 1}' '{"context": "a", "choices": [" b"' > "$work/bad1.jsonl"
printf '%s\n' '{"context": "a", "choices": [" b", " c"], "label": 1}' '' '{"context": "a", "choices": [" b", " c"], "label": 2}' > "$work/bad2.jsonl"
printf '{"context": "%s", "choices": [" b"], "label": 0}\n' "$(head -c 1500 "$work/text.txt" | tr '\n' ' ')" > "$work/bad3.jsonl"
for bad in bad1:2 bad2:3 bad3:1; do
  f="${bad%%:*}"; line="${bad##*:}"
  out=$("$zaya" eval "${cfg[@]}" -t "$tok" --text "$work/text.txt" --task "$work/$f.jsonl" -o "$work/ev_$f" 2>&1); rc=$?
  if [ $rc = 1 ] && grep -q "$f.jsonl:$line" <<<"$out" && ! grep -q "ppl" <<<"$out" && [ ! -e "$work/ev_$f/eval.json" ]; then
    echo "ok: eval error $f line $line"
  else echo "FAIL: eval $f: rc=$rc: $out"; fail=$((fail+1)); fi
done
expect 1 "label 2 is out of range for 2 choices" -- "$zaya" eval "${cfg[@]}" -t "$tok" --task "$work/bad2.jsonl" -o "$work/x"
expect 1 "longer than the model's context 48" -- "$zaya" eval "${cfg[@]}" -t "$tok" --task "$work/bad3.jsonl" -o "$work/x"
# released task layouts (tests/fixtures/eval): detected, scored, and acc / acc_norm / stderr equal a
# recomputation from the per-choice log-likelihoods written to items-K.jsonl
fx="$(cd "$(dirname "$0")" && pwd)/fixtures/eval"
sed 's/"max_position_embeddings": 48/"max_position_embeddings": 512/' "$work/config.json" > "$work/config512.json"
fargs=()
for f in hellaswag.jsonl arc_challenge.jsonl arc_easy_hf.json piqa.jsonl piqa_hf.jsonl winogrande.jsonl mmlu_hf.jsonl high_school_physics_test.csv; do
  fargs+=(--task "$fx/$f")
done
expect 0 "winogrande" -- "$zaya" eval --config "$work/config512.json" --random-init 7 -t "$tok" "${fargs[@]}" -o "$work/evfx"
python3 - "$work/evfx" <<'PY' && echo "ok: task metrics recomputed from items" || { echo "FAIL: task metrics"; fail=$((fail+1)); }
import json, math, sys
d = sys.argv[1]
r = json.load(open(d + "/eval.json"))
want = ["hellaswag", "arc", "arc", "piqa", "piqa", "winogrande", "mmlu", "mmlu"]
assert [t["format"] for t in r["tasks"]] == want, [t["format"] for t in r["tasks"]]
for t in r["tasks"]:
    items = [json.loads(l) for l in open(d + "/" + t["items_file"])]
    acc = [max(range(len(i["ll"])), key=lambda c: (i["ll"][c], -c)) == i["label"] for i in items]
    accn = [max(range(len(i["ll"])), key=lambda c: (i["ll"][c] / i["bytes"][c], -c)) == i["label"] for i in items]
    n = len(items)
    assert n == t["items"], (t["task"], n)
    for key, v in (("acc", acc), ("acc_norm", accn)):
        p = sum(v) / n
        assert abs(t[key] - p) < 1e-12, (t["task"], key, t[key], p)
        assert abs(t[key + "_stderr"] - math.sqrt(p * (1 - p) / (n - 1))) < 1e-12, (t["task"], key)
    if t["format"] in ("winogrande", "mmlu"):
        assert t["acc"] == t["acc_norm"], t["task"]
print("tasks", len(r["tasks"]))
PY
expect 1 "evfx.jsonl:1: unknown multiple-choice layout (fields: a); known layouts: zaya" -- bash -c "echo '{\"a\": 1}' > '$work/evfx.jsonl' && '$zaya' eval ${cfg[*]} -t '$tok' --task '$work/evfx.jsonl' -o '$work/x'"
expect 1 "winogrande.jsonl:1: missing field 'goal'" -- "$zaya" eval --config "$work/config512.json" --random-init 7 -t "$tok" --task "$fx/winogrande.jsonl" --format piqa -o "$work/x"
expect 2 "unknown task format 'squad'" -- "$zaya" eval "${cfg[@]}" -t "$tok" --task "$fx/winogrande.jsonl" --format squad
expect 2 "nothing to evaluate" -- "$zaya" eval "${cfg[@]}"
expect 2 "need --tokenizer" -- "$zaya" eval "${cfg[@]}" --text "$work/text.txt"
expect 1 "cannot open" -- "$zaya" eval "${cfg[@]}" -t "$tok" --text "$work/none.txt" -o "$work/x"

# bench infer: a quick run writes the table, json and csv
expect 0 "of bound" -- "$zaya" bench infer --config "$work/config.json" -p 8 -n 4 -d 0,8 -b 1,2 -r 1 --triad-mib 8 -o "$work/bi"
[ -f "$work/bi/infer.json" ] && [ -f "$work/bi/infer.csv" ] && echo "ok: bench files" || { echo "FAIL: bench files"; fail=$((fail+1)); }
expect 2 "comma-separated integers" -- "$zaya" bench infer -p x
echo "infer_cli: $fail failed"
[ "$fail" = 0 ]
