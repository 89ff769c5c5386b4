#!/usr/bin/env python3
"""Causal GQA attention: zaya's tiled kernels vs PyTorch, measured in the same run, f32 and bf16.

Two PyTorch peers: the textbook formulation (K/V repeated to the query heads, softmax(mask(Q K^T * s)) V
with torch.matmul, backward by autograd) and, where the PyTorch has it, its fused
scaled_dot_product_attention(is_causal=True). The bf16 rows give PyTorch bf16 tensors and zaya its bf16
mode (bf16 operands, f32 accumulation; the AMX tile kernel where the host has one). Both sides run on the
same thread count. Causal FLOPs: forward 4*T*T*D*Hq/2 per sequence, backward 2.5x forward. Prints a table;
writes JSON and CSV to -o.

usage: python3 bench/attention_vs_torch.py --bin build/tests/bench_attention [--dtype f32|bf16|both] [-o DIR]
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

try:
    import torch
except ImportError:
    print("attention_vs_torch: torch not importable by", sys.executable, "- skipping")
    sys.exit(77)


def torch_times(B, T, Hq, Hkv, D, reps, dtype="f32", fused=False):
    """Best forward and forward+backward seconds; fused: scaled_dot_product_attention (None if absent)."""
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if fused and sdpa is None:
        return None, None
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float32
    g = torch.Generator().manual_seed(0)
    q = (torch.rand(B, Hq, T, D, generator=g) * 2 - 1).to(tdt).requires_grad_()
    k = (torch.rand(B, Hkv, T, D, generator=g) * 2 - 1).to(tdt).requires_grad_()
    v = (torch.rand(B, Hkv, T, D, generator=g) * 2 - 1).to(tdt).requires_grad_()
    dout = (torch.rand(B, Hq, T, D, generator=g) * 2 - 1).to(tdt)
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    scale = D ** -0.5

    def fwd():
        kk = k.repeat_interleave(Hq // Hkv, dim=1)
        vv = v.repeat_interleave(Hq // Hkv, dim=1)
        if fused:
            return sdpa(q, kk, vv, is_causal=True)
        s = torch.matmul(q, kk.transpose(-1, -2)) * scale
        p = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1)
        return torch.matmul(p, vv)

    best_f = best_fb = float("inf")
    for r in range(reps + 1):  # rep 0 warms up
        with torch.no_grad():
            t0 = time.perf_counter()
            fwd()
            t1 = time.perf_counter()
        t2 = time.perf_counter()
        out = fwd()
        out.backward(dout)
        t3 = time.perf_counter()
        q.grad = k.grad = v.grad = None
        if r:
            best_f, best_fb = min(best_f, t1 - t0), min(best_fb, t3 - t2)
    return best_f, best_fb


def peer_mm_gflops(dtype, reps=3, n=2048):
    """The peer's own torch.mm rate at n^3 (best of reps), printed beside every ratio: a crippled BLAS shows."""
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float32
    a, b = torch.rand(n, n).to(tdt), torch.rand(n, n).to(tdt)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best * 1e-9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="path to the bench_attention binary")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="B=1, T=256 and 512, 2 repetitions (the ctest run)")
    ap.add_argument("--dtype", choices=["f32", "bf16", "both"], default="both")
    ap.add_argument("-o", "--out", default="bench_attention_out")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    Hq, Hkv, D = 8, 2, 128
    Bs, Ts = ([1], [256, 512]) if a.quick else ([1, 2, 4], [256, 512, 1024])
    if a.quick:
        a.reps = min(a.reps, 2)
    rows = []
    hdr = (f"{'dtype':>5} {'B':>2} {'T':>5} | {'zaya fwd':>9} {'torch fwd':>9} {'sdpa fwd':>9} {'x best':>6} | "
           f"{'zaya f+b':>9} {'torch f+b':>9} {'sdpa f+b':>9} {'x best':>6} | {'oneDNN QK^T':>11}")
    print(f"causal GQA attention, Hq={Hq} Hkv={Hkv} D={D}, {a.threads} threads, GFLOP/s (best of {a.reps}); "
          f"PyTorch {torch.__version__}; x best: zaya over the faster PyTorch peer")
    if int(torch.__version__.split(".")[0]) < 2:
        print(f"FALLBACK PEER: PyTorch {torch.__version__} ({sys.executable}) has no fused attention and, as Debian's "
              "build, runs f32 matmul on OpenBLAS: not a fair peer; install PyTorch >= 2.6 with scripts/setup.sh --hf")
    dtypes = ["f32", "bf16"] if a.dtype == "both" else [a.dtype]
    mm = {dt: peer_mm_gflops(dt) for dt in dtypes}
    print("peer's torch.mm at 2048^3: " + ", ".join(f"{dt} {mm[dt]:.1f} GFLOP/s" for dt in dtypes))
    print(hdr)
    print("-" * len(hdr))
    dtypes = ["f32", "bf16"] if a.dtype == "both" else [a.dtype]
    gf = lambda flops, t: flops / t * 1e-9 if t else float("nan")
    for dt in dtypes:
        for B in Bs:
            for T in Ts:
                res = subprocess.run([a.bin, str(B), str(T), str(Hq), str(Hkv), str(D), str(a.threads), str(a.reps), dt],
                                     check=True, capture_output=True, text=True)
                z = json.loads(res.stdout)
                tf, tfb = torch_times(B, T, Hq, Hkv, D, a.reps, dt)
                sf, sfb = torch_times(B, T, Hq, Hkv, D, a.reps, dt, fused=True)
                flops = 4.0 * T * T * D * Hq / 2 * B
                r = dict(dtype=dt, kernel=z["kernel"], B=B, T=T, Hq=Hq, Hkv=Hkv, D=D, threads=a.threads,
                         zaya_fwd_gflops=z["fwd_gflops"], torch_fwd_gflops=gf(flops, tf), sdpa_fwd_gflops=gf(flops, sf),
                         zaya_fwdbwd_gflops=z["fwdbwd_gflops"], torch_fwdbwd_gflops=gf(3.5 * flops, tfb),
                         sdpa_fwdbwd_gflops=gf(3.5 * flops, sfb), onednn_sgemm_gflops=z["onednn_sgemm_gflops"],
                         zaya_fwd_s=z["fwd_s"], torch_fwd_s=tf, sdpa_fwd_s=sf, zaya_fwdbwd_s=z["fwdbwd_s"],
                         torch_fwdbwd_s=tfb, sdpa_fwdbwd_s=sfb)
                rows.append(r)
                best_f = max(r["torch_fwd_gflops"], r["sdpa_fwd_gflops"] if sf else 0.0)
                best_fb = max(r["torch_fwdbwd_gflops"], r["sdpa_fwdbwd_gflops"] if sfb else 0.0)
                print(f"{dt:>5} {B:>2} {T:>5} | {r['zaya_fwd_gflops']:>9.1f} {r['torch_fwd_gflops']:>9.1f} "
                      f"{r['sdpa_fwd_gflops']:>9.1f} {r['zaya_fwd_gflops'] / best_f:>6.2f} | "
                      f"{r['zaya_fwdbwd_gflops']:>9.1f} {r['torch_fwdbwd_gflops']:>9.1f} {r['sdpa_fwdbwd_gflops']:>9.1f} "
                      f"{r['zaya_fwdbwd_gflops'] / best_fb:>6.2f} | {r['onednn_sgemm_gflops']:>11.1f}",
                      flush=True)
    kernels = sorted({r["kernel"] for r in rows if r["dtype"] == "bf16"})
    if kernels:
        print("zaya bf16 attention kernel:", ", ".join(kernels))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "attention_vs_torch.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "peer_mm_gflops": mm, "rows": rows}, f, indent=1)
    with open(os.path.join(a.out, "attention_vs_torch.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("oneDNN QK^T: dense sgemm S = Q K^T per (batch, head), 2*T*T*D*Hq*B FLOPs: the machine's f32 GEMM rate")
    print(f"results written to {a.out}/attention_vs_torch.{{json,csv}}")


if __name__ == "__main__":
    main()
