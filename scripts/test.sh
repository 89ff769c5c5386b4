#!/usr/bin/env bash
# The whole test suite: Release build (every test), then an ASan+UBSan build over the unit tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs="$(nproc)"

echo "== Release build: all tests"
bash scripts/build.sh Release build
(cd build && ctest --output-on-failure -j 1 --timeout 900 -LE bench)

echo "== Sanitizer build (ASan + UBSan): unit tests"
bash scripts/build.sh Sanitize build-sanitize
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
(cd build-sanitize && ctest --output-on-failure -L unit -j 1 --timeout 1800)
