#!/usr/bin/env bash
# Configures and builds one build type into its own directory: build.sh [Release|Debug|Sanitize] [dir]
set -euo pipefail
cd "$(dirname "$0")/.."
type="${1:-Release}"
dir="${2:-build}"
[ "$type" = Sanitize ] && [ "$dir" = build ] && dir=build-sanitize
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE="$type" ${ZAYA_CMAKE_ARGS:-} >/dev/null
cmake --build "$dir" -j "$(nproc)"
