#!/usr/bin/env python3
"""Reference training loop for tests/ref/train_parity.c, written from the specification: the model of
zaya_ref.py in float64, torch.optim.AdamW, Muon from its formula, global-norm clipping, and the Adam-
driven bias balancer (g_e = p_e - 1/E, skip class frozen), after the step or inside the forward
(balance_mode "forward": balance_iters updates per MoE block on the batch's own scores, then it routes).

    train_ref.py DIR   reads meta.json, params0.bin, tokens.bin; writes losses.json
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zaya_ref  # noqa: E402

torch.set_default_dtype(torch.float64)


def newton_schulz(g, steps=5):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / (x.norm() + 1e-7)
    for _ in range(steps):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def main(d):
    meta = json.load(open(os.path.join(d, "meta.json")))
    cfg = meta["config"]
    rp = cfg.get("rope_parameters", {}).get("hybrid", {})
    cfg["rope_theta"] = rp.get("rope_theta", 1e4)
    cfg["partial_rotary_factor"] = rp.get("partial_rotary_factor", 0.5)
    blob = np.fromfile(os.path.join(d, "params0.bin"), dtype=np.float32)
    B, T, steps = meta["batch"], meta["seq"], meta["steps"]
    tok = np.fromfile(os.path.join(d, "tokens.bin"), dtype=np.int32).reshape(steps, 2, B, T)
    params, muon, adam_decay, adam_plain = {}, [], [], []
    for t in meta["tensors"]:
        n = int(np.prod(t["shape"]))
        a = blob[t["offset"]:t["offset"] + n].astype(np.float64).reshape(t["shape"])
        p = torch.tensor(a, requires_grad=t["trainable"])
        params[t["name"]] = p
        if t["kind"] == "muon":
            muon.append((t, p, torch.zeros_like(p)))
        elif t["kind"] == "adamw":
            (adam_decay if t["decay"] else adam_plain).append(p)
    opt = torch.optim.AdamW([{"params": adam_decay, "weight_decay": meta["weight_decay"]},
                             {"params": adam_plain, "weight_decay": 0.0}],
                            lr=meta["lr"][0], betas=(meta["adam_beta1"], meta["adam_beta2"]), eps=meta["adam_eps"])
    E, L = cfg["num_experts"], cfg["num_hidden_layers"]
    bal_m = np.zeros((L, E))
    drift_ref = np.zeros((L, E))
    bal_v = np.zeros((L, E))
    trainable = [p for p in params.values() if p.requires_grad]
    model = zaya_ref.Ref(cfg, params)
    b1, b2, eps, blr = meta["balance_beta1"], meta["balance_beta2"], meta["balance_eps"], meta["balance_lr"]
    in_forward = meta.get("balance_mode") == "forward"
    K = meta.get("balance_iters", 1)
    step_no = [0]
    hook_margin = [1e9]  # smallest top-1/top-2 gap any selection inside the hook saw

    def adam_bias(l, counts, step, t, bb):
        g = counts[:E] / counts.sum() - 1.0 / E
        bal_m[l] = b1 * bal_m[l] + (1 - b1) * g
        bal_v[l] = b2 * bal_v[l] + (1 - b2) * g * g
        mh = bal_m[l] / (1 - b1 ** t)
        vh = bal_v[l] / (1 - b2 ** t)
        bb[:E] -= torch.tensor(step * mh / (np.sqrt(vh) + eps))

    def route_hook(l, probs):
        # before block l chooses: K updates on this batch's scores, each from the selection they make
        pe = probs[..., :E].double().reshape(-1, E)
        step = blr * math.sqrt(float(((pe - pe.mean(0)) ** 2).sum()) / (pe.shape[0] * E))
        bb = params[f"model.layers.{l}.mlp.gate.balancing_biases"]
        with torch.no_grad():
            # drift compensation first: follow the change of each expert's batch-mean score
            now = pe.sum(0).numpy() / pe.shape[0]
            if step_no[0] > 0:
                bb[:E] -= torch.tensor(meta["balance_drift"] * (now - drift_ref[l]))
            drift_ref[l] = now
            # the controller's update, then K - 1 refinement steps: per-expert sign steps, halved when the
            # expert's load error changes sign, grown 1.5x while it keeps it
            st, prev = np.full(E, step), np.zeros(E)
            for k in range(K):
                biased = probs + bb
                top2 = biased.topk(2, -1).values
                hook_margin[0] = min(hook_margin[0], float((top2[..., 0] - top2[..., 1]).min()))
                choice = biased.argmax(-1).flatten().numpy()
                counts = np.bincount(choice, minlength=E + 1)
                if k == 0:
                    adam_bias(l, counts, step, step_no[0] + 1, bb)
                    continue
                sg = np.sign(counts[:E] / counts.sum() - 1.0 / E)
                st = np.where(prev * sg < 0, st * 0.5, np.where(prev * sg > 0, st * 1.5, st))
                bb[:E] -= torch.tensor(st * sg)
                prev = sg

    if in_forward:
        model.route_hook = route_hook
    losses, margin = [], 1e9
    for s in range(steps):
        lr = meta["lr"][s]
        for p in trainable:
            p.grad = None
        step_no[0] = s
        ids = torch.tensor(tok[s, 0], dtype=torch.long)
        tgt = torch.tensor(tok[s, 1], dtype=torch.long)
        logits, info = model.forward(ids)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
        loss.backward()
        losses.append(loss.item())
        margin = min(margin, info["min_margin"], hook_margin[0])
        norm = math.sqrt(sum(float((p.grad ** 2).sum()) for p in trainable))
        scale = min(1.0, meta["clip"] / (norm + 1e-6))
        with torch.no_grad():
            for p in trainable:
                p.grad.mul_(scale)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        with torch.no_grad():
            beta = meta["muon_momentum"]
            for t, p, buf in muon:
                mats = [(p, buf, p.grad)] if len(t["shape"]) == 2 else \
                    [(p[e], buf[e], p.grad[e]) for e in range(t["shape"][0])]
                for w, m, g in mats:
                    m.lerp_(g, 1 - beta)
                    o = newton_schulz(g.lerp(m, beta))
                    w.mul_(1 - lr * meta["weight_decay"])
                    w.add_(o, alpha=-lr * 0.2 * math.sqrt(max(w.shape[0], w.shape[1])))
            # balancing biases after the step: Adam on p_e - 1/E over this batch's routing, skip class frozen
            for l in range(L if not in_forward else 0):
                counts = np.bincount(np.array(info["choices"][l]), minlength=E + 1)
                step = blr * math.sqrt(info["spread_sum"][l] / (counts.sum() * E))
                bb = params[f"model.layers.{l}.mlp.gate.balancing_biases"]
                adam_bias(l, counts, step, s + 1, bb)
                # drift compensation: follow the change of each expert's batch-mean score
                now = np.array(info["psum"][l]) / counts.sum()
                if s > 0:
                    bb[:E] -= torch.tensor(meta["balance_drift"] * (now - drift_ref[l]))
                drift_ref[l] = now
    json.dump({"loss": losses, "min_margin": margin}, open(os.path.join(d, "losses.json"), "w"))


if __name__ == "__main__":
    main(sys.argv[1])
