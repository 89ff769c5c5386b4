#!/usr/bin/env bash
# Training across simulated hosts (scripts/cluster.sh, docs/cluster.md): data parallelism over
# 2 hosts x 1 rank and 2 hosts x 2 ranks, and CP=2 with the two halves of every sequence on different
# hosts, give the losses and the final checkpoint (model and optimizer state, every shard) of the same
# world on one host, bit for bit; the 2 x 2 run uses tcp to every rank of the other host and shared
# memory only within a host. Exit 77 where namespaces cannot be created.
set -u
zaya="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir=$(mktemp -d /tmp/zaya_train_cluster.XXXXXX)
. "$(dirname "$0")/cluster_lib.sh"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
cluster_up 2 --slots 2 --rate 10gbit
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
local_mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_WAIT_POLICY)
common=(--config "$dir/config.json" --run "$dir/run.json" --dtype f32 --threads 1 --max-steps 10 --save-every 10
        --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q)
run() { local name=$1; shift; "$@" -o "$dir/$name" > "$dir/$name.log" 2>&1; local rc=$?; [ $rc = 0 ] || { echo "  $name: exit $rc"; tail -5 "$dir/$name.log"; }; return $rc; }
losses() { python3 -c "import json,sys; print(' '.join(repr(json.loads(l)['loss']) for l in open(sys.argv[1]) if '\"loss\"' in l and '\"step\"' in l))" "$1"; }
same_ckpt() { # every safetensors file of the final step byte-identical
    local a="$dir/$1/ckpt/step-00000010" b="$dir/$2/ckpt/step-00000010" f n=0
    [ -d "$a" ] && [ -d "$b" ] || { echo "  missing $a or $b"; return 1; }
    for f in "$a"/*.safetensors; do cmp -s "$f" "$b/$(basename "$f")" || { echo "  differs: $(basename "$f")"; return 1; }; n=$((n+1)); done
    [ "$n" = "$(ls "$b"/*.safetensors | wc -l)" ] && [ "$n" -gt 0 ]
}
same() { [ "$(losses "$dir/$1/metrics.jsonl")" = "$(losses "$dir/$2/metrics.jsonl")" ] && [ -n "$(losses "$dir/$1/metrics.jsonl")" ] && same_ckpt "$1" "$2"; }

# DP 2 hosts x 1 rank (--map-by node: rank r on host r) vs 2 ranks on one host.
run l2 "${local_mpi[@]}" -np 2 "$zaya" train "${common[@]}"
run h2 cx "${cmpi[@]}" -np 2 --map-by node "$zaya" train "${common[@]}"
check "DP over 2 hosts x 1 rank: losses and final checkpoint of 2 ranks on one host" 'same l2 h2'
# DP 2 hosts x 2 ranks (ranks 0,1 on host 0, 2,3 on host 1), with the transport per peer logged.
run l4 "${local_mpi[@]}" -np 4 "$zaya" train "${common[@]}"
run h4 cx "${cmpi[@]}" -np 4 --mca btl_base_verbose 100 "$zaya" train "${common[@]}"
check "DP over 2 hosts x 2 ranks: losses and final checkpoint of 4 ranks on one host" 'same l4 h4'
check "2 x 2: tcp between hosts, shared memory only within a host" 'transports "$dir/h4.log" 2'
# CP=2, rank 0 (first half of each sequence) on host 0, rank 1 (second half) on host 1.
run lc "${local_mpi[@]}" -np 2 "$zaya" train "${common[@]}" --cp 2
run hc cx "${cmpi[@]}" -np 2 --map-by node "$zaya" train "${common[@]}" --cp 2
check "CP=2 with the halves on different hosts: losses and final checkpoint of one host" 'same lc hc'
check "--map-by node puts the two CP ranks on different hosts" '[ "$(cx "${cmpi[@]}" -np 2 --map-by node hostname | sort -u | wc -l)" = 2 ]'
echo "train_cluster: $fail failed"
[ $fail = 0 ]
