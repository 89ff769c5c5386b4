#!/usr/bin/env python3
"""Checks a `zaya ckpt export-hf` directory written by ckpt_export_ref.

    ckpt_export_check.py reference DIR      parse DIR/hf/*.safetensors with numpy only (no safetensors
                                            package), check names and shapes against the HF layout of
                                            the reference doc (section 7.2, written out below), then
                                            run zaya_ref.py's forward on the exported weights and
                                            compare with zaya's logits (DIR/logits.bin).
    ckpt_export_check.py transformers DIR   load DIR/hf with Hugging Face transformers (model_type
                                            zaya) and compare its logits; exit 77 when transformers
                                            (with a zaya model) is not importable.
Tolerance: max |a - b| / max |b| <= 1e-4.
"""
import json
import os
import struct
import sys

import numpy as np

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    meta = hdr.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, e in hdr.items():
        b, end = e["data_offsets"]
        if e["dtype"] == "BF16":
            u = np.frombuffer(data[b:end], dtype=np.uint16).astype(np.uint32) << 16
            a = u.view(np.float32)
        else:
            a = np.frombuffer(data[b:end], dtype=DTYPES[e["dtype"]])
        out[name] = a.reshape(e["shape"])
    return out, meta


def read_safetensors_any(hf, name):
    index = json.load(open(os.path.join(hf, "model.safetensors.index.json")))
    t, _ = read_safetensors(os.path.join(hf, index["weight_map"][name]))
    return t[name]


