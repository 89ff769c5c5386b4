#!/bin/sh
# zaya ckpt commands end to end: an HF directory written by an independent Python safetensors
# writer (numpy) is imported, inspected, verified, exported, reshaped and consolidated; corrupt
# input fails with exit 1 naming the file; usage errors exit 2.
set -u
ZAYA=$1
PY=/usr/bin/python3
D=$(mktemp -d /tmp/zaya_ckpt_cli.XXXXXX)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PY" -c "import numpy" 2>/dev/null || { echo "numpy missing for $PY: skipped"; exit 0; }
mkdir -p "$D/hf"
"$PY" - "$D/hf" <<'PYEOF' || fail "python writer"
import json, struct, sys, numpy as np
d = sys.argv[1]
cfg = {"model_type": "zaya", "vocab_size": 50, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
       "num_key_value_heads": 1, "head_dim": 8, "num_experts": 2, "moe_intermediate_size": 8,
       "router_hidden_size": 4, "cca_time0": 2, "cca_time1": 2, "bos_token_id": 1, "eos_token_id": 2,
       "pad_token_id": 0, "tie_word_embeddings": True}
json.dump(cfg, open(d + "/config.json", "w"))
D, V, R, E, F, hd, Hq, Hkv = 16, 50, 4, 2, 8, 8, 2, 1
C = (Hq + Hkv) * hd
t = {"model.embed_tokens.weight": (V, D), "model.input_hidden_states_scale": (D,),
     "model.input_hidden_states_bias": (D,), "model.norm.weight": (D,)}
for L in range(2):
    p = f"model.layers.{L}."
    for k, s in [("input_layernorm.weight", (D,)), ("self_attn.qkv_proj.q_proj.weight", (Hq * hd, D)),
                 ("self_attn.qkv_proj.k_proj.weight", (Hkv * hd, D)), ("self_attn.qkv_proj.v_proj_current.weight", (4, D)),
                 ("self_attn.qkv_proj.v_proj_delayed.weight", (4, D)), ("self_attn.qkv_proj.conv_qk_depthwise.weight", (C, 1, 2)),
                 ("self_attn.qkv_proj.conv_qk_depthwise.bias", (C,)), ("self_attn.qkv_proj.conv_qk_grouped.weight", (C, hd, 2)),
                 ("self_attn.qkv_proj.conv_qk_grouped.bias", (C,)), ("self_attn.qk_norm.temp", (Hkv,)),
                 ("self_attn.o_proj.weight", (D, Hq * hd)), ("post_attention_layernorm.weight", (D,)),
                 ("mlp.gate.down_proj.weight", (R, D)), ("mlp.gate.down_proj.bias", (R,)),
                 ("mlp.gate.router_mlp.norm.weight", (R,)), ("mlp.gate.router_mlp.fc1.weight", (R, R)),
                 ("mlp.gate.router_mlp.fc1.bias", (R,)), ("mlp.gate.router_mlp.fc2.weight", (R, R)),
                 ("mlp.gate.router_mlp.fc2.bias", (R,)), ("mlp.gate.router_mlp.out_proj.weight", (E + 1, R)),
                 ("mlp.gate.balancing_biases", (E + 1,)), ("mlp.experts.gate_up_proj", (E, 2 * F, D)),
                 ("mlp.experts.down_proj", (E, D, F))]:
        t[p + k] = s
    for s in ("post_attention_residual_scale.", "post_mlp_residual_scale."):
        for v in ("hidden_states_scale", "hidden_states_bias", "residual_scale", "residual_bias"):
            t[p + s + v] = (D,)
    if L > 0:
        t[p + "mlp.gate.router_states_scale"] = (R,)
rng = np.random.default_rng(0)
hdr, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
for k in sorted(t):
    a = rng.standard_normal(t[k]).astype(np.float32)
    hdr[k] = {"dtype": "F32", "shape": list(t[k]), "data_offsets": [off, off + a.nbytes]}
    off += a.nbytes
    blobs.append(a.tobytes())
