#!/usr/bin/env bash
# Fuzzing driver (docs/fuzzing.md).
#   fuzz.sh build SRC_DIR FUZZ_DIR         configure + build the ZAYA_FUZZ=ON tree with clang, write seeds
#   fuzz.sh run FUZZ_DIR HARNESS [SECONDS] run one libFuzzer harness (default ZAYA_FUZZ_SECONDS or 8 s)
#   fuzz.sh replay BIN_DIR SEEDS_EXE SRC_DIR HARNESS...   replay seeds + reproducers without libFuzzer
# build and run exit 77 (skipped) when clang cannot link -fsanitize=fuzzer or the tree is missing.
set -u
here="$(cd "$(dirname "$0")" && pwd)"
cmd="${1:-}"; shift || true

case "$cmd" in
build)
  src="$1"; dir="$2"
  cc="${ZAYA_FUZZ_CC:-clang}"
  if ! command -v "$cc" >/dev/null 2>&1; then echo "fuzz: $cc not found: skipped (apt-get install clang libclang-rt-14-dev)"; exit 77; fi
  probe=$(mktemp -d /tmp/zaya_fuzz_probe.XXXXXX)
  printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' > "$probe/p.c"
  if ! "$cc" -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>"$probe/err"; then
    echo "fuzz: $cc cannot link -fsanitize=fuzzer: skipped"; cat "$probe/err"; rm -rf "$probe"; exit 77
  fi
  rm -rf "$probe"
  CC="$cc" cmake -S "$src" -B "$dir" -DZAYA_FUZZ=ON -DCMAKE_BUILD_TYPE=Fuzz >/dev/null || exit 1
  cmake --build "$dir" --target zaya_fuzz -j "$(nproc)" 2>&1 | grep -E "error|warning" ; [ "${PIPESTATUS[0]}" = 0 ] || exit 1
  rm -rf "$dir/fuzz-corpus"
  "$dir/tests/fuzz/zaya_fuzz_seeds" "$dir/fuzz-corpus" "$src" || exit 1
  ;;
run)
  dir="$1"; h="$2"; secs="${3:-${ZAYA_FUZZ_SECONDS:-8}}"
  bin="$dir/tests/fuzz/fuzz_$h"
  if [ ! -x "$bin" ]; then echo "fuzz: $bin not built: skipped"; exit 77; fi
  live="$dir/fuzz-live/$h"; art="$dir/fuzz-artifacts"
  mkdir -p "$live" "$art"
  seeds=("$dir/fuzz-corpus/$h")
  [ -d "$here/regressions/$h" ] && seeds+=("$here/regressions/$h")
  # The first directory collects new coverage; seeds and reproducers are read only. -timeout: an
  # input that takes more than 10 s is a finding (the limit of "slower than 1 s per MB" for
  # -max_len 1 MB); -rss_limit_mb catches unchecked allocations.
  log="$dir/fuzz-artifacts/$h.log"
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 -print_final_stats=1 \
    -artifact_prefix="$art/$h-" ${ZAYA_FUZZ_FLAGS:-} "$live" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units/{print $2}' "$log")
  echo "fuzz_$h: rc=$rc, ${execs:-?} executions in ${secs} s (log: $log)"
  if [ "$rc" != 0 ]; then tail -40 "$log"; exit 1; fi
  ;;
replay)
  bindir="$1"; seeds_exe="$2"; src="$3"; shift 3
  tmp=$(mktemp -d /tmp/zaya_fuzz_replay.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  "$seeds_exe" "$tmp" "$src" || { echo "FAIL: seed writer"; exit 1; }
  fail=0
  for h in "$@"; do
    args=(-a "$tmp/$h")
    [ -d "$here/regressions/$h" ] && args+=(-r "$here/regressions/$h")
    if ! "$bindir/replay_$h" "${args[@]}"; then echo "FAIL: replay_$h"; fail=$((fail+1)); fi
  done
  echo "fuzz_replay: $fail failed"
  [ "$fail" = 0 ]
  ;;
*)
  echo "usage: fuzz.sh build SRC FUZZ_DIR | run FUZZ_DIR HARNESS [SECONDS] | replay BIN_DIR SEEDS_EXE SRC HARNESS..." >&2
  exit 2
  ;;
esac
