#!/usr/bin/env bash
# Every public header compiles on its own, twice in one translation unit (its include guard), under
# strict ISO C17 with every warning an error and no feature-test macro from the includer: a header
# that needs _GNU_SOURCE / _POSIX_C_SOURCE (CLOCK_MONOTONIC, ssize_t, strdup...) or another header
# before it fails here. A planted header that needs _POSIX_C_SOURCE must fail, or the check is blind.
#   headers_alone.sh CC INCLUDE_DIR
set -u
cc="$1"
inc="$2"
flags=(-std=c17 -pedantic -Werror -Wall -Wextra -Wstrict-prototypes -U_GNU_SOURCE -U_POSIX_C_SOURCE
       -U_DEFAULT_SOURCE -fsyntax-only)
dir=$(mktemp -d /tmp/zaya_headers.XXXXXX)
trap 'rm -rf "$dir"' EXIT
compiles() { # compiles INCLUDE_DIR HEADER: 0 when "#include HEADER" twice compiles alone
  printf '#include "%s"\n#include "%s"\n' "$2" "$2" >"$dir/one.c"
  "$cc" "${flags[@]}" -I"$1" "$dir/one.c" 2>"$dir/err"
}
fail=0
n=0
for h in "$inc"/zaya/*.h; do
  n=$((n + 1))
  name="zaya/$(basename "$h")"
  if ! compiles "$inc" "$name"; then
    echo "FAIL: $name does not compile on its own under ${flags[*]}:"
    head -5 "$dir/err"
    fail=$((fail + 1))
  fi
done
mkdir -p "$dir/planted/zaya"
cat >"$dir/planted/zaya/planted.h" <<'H'
#include <time.h>
static inline long planted_now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec; }
H
if compiles "$dir/planted" zaya/planted.h; then
  echo "FAIL: a planted header that needs _POSIX_C_SOURCE compiled: the check does not see feature-test macros"
  fail=$((fail + 1))
fi
echo "headers_alone: $n headers, $fail failure(s)"
[ "$n" -gt 30 ] && [ "$fail" = 0 ]
