"""Reference optimizer steps in PyTorch for tests/ref/optim_ref.c.

AdamW is torch.optim.AdamW itself. Muon is written here from its definition (KellerJordan/Muon with
the 0.2*sqrt(max(rows, cols)) RMS-matching scale), independently of the C code:
  buf <- lerp(buf, g, 1 - beta);  u = lerp(g, buf, beta)            (Nesterov)
  X = u (transposed when rows > cols);  X <- X / (||X||_F + 1e-7)
  5 x:  A = X X^T;  B = b A + c A A;  X <- a X + B X
  p <- p * (1 - lr * wd) - lr * 0.2 * sqrt(max(rows, cols)) * X     (transposed back)
Usage: optim_ref.py DIR  (reads meta.json, params0.bin, grads.bin; writes out.bin: the parameter block
after every step). Exit 77 when torch is missing."""
import json
import math
import sys

try:
    import numpy as np
    import torch
except ImportError:
    sys.exit(77)


def newton_schulz(g, steps):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.T
        B = b * A + c * (A @ A)
        x = a * x + B @ x
    return x.T if tall else x


def main():
    d = sys.argv[1]
    meta = json.load(open(f"{d}/meta.json"))
    cfg = meta["config"]
    nf = meta["nfloats"]
    steps = len(meta["lr"])
    block = np.fromfile(f"{d}/params0.bin", dtype=np.float32).copy()
    grads = np.fromfile(f"{d}/grads.bin", dtype=np.float32).reshape(steps, nf)
    torch.set_num_threads(1)

    params, adam_decay, adam_plain, muon = {}, [], [], []
    for t in meta["tensors"]:
        if t["kind"] == "none":
            continue
        n = int(np.prod(t["shape"]))
        p = torch.nn.Parameter(torch.from_numpy(block[t["offset"]:t["offset"] + n].reshape(t["shape"]).copy()))
        params[t["name"]] = (t, p)
        if t["kind"] == "muon":
            muon.append((t, p, torch.zeros_like(p)))
        elif t["decay"]:
            adam_decay.append(p)
        else:
            adam_plain.append(p)
    opt = torch.optim.AdamW(
        [{"params": adam_decay, "weight_decay": cfg["weight_decay"]}, {"params": adam_plain, "weight_decay": 0.0}],
        lr=meta["lr"][0], betas=(cfg["adam_beta1"], cfg["adam_beta2"]), eps=cfg["adam_eps"])

    beta = cfg["muon_momentum"]
    out = np.zeros((steps, nf), dtype=np.float32)
    for s in range(steps):
        lr, scale = meta["lr"][s], meta["scale"][s]
        for name, (t, p) in params.items():
            n = p.numel()
            p.grad = torch.from_numpy(grads[s, t["offset"]:t["offset"] + n].reshape(t["shape"]).copy()) * scale
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        with torch.no_grad():
            for t, p, buf in muon:
                mats = [(p, buf, p.grad)] if len(t["shape"]) == 2 else \
                    [(p[e], buf[e], p.grad[e]) for e in range(t["shape"][0])]
                for w, m, g in mats:
                    m.lerp_(g, 1 - beta)
                    u = g.lerp(m, beta)
                    o = newton_schulz(u, cfg["muon_ns_steps"])
                    w.mul_(1 - lr * cfg["weight_decay"])
                    w.add_(o, alpha=-lr * 0.2 * math.sqrt(max(w.shape[0], w.shape[1])))
        for name, (t, p) in params.items():
            n = p.numel()
            out[s, t["offset"]:t["offset"] + n] = p.detach().numpy().reshape(-1)
    out.tofile(f"{d}/out.bin")


if __name__ == "__main__":
    main()