h = json.dumps(hdr).encode()
open(d + "/model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PYEOF

"$ZAYA" ckpt import-hf "$D/hf" -o "$D/ck" > "$D/out" || fail "import-hf"
grep -q "step-00000000" "$D/out" || fail "import-hf output"
# this config.json, like transformers', has no zaya_skip_mode: transformers' zero is taken and said
grep -q "^skip mode: zero (config.json has no zaya_skip_mode" "$D/out" || fail "import-hf names the skip mode: $(cat "$D/out")"
"$ZAYA" ckpt info --json "$D/ck" | grep -q '"zaya_skip_mode":[[:space:]]*"zero"' || fail "imported config has skip mode zero"
"$ZAYA" ckpt import-hf "$D/hf" -o "$D/ck_id" --skip-mode identity > "$D/out" || fail "import-hf --skip-mode"
grep -q "^skip mode: identity (--skip-mode)" "$D/out" || fail "--skip-mode reported: $(cat "$D/out")"
"$ZAYA" ckpt info --json "$D/ck_id" | grep -q '"zaya_skip_mode":[[:space:]]*"identity"' || fail "--skip-mode identity stored"
"$ZAYA" ckpt import-hf "$D/hf" -o "$D/x" --skip-mode none > /dev/null 2> "$D/err"; [ $? -eq 2 ] || fail "bad --skip-mode exit code"
grep -q "identity or zero, got 'none'" "$D/err" || fail "bad --skip-mode message: $(cat "$D/err")"
"$ZAYA" ckpt info "$D/ck" > "$D/out" || fail "info"
grep -q "model_config" "$D/out" || fail "info lists the model_config section"
"$ZAYA" ckpt info --tensors "$D/ck" | grep -q "model.layers.1.mlp.experts.gate_up_proj" || fail "info --tensors"
"$ZAYA" ckpt verify "$D/ck" | grep -q "OK" || fail "verify"
"$ZAYA" ckpt export-hf "$D/ck" -o "$D/out_hf" --dtype f32 --shard-size 8K > /dev/null || fail "export-hf"
[ -f "$D/out_hf/model.safetensors.index.json" ] && [ -f "$D/out_hf/config.json" ] || fail "export files"
ls "$D/out_hf" | grep -q "model-00001-of-000" || fail "shard names"
grep -q '"zaya_skip_mode":[[:space:]]*"zero"' "$D/out_hf/config.json" || fail "export-hf writes zaya_skip_mode explicitly"
"$ZAYA" ckpt export-hf "$D/ck_id" -o "$D/out_hf_id" > /dev/null || fail "export-hf identity"
grep -q '"zaya_skip_mode":[[:space:]]*"identity"' "$D/out_hf_id/config.json" || fail "export-hf writes identity explicitly"
"$ZAYA" ckpt import-hf "$D/out_hf_id" -o "$D/ck_id2" > "$D/out" || fail "re-import identity"
grep -q "^skip mode: identity (zaya_skip_mode in config.json)" "$D/out" || fail "re-import keeps identity: $(cat "$D/out")"
"$ZAYA" ckpt import-hf "$D/out_hf" -o "$D/ck2" > /dev/null || fail "re-import"
"$ZAYA" ckpt reshape "$D/ck" -o "$D/ck3" --world-size 3 > /dev/null || fail "reshape"
"$ZAYA" ckpt info "$D/ck3" | grep -q "world size  3" || fail "reshaped world size"
"$ZAYA" ckpt consolidate "$D/ck3" -o "$D/ck4" > /dev/null || fail "consolidate"
"$ZAYA" ckpt info "$D/ck4" | grep -q "world size  1" || fail "consolidated world size"
# the exported values equal the Python originals (f32 round trip through import and export)
"$PY" - "$D/hf/model.safetensors" "$D/out_hf" <<'PYEOF' || fail "values after import + export"
import json, struct, sys, numpy as np
def read(p):
    raw = open(p, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], np.float32).reshape(v["shape"]) for k, v in h.items()}
