#!/usr/bin/env bash
# zaya tokenizer through the real binary.
#   tokenizer_cli.sh ZAYA WORKDIR         train/encode/decode round trips and error exits (unit)
#   tokenizer_cli.sh ZAYA WORKDIR bench   encoding MB/s vs HF tokenizers on licences + fortunes (bench)
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
  # Fortune texts (not the .dat indexes, nor the .u8 links to the same texts) and the licences.
  inputs=(/usr/share/common-licenses)
  [ -d /usr/share/games/fortunes ] &&
    mapfile -t -O 1 inputs < <(find /usr/share/games/fortunes -type f ! -name '*.dat' ! -name '*.u8' | sort)
  expect 0 "training time" -- "$zaya" tokenizer train --vocab-size 8192 --eos '<|endoftext|>' -o "$work/tok" "${inputs[@]}"
  "$zaya" tokenizer bench -t "$work/tok/tokenizer.json" --repeat 3 -o "$work/bench" "${inputs[@]}" || fail=$((fail+1))
  echo "tokenizer_bench: $fail failed"
  [ "$fail" = 0 ]
  exit
fi

# A small corpus made here: repeated English-like lines plus the licences.
mkdir -p "$work/corpus/sub"
for i in $(seq 1 200); do echo "The quick brown fox $i jumps over the lazy dog's back; it's $((i * 7)) metres."; done \
  > "$work/corpus/a.txt"
cp /usr/share/common-licenses/GPL-3 "$work/corpus/sub/"
tok="$work/tok/tokenizer.json"
expect 0 "training time" -- "$zaya" tokenizer train --vocab-size 600 --bos '<|bos|>' --eos '<|eos|>' -o "$work/tok" "$work/corpus"
grep -q '"vocab_size":	600' "$work/tok/train_stats.json" || { echo "FAIL: train_stats.json"; fail=$((fail+1)); }

# Round trips through the CLI: text, and random bytes from a file (NUL, 0xFF, broken UTF-8).
text="Hello   world, it's 2026!  Ünïcödé 東京 😀"
ids=$("$zaya" tokenizer encode -t "$tok" --text "$text") || fail=$((fail+1))
back=$("$zaya" tokenizer decode -t "$tok" $ids)
[ "$back" = "$text" ] && echo "ok: text round trip" || { echo "FAIL: text round trip: '$back'"; fail=$((fail+1)); }
head -c 20000 /dev/urandom > "$work/random.bin"
"$zaya" tokenizer encode -t "$tok" "$work/random.bin" > "$work/random.ids" &&
  "$zaya" tokenizer decode -t "$tok" < "$work/random.ids" > "$work/random.out" &&
  cmp -s "$work/random.bin" "$work/random.out" && echo "ok: random bytes round trip" ||
  { echo "FAIL: random bytes round trip"; fail=$((fail+1)); }
expect 0 "^<|bos|>a<|eos|>\$" -- "$zaya" tokenizer decode -t "$tok" 598 97 599
# Special-token text: ordinary text by default, its id with --parse-special.
expect 0 "^598 97\$" -- "$zaya" tokenizer encode -t "$tok" --parse-special --text '<|bos|>a'
bos_plain=$("$zaya" tokenizer encode -t "$tok" --text '<|bos|>a')
case " $bos_plain " in *" 598 "*) echo "FAIL: special text injected without --parse-special"; fail=$((fail+1));; *) echo "ok: no injection";; esac
# An unsupported pipeline piece is an error naming its JSON path.
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["normalizer"]={"type":"Sequence","normalizers":[{"type":"Replace","pattern":{"String":" "},"content":"_"},{"type":"Lowercase"}]}; json.dump(d,open(sys.argv[2],"w"))' "$tok" "$work/lowercase.json"
expect 1 "normalizer.normalizers\[1\].type: 'Lowercase' is not supported" -- "$zaya" tokenizer encode -t "$work/lowercase.json" --text hi

# Errors: usage (2) and runtime (1), naming the problem.
expect 2 "--vocab-size is required" -- "$zaya" tokenizer train -o "$work/x" "$work/corpus"
expect 2 "give at least one input PATH" -- "$zaya" tokenizer train --vocab-size 300
expect 1 "zaya tokenizer train: error: .*vocab size 10 must be" -- "$zaya" tokenizer train --vocab-size 10 -o "$work/x" "$work/corpus"
expect 1 "zaya tokenizer train: error: .*/no/such/dir" -- "$zaya" tokenizer train --vocab-size 300 -o "$work/x" /no/such/dir
expect 2 "either --text STR or one FILE" -- "$zaya" tokenizer encode -t "$tok" --text hi "$work/random.bin"
expect 1 "zaya tokenizer encode: error: cannot open" -- "$zaya" tokenizer encode -t "$work/none.json" --text hi
expect 1 "id 600 at position 1 is outside the vocabulary" -- "$zaya" tokenizer decode -t "$tok" 5 600
expect 1 "'x12' is not a token id" -- "$zaya" tokenizer decode -t "$tok" 5 x12
head -c 3000 "$tok" > "$work/truncated.json"
expect 1 "malformed JSON" -- "$zaya" tokenizer encode -t "$work/truncated.json" --text hi
expect 0 "zaya " -- "$zaya" tokenizer bench -t "$tok" --no-hf --repeat 1 -o "$work/bench" "$work/corpus"
[ -f "$work/bench/bench.json" ] && echo "ok: bench.json" || { echo "FAIL: bench.json missing"; fail=$((fail+1)); }
echo "tokenizer_cli: $fail failed"
[ "$fail" = 0 ]
