#!/usr/bin/env bash
# Every public header wraps its declarations for C++ callers: `extern "C" {` under #ifdef __cplusplus
# after its includes, and the closing brace before its include guard ends.
#   public_headers_guard.sh INCLUDE_DIR
set -u
fail=0
n=0
for h in "$1"/zaya/*.h; do
    n=$((n + 1))
    opens=$(grep -c '^extern "C" {$' "$h")
    closes=$(grep -c '^}$' "$h")
    cpp=$(grep -c '^#ifdef __cplusplus$' "$h")
    if [ "$opens" != 1 ] || [ "$cpp" != 2 ] || [ "$closes" -lt 1 ]; then
        echo "FAIL: $h: expected one extern \"C\" block under #ifdef __cplusplus (found $opens opening, $cpp #ifdef __cplusplus)"
        fail=$((fail + 1))
    fi
done
echo "public_headers_guard: $n headers, $fail without an extern \"C\" block"
[ "$n" -gt 0 ] && [ "$fail" = 0 ]
