#!/usr/bin/env bash
# Prepares the build dependencies a bare GPU machine lacks (docs/gpu.md): on a Debian machine that has
# them, downloads the .debs of zaya's -dev packages and their library dependencies (no root, no
# install) into DIR/debs, and extracts each into the private prefix DIR/prefix with dpkg -x (never
# into /). scripts/gpu-check.sh takes that prefix as ZAYA_DEPS_PREFIX.
#   gpu-deps.sh [DIR]       (default: build/gpu-deps, ignored by git)
#   gpu-deps.sh --extract DIR   only extract DIR/debs/*.deb into DIR/prefix (on the GPU machine)
set -euo pipefail
cd "$(dirname "$0")/.."
extract_only=0
if [ "${1:-}" = "--extract" ]; then extract_only=1; shift; fi
dir="${1:-build/gpu-deps}"
mkdir -p "$dir/debs" "$dir/prefix"
dir="$(cd "$dir" && pwd)"

# fortunes + fortunes-min: the text of the tests' tiny corpus (tests/tiny_corpus.sh; train_engine_cuda)
top=(pkgconf-bin libpkgconf3 libdnnl-dev libopenmpi-dev openmpi-bin libcjson-dev libxxhash-dev libzstd-dev zlib1g-dev
     fortunes fortunes-min)
# Libraries every CUDA image has (the C/C++ runtime, compilers, base system): not downloaded.
skip='^(libc6|libc6-dev|libc-dev-bin|libgcc|libstdc\+\+|libcrypt|libperl|libpython|libssl|libselinux|libpcre|zlib1g|libgomp1|libasan|libtsan|liblsan|libubsan|libhwasan|libitm|libquadmath|libatomic|libcc1|libisl|libmpc|libmpfr|libgmp|libdb5|libgdbm|libbz2|liblzma|libsqlite|libtinfo|libncurses|libreadline|libffi|libexpat|libuuid|libblkid|libmount|libudev|libsystemd|libcap|libgcrypt|libgpg|liblz4|libaudit|libpam|libsemanage|libsepol|libacl|libattr|libdebconf|libkrb|libk5|libgssapi|libcom-err|libkeyutils|libtirpc|libnsl|libbsd|libmd0|libx|libice|libsm6|libjs-|libstd|libgfortran|libctf|libbinutils|libjansson|libzstd1|libseccomp|libgnutls|libnettle|libhogweed|libidn|libp11|libtasn1|libunistring|libelf|libdw|libdebuginfod|libcurl|libnghttp|libpsl|librtmp|libssh|libldap|libsasl|libbrotli|libllvm|libflang|libmlir|libclang|libicu|libz3|libgprofng|libslang|libedit|libxml2|libomp|libobjc|libgphobos|libgccjit|libhsa|libdrm|libpciaccess|libnuma1)'

if [ "$extract_only" = 0 ]; then
  command -v apt-get >/dev/null || { echo "gpu-deps: needs apt-get (a Debian/Ubuntu machine with the packages' lists)"; exit 1; }
  pkgs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
           --no-enhances "${top[@]}" | grep -v '^ ' | grep -v '^<' | sed 's/:amd64$//' | sort -u |
         grep -E '^(lib|openmpi)' | grep -Ev "$skip" || true)
  pkgs="$(printf '%s\n' "${top[@]}") $pkgs"
  echo "gpu-deps: downloading $(echo $pkgs | wc -w) packages into $dir/debs"
  (cd "$dir/debs" && apt-get download $(echo $pkgs | tr ' ' '\n' | sort -u) >/dev/null)
fi
n=0
for deb in "$dir"/debs/*.deb; do
  dpkg -x "$deb" "$dir/prefix"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "gpu-deps: no .deb in $dir/debs"; exit 1; }
# Absolute symlinks inside the packages (lib*.so -> /usr/lib/...) must point into the prefix.
find "$dir/prefix" -type l | while read -r l; do
  t=$(readlink "$l")
  case "$t" in /*) ln -sfn "$dir/prefix$t" "$l";; esac
done
du -sh "$dir/debs" "$dir/prefix" | sed 's/^/gpu-deps: /'
echo "gpu-deps: $n packages extracted; use ZAYA_DEPS_PREFIX=$dir/prefix scripts/gpu-check.sh OUTDIR"
