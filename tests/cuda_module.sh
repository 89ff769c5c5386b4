#!/usr/bin/env bash
# The CUDA module (docs/gpu.md, "The CUDA module"): the zaya binary links no CUDA library, a CPU
# command never loads one, and a command that asks for a device opens libzaya_cuda.so then, or fails
# at once (exit 1, nothing written) with the dynamic loader's message naming what is missing.
#   cuda_module.sh ZAYA CC BUILT   (BUILT: 1 when CUDA was built, so the module sits next to ZAYA)
set -u
zaya="$1"
cc="$2"
built="$3"
dir=$(mktemp -d /tmp/zaya_cuda_module.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
cuda_libs='libcudart|libcublas|libcublasLt|libnccl|libcudnn|libcuda\.so|libzaya_cuda'
module="$(dirname "$zaya")/libzaya_cuda.so"

# 1. No NEEDED entry of the binary names a CUDA library (and the grep finds them where they are).
needed=$(readelf -d "$zaya" | grep NEEDED)
check "readelf -d zaya lists NEEDED entries" '[ -n "$needed" ]'
check "zaya has no NEEDED CUDA / NCCL library" '! grep -Eq "$cuda_libs" <<<"$needed"'
if [ "$built" = 1 ]; then
  check "the module exists next to zaya" '[ -f "$module" ]'
  check "the module's NEEDED entries name libcudart and libcublasLt" \
    'readelf -d "$module" | grep NEEDED | grep -q libcudart && readelf -d "$module" | grep NEEDED | grep -q libcublasLt'
  exports=$(nm -D --defined-only "$module" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v '^_' | sort | tr '\n' ' ')
  check "the module exports only zaya_gpu_module_entry (got: $exports)" '[ "$exports" = "zaya_gpu_module_entry " ]'
fi

# 2. CPU commands load no CUDA library (the dynamic loader lists every object it opens, dlopen too).
for args in "help" "--version" "train --bogus-flag" "model info --help"; do
  libs=$(LD_DEBUG=files "$zaya" $args 2>&1 >/dev/null | grep -o 'file=[^ ]*' | sort -u)
  check "zaya $args: the loader's trace lists libraries" 'grep -q "libc.so" <<<"$libs"'
  check "zaya $args: no CUDA library loaded" '! grep -Eq "$cuda_libs" <<<"$libs"'
done

# 3. The module hidden: every device command fails at once, exit 1, naming the path; nothing written.
missing="$dir/nowhere/libzaya_cuda.so"
if [ "$built" = 1 ]; then want="$missing"; else want="built without CUDA"; fi
expect_fail() { # NAME ARGS...: exit 1 and the message names $want
  local name="$1"; shift
  out=$(ZAYA_CUDA_MODULE="$missing" "$@" 2>&1); rc=$?
  check "$name: exit 1 (got $rc)" '[ $rc = 1 ]'
  check "$name: names '$want'" 'grep -qF "$want" <<<"$out" || { echo "$out" | tail -3; false; }'
}
expect_fail "train --device cuda" "$zaya" train --device cuda -o "$dir/train" --max-steps 1 -q
check "train --device cuda: no output directory written" '[ ! -e "$dir/train" ]'
expect_fail "bench gemm --device cuda" "$zaya" bench gemm --device cuda -o "$dir/gemm"
expect_fail "bench mem --device cuda" "$zaya" bench mem --device cuda -o "$dir/mem"
if [ "$built" = 1 ]; then
  expect_fail "bench coll --backend nccl" "$zaya" bench coll --backend nccl -b 8 -e 8 -n 1 -w 0
  out=$(ZAYA_CUDA_MODULE="$missing" "$zaya" train --device cuda -o "$dir/train" --max-steps 1 -q 2>&1)
  check "the message says what could not be opened" 'grep -q "cannot open shared object file" <<<"$out"'
fi

# 4. A module whose own dependency is missing (a machine without the CUDA libraries): the message
#    names that library. A stand-in module links a library that is then deleted.
if [ "$built" = 1 ]; then
  printf 'int zaya_fake_dep(void) { return 1; }\n' >"$dir/dep.c"
  printf 'int zaya_fake_dep(void);\nint zaya_gpu_module_entry(void) { return zaya_fake_dep(); }\n' >"$dir/mod.c"
  mkdir -p "$dir/fake"
  if "$cc" -shared -fPIC -o "$dir/fake/libzaya_missing_cudart.so" "$dir/dep.c" &&
     "$cc" -shared -fPIC -o "$dir/fake/libzaya_cuda.so" "$dir/mod.c" -L"$dir/fake" -lzaya_missing_cudart; then
    rm -f "$dir/fake/libzaya_missing_cudart.so"
    out=$(ZAYA_CUDA_MODULE="$dir/fake/libzaya_cuda.so" "$zaya" train --device cuda -o "$dir/t2" --max-steps 1 -q 2>&1)
    rc=$?
    check "missing dependency: exit 1 (got $rc)" '[ $rc = 1 ]'
    check "missing dependency: names libzaya_missing_cudart.so" 'grep -q "libzaya_missing_cudart.so" <<<"$out" || { echo "$out"; false; }'
  else
    echo "FAIL: could not build the stand-in module with $cc"; fail=$((fail+1))
  fi
  # A shared object that is not a zaya module.
  printf 'int zaya_something_else(void) { return 0; }\n' >"$dir/other.c"
  "$cc" -shared -fPIC -o "$dir/fake/other.so" "$dir/other.c"
  out=$(ZAYA_CUDA_MODULE="$dir/fake/other.so" "$zaya" bench gemm --device cuda -o "$dir/g2" 2>&1); rc=$?
  check "not a module: exit 1 naming the entry symbol (got $rc)" '[ $rc = 1 ] && grep -q "zaya_gpu_module_entry" <<<"$out"'
fi

# 5. Asked for a device, zaya opens the module beside it (on this machine the CUDA libraries may be
#    present without a GPU: then the device count is 0, and the message says so, not "module").
if [ "$built" = 1 ]; then
  libs=$(LD_DEBUG=files "$zaya" bench mem --device cuda --ntimes 2 --array-bytes 64M --copy-bytes 1M -o "$dir/m3" \
         2>&1 >/dev/null | grep -o 'file=[^ ]*' | sort -u)
  check "bench mem --device cuda opens libzaya_cuda.so" 'grep -q "libzaya_cuda.so" <<<"$libs"'
  check "... and through it libcudart" 'grep -q "libcudart" <<<"$libs"'
fi

echo "cuda_module: $fail failure(s)"
[ "$fail" = 0 ]
