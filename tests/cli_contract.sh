#!/usr/bin/env bash
# CLI contract: help exits 0, unknown commands and flags exit 2 naming the culprit, and every option
# listed in every command's --help parses: each short option sets exactly what its long spelling
# sets, in every form (-x V, -xV, --name V, --name=V), repeatable ones accumulate in any mix of the
# two spellings, and no short or long name is listed twice. The parser's ZAYA_CLI_PARSE_ONLY mode
# prints the parsed values instead of running the command.
set -u
zaya="$1"
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | head -5; fail=$((fail+1))
  else echo "ok: $*"; fi
}
expect 0 "usage: zaya" -- "$zaya" --help
expect 0 "usage: zaya" -- "$zaya" help
expect 0 "zaya 0" -- "$zaya" --version
# a shared machine by default: zaya runs with a passive OpenMP wait policy unless the user chose one
expect 0 "wait policy: passive (zaya's default" -- env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u ZAYA_WAIT_POLICY_DEFAULT "$zaya" --version
expect 0 "OMP_WAIT_POLICY=active GOMP_SPINCOUNT=(unset) (set by the user)" -- env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active "$zaya" --version
expect 0 "GOMP_SPINCOUNT=5000 (set by the user)" -- env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=5000 "$zaya" --version
expect 2 "unknown command 'frobnicate'" -- "$zaya" frobnicate
expect 2 "usage: zaya" -- "$zaya"
# Every listed command answers --help with exit 0, and rejects an unknown flag with exit 2.
parsed() { ZAYA_CLI_PARSE_ONLY=1 "$zaya" "$@" 2>&1; }
value_for() { # a value every flag of KIND accepts
  case "$1" in int|i64) echo 7 ;; double) echo 0.25 ;; bytes) echo 4K ;; *) echo "v_$2" ;; esac
}
check_options() { # check_options CMD...
  local help dump base line short long kind v a b c d want
  help=$("$zaya" "$@" --help 2>&1)
  base=$(parsed "$@")
  local dups
  dups=$(grep -oE '^  -[A-Za-z0-9](,|  | [A-Z])' <<<"$help" | cut -c3-4 | sort | uniq -d)
  [ -n "$dups" ] && { echo "FAIL: '$*' lists short option(s) $dups twice"; fail=$((fail+1)); }
  dups=$(grep -oE '^  (-[A-Za-z0-9], )?--[a-z0-9_-]+' <<<"$help" | grep -oE -- '--[a-z0-9_-]+' | sort | uniq -d)
  [ -n "$dups" ] && { echo "FAIL: '$*' lists long option(s) $dups twice"; fail=$((fail+1)); }
  # every listed long option is one the parser knows (the dump names each flag with its kind)
  while read -r long; do
    [ "$long" = "--help" ] && continue
    grep -q -- "^$long " <<<"$base" || { echo "FAIL: '$*' lists $long but the parser has no such flag"; fail=$((fail+1)); }
  done < <(grep -oE '^  (-[A-Za-z0-9], )?--[a-z0-9_-]+' <<<"$help" | grep -oE -- '--[a-z0-9_-]+')
  while IFS= read -r line; do
    short=$(cut -c4 <<<"$line"); long=$(grep -oE -- '--[a-z0-9_-]+' <<<"$line" | head -1)
    [ "$short" = h ] && continue
    kind=$(grep -- "^$long " <<<"$base" | awk '{print $2}')
    [ -z "$kind" ] && continue  # reported above
    if [ "$kind" = bool ]; then
      a=$(parsed "$@" "-$short"); b=$(parsed "$@" "$long")
      want="$long bool 1"
      if [ "$a" != "$b" ] || ! grep -qx -- "$want" <<<"$a"; then
        echo "FAIL: '$* -$short' and '$* $long' parse differently or do not set it:"; diff <(echo "$a") <(echo "$b") | head -4
        fail=$((fail+1)); continue
      fi
    else
      v=$(value_for "$kind" "$short")
      a=$(parsed "$@" "-$short" "$v"); b=$(parsed "$@" "$long" "$v")
      c=$(parsed "$@" "-$short$v"); d=$(parsed "$@" "$long=$v")
      if [ "$a" != "$b" ] || [ "$a" != "$c" ] || [ "$a" != "$d" ] || [ "$a" = "$base" ]; then
        echo "FAIL: '$* -$short $v' does not parse as '$* $long $v' (or sets nothing):"; diff <(echo "$a") <(echo "$b") | head -4
        fail=$((fail+1)); continue
      fi
      if [ "$kind" = list ]; then
        a=$(parsed "$@" "-$short" x1 "$long" x2 "-${short}x3" "$long=x4")
        want="$long list ['x1' 'x2' 'x3' 'x4']"
        grep -qxF -- "$want" <<<"$a" || { echo "FAIL: '$*': repeated -$short/$long do not accumulate: $(grep -- "^$long " <<<"$a")"; fail=$((fail+1)); continue; }
      fi
    fi
    echo "ok: $* -$short = $long"
  done < <(grep -E '^  -[A-Za-z0-9], --[a-z0-9_-]+' <<<"$help")
  # repeatable long-only options accumulate as well
  while read -r long; do
    a=$(parsed "$@" "$long" x1 "$long=x2")
    grep -qxF -- "$long list ['x1' 'x2']" <<<"$a" || { echo "FAIL: '$*': repeated $long do not accumulate"; fail=$((fail+1)); }
  done < <(grep -E '^  --[a-z0-9_-]+ .*\[repeatable' <<<"$help" | grep -oE -- '^  --[a-z0-9_-]+' | tr -d ' ')
  # every range-checked integer option refuses the values just outside its range, naming itself
  local lo hi out rc
  while read -r long lo hi; do
    for v in $((lo - 1)) $([ "$hi" -lt 2147483647 ] && echo $((hi + 1))); do
      out=$(ZAYA_CLI_PARSE_ONLY=1 "$zaya" "$@" "$long" "$v" 2>&1); rc=$?
      if [ $rc != 2 ] || ! grep -q -- "option '$long': $v is out of range" <<<"$out"; then
        echo "FAIL: '$* $long $v' -> rc=$rc, not a usage error naming $long and its range: $(head -1 <<<"$out")"; fail=$((fail+1))
      fi
    done
  done < <(sed -n 's/^\(--[a-z0-9_-]*\) [a-z0-9]* .* range \(-\{0,1\}[0-9]*\) \([0-9]*\)$/\1 \2 \3/p' <<<"$base")
}
walk() { # walk PREFIX...
  local cmds
  cmds=$("$zaya" "$@" --help 2>/dev/null | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1} /^$/{if(f)f=0}')
  if [ -z "$cmds" ]; then
    expect 0 "usage: zaya" -- "$zaya" "$@" --help
    expect 2 "unknown option '--no-such-flag'" -- "$zaya" "$@" --no-such-flag
    check_options "$@"
    ncmd=$((ncmd+1))
    return
  fi
  for c in $cmds; do walk "$@" "$c"; done
}
ncmd=0
walk
[ "$ncmd" -ge 30 ] || { echo "FAIL: only $ncmd commands found under zaya --help"; fail=$((fail+1)); }
echo "cli_contract: $ncmd commands, $fail failed"
[ "$fail" = 0 ]
