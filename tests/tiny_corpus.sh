#!/usr/bin/env bash
# Builds a tiny training corpus + run file + model config in DIR for the training tests:
#   tiny_corpus.sh ZAYA DIR
set -eu
zaya="$1"; dir="$2"
F="${ZAYA_FORTUNES_DIR:-/usr/share/games/fortunes}" # a private prefix's copy on a bare GPU machine
mkdir -p "$dir"
"$zaya" tokenizer train --vocab-size 512 --bos "<|bos|>" --eos "<|eos|>" --pad "<|pad|>" -o "$dir/data" \
  "$F/cookie" "$F/science" /usr/include/asm-generic > "$dir/tok.log" 2>&1
"$zaya" data prepare -t "$dir/data/tokenizer.json" -n prose --doc-delimiter % --val-fraction 0.05 -o "$dir/data" \
  "$F/cookie" "$F/science" "$F/fortunes" > /dev/null
"$zaya" data prepare -t "$dir/data/tokenizer.json" -n code --extensions h --val-fraction 0.05 -o "$dir/data" \
  /usr/include/asm-generic > /dev/null
cat > "$dir/run.json" <<JSON
{"name": "tiny", "seed": 7, "data_dir": "$dir/data", "seq_multiple": 8, "batch_multiple": 4,
 "phases": [
  {"name": "a", "tokens": 12288, "sources": {"prose": 0.7, "code": 0.3}, "seq_len": 32, "batch": {"from": 4, "to": 8, "ramp_tokens": 2048},
   "rope_theta": 10000, "lr": {"peak": 0.01, "final": 0.005, "warmup_tokens": 1024, "decay": "cosine"}},
  {"name": "b", "tokens": 4096, "sources": {"prose": 0.4, "code": 0.6}, "seq_len": 64, "batch": 4,
   "rope_theta": 40000, "lr": {"peak": 0.005, "final": 0.001, "decay": "cosine"}}
 ]}
JSON
cat > "$dir/config.json" <<JSON
{"model_type": "zaya", "hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "head_dim": 16, "num_experts": 4, "moe_intermediate_size": 48, "router_hidden_size": 16, "vocab_size": 512,
 "max_position_embeddings": 128, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 0}
JSON
