#!/usr/bin/env bash
# Installs every build and test dependency of zaya from Debian's archive.
# Idempotent: packages already present are skipped by apt. Needs root (or sudo).
set -euo pipefail

pkgs=(
  build-essential cmake pkg-config
  libdnnl-dev                       # matmul (f32, bf16) primitives
  libopenmpi-dev openmpi-bin        # distributed engine
  iproute2 util-linux               # the simulated cluster: ip netns, tc, nsenter, unshare (docs/cluster.md)
  libcjson-dev                      # JSON configs and results
  libxxhash-dev                     # checkpoint checksums
  zlib1g-dev libzstd-dev zstd       # data prepare: .jsonl.gz / .jsonl.zst input (zstd CLI: tests)
  gnuplot-nox                       # PNG plots
  python3 python3-numpy python3-torch  # test-only reference implementations
  python3-pip                       # PyPI packages below (HF tokenizers: not packaged by Debian 12)
  python3-venv                      # --hf: build/hfvenv with transformers for the checkpoint export test
  fortunes                          # tokenizer test/benchmark corpus (/usr/share/games/fortunes)
  clang libclang-rt-14-dev libomp-dev  # libFuzzer harnesses (tests labelled fuzz, docs/fuzzing.md)
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# PyPI packages for /usr/bin/python3 (test-only references); Debian 12's pip needs
# --break-system-packages to install outside a venv.
# unicodedata2 16.0.0: the Unicode version of HF's regex engine, for scripts/gen_unicode_tables.py.
pip_pkgs=("tokenizers>=0.20,<1" "unicodedata2==16.0.0")
install_pip() {
  if ! /usr/bin/python3 -c "import tokenizers, unicodedata2" 2>/dev/null; then
    echo "setup: pip installing ${pip_pkgs[*]}"
    $SUDO /usr/bin/python3 -m pip install -q --break-system-packages --root-user-action=ignore "${pip_pkgs[@]}"
  fi
}

# --hf: a venv with Hugging Face transformers (model_type zaya needs transformers >= 5, torch >= 2.6;
# Debian's torch is 1.13) for the ckpt_transformers test. About 5.6 GB (PyPI's torch pulls CUDA
# wheels); the test is skipped without it. Run from the repository root.
install_hf() {
  if [ ! -x build/hfvenv/bin/python ]; then
    /usr/bin/python3 -m venv build/hfvenv
  fi
  if ! build/hfvenv/bin/python -c "import transformers.models.zaya" 2>/dev/null; then
    echo "setup: pip installing torch, transformers, safetensors into build/hfvenv"
    build/hfvenv/bin/pip install -q "torch>=2.6" "transformers>=5.24" safetensors numpy
  fi
}
want_hf=0
for a in "$@"; do [ "$a" = "--hf" ] && want_hf=1; done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all Debian dependencies present"
  install_pip
  if [ $want_hf -eq 1 ]; then install_hf; fi
  exit 0
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_pip
if [ $want_hf -eq 1 ]; then install_hf; fi
