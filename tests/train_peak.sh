#!/usr/bin/env bash
# The matmul peak MFU is computed against, and its printed source: --peak-gflops; a machine profile
# (--profile, ZAYA_PROFILE); otherwise measured at start-up once, labelled so, cached per host with
# its date and source, and the cached number used (and named) by the next run.
#   train_peak.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_train_peak.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" > /dev/null 2>&1 || { echo "corpus preparation failed"; exit 1; }
unset ZAYA_PROFILE ZAYA_HEARTBEAT_DIR
export ZAYA_PEAK_CACHE="$dir/cache"
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 0 --eval-batches 1 --samples 0 --max-steps 2
   --log-every 100 --no-resume --dtype f32)
peak() { sed -n 's/^MFU against a matmul peak of \([0-9]*\) GFLOP\/s: .*/\1/p' "$1"; }
cache="$dir/cache/matmul-peak-$(hostname).json"

"$zaya" train "${C[@]}" -o "$dir/a" > "$dir/a.log" 2>&1; rc=$?
check "no profile, no cache: measured at start-up, labelled, cached (rc $rc)" \
  '[ $rc = 0 ] && grep -q "^MFU against .*: measured at start-up, .*moves with the machine.s load; cached for later runs in $cache" "$dir/a.log"'
check "the cache holds the f32 peak with its date and source" 'python3 -c "
import json,sys; e=json.load(open(sys.argv[1]))[\"f32\"]
sys.exit(0 if e[\"gflops\"] > 0 and e[\"measured\"][:2] == \"20\" and \"start-up\" in e[\"source\"] else 1)" "$cache"'
"$zaya" train "${C[@]}" -o "$dir/b" > "$dir/b.log" 2>&1; rc=$?
check "the next run takes the cached peak, naming host, date and file (rc $rc)" \
  '[ $rc = 0 ] && grep -q "^MFU against .*: cached for host $(hostname): measured 20.* by zaya train.s start-up measurement .*; $cache" "$dir/b.log" && [ "$(peak "$dir/a.log")" = "$(peak "$dir/b.log")" ]'
"$zaya" train "${C[@]}" --profile "$(dirname "$0")/fixtures/size/profile-host.json" -o "$dir/c" > "$dir/c.log" 2>&1; rc=$?
want=$(python3 -c "import json,sys; print('%.0f' % json.load(open(sys.argv[1]))['gemm_peak_gflops']['f32'])" "$(dirname "$0")/fixtures/size/profile-host.json")
check "--profile: the profile's f32 GEMM peak ($want), named with its host and date (rc $rc)" \
  '[ $rc = 0 ] && [ "$(peak "$dir/c.log")" = "$want" ] && grep -q "^MFU against .*: f32 GEMM peak of the machine profile .*profile-host.json (zaya bench all on " "$dir/c.log"'
ZAYA_PROFILE="$(dirname "$0")/fixtures/size/profile-host.json" "$zaya" train "${C[@]}" -o "$dir/d" > "$dir/d.log" 2>&1; rc=$?
check "ZAYA_PROFILE does the same (rc $rc)" '[ $rc = 0 ] && [ "$(peak "$dir/d.log")" = "$want" ]'
"$zaya" train "${C[@]}" --peak-gflops 123 -o "$dir/e" > "$dir/e.log" 2>&1; rc=$?
check "--peak-gflops wins and is named (rc $rc)" '[ $rc = 0 ] && grep -q "^MFU against a matmul peak of 123 GFLOP/s: given by --peak-gflops" "$dir/e.log"'
out=$("$zaya" train "${C[@]}" --profile "$dir/missing.json" -o "$dir/f" 2>&1); rc=$?
check "a missing --profile: exit 1 naming it (rc $rc)" '[ $rc = 1 ] && grep -q "missing.json" <<<"$out"'

echo "train_peak: $fail failed"
[ $fail = 0 ]