def expected_names(c):
    """The HF layout, written from the reference doc's table (not from zaya's code)."""
    D, V, R, E, F = c["hidden_size"], c["vocab_size"], c["router_hidden_size"], c["num_experts"], c["moe_intermediate_size"]
    hd, Hq, Hkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
    C = (Hq + Hkv) * hd
    t = {"model.embed_tokens.weight": [V, D], "model.input_hidden_states_scale": [D],
         "model.input_hidden_states_bias": [D], "model.norm.weight": [D]}
    for L in range(c["num_hidden_layers"]):
        p = f"model.layers.{L}."
        t[p + "input_layernorm.weight"] = [D]
        t[p + "self_attn.qkv_proj.q_proj.weight"] = [Hq * hd, D]
        t[p + "self_attn.qkv_proj.k_proj.weight"] = [Hkv * hd, D]
        t[p + "self_attn.qkv_proj.v_proj_current.weight"] = [Hkv * hd // 2, D]
        t[p + "self_attn.qkv_proj.v_proj_delayed.weight"] = [Hkv * hd // 2, D]
        t[p + "self_attn.qkv_proj.conv_qk_depthwise.weight"] = [C, 1, c["cca_time0"]]
        t[p + "self_attn.qkv_proj.conv_qk_depthwise.bias"] = [C]
        t[p + "self_attn.qkv_proj.conv_qk_grouped.weight"] = [C, hd, c["cca_time1"]]
        t[p + "self_attn.qkv_proj.conv_qk_grouped.bias"] = [C]
        t[p + "self_attn.qk_norm.temp"] = [Hkv]
        t[p + "self_attn.o_proj.weight"] = [D, Hq * hd]
        for s in ("post_attention_residual_scale", "post_mlp_residual_scale"):
            for v in ("hidden_states_scale", "hidden_states_bias", "residual_scale", "residual_bias"):
                t[f"{p}{s}.{v}"] = [D]
        t[p + "post_attention_layernorm.weight"] = [D]
        t[p + "mlp.gate.down_proj.weight"] = [R, D]
        t[p + "mlp.gate.down_proj.bias"] = [R]
        if L > 0:
            t[p + "mlp.gate.router_states_scale"] = [R]
        t[p + "mlp.gate.router_mlp.norm.weight"] = [R]
        for fc in ("fc1", "fc2"):
            t[p + f"mlp.gate.router_mlp.{fc}.weight"] = [R, R]
            t[p + f"mlp.gate.router_mlp.{fc}.bias"] = [R]
        t[p + "mlp.gate.router_mlp.out_proj.weight"] = [E + 1, R]
        t[p + "mlp.gate.balancing_biases"] = [E + 1]
        t[p + "mlp.experts.gate_up_proj"] = [E, 2 * F, D]
        t[p + "mlp.experts.down_proj"] = [E, D, F]
    return t


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def main(mode, d):
    hf = os.path.join(d, "hf")
    info = json.load(open(os.path.join(d, "info.json")))
    B, T = info["batch"], info["seq"]
    ids = np.fromfile(os.path.join(d, "tokens.bin"), dtype=np.int32).reshape(B, T)
    zl = np.fromfile(os.path.join(d, "logits.bin"), dtype=np.float32)
    cfg = json.load(open(os.path.join(hf, "config.json")))
    zl = zl.reshape(B, T, cfg["vocab_size"])
    if mode == "transformers":
        try:
            import torch
            import transformers
            from transformers import AutoModelForCausalLM
        except Exception as e:  # noqa: BLE001 - any import failure means: not available here
            print(f"transformers not importable ({e}); skipped")
            return 77
        if "zaya" not in transformers.models.auto.configuration_auto.CONFIG_MAPPING_NAMES:
            print(f"transformers {transformers.__version__} has no model_type zaya; skipped")
            return 77
        model = AutoModelForCausalLM.from_pretrained(hf, dtype=torch.float32)
        model.eval()
        with torch.no_grad():
            out = model(torch.tensor(ids, dtype=torch.long)).logits.float().numpy()
        for L, layer in enumerate(model.model.layers):  # tell a transformers-side re-init from a bad export
            want = read_safetensors_any(hf, f"model.layers.{L}.mlp.gate.balancing_biases")
            got = layer.mlp.gate.balancing_biases.detach().numpy()
            if not np.array_equal(want, got):
                print(f"note: transformers changed layer {L} balancing_biases after loading: file {want} model {got}")
        e = rel_err(zl, out)
        print(f"transformers {transformers.__version__} torch {torch.__version__}: logits max rel err {e:.3e}")
        return 0 if e <= 1e-4 else 1

    index = json.load(open(os.path.join(hf, "model.safetensors.index.json")))
    files = sorted(set(index["weight_map"].values()))
    n = len(files)
    want_files = [f"model-{k:05d}-of-{n:05d}.safetensors" for k in range(1, n + 1)]
    ok = True
    if files != want_files:
        print("FAIL shard names", files)
        ok = False
    params, total = {}, 0
    for f in files:
        t, meta = read_safetensors(os.path.join(hf, f))
        if meta.get("format") != "pt":
            print("FAIL __metadata__ format", f, meta)
            ok = False
        for k, v in t.items():
            if index["weight_map"].get(k) != f:
                print("FAIL weight_map entry", k)
                ok = False
            total += v.nbytes
        params.update(t)
    if index["metadata"]["total_size"] != total:
        print("FAIL total_size", index["metadata"]["total_size"], total)
        ok = False
    exp = expected_names(cfg)
    missing, extra = sorted(set(exp) - set(params)), sorted(set(params) - set(exp))
    if missing or extra:
        print("FAIL names: missing", missing[:5], "extra", extra[:5])
        ok = False
    bad = [k for k in exp if k in params and list(params[k].shape) != exp[k]]
    if bad:
        print("FAIL shapes", [(k, params[k].shape, exp[k]) for k in bad[:5]])
        ok = False
    print(f"{len(params)} tensors in {n} shards; names and shapes {'match' if not (missing or extra or bad) else 'DIFFER'}")
    if cfg.get("model_type") != "zaya" or cfg.get("tie_word_embeddings") is not True:
        print("FAIL config.json model_type / tie_word_embeddings")
        ok = False
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import zaya_ref
    rc = zaya_ref.load_config(os.path.join(hf, "config.json"))
    P = {k: torch.tensor(v.astype(np.float64)) for k, v in params.items()}
    with torch.no_grad():
        logits, _ = zaya_ref.Ref(rc, P, record=False).forward(torch.tensor(ids, dtype=torch.long))
    e = rel_err(zl, logits.numpy())
    print(f"zaya logits vs zaya_ref.py on the exported weights: max rel err {e:.3e} (tolerance 1e-4)")
    ok = ok and e <= 1e-4
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
