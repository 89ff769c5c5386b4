#!/usr/bin/env bash
# Small defaults that must hold (issue "defaults that hold"): numeric options out of range are usage
# errors naming the flag (--cp 0, --steps 0, --threads 0/-1/99999 for train, generate and data
# prepare, --max-restarts -1), train --seed sets the run's seed, generate --no-bos drops the bos, a one-step run's plots raise no
# gnuplot warning on stderr, a clean supervised attempt leaves no process to kill, and --engine with --cp (under mpirun) trains with one deprecation warning.
#   defaults_cli.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_defaults.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
usage() { # usage FLAG CMD...: exit 2 and the message names FLAG and "out of range"
  local flag=$1; shift
  local out rc; out=$("$zaya" "$@" 2>&1); rc=$?
  check "zaya $* -> exit 2 naming $flag (rc $rc)" '[ $rc = 2 ] && grep -q -- "option .$flag.: .* is out of range" <<<"$out"'
}
usage --cp train --cp 0
usage --cp train --cp -1
usage --steps study --study attention --steps 0
for t in 0 -1 99999; do
  usage --threads train --threads $t
  usage --threads generate --threads $t -p x -t tok.json
  usage --threads data prepare --threads $t -o "$dir/never" "$dir"
done
check "data prepare --threads 99999 wrote nothing" '[ ! -e "$dir/never" ]'
usage --max-restarts supervise --max-restarts -1 -- true
usage --samples train --samples 6
usage --seed train --seed -2
out=$("$zaya" supervise --hang-floor 0 -- true 2>&1); rc=$?
check "supervise --hang-floor 0 names the flag (rc $rc)" '[ $rc = 2 ] && grep -q -- "--hang-floor must be > 0" <<<"$out"'

"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" > /dev/null 2>&1 || { echo "corpus preparation failed"; exit 1; }
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q)
"$zaya" train "${C[@]}" --max-steps 1 -o "$dir/one" > "$dir/one.out" 2> "$dir/one.err"; rc=$?
check "a one-step run (rc $rc): no gnuplot warning on stderr" '[ $rc = 0 ] && ! grep -qi "warning.*range\|gnuplot" "$dir/one.err"'
[ $rc = 0 ] || tail -5 "$dir/one.err"
"$zaya" train "${C[@]}" --max-steps 2 --seed 99 -o "$dir/s99" > /dev/null 2>&1; rc1=$?
"$zaya" train "${C[@]}" --max-steps 2 -o "$dir/sdef" > /dev/null 2>&1; rc2=$?
seed() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['seed'])" "$1/run.json" 2>/dev/null; }
loss0() { python3 -c "import json,sys; print(next(json.loads(l)['loss'] for l in open(sys.argv[1]) if '\"loss\"' in l))" "$1/metrics.jsonl" 2>/dev/null; }
check "train --seed 99: run.json records seed 99, the run file's otherwise ($(seed "$dir/sdef"))" \
  '[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ "$(seed "$dir/s99")" = 99 ] && [ "$(seed "$dir/sdef")" != 99 ]'
check "train --seed changes the initialization (first loss $(loss0 "$dir/s99") vs $(loss0 "$dir/sdef"))" \
  '[ -n "$(loss0 "$dir/s99")" ] && [ "$(loss0 "$dir/s99")" != "$(loss0 "$dir/sdef")" ]'
out=$(mpirun -np 2 --allow-run-as-root --oversubscribe "$zaya" train "${C[@]}" --threads 1 --engine --cp 2 --max-steps 1 -o "$dir/eng" 2>&1); rc=$?
check "--engine --cp 2: trains (the flag is a deprecated no-op, said once) (rc $rc)" \
  '[ $rc = 0 ] && [ "$(grep -c -- "--engine is the default now" <<<"$out")" = 1 ] && ! grep -q -- "--device cpu" <<<"$out"'

out=$("$zaya" supervise -o "$dir/sv/sup" -- "$zaya" train "${C[@]}" --max-steps 2 -o "$dir/sv/train" 2>&1); rc=$?
check "a clean supervised attempt (rc $rc) leaves no process behind (no leftover killed)" '[ $rc = 0 ] && ! grep -q "leftover" <<<"$out"'
pre() { "$zaya" generate --config "$dir/config.json" --random-init 1 -t "$dir/data/tokenizer.json" -p "the fox" -n 2 \
  --temperature 0 "$@" 2>&1 >/dev/null | sed -n 's/^prefill: \([0-9]*\) tokens.*/\1/p'; }
a=$(pre); b=$(pre --no-bos)
check "generate prepends bos by default and not with --no-bos (prefill $a vs $b tokens)" '[ -n "$a" ] && [ -n "$b" ] && [ "$a" = $((b + 1)) ]'

echo "defaults_cli: $fail failed"
[ $fail = 0 ]
