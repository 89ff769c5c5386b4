#!/usr/bin/env bash
# The GPU check (docs/gpu.md): on a machine with an NVIDIA GPU, builds the CUDA code (Release, sm_90
# unless ZAYA_CUDA_ARCH says otherwise), runs every `gpu`-labelled ctest (the CUDA backend against the
# CPU one op by op, the trainer on the GPU against the CPU trainer), then short runs of bench gemm /
# bench mem / bench coll --backend nccl and bench train --device cuda (zaya1-small and a 1.0B-parameter
# config at seq 2048, against PyTorch eager on the same GPU). Meant to finish within 8 minutes on one H200.
#   scripts/gpu-check.sh OUTDIR
# OUTDIR receives gpu-check.log (every step's output), gemm.json, mem.json, coll.json, train-small.json,
# train-1b.json and summary.json (seven files). Exit 0 only when every step passed.
# Dependencies: the system's, or ZAYA_DEPS_PREFIX=DIR/prefix from scripts/gpu-deps.sh (extracted
# .debs of oneDNN, Open MPI, cJSON, xxHash, zstd, pkgconf for a machine without them or a network;
# with only DIR/debs present it extracts them first).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/gpu-check.sh OUTDIR}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
log="$out/gpu-check.log"
: >"$log"
t_start=$(date +%s)
say() { echo "== $* ($(($(date +%s) - t_start)) s)" | tee -a "$log"; }
status=0
step() { # step NAME TIMEOUT CMD...: runs, logs, records failure
  local name="$1" limit="$2"; shift 2
  say "$name"
  timeout "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "-- $name: exit $rc" >>"$log"
  [ $rc = 0 ] || { status=1; echo "== $name FAILED (exit $rc)" | tee -a "$log"; }
  return $rc
}

cmake_args=(-DCMAKE_BUILD_TYPE=Release -DZAYA_CUDA=ON -DZAYA_CUDA_ARCH="${ZAYA_CUDA_ARCH:-90}")
if [ -n "${ZAYA_DEPS_PREFIX:-}" ]; then
  mkdir -p "$ZAYA_DEPS_PREFIX"
  p="$(cd "$ZAYA_DEPS_PREFIX" && pwd)"
  if [ ! -d "$p/usr" ] && [ -d "$p/../debs" ]; then bash scripts/gpu-deps.sh --extract "$p/.." >>"$log" 2>&1; fi
  lib="$p/usr/lib/x86_64-linux-gnu"
  export PKG_CONFIG_LIBDIR="$lib/pkgconfig:$p/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$p"
  export LD_LIBRARY_PATH="$lib:$lib/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OPAL_PREFIX="$p/usr" PATH="$p/usr/bin:$PATH"
  [ -x "$p/usr/bin/pkgconf" ] && cmake_args+=(-DPKG_CONFIG_EXECUTABLE="$p/usr/bin/pkgconf")
  cmake_args+=(-DCMAKE_PREFIX_PATH="$p/usr" -DCMAKE_LIBRARY_PATH="$lib" -DCMAKE_INCLUDE_PATH="$p/usr/include"
               -DMPI_SKIP_COMPILER_WRAPPER=ON -DMPI_C_HEADER_DIR="$lib/openmpi/include" -DMPI_C_LIB_NAMES=mpi
               -DMPI_mpi_LIBRARY="$lib/openmpi/lib/libmpi.so" -DMPIEXEC_EXECUTABLE="$p/usr/bin/mpirun")
  [ -d "$p/usr/share/games/fortunes" ] && export ZAYA_FORTUNES_DIR="$p/usr/share/games/fortunes" # tests' corpus
  echo "deps from $p" >>"$log"
fi
# NCCL: the toolkit's, the system's, or the one of the nvidia-nccl Python wheel (libnccl.so.2 only).
if [ ! -e /usr/local/cuda/include/nccl.h ] && [ ! -e /usr/include/nccl.h ] && [ ! -e /usr/local/include/nccl.h ]; then
  w=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))" 2>/dev/null || true)
  if [ -n "$w" ] && [ -e "$w/include/nccl.h" ]; then
    lib2=$(ls "$w"/lib/libnccl.so* 2>/dev/null | head -1)
    cmake_args+=(-DNCCL_INCLUDE="$w/include" -DNCCL_LIB="$lib2")
    export LD_LIBRARY_PATH="$w/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "NCCL from the Python wheel: $w" >>"$log"
  fi
fi
command -v ninja >/dev/null && cmake_args+=(-G Ninja)
bdir="${ZAYA_GPU_BUILD_DIR:-build-gpu}"
{ nvidia-smi -L || true; nvcc --version | tail -1 || true; } >>"$log" 2>&1

