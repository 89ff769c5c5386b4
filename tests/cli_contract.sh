#!/usr/bin/env bash
# CLI contract: help exits 0, unknown commands and flags exit 2 naming the culprit.
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
expect 2 "unknown command 'frobnicate'" -- "$zaya" frobnicate
expect 2 "usage: zaya" -- "$zaya"
# Every listed command answers --help with exit 0, and rejects an unknown flag with exit 2.
walk() { # walk PREFIX...
  local cmds
  cmds=$("$zaya" "$@" --help 2>/dev/null | awk '/^commands:/{f=1;next} f&&/^  [a-z]/{print $1} /^$/{if(f)f=0}')
  if [ -z "$cmds" ]; then
    expect 0 "usage: zaya" -- "$zaya" "$@" --help
    expect 2 "unknown option '--no-such-flag'" -- "$zaya" "$@" --no-such-flag
    return
  fi
  for c in $cmds; do walk "$@" "$c"; done
}
walk
echo "cli_contract: $fail failed"
[ "$fail" = 0 ]
