#!/usr/bin/env bash
# Installs every build and test dependency of zaya from Debian's archive.
# Idempotent: packages already present are skipped by apt. Needs root (or sudo).
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  libdnnl-dev                       # matmul (f32, bf16) primitives
  libopenmpi-dev openmpi-bin        # distributed engine
  libcjson-dev                      # JSON configs and results
  libxxhash-dev                     # checkpoint checksums
  gnuplot-nox                       # PNG plots
  python3 python3-numpy python3-torch  # test-only reference implementations
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
