#!/usr/bin/env bash
# zaya bench all --quick writes a profile.json that the sizing tool accepts (label bench: ~30-60 s).
set -u
zaya="$1"; fx="$2/fixtures/size"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$zaya" bench all --quick -o "$tmp/all" > "$tmp/all.log" 2>&1 || { echo "FAIL: bench all"; tail -20 "$tmp/all.log"; exit 1; }
grep -q "profile written to $tmp/all/profile.json" "$tmp/all.log" || { echo "FAIL: no profile line"; exit 1; }
/usr/bin/python3 - "$tmp/all/profile.json" <<'PY' || exit 1
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "zaya-profile" and p["version"] == 1, "header"
for k in ("machine", "gemm", "gemm_peak_gflops", "memory", "collectives"): assert k in p, k
assert {g["dtype"] for g in p["gemm"]} == {"f32", "bf16"}, "gemm dtypes"
assert all(g["gflops"] > 0 and g["m"] > 0 for g in p["gemm"]), "gemm rows"
assert p["memory"]["triad_GBps"] > 0 and p["memory"]["validated"], "memory"
ranks = {e["ranks"] for v in p["collectives"].values() for e in v}
assert 1 in ranks, "in-process world 1"
print("profile ok: %d gemm rows, collective rank counts %s" % (len(p["gemm"]), sorted(ranks)))
PY
out=$("$zaya" size predict "$fx/zaya1-8b.json" --hw "$tmp/all/profile.json" --batch 4 2>&1) || { echo "FAIL: size predict rejected the profile"; echo "$out"; exit 1; }
grep -q "tokens/s:" <<<"$out" || { echo "FAIL: size predict output"; echo "$out" | tail; exit 1; }
echo "size predict accepts the profile"
