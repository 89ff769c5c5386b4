#!/usr/bin/env bash
# Fresh machine -> dependencies installed, zaya built, the main job run on its built-in default.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh Release build
out="${1:-out/train}"
./build/zaya train -o "$out"