step configure 120 cmake -S . -B "$bdir" "${cmake_args[@]}" || { echo "configure failed: see $log"; exit 1; }
grep -q "zaya: CUDA" "$log" || { status=1; say "nvcc not found: the CUDA layer was not built"; }
step build 300 cmake --build "$bdir" -j "$(nproc)" --target zaya gpu_check test_gpu test_gpu_module test_backend_cuda test_be_gemm test_be_ops test_be_cca || { echo "build failed: see $log"; exit 1; }
zaya="$bdir/zaya"
step "unit test_gpu" 60 "$bdir/tests/test_gpu"
# The CUDA module: opened only on a device request, its libraries mapped then (docs/gpu.md).
step "unit test_gpu_module" 60 "$bdir/tests/test_gpu_module"
step "cuda module" 120 tests/cuda_module.sh "$zaya" "${CC:-cc}" 1
say "ctest -L gpu"
(cd "$bdir" && timeout 300 ctest -L gpu --output-on-failure) >>"$log" 2>&1 || status=1
if grep -q "(Skipped)" "$log"; then status=1; say "gpu tests were SKIPPED: no CUDA device visible"; fi

tmp="$bdir/gpu-check-out"
rm -rf "$tmp"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "${ngpu:-0}" -ge 1 ] || ngpu=1
step "bench gemm" 150 "$zaya" bench gemm --device cuda --quick -n 10 -w 3 --out "$tmp/gemm"
step "bench mem" 90 "$zaya" bench mem --device cuda --ntimes 20 --out "$tmp/mem"
step "bench coll nccl" 150 "$zaya" bench coll --backend nccl -g "$ngpu" -b 8 -e 256M -f 4 -n 20 -w 5 --coll all -d all \
  --out "$tmp/coll"
# training steps on the engine vs PyTorch eager on the same GPU (bf16; f32 rows would double the time)
step "bench train small" 150 "$zaya" bench train --device cuda -c zaya1-small -b 8 -t 2048 --dtype bf16 -n 3 \
  --no-compile --torch-timeout 100 --out "$tmp/train-small"
step "bench train 1b" 180 "$zaya" bench train --device cuda -c bench/configs/z1b-h1024-l18-e16.json -b 8 -t 2048 \
  --dtype bf16 -n 3 --no-compile --torch-timeout 120 --out "$tmp/train-1b"
for f in gemm mem coll; do cp "$tmp/$f/$f.json" "$out/" 2>/dev/null || echo "no $f.json" >>"$log"; done
for f in small 1b; do cp "$tmp/train-$f/train.json" "$out/train-$f.json" 2>/dev/null || echo "no train-$f.json" >>"$log"; done

python3 - "$out" "$status" "$(($(date +%s) - t_start))" <<'PY' >>"$log" 2>&1
import json, os, sys
out, status, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(n):
    try: return json.load(open(os.path.join(out, n)))
    except Exception: return None
s = {"status": "ok" if status == 0 else "FAILED", "seconds": secs}
g = load("gemm.json")
if g:
    s["gpu"] = g["gpu"]["name"]
    s["gemm_peak_tflops_measured"] = g["peak_tflops_measured"]
    s["gemm_peak_tflops_datasheet"] = g["peak_tflops_datasheet"]
    s["gemm_wrong"] = g["wrong_total"]
    sq = [r for r in g["results"] if r["dtype"] == "bf16" and r["m"] == r["n"] == r["k"]]
    if sq:  # the issue's target shape, 8192^3, when it ran; else the largest square
        b = ([r for r in sq if r["m"] == 8192] or [max(sq, key=lambda r: r["m"])])[0]
        s["gemm_bf16_square"] = {"n": b["m"], "tflops": b["tflops"], "pct_datasheet": b["pct_datasheet_peak"],
                                 "algo": b["algo"]}
m = load("mem.json")
if m:
    s["mem_triad_GBps"] = m["stream"]["triad"]["GBps"]
    s["mem_triad_pct_datasheet"] = m["stream"]["triad"]["pct_datasheet"]
    s["mem_validated"] = m["stream"]["validated"]
    s["host_copy_GBps"] = m["host_copy_GBps"]
c = load("coll.json")
if c:
    s["coll_wrong"] = c["wrong_total"]
    s["coll_rows"] = len(c["results"])
    ar = [r for r in c["results"] if r["coll"] == "allreduce" and r["dtype"] == "float"]
    if ar: s["allreduce_float_largest"] = {"bytes": ar[-1]["bytes"], "busbw_GBps": ar[-1]["out_of_place"]["busbw_GBps"]}
for name in ("small", "1b"):
    t = load("train-%s.json" % name)
    if not t:
        continue
    rows = {(r["impl"], r["dtype"]): r for r in t["results"]}
    z = rows.get(("zaya", "bf16"))
    e = {"config": t["config"], "batch": t["batch"], "seq": t["seq"], "backend": t.get("backend")}
    if z:
        e["zaya_tokens_per_s"] = z["fwdbwd_tokens_per_s"]
        e["zaya_mfu"] = z.get("fwdbwd_mfu")
    for key in (("torch", "bf16"), ("torch", "f32")):
        if key in rows and z:
            e["speedup_vs_%s_%s" % key] = rows[key]["fwdbwd_s"] / z["fwdbwd_s"]
    s["train_" + name] = e
json.dump(s, open(os.path.join(out, "summary.json"), "w"), indent=1)
print(json.dumps(s, indent=1))
PY
say "done: status $([ $status = 0 ] && echo ok || echo FAILED); files in $out"
tail -40 "$log" | grep -A40 '^{' | head -40
exit $status
