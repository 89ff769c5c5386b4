#!/usr/bin/env python3
"""Independent PyTorch reference of the ZAYA1 architecture, written from the specification
(../shared/reference/zaya1-architecture.md), used by the parity tests.

    zaya_ref.py DIR     reads DIR/config.json, DIR/params.json + DIR/params.bin, DIR/tokens.bin and
                        writes DIR/ref_out.bin: [loss, logits (N*V), grads in the params.bin layout],
                        float64 -> float32, plus DIR/ref_info.json (routing decisions and margins).

Everything runs in float64 with autograd; nothing is shared with the C implementation except the
file formats.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


def rmsnorm(x, w, eps):
    return w * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def rope(x, pos, rot, theta):
    # x [..., T, H, hd]; rotate-half over the first `rot` dims of every head
    half = rot // 2
    inv = theta ** (-torch.arange(0, half, dtype=torch.float64) * 2.0 / rot)
    ang = pos[:, None].double() * inv[None, :]          # [T, half]
    cos, sin = torch.cos(ang)[:, None, :].to(x.dtype), torch.sin(ang)[:, None, :].to(x.dtype)
    x1, x2, rest = x[..., :half], x[..., half:rot], x[..., rot:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, rest], dim=-1)


# --bench times PyTorch at its best: scaled_dot_product_attention (its fused causal kernel) instead of
# the explicit score matrix the float64 reference keeps for clarity; the same math either way.
FAST_ATTENTION = False


def causal_attention(q, k, v, G):
    """q [B,T,Hq,hd], k and v [B,T,Hkv,hd] (query head i uses KV head i // G) -> [B,T,Hq,hd]."""
    T, hd = q.shape[1], q.shape[-1]
    if G > 1:
        k, v = k.repeat_interleave(G, dim=2), v.repeat_interleave(G, dim=2)
    if FAST_ATTENTION and hasattr(F, "scaled_dot_product_attention"):
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return a.transpose(1, 2)
    s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(hd)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    s = s.masked_fill(~mask, float("-inf"))
    return torch.einsum("bhts,bshd->bthd", torch.softmax(s, -1), v)


class Ref:
    def __init__(self, cfg, params, record=True):
        self.c = cfg
        self.p = params
        self.record = record
        self.route_hook = None

    def P(self, name):
        return self.p[name]

    def cca(self, l, u, B, T):
        c = self.c
        hd, Hq, Hkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
        k0, k1 = c["cca_time0"], c["cca_time1"]
        pre = f"model.layers.{l}.self_attn."
        q_pre = u @ self.P(pre + "qkv_proj.q_proj.weight").T          # [B,T,Hq*hd]
        k_pre = u @ self.P(pre + "qkv_proj.k_proj.weight").T          # [B,T,Hkv*hd]
        G = Hq // Hkv
        qh = q_pre.view(B, T, Hq, hd)
        kh = k_pre.view(B, T, Hkv, hd)
        k_rep = kh.repeat_interleave(G, dim=2)                        # kv head of each q head
        qm = (qh + k_rep) / 2                                         # [B,T,Hq,hd]
        km = qm.view(B, T, Hkv, G, hd).mean(3)                        # [B,T,Hkv,hd]
        cpk = torch.cat([q_pre, k_pre], -1).transpose(1, 2)           # [B,C,T]
        Cc = cpk.shape[1]
        cpk = F.pad(cpk, ((k0 - 1) + (k1 - 1), 0))
        y1 = F.conv1d(cpk, self.P(pre + "qkv_proj.conv_qk_depthwise.weight"),
                      self.P(pre + "qkv_proj.conv_qk_depthwise.bias"), groups=Cc)
        y2 = F.conv1d(y1, self.P(pre + "qkv_proj.conv_qk_grouped.weight"),
                      self.P(pre + "qkv_proj.conv_qk_grouped.bias"), groups=Hq + Hkv)
        y2 = y2.transpose(1, 2)                                       # [B,T,C]
        q = y2[..., :Hq * hd].reshape(B, T, Hq, hd) + qm
        k = y2[..., Hq * hd:].reshape(B, T, Hkv, hd) + km
        v_cur = u @ self.P(pre + "qkv_proj.v_proj_current.weight").T
        v_del_all = u @ self.P(pre + "qkv_proj.v_proj_delayed.weight").T
        v_del = torch.cat([torch.zeros_like(v_del_all[:, :1]), v_del_all[:, :-1]], dim=1)
        v = torch.cat([v_cur, v_del], -1).view(B, T, Hkv, hd)
        temp = self.P(pre + "qk_norm.temp")
        eps = np.finfo(np.float32).eps
        q = math.sqrt(hd) * q / q.norm(dim=-1, keepdim=True).clamp_min(eps)
        k = math.sqrt(hd) * temp[None, None, :, None] * k / k.norm(dim=-1, keepdim=True).clamp_min(eps)
        pos = torch.arange(T)
        rot = int(round(c["partial_rotary_factor"] * hd))
        q = rope(q, pos, rot, c["rope_theta"])
        k = rope(k, pos, rot, c["rope_theta"])
        a = causal_attention(q, k, v, G).reshape(B, T, Hq * hd)
        return a @ self.P(pre + "o_proj.weight").T

    def dense(self, l, z):
        # zaya_mlp "dense": down(SiLU(gate z) * up z), no router, no gate
        pre = f"model.layers.{l}.mlp."
        return (F.silu(z @ self.P(pre + "gate_proj.weight").T) * (z @ self.P(pre + "up_proj.weight").T)) @ \
            self.P(pre + "down_proj.weight").T

    def softmax_attention(self, l, u, B, T):
        # zaya_attention "gqa" / "mha": q/k/v/o projections, partial RoPE, causal softmax attention
        c = self.c
        hd, Hq, Hkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
        pre = f"model.layers.{l}.self_attn."
        q = (u @ self.P(pre + "q_proj.weight").T).view(B, T, Hq, hd)
        k = (u @ self.P(pre + "k_proj.weight").T).view(B, T, Hkv, hd)
        v = (u @ self.P(pre + "v_proj.weight").T).view(B, T, Hkv, hd)
        pos = torch.arange(T)
        rot = int(round(c["partial_rotary_factor"] * hd))
        q = rope(q, pos, rot, c["rope_theta"])
        k = rope(k, pos, rot, c["rope_theta"])
        a = causal_attention(q, k, v, Hq // Hkv).reshape(B, T, Hq * hd)
        return a @ self.P(pre + "o_proj.weight").T

    def moe(self, l, z, r_prev, info):
        c = self.c
        E = c["num_experts"]
        pre = f"model.layers.{l}.mlp."
        router = c.get("zaya_router", "zaya")
        bias = self.P(pre + "gate.balancing_biases")
        if router == "linear":
            # plain linear top-1 router: softmax over the E experts, no skip class
            probs = torch.softmax(z @ self.P(pre + "gate.weight").T, -1)
            bias = bias[:E]
            r = None
        else:
            r = z @ self.P(pre + "gate.down_proj.weight").T + self.P(pre + "gate.down_proj.bias")
            if l > 0 and router == "zaya":
                r = r + self.P(pre + "gate.router_states_scale") * r_prev
            h = rmsnorm(r, self.P(pre + "gate.router_mlp.norm.weight"), c["rms_norm_eps"])
            h = F.gelu(h @ self.P(pre + "gate.router_mlp.fc1.weight").T + self.P(pre + "gate.router_mlp.fc1.bias"))
            h = F.gelu(h @ self.P(pre + "gate.router_mlp.fc2.weight").T + self.P(pre + "gate.router_mlp.fc2.bias"))
            probs = torch.softmax(h @ self.P(pre + "gate.router_mlp.out_proj.weight").T, -1)
        if self.route_hook is not None:  # the trainer's balancing in the forward
            self.route_hook(l, probs.detach())
        biased = probs.detach() + bias
        choice = biased.argmax(-1)                                    # [B,T]
        gate = probs.gather(-1, choice[..., None])                    # unbiased probability
        if self.record:
            top2 = biased.topk(2, -1).values
            info["min_margin"] = min(info.get("min_margin", 1e9), float((top2[..., 0] - top2[..., 1]).min()))
            info.setdefault("choices", []).append(choice.flatten().tolist())
            # token-to-token variation of the expert probabilities (skip excluded): sum over tokens
            # and experts of (p - batch mean)^2, the balancer's step unit
            pe = probs.detach()[..., :E].double().reshape(-1, E)
            info.setdefault("spread_sum", []).append(float(((pe - pe.mean(0)) ** 2).sum()))
            info.setdefault("psum", []).append(pe.sum(0).tolist())
        out = torch.zeros_like(z)
        Wgu = self.P(pre + "experts.gate_up_proj")                    # [E, 2F, D]
        Wd = self.P(pre + "experts.down_proj")                        # [E, D, F]
        Fi = c["moe_intermediate_size"]
        for e in range(E):
            sel = choice == e
            if sel.any():
                x = z[sel]
                gu = x @ Wgu[e].T
                y = (F.silu(gu[:, :Fi]) * gu[:, Fi:]) @ Wd[e].T
                idx = sel.nonzero(as_tuple=True)
                out = out.index_put(idx, y.to(out.dtype))
        skip = choice == E
        if c.get("zaya_skip_mode", "identity") == "identity":
            out = torch.where(skip[..., None], z, out)
        return gate * out, r

    def forward(self, ids):
        c = self.c
        B, T = ids.shape
        eps = c["rms_norm_eps"]
        x = (self.P("model.embed_tokens.weight")[ids] + self.P("model.input_hidden_states_bias")) * \
            self.P("model.input_hidden_states_scale")
        r = None
        info = {}
        scaled = c.get("zaya_residual_scaling", True)

        def merge(s, out, stream):
            if not scaled:  # zaya_residual_scaling false: plain residual
                return out + stream
            return (out + self.P(s + "hidden_states_bias")) * self.P(s + "hidden_states_scale") + \
                (stream + self.P(s + "residual_bias")) * self.P(s + "residual_scale")

        for l in range(c["num_hidden_layers"]):
            L = f"model.layers.{l}."
            attn = self.cca if c.get("zaya_attention", "cca") == "cca" else self.softmax_attention
            a = attn(l, rmsnorm(x, self.P(L + "input_layernorm.weight"), eps), B, T)
            h = merge(L + "post_attention_residual_scale.", a, x)
            z = rmsnorm(h, self.P(L + "post_attention_layernorm.weight"), eps)
            if c.get("zaya_mlp", "moe") == "dense":
                m = self.dense(l, z)
            else:
                m, r = self.moe(l, z, r, info)
            x = merge(L + "post_mlp_residual_scale.", m, h)
        y = rmsnorm(x, self.P("model.norm.weight"), eps)
        return y @ self.P("model.embed_tokens.weight").T, info


def load_config(path):
    cfg = json.load(open(path))
    rope_p = cfg.get("rope_parameters", {}).get("hybrid", {})
    cfg.setdefault("rope_theta", rope_p.get("rope_theta", 5e6))
    cfg.setdefault("partial_rotary_factor", rope_p.get("partial_rotary_factor", 0.5))
    return cfg


def shapes(cfg):
    """Tensor names and shapes of the HF layout (used by the benchmark to build random weights)."""
    D, V, R, E = cfg["hidden_size"], cfg["vocab_size"], cfg["router_hidden_size"], cfg["num_experts"]
    hd, Hq, Hkv, Fi = cfg["head_dim"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["moe_intermediate_size"]
    C = (Hq + Hkv) * hd
    out = {"model.embed_tokens.weight": (V, D), "model.input_hidden_states_scale": (D,),
           "model.input_hidden_states_bias": (D,), "model.norm.weight": (D,)}
    for l in range(cfg["num_hidden_layers"]):
        L = f"model.layers.{l}."
        a = L + "self_attn."
        out.update({L + "input_layernorm.weight": (D,), L + "post_attention_layernorm.weight": (D,)})
        if cfg.get("zaya_attention", "cca") != "cca":
            out.update({a + "q_proj.weight": (Hq * hd, D), a + "k_proj.weight": (Hkv * hd, D),
                        a + "v_proj.weight": (Hkv * hd, D), a + "o_proj.weight": (D, Hq * hd)})
        else:
            out.update({a + "qkv_proj.q_proj.weight": (Hq * hd, D), a + "qkv_proj.k_proj.weight": (Hkv * hd, D),
                        a + "qkv_proj.v_proj_current.weight": (Hkv * hd // 2, D),
                        a + "qkv_proj.v_proj_delayed.weight": (Hkv * hd // 2, D),
                        a + "qkv_proj.conv_qk_depthwise.weight": (C, 1, cfg["cca_time0"]),
                        a + "qkv_proj.conv_qk_depthwise.bias": (C,),
                        a + "qkv_proj.conv_qk_grouped.weight": (C, hd, cfg["cca_time1"]),
                        a + "qkv_proj.conv_qk_grouped.bias": (C,), a + "qk_norm.temp": (Hkv,),
                        a + "o_proj.weight": (D, Hq * hd)})
        for s in ("post_attention_residual_scale.", "post_mlp_residual_scale."):
            for v in ("hidden_states_scale", "hidden_states_bias", "residual_scale", "residual_bias"):
                if cfg.get("zaya_residual_scaling", True):
                    out[L + s + v] = (D,)
        if cfg.get("zaya_mlp", "moe") == "dense":
            Fd = cfg.get("zaya_dense_intermediate_size", Fi)
            out.update({L + "mlp.gate_proj.weight": (Fd, D), L + "mlp.up_proj.weight": (Fd, D),
                        L + "mlp.down_proj.weight": (D, Fd)})
            continue
        if cfg.get("zaya_router", "zaya") == "linear":
            out.update({L + "mlp.gate.weight": (E, D), L + "mlp.gate.balancing_biases": (E + 1,),
                        L + "mlp.experts.gate_up_proj": (E, 2 * Fi, D), L + "mlp.experts.down_proj": (E, D, Fi)})
            continue
        g = L + "mlp.gate."
        out.update({g + "down_proj.weight": (R, D), g + "down_proj.bias": (R,), g + "router_mlp.norm.weight": (R,),
                    g + "router_mlp.fc1.weight": (R, R), g + "router_mlp.fc1.bias": (R,),
                    g + "router_mlp.fc2.weight": (R, R), g + "router_mlp.fc2.bias": (R,),
                    g + "router_mlp.out_proj.weight": (E + 1, R), g + "balancing_biases": (E + 1,),
                    L + "mlp.experts.gate_up_proj": (E, 2 * Fi, D), L + "mlp.experts.down_proj": (E, D, Fi)})
        if l > 0 and cfg.get("zaya_router", "zaya") == "zaya":
            out[g + "router_states_scale"] = (R,)
    return out


def newton_schulz5(g):
    a, b, c = 3.4445, -4.7750, 2.0315
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / (x.norm() + 1e-7)
    for _ in range(5):
        A = x @ x.T
        x = a * x + (b * A + c * (A @ A)) @ x
    return x.T if g.shape[0] > g.shape[1] else x


def newton_schulz5_batched(g):
    """newton_schulz5 of every matrix of a stack [E, r, c] at once (batched matmuls): the same math."""
    a, b, c = 3.4445, -4.7750, 2.0315
    tall = g.shape[-2] > g.shape[-1]
    x = g.mT if tall else g
    x = x / (x.norm(dim=(-2, -1), keepdim=True) + 1e-7)
    for _ in range(5):
        A = x @ x.mT
        x = a * x + (b * A + c * (A @ A)) @ x
    return x.mT if tall else x


def sync(device):
    if device != "cpu":
        torch.cuda.synchronize()


def matmul_gflops(dtype, n=2048, reps=3, device="cpu"):
    import time
    if device != "cpu":
        n = 8192  # a size that fills the device
    a, b = torch.randn(n, n, device=device).to(dtype), torch.randn(n, n, device=device).to(dtype)
    torch.mm(a, b)
    sync(device)
    best = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        torch.mm(a, b)
        sync(device)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n ** 3 / best * 1e-9


def bench(config_path, B, T, iters, warmup, threads, train=False, variants=("eager_bf16", "compile_f32", "compile_bf16"),
          timeout_s=600, adamw_only=False, device="cpu"):
    """Times PyTorch f32 forward and forward+backward (train: plus the clipped Muon + AdamW update, as
    zaya's training step does, Newton-Schulz batched over each stack of expert matrices) of the same
    architecture: eager f32, and the variants asked for (eager under bf16 autocast, torch.compile of
    the model's forward in f32 and under bf16 autocast) where this build of PyTorch runs them."""
    import time
    global FAST_ATTENTION
    FAST_ATTENTION = True
    torch.set_num_threads(threads)
    if device != "cpu":
        torch.set_default_device(device)  # the model's own tables (RoPE, masks, positions) follow
    cfg = load_config(config_path)
    gen = torch.Generator().manual_seed(0)
    params = {}
    for name, shp in shapes(cfg).items():
        if len(shp) == 1:
            t = torch.ones(shp, dtype=torch.float32, device="cpu")
            if "bias" in name:
                t.zero_()
        else:
            t = torch.randn(shp, generator=gen, dtype=torch.float32, device="cpu") * 0.02
        params[name] = t.to(device).requires_grad_("balancing" not in name)
    model = Ref(cfg, params, record=False)
    ids = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen, device="cpu").to(device)
    tgt = torch.randint(0, cfg["vocab_size"], (B, T), generator=gen, device="cpu").to(device)
    muon_names = [] if adamw_only else [n for n, p in params.items()
                                         if p.dim() >= 2 and "embed" not in n and "conv" not in n]
    adam_params = [p for n, p in params.items() if p.requires_grad and n not in muon_names]
    adam = torch.optim.AdamW(adam_params, lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    momentum = {n: torch.zeros_like(params[n]) for n in muon_names}

    def optimizer_step():
        trainable = [p for p in params.values() if p.requires_grad]
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        adam.step()
        with torch.no_grad():
            for n in muon_names:
                p, buf = params[n], momentum[n]
                buf.lerp_(p.grad, 0.05)
                g = p.grad.lerp(buf, 0.95)
                o = newton_schulz5_batched(g) if p.dim() == 3 else newton_schulz5(g)
                scale = 1e-4 * 0.2 * math.sqrt(max(p.shape[-2], p.shape[-1]))
                p.mul_(1 - 1e-4 * 0.1).add_(o, alpha=-scale)

    def run(forward, backward, bf16):
        kind = "cpu" if device == "cpu" else "cuda"
        ctx = torch.autocast(kind, dtype=torch.bfloat16) if bf16 else torch.autocast(kind, enabled=False)
        with ctx:
            logits, _ = forward(ids)
            loss = F.cross_entropy(logits.view(-1, logits.shape[-1]).float(), tgt.view(-1))
        if backward:
            for p in params.values():
                p.grad = None
            loss.backward()
            if train:
                optimizer_step()
        return loss

    def timed(forward, bf16):
        out = {}
        for key, backward in (("forward_s", False), ("fwdbwd_s", True)):
            with (torch.no_grad() if not backward else torch.enable_grad()):
                for _ in range(warmup):
                    run(forward, backward, bf16)
                sync(device)
                times = []
                for _ in range(iters):
                    t0 = time.perf_counter()
                    run(forward, backward, bf16)
                    sync(device)
                    times.append(time.perf_counter() - t0)
            out[key] = min(times)
        return out

    res = timed(model.forward, False)  # eager f32: the headline peer
    res.update({"torch": torch.__version__, "threads": threads, "batch": B, "seq": T, "device": device,
                "mm_gflops_f32": matmul_gflops(torch.float32, device=device),
                "mm_gflops_bf16": matmul_gflops(torch.bfloat16, device=device)})
    res["variants"] = {}
    import signal

    def out_of_time(signum, frame):
        raise TimeoutError(f"not done within {timeout_s} s (compilation included)")

    signal.signal(signal.SIGALRM, out_of_time)
    for v in variants:
        t0 = time.perf_counter()
        signal.alarm(timeout_s)
        try:
            if v.startswith("compile") and not hasattr(torch, "compile"):
                raise RuntimeError("torch.compile needs PyTorch >= 2.0")
            # dynamic shapes: the experts' token counts change with the routing of every batch
            fwd = torch.compile(model.forward, dynamic=True) if v.startswith("compile") else model.forward
            r = timed(fwd, v.endswith("bf16"))
            r["setup_s"] = time.perf_counter() - t0  # the warmup runs, compilation included
            res["variants"][v] = r
        except Exception as e:  # reported, not fatal: the eager peer stands
            res["variants"][v] = {"error": f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"}
        finally:
            signal.alarm(0)
    print(json.dumps(res))


def main(d):
    cfg = load_config(os.path.join(d, "config.json"))
    index = json.load(open(os.path.join(d, "params.json")))
    blob = np.fromfile(os.path.join(d, "params.bin"), dtype=np.float32)
    params = {}
    for t in index["tensors"]:
        a = blob[t["offset"]:t["offset"] + int(np.prod(t["shape"]))].astype(np.float64).reshape(t["shape"])
        params[t["name"]] = torch.tensor(a, requires_grad=t["trainable"])
    tok = np.fromfile(os.path.join(d, "tokens.bin"), dtype=np.int32)
    B, T = index["batch"], index["seq"]
    ids = torch.tensor(tok[:B * T].reshape(B, T), dtype=torch.long)
    tgt = torch.tensor(tok[B * T:].reshape(B, T), dtype=torch.long)
    logits, info = Ref(cfg, params).forward(ids)
    valid = tgt >= 0
    loss = F.cross_entropy(logits[valid], tgt[valid])
    loss.backward()
    out = [np.array([loss.item()]), logits.detach().numpy().ravel()]
    grads = np.zeros_like(blob, dtype=np.float64)
    for t in index["tensors"]:
        g = params[t["name"]].grad
        if g is not None:
            grads[t["offset"]:t["offset"] + g.numel()] = g.numpy().ravel()
    out.append(grads)
    np.concatenate(out).astype(np.float32).tofile(os.path.join(d, "ref_out.bin"))
    # a dense model routes nothing: no margin to respect
    json.dump({"min_margin": info.get("min_margin", 1e9), "choices": info.get("choices", [])},
              open(os.path.join(d, "ref_info.json"), "w"))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "--bench":
        # zaya_ref.py --bench CONFIG B T ITERS WARMUP THREADS [train] [variants=a,b,...] [timeout=S] [adamw]
        #                     [device=cuda]
        torch.set_default_dtype(torch.float32)
        rest = sys.argv[8:]
        var = [a.split("=", 1)[1] for a in rest if a.startswith("variants=")]
        tmo = [int(a.split("=", 1)[1]) for a in rest if a.startswith("timeout=")]
        bench(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]),
              train="train" in rest,
              variants=tuple(x for x in var[0].split(",") if x) if var else ("eager_bf16", "compile_f32", "compile_bf16"),
              timeout_s=tmo[0] if tmo else 600, adamw_only="adamw" in rest,
              device=([a.split("=", 1)[1] for a in rest if a.startswith("device=")] or ["cpu"])[0])
    else:
        main(sys.argv[1])
