#!/usr/bin/env bash
# zaya bench gemm end to end: config errors name the key and exit 1, bad flags exit 2, a tiny
# --from-config run writes consistent JSON/CSV; with "sweep" also a quick sweep with its plots.
set -u
zaya="$1"; mode="${2:-model}"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | tail -5; fail=$((fail+1))
  else echo "ok: $*"; fi
}
export ZAYA_PROGRESS=0
if [ "$mode" = model ]; then
  expect 1 "no-such.json" -- "$zaya" bench gemm --from-config "$tmp/no-such.json" -o "$tmp/o"
  echo '{"hidden_size": 64,' >"$tmp/trunc.json"
  expect 1 "malformed JSON at line 2" -- "$zaya" bench gemm --from-config "$tmp/trunc.json" -o "$tmp/o"
  echo '{"hidden_size": "big"}' >"$tmp/type.json"
  expect 1 "error: .*key 'hidden_size' must be an integer" -- "$zaya" bench gemm --from-config "$tmp/type.json" -o "$tmp/o"
  echo '{"num_experts": 0}' >"$tmp/zero.json"
  expect 1 "key 'num_experts' must be positive" -- "$zaya" bench gemm --from-config "$tmp/zero.json" -o "$tmp/o"
  expect 2 "'fp8' is not f32, bf16 or all" -- "$zaya" bench gemm --dtype fp8
  expect 2 "option '-n': must be >= 1" -- "$zaya" bench gemm -n 0
  expect 2 "option '--seq'" -- "$zaya" bench gemm --seq 0
  expect 2 "--cpu-time needs --threads 1" -- "$zaya" bench gemm --cpu-time --threads 2
  expect 1 "selects no shapes" -- "$zaya" bench gemm --only nope -o "$tmp/o"
  cat >"$tmp/tiny.json" <<'J'
{"model_type": "zaya", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 2,
 "head_dim": 32, "num_experts": 4, "moe_intermediate_size": 64, "router_hidden_size": 32, "vocab_size": 500}
J
  expect 0 "predicted GEMM time per step" -- "$zaya" bench gemm --from-config "$tmp/tiny.json" --batch 2 --seq 30 \
    -d f32 -n 2 -w 1 --quick --threads 2 -o "$tmp/out"
  # 10 linears x 3 passes (the sizing list's rows: value halves and router fc1+fc2 one row each), plus the
  # CSV header; JSON names 15 tokens per expert (60 / 4).
  lines=$(wc -l <"$tmp/out/gemm.csv")
  [ "$lines" = 31 ] && echo "ok: csv rows" || { echo "FAIL: gemm.csv has $lines lines, want 31"; fail=$((fail+1)); }
  grep -q '^f32,attn,attn.v_proj (x2 halves),fwd,0,1,60,32,64,0,4,' "$tmp/out/gemm.csv" && echo "ok: csv value halves" ||
    { echo "FAIL: gemm.csv lacks the value halves row (60x32x64, 2 per layer)"; fail=$((fail+1)); }
  # A preset name is read like a config file.
  expect 0 "predicted GEMM time per step" -- "$zaya" bench gemm --from-config zaya1-tiny --only head --seq 16 \
    -d f32 -n 1 -w 0 --quick --threads 2 -o "$tmp/preset"
  grep -q '"tokens_per_expert":[[:space:]]*15' "$tmp/out/gemm.json" && echo "ok: json" ||
    { echo "FAIL: gemm.json lacks tokens_per_expert 15"; fail=$((fail+1)); }
else
  expect 0 "zaya/oneDNN-direct bf16" -- "$zaya" bench gemm --quick -d bf16 -n 3 -w 1 -o "$tmp/sweep"
  for f in gemm.json gemm.csv gemm_size.png gemm_alignment.png gemm_alignment_m.png; do
    [ -s "$tmp/sweep/$f" ] && echo "ok: $f" || { echo "FAIL: $f missing"; fail=$((fail+1)); }
  done
fi
echo "bench_gemm_cli ($mode): $fail failed"
[ "$fail" = 0 ]
