#!/usr/bin/env bash
# zaya data prepare throughput on raw JSONL with the built-in BPE (a tokenizer trained by zaya on the
# fortunes corpus): ~60 MB of web-like JSONL records (prose pages and C headers, with metadata),
# plain / gzip / zstd, on 2 threads. Checks that every input and thread count gives the same shards
# and that plain JSONL on 2 threads reaches the target of 20 MB/s. Prints wall and CPU seconds: on a
# shared machine the CPU figure (MB per CPU-second) is the stable one, and `cores` (CPU / wall) shows
# how much of the machine the run actually got.
#   data_prepare_bench.sh ZAYA WORKDIR [MB]
set -u
zaya="$1"; work="$2"; mb="${3:-60}"
rm -rf "$work" && mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail=0
python3 - "$mb" <<'PY' || exit 1
import json, glob, os, random, sys
random.seed(1)
docs = []
for f in sorted(glob.glob('/usr/share/games/fortunes/*')):
    if f.endswith(('.dat', '.u8')) or os.path.isdir(f): continue
    docs += [d.strip() for d in open(f, encoding='utf-8', errors='replace').read().split('\n%\n') if d.strip()]
code = [open(f, encoding='utf-8', errors='replace').read() for f in sorted(glob.glob('/usr/include/*.h'))[:400]]
target, size, n = float(sys.argv[1]) * 1e6, 0, 0
with open('corpus.jsonl', 'w') as out:
    while size < target:
        if random.random() < 0.15:
            text, src = random.choice(code), 'code'
        else:
            text, src = '\n\n'.join(random.choice(docs) for _ in range(random.randint(3, 12))), 'prose'
        line = json.dumps({"id": n, "text": text, "meta": {"source": src, "lang": "en", "score": round(random.random(), 3)}},
                          ensure_ascii=False) + '\n'
        out.write(line); size += len(line.encode()); n += 1
print(f"corpus.jsonl: {n} records, {size / 1e6:.1f} MB")
PY
gzip -k -6 corpus.jsonl && zstd -q -3 corpus.jsonl -o corpus.jsonl.zst || exit 1
"$zaya" tokenizer train --vocab-size 8192 --eos '<|eos|>' -o tok /usr/share/games/fortunes > /dev/null || exit 1
raw=$(stat -c %s corpus.jsonl)
TIMEFORMAT='%R %U %S'
run() { # run NAME THREADS INPUT -> "wall user sys" in $t
  rm -rf "out_$1"
  t=$( { time "$zaya" data prepare -q --threads "$2" -t tok/tokenizer.json -n c -o "out_$1" "$3" > "log_$1" 2>&1; } 2>&1 ) ||
    { echo "FAIL: prepare $1"; cat "log_$1"; fail=$((fail+1)); }
}
printf '%-22s %8s %8s %7s %10s %12s\n' input wall_s cpu_s cores MB/s MB/cpu_s
for spec in plain:1:corpus.jsonl plain:2:corpus.jsonl gz:2:corpus.jsonl.gz zst:2:corpus.jsonl.zst; do
  IFS=: read -r kind th in <<<"$spec"
  run "$kind$th" "$th" "$in"
  read -r wall user sys <<<"$t"
  awk -v n="$kind, $th threads" -v w="$wall" -v u="$user" -v s="$sys" -v b="$raw" \
    'BEGIN { printf "%-22s %8.2f %8.2f %7.2f %10.1f %12.1f\n", n, w, u + s, (u + s) / w, b / 1e6 / w, b / 1e6 / (u + s) }'
  [ "$kind$th" = plain2 ] && plain2_mbs=$(awk -v w="$wall" -v b="$raw" 'BEGIN { printf "%.1f", b / 1e6 / w }')
done
for d in out_plain2 out_gz2 out_zst2; do
  for f in out_plain1/*.ztok; do cmp -s "$f" "$d/$(basename "$f")" || { echo "FAIL: $d/$(basename "$f") differs"; fail=$((fail+1)); }; done
done
grep "documents" log_plain2
awk -v m="$plain2_mbs" 'BEGIN { exit !(m >= 20) }' && echo "ok: plain JSONL on 2 threads: $plain2_mbs MB/s (target 20)" ||
  { echo "FAIL: plain JSONL on 2 threads: $plain2_mbs MB/s < 20 MB/s"; fail=$((fail+1)); }
echo "data_prepare_bench: $fail failed"
[ "$fail" = 0 ]
