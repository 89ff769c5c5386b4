#!/usr/bin/env bash
# No allocation inside a training step, at world 1 and under mpirun -np 2 (ZeRO-1 reductions, the f64
# loss / norm and i64 routing-count all-reduces).
#   step_alloc.sh ZAYA STEP_ALLOC [MPIEXEC]
set -u
zaya="$1"; exe="$2"; mpiexec="${3:-mpirun}"
dir=$(mktemp -d /tmp/zaya_step_alloc.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
export OMP_WAIT_POLICY=passive
fail=0
if "$exe" "$dir"; then echo "ok: world 1"; else echo "FAIL: world 1"; fail=$((fail + 1)); fi
if "$mpiexec" --allow-run-as-root --oversubscribe -x OMP_WAIT_POLICY -np 2 "$exe" "$dir"; then
    echo "ok: world 2"
else
    echo "FAIL: world 2"; fail=$((fail + 1))
fi
echo "step_alloc: $fail failed"
[ $fail = 0 ]
