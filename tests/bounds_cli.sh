#!/usr/bin/env bash
# Fuzzing reproducers through the CLI: each input used to crash (SIGFPE), abort on an assertion,
# hang or print wrapped numbers; now each exits 1 with a message naming the key and its bound.
set -u
zaya="$1"
tmp=$(mktemp -d /tmp/zaya_bounds_cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$(timeout 60 "$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -qF -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | head -5; fail=$((fail+1))
  else echo "ok: $*"; fi
}
echo '{"num_experts": 4294967296}' > "$tmp/experts.json"
expect 1 "key 'num_experts' must be at most 4096" -- "$zaya" model info -c "$tmp/experts.json"
echo '{"num_hidden_layers": 1099511627776}' > "$tmp/layers.json"
expect 1 "key 'num_hidden_layers' must be at most 4096" -- "$zaya" model info -c "$tmp/layers.json"
echo '{"vocab_size": 16777216, "hidden_size": 1048576, "num_hidden_layers": 4096}' > "$tmp/params.json"
expect 1 "(ZAYA_CONFIG_MAX_PARAMS)" -- "$zaya" model info -c "$tmp/params.json"
echo '{"moe_intermediate_size": 2251799813685248}' > "$tmp/ffn.json"
expect 1 "key 'moe_intermediate_size' must be at most 1048576" -- "$zaya" model info -c "$tmp/ffn.json"
cat > "$tmp/run.json" <<'JSON'
{"phases": [{"tokens": 4096, "sources": {"p": 1}, "seq_len": 4294967296, "batch": 4294967296, "lr": {"peak": 1}}]}
JSON
expect 1 "key 'seq_len' must be at most 4194304" -- "$zaya" data validate --run "$tmp/run.json"
echo "bounds_cli: $fail failed"
[ "$fail" = 0 ]
