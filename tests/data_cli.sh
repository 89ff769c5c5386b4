#!/usr/bin/env bash
# `zaya data` commands on real shards: inspect and validate accept good shards and reject corrupted
# ones (exit 1, message naming the file and field); the loader benchmark writes its results.
set -u
zaya="$1"; make_corpus="$2"; src="$3"
tmp=$(mktemp -d /tmp/zaya_data_cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | head -8; fail=$((fail+1))
  else echo "ok: $*"; fi
}
"$make_corpus" --corpus "$tmp/d" code "$src/include" "$src/src" >/dev/null || { echo "FAIL: corpus"; exit 1; }
good="$tmp/d/code-train-00000.ztok"
expect 0 "checksum .*: ok" -- "$zaya" data inspect "$good"
expect 0 "vocab        257 ids, eos id 256" -- "$zaya" data inspect -n 4 "$good"
expect 0 "shards valid" -- "$zaya" data validate "$tmp/d"
expect 0 "shards valid" -- "$zaya" data validate "$tmp/d/code-*.ztok"
cp "$good" "$tmp/magic.ztok"; printf 'X' | dd of="$tmp/magic.ztok" bs=1 seek=0 conv=notrunc status=none
expect 1 "magic.ztok': bad magic at offset 0" -- "$zaya" data inspect "$tmp/magic.ztok"
cp "$good" "$tmp/trunc.ztok"; truncate -s -5 "$tmp/trunc.ztok"
expect 1 "trunc.ztok': field 'file_size' (offset 64).*truncated" -- "$zaya" data validate "$tmp/trunc.ztok"
cp "$good" "$tmp/flip.ztok"; printf '\x41' | dd of="$tmp/flip.ztok" bs=1 seek=200 conv=notrunc status=none
expect 1 "field 'payload_xxh3'" -- "$zaya" data validate "$tmp/flip.ztok"
expect 0 "first tokens" -- "$zaya" data inspect --no-verify "$tmp/flip.ztok"
expect 1 "no shard matches" -- "$zaya" data validate "$tmp/none-*.ztok"
expect 2 "expected at least one SHARD" -- "$zaya" data inspect
cat > "$tmp/run.json" <<JSON
{"data_dir": "$tmp/d", "phases": [{"name": "p1", "tokens": 100000, "sources": {"code": 1}, "seq_len": 64,
 "batch": 8, "lr": {"peak": 0.001}}]}
JSON
expect 0 "train source code" -- "$zaya" data validate --run "$tmp/run.json"
sed -i 's/"seq_len": 64/"seq_len": 60/' "$tmp/run.json"
expect 1 "phases\[0\] ('p1'): key 'seq_len'" -- "$zaya" data validate --run "$tmp/run.json"
expect 0 "results in $tmp/b" -- "$zaya" data bench --seconds 0.05 -b 4 "$tmp/d/code-train-*.ztok" -o "$tmp/b"
[ -s "$tmp/b/data-bench.json" ] && echo "ok: bench json" || { echo "FAIL: no bench json"; fail=$((fail+1)); }
echo "data_cli: $fail failed"
[ "$fail" = 0 ]
