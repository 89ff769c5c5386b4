#!/usr/bin/env bash
# Megatron-LM indexed datasets and llm.c token files through the CLI: `zaya data inspect|validate`
# read them in place (exit 1 with the offset or both numbers on bad files, 2 on bad flags), a run
# file names them as sources (`data validate --run`), and `zaya train` trains from them.
set -u
zaya="$1"; src="$2"
py=/usr/bin/python3
export PYTHONDONTWRITEBYTECODE=1 # the script imports tests/foreign_tokens.py: no __pycache__ in the tree
tmp=$(mktemp -d /tmp/zaya_data_foreign.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
expect() { # expect CODE PATTERN -- cmd...
  local code="$1" pat="$2"; shift 3
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ "$rc" != "$code" ] || ! grep -q -- "$pat" <<<"$out"; then
    echo "FAIL: '$*' -> rc=$rc (want $code), output lacks '$pat':"; echo "$out" | head -8; fail=$((fail+1))
  else echo "ok: $*"; fi
}
"$py" "$src/tests/foreign_tokens.py" "$tmp/f" || { echo "FAIL: writing the files"; exit 1; }
f="$tmp/f"
gpt=(--vocab-size 50257 --eos-id 50256)
expect 0 "Megatron indexed dataset (.idx version 1), dtype uint16 (code 8)" -- "$zaya" data inspect "${gpt[@]}" "$f/mg_u16_eod"
expect 0 "tokens       1115 in 30 documents" -- "$zaya" data inspect "${gpt[@]}" "$f/mg_u16_eod.idx"
expect 0 "llm.c token file (version 1), uint16 ids" -- "$zaya" data inspect "${gpt[@]}" -n 3 "$f/llmc_gpt2.bin"
expect 0 "llm.c token file (version 7), uint32 ids" -- "$zaya" data inspect --vocab-size 128256 --eos-id 128000 "$f/llmc_llama3.bin"
expect 0 "2 of 2 shards valid" -- "$zaya" data validate "${gpt[@]}" "$f/mg_u16_eod" "$f/llmc_head.bin"
expect 1 "stores no vocabulary size" -- "$zaya" data inspect "$f/mg_u16_eod"
expect 1 "the .idx and the .bin disagree" -- "$zaya" data validate --vocab-size 100000 --eos-id 99999 "$f/bad_binsize"
expect 1 "holds ids below 65536, but the vocabulary has 100000 ids" -- "$zaya" data validate --vocab-size 100000 --eos-id 0 "$f/mg_u16_eod"
expect 1 "truncated" -- "$zaya" data validate --vocab-size 100000 --eos-id 99999 "$f/bad_trunc_body.idx"
expect 1 "pointer 3 (offset" -- "$zaya" data inspect --vocab-size 100000 --eos-id 99999 "$f/bad_pointer"
expect 1 "magic 1234 at offset 0" -- "$zaya" data validate "${gpt[@]}" "$f/bad_llmc_magic.bin"
expect 2 "--eos-id must be in" -- "$zaya" data inspect --vocab-size 10 --eos-id 10 "$f/mg_u16_eod"
expect 2 "--vocab-size must be in" -- "$zaya" data validate --vocab-size -3 "$f/mg_u16_eod"

# A small-vocabulary Megatron dataset (EODs appended) and llm.c file to train on.
"$py" - "$src/tests" "$tmp/t" <<'PY' || { echo "FAIL: small files"; exit 1; }
import os, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from foreign_tokens import MegatronBuilder, llmc_write
out = sys.argv[2]; os.makedirs(out)
rng = np.random.default_rng(5)
docs = [[int(x) for x in rng.integers(2, 512, size=int(rng.integers(20, 120)))] for _ in range(200)]
for part, ds in (("train", docs[:180]), ("val", docs[180:])):
    b = MegatronBuilder(os.path.join(out, "mg-" + part), np.uint16)
    for d in ds:
        b.add_item(d + [1]); b.end_document()
    b.finalize()
    llmc_write(os.path.join(out, "lc-%s.bin" % part), [t for d in ds for t in [1] + d[::-1]])
PY
t="$tmp/t"
cat > "$t/run.json" <<JSON
{"name": "foreign", "seed": 3, "seq_multiple": 8,
 "sources": {"mg": {"train": "$t/mg-train", "val": "$t/mg-val", "vocab_size": 512, "eos_id": 1},
             "lc": {"train": "$t/lc-train.bin", "val": "$t/lc-val.bin", "vocab_size": 512, "eos_id": 1}},
 "phases": [{"name": "a", "tokens": 2048, "sources": {"mg": 0.5, "lc": 0.5}, "seq_len": 32, "batch": 4,
             "lr": {"peak": 0.005}}]}
JSON
expect 0 "train source mg .* 1 shards" -- "$zaya" data validate --run "$t/run.json"
cat > "$t/config.json" <<JSON
{"model_type": "zaya", "hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "head_dim": 16, "num_experts": 4, "moe_intermediate_size": 48, "router_hidden_size": 16, "vocab_size": 512,
 "max_position_embeddings": 128, "bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 0}
JSON
expect 0 "" -- "$zaya" train --config "$t/config.json" --run "$t/run.json" --eval-every 8 --eval-batches 1 --samples 0 --dtype f32 \
  --peak-gflops 100 -q -o "$t/out"
[ -s "$t/out/summary.json" ] && echo "ok: trained from Megatron + llm.c sources" || { echo "FAIL: no summary"; fail=$((fail+1)); }
sed -i 's/"vocab_size": 512, "eos_id": 1}}/"vocab_size": 100, "eos_id": 1}}/' "$t/run.json"
expect 1 "not an id in \[0, vocab_size 100)" -- "$zaya" data validate --run "$t/run.json"
echo "data_foreign_cli: $fail failed"
[ $fail = 0 ]