a = read(sys.argv[1]); b = {}
idx = json.load(open(sys.argv[2] + "/model.safetensors.index.json"))
for f in set(idx["weight_map"].values()): b.update(read(sys.argv[2] + "/" + f))
assert set(a) == set(b), set(a) ^ set(b)
assert all(np.array_equal(a[k], b[k]) for k in a)
PYEOF
# corruption: verify exits 1 naming the file; info (no checksums) still works
F=$(ls "$D"/ck/step-00000000/model-r00000.safetensors)
SIZE=$(stat -c %s "$F")
printf '\377' | dd of="$F" bs=1 seek=$((SIZE - 50)) conv=notrunc 2>/dev/null
"$ZAYA" ckpt verify "$D/ck/step-00000000" > /dev/null 2> "$D/err"; rc=$?
[ $rc -eq 1 ] || fail "verify of corrupt checkpoint exits $rc"
grep -q "model-r00000.safetensors" "$D/err" && grep -q "checksum" "$D/err" || fail "verify message: $(cat "$D/err")"
"$ZAYA" ckpt verify "$D/nonexistent" > /dev/null 2>&1; [ $? -eq 1 ] || fail "missing checkpoint exit code"
"$ZAYA" ckpt reshape "$D/ck2" -o "$D/x" > /dev/null 2>&1; [ $? -eq 2 ] || fail "missing --world-size is a usage error"
"$ZAYA" ckpt export-hf "$D/ck2" -o "$D/x" --dtype f64 > /dev/null 2>&1; [ $? -eq 2 ] || fail "bad --dtype is a usage error"
"$ZAYA" ckpt import-hf "$D/ck" -o "$D/x" > /dev/null 2> "$D/err"; [ $? -eq 1 ] || fail "importing a non-HF dir"
# the random init exported without a checkpoint (its values: test_infer_weights)
"$ZAYA" ckpt export-hf -c zaya1-tiny --random-init 3 -o "$D/hf_rand" --shard-size 4M > "$D/out" || fail "export-hf --random-init"
grep -q "^exported [0-9]* shards (bf16)" "$D/out" || fail "random export report: $(cat "$D/out")"
"$ZAYA" ckpt export-hf -c zaya1-tiny -o "$D/x" > /dev/null 2> "$D/err"; [ $? -eq 2 ] || fail "--config without --random-init is a usage error"
grep -q "go together" "$D/err" || fail "--config alone message: $(cat "$D/err")"
"$ZAYA" ckpt export-hf "$D/ck" -c zaya1-tiny --random-init 3 -o "$D/x" > /dev/null 2>&1; [ $? -eq 2 ] || fail "checkpoint and --random-init together"
"$ZAYA" ckpt export-hf -c nosuch --random-init 3 -o "$D/x" > /dev/null 2>&1; [ $? -eq 1 ] || fail "unknown preset exit code"
# a manifest that claims version 1 and drops its checksum is refused unless --accept-v1
cp -r "$D/ck4" "$D/v1"
M=$(ls -d "$D"/v1/step-* | head -1)/manifest.json
"$PY" - "$M" <<'PYEOF' || fail "v1 rewrite"
import json, sys
m = json.load(open(sys.argv[1])); m["format_version"] = 1; m.pop("manifest_xxh3", None)
json.dump(m, open(sys.argv[1], "w"))
PYEOF
"$ZAYA" ckpt verify "$D/v1" > /dev/null 2> "$D/err"; [ $? -eq 1 ] || fail "unsealed version-1 manifest verifies"
grep -q "accept-v1" "$D/err" || fail "v1 message: $(cat "$D/err")"
"$ZAYA" ckpt verify --accept-v1 "$D/v1" 2>/dev/null | grep -q "OK" || fail "verify --accept-v1"
# a FIFO named like a shard is refused by import-hf, not waited on
mkfifo "$D/hf/zz.safetensors"
timeout 60 "$ZAYA" ckpt import-hf "$D/hf" -o "$D/fifo_ck" > /dev/null 2> "$D/err"; [ $? -eq 1 ] || fail "FIFO shard: exit $?"
grep -q "is a FIFO" "$D/err" || fail "FIFO message: $(cat "$D/err")"
rm -f "$D/hf/zz.safetensors"
echo "ckpt_cli: OK"
