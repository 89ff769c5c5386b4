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

# data prepare from JSONL: plain, gzip and zstd give the same shards with the real tokenizer, on 1
# and 2 threads; dotted key, filters, skip summary; truncated input -> exit 1 naming file and offset,
# no shard left.
for i in $(seq 1 60); do echo "the quick brown fox $i jumps over the lazy dog; the dog sleeps $i times."; done > "$tmp/t.txt"
"$zaya" tokenizer train --vocab-size 300 --eos '<|eos|>' -o "$tmp/tok" "$tmp/t.txt" > /dev/null || { echo "FAIL: tokenizer"; fail=$((fail+1)); }
tok="$tmp/tok/tokenizer.json"
for i in $(seq 1 3000); do
  printf '{"id": %d, "text": "the fox %d jumps", "meta": {"lang": "%s", "body": "dog %d"}}\n' $i $i $([ $((i % 4)) = 0 ] && echo de || echo en) $i
done > "$tmp/c.jsonl"
printf '{"text": broken}\n' >> "$tmp/c.jsonl"
gzip -k "$tmp/c.jsonl"; zstd -q "$tmp/c.jsonl" -o "$tmp/c.jsonl.zst"
expect 0 "JSONL: 3001 lines, 1 skipped (malformed_json 1)" -- "$zaya" data prepare -q -t "$tok" -n c -o "$tmp/p0" --threads 1 "$tmp/c.jsonl"
expect 0 "first broken line: $tmp/c.jsonl:3001: malformed JSON" -- "$zaya" data prepare -q -t "$tok" -n c -o "$tmp/p0" --overwrite "$tmp/c.jsonl"
for f in c.jsonl.gz c.jsonl.zst; do
  expect 0 "3000 documents" -- "$zaya" data prepare -q -t "$tok" -n c -o "$tmp/p_$f" --threads 2 "$tmp/$f"
  cmp -s "$tmp/p0/c-train-00000.ztok" "$tmp/p_$f/c-train-00000.ztok" && cmp -s "$tmp/p0/c-val-00000.ztok" "$tmp/p_$f/c-val-00000.ztok" &&
    echo "ok: $f gives the plain shards" || { echo "FAIL: $f shards differ"; fail=$((fail+1)); }
done
expect 0 "shards valid" -- "$zaya" data validate "$tmp/p_c.jsonl.zst"
expect 0 "filtered 750" -- "$zaya" data prepare -q -t "$tok" -n f -o "$tmp/pf" --jsonl-key meta.body --jsonl-filter meta.lang=en "$tmp/c.jsonl.zst"
expect 0 "2250 documents" -- "$zaya" data prepare -q -t "$tok" -n f -o "$tmp/pf" --overwrite --jsonl-filter meta.lang!=de "$tmp/c.jsonl.gz"
expect 1 "c.jsonl:3001: malformed JSON" -- "$zaya" data prepare -q -t "$tok" -n s -o "$tmp/ps" --strict "$tmp/c.jsonl"
expect 2 "must be KEY=VALUE" -- "$zaya" data prepare -q -t "$tok" -n s -o "$tmp/ps" --jsonl-filter nokey "$tmp/c.jsonl"
# progress line (JSON when stderr is not a terminal) with MB/s and tokens/s
expect 0 '"progress":"data prepare".*tokens/s' -- "$zaya" data prepare -t "$tok" -n g -o "$tmp/pg" "$tmp/c.jsonl.gz"
size=$(stat -c %s "$tmp/c.jsonl.gz")
head -c $((size - 20)) "$tmp/c.jsonl.gz" > "$tmp/cut.jsonl.gz"
expect 1 "'$tmp/cut.jsonl.gz': truncated gzip data: the file ends at byte offset $((size - 20))" -- \
  "$zaya" data prepare -q -t "$tok" -n cut -o "$tmp/pcut" --shard-tokens 1000 "$tmp/cut.jsonl.gz"
ls "$tmp/pcut" 2>/dev/null | grep -q . && { echo "FAIL: truncated input left $(ls "$tmp/pcut")"; fail=$((fail+1)); } || echo "ok: nothing left after truncated input"
zsize=$(stat -c %s "$tmp/c.jsonl.zst")
head -c $((zsize / 2)) "$tmp/c.jsonl.zst" > "$tmp/cut.jsonl.zst"
expect 1 "'$tmp/cut.jsonl.zst': truncated zstd data: the file ends at byte offset $((zsize / 2))" -- \
  "$zaya" data prepare -q -t "$tok" -n cut -o "$tmp/pcut2" "$tmp/cut.jsonl.zst"
# an empty --jsonl-key is a usage error naming the flag; a FIFO input is refused, not waited on
expect 2 "\-\-jsonl-key must name a field" -- "$zaya" data prepare -q -t "$tok" -n keysrc -o "$tmp/pkey" --jsonl-key "" "$tmp/cut.jsonl.zst"
mkfifo "$tmp/fifo.jsonl"
expect 1 "fifo.jsonl' is a FIFO" -- timeout 60 "$zaya" data prepare -q -t "$tok" -n fifosrc -o "$tmp/pfifo" "$tmp/fifo.jsonl"
echo "data_cli: $fail failed"
[ "$fail" = 0 ]
