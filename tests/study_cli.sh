#!/usr/bin/env bash
# zaya study end to end on a tiny corpus: the list, bad input (unknown study / variant: exit 2; a
# variant the config reader does not know: exit 1 before any run), a 2-variant x 2-seed study whose
# table, JSON and CSV agree with the runs, skipping finished runs, refusing changed settings, and
# resuming after Ctrl-C (SIGINT) in the middle of a run and between two runs.
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_study_test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }

"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
data=(--data "$dir/data" --threads 2)

"$zaya" study --list > "$dir/list.txt" 2>&1; rc=$?
check "--list succeeds and shows every study with runs and time" '[ $rc = 0 ] && for s in router attention moe residual optimizer; do grep -q "^$s: " "$dir/list.txt" || exit 1; done && grep -q "3 variants x 2 seeds = 6 runs" "$dir/list.txt" && grep -q "expected wall time" "$dir/list.txt"'

"$zaya" study --study nosuch -o "$dir/bad" "${data[@]}" > "$dir/e1.txt" 2>&1; rc=$?
check "unknown study: exit 2 naming it" '[ $rc = 2 ] && grep -q "unknown study '"'"'nosuch'"'"'" "$dir/e1.txt"'
"$zaya" study --study attention --variants cca,flash -o "$dir/bad" "${data[@]}" > "$dir/e2.txt" 2>&1; rc=$?
check "unknown variant: exit 2 naming it" '[ $rc = 2 ] && grep -q "unknown variant '"'"'flash'"'"'" "$dir/e2.txt"'
"$zaya" study --study attention --seeds 1 -o "$dir/bad" "${data[@]}" > "$dir/e3.txt" 2>&1; rc=$?
check "one seed: exit 2" '[ $rc = 2 ] && grep -q -- "--seeds" "$dir/e3.txt"'
"$zaya" study --study attention --variants cca -o "$dir/bad" "${data[@]}" > "$dir/e4.txt" 2>&1; rc=$?
check "a single variant: exit 2" '[ $rc = 2 ] && grep -q "at least 2" "$dir/e4.txt"'
# (a variant whose key the config reader does not read, or whose value it refuses: tests/test_study.c)
"$zaya" study --study optimizer --variants adamw,nosuch -o "$dir/bad" "${data[@]}" > "$dir/e5.txt" 2>&1; rc=$?
check "an unknown variant among known ones: exit 2 naming it, nothing written" '[ $rc = 2 ] && grep -q "nosuch" "$dir/e5.txt" && [ ! -e "$dir/bad" ]'

run=(--study attention --variants cca,gqa --seeds 2 --steps 4 "${data[@]}")
"$zaya" study "${run[@]}" -o "$dir/s" > "$dir/s.txt" 2> "$dir/s.err"; rc=$?
check "2 variants x 2 seeds succeed" '[ $rc = 0 ] && grep -q "4 runs: 4 trained now, 0 finished earlier" "$dir/s.txt"'
[ $rc = 0 ] || tail -20 "$dir/s.err"
check "text table: both variants, the baseline and the seed-spread rule" \
  'grep -q "^cca .*baseline" "$dir/s.txt" && grep -Eq "^gqa .*(within seed spread|lower|higher)" "$dir/s.txt" && grep -q "exceeds the sum of the two variants'"'"' seed standard deviations" "$dir/s.txt"'
check "one line of progress per run (JSON lines off a terminal)" '[ "$(grep -c "\"note\":\"attention/[a-z]* seed [12]: val loss" "$dir/s.err")" = 4 ]'
cat > "$dir/tables.py" <<'PY'
import csv, json, math, os, statistics, sys
d = sys.argv[1]
j = json.load(open(os.path.join(d, "study.json")))
t = json.load(open(os.path.join(d, "attention", "table.json")))
assert j["studies"][0] == t, "study.json and the study's table.json differ"
assert [v["variant"] for v in t["variants"]] == ["cca", "gqa"], t["variants"]
assert t["seeds"] == 2 and t["steps"] == 4 and t["tokens_per_run"] == 4 * 1024
rows = list(csv.DictReader(open(os.path.join(d, "study.csv"))))
assert [r["variant"] for r in rows] == ["cca", "gqa"], rows
base = None
for v, r in zip(t["variants"], rows):
    losses = [x["final_val_loss"] for x in v["runs"]]
    assert [x["seed"] for x in v["runs"]] == [1, 2]
    assert all(math.isfinite(x) and 0 < x < 10 for x in losses), losses
    # each run's final loss is the last point of its curve, and read back from its own directory
    for x in v["runs"]:
        assert x["val_curve"] and x["val_curve"][-1][0] == 4 and x["val_curve"][-1][1] == x["final_val_loss"]
        own = json.load(open(os.path.join(d, "attention", v["variant"], "seed%d" % x["seed"], "study_run.json")))
        assert abs(own["result"]["final_val_loss"] - x["final_val_loss"]) < 1e-12
        assert own["settings"]["steps"] == 4 and own["settings"]["config"]["zaya_attention"] == v["variant"]
    m, sd = statistics.mean(losses), statistics.stdev(losses)
    assert abs(v["mean_val_loss"] - m) < 1e-9 and abs(v["sd_val_loss"] - sd) < 1e-9, (v, m, sd)
    assert abs(float(r["mean_val_loss"]) - m) < 1e-5 and abs(float(r["sd_val_loss"]) - sd) < 1e-5
    assert v["min_val_loss"] == min(losses) and v["max_val_loss"] == max(losses)
    if base is None:
        base = v
        assert v["verdict"] == "baseline" and r["verdict"] == "baseline"
    else:
        delta = m - base["mean_val_loss"]
        want = "within seed spread" if abs(delta) <= sd + base["sd_val_loss"] else ("lower" if delta < 0 else "higher")
        assert abs(v["delta"] - delta) < 1e-9 and v["verdict"] == want == r["verdict"], (v, want)
# matched parameters: GQA's attention within 2% of CCA's (the study's choice of head_dim)
c, g = t["variants"][0]["non_embedding_params"], t["variants"][1]["non_embedding_params"]
assert 0 < c - g < 0.02 * c, (c, g)
print("tables agree")
PY
check "JSON, CSV and per-run results agree (mean, sd, verdict, curves)" 'python3 "$dir/tables.py" "$dir/s"'
check "validation-loss plot written (or gnuplot missing)" '[ -s "$dir/s/attention/val_loss.png" ] || ! command -v gnuplot >/dev/null'
check "the per-run directory holds the trainer's outputs" '[ -s "$dir/s/attention/gqa/seed2/metrics.jsonl" ] && [ -s "$dir/s/attention/gqa/seed2/config.json" ] && [ -d "$dir/s/attention/gqa/seed2/ckpt" ]'

stamp=$(stat -c %Y.%s "$dir/s/attention/cca/seed1/study_run.json")
before=$(cat "$dir/s/study.csv")
sleep 1
"$zaya" study "${run[@]}" -o "$dir/s" > "$dir/s2.txt" 2>&1; rc=$?
check "rerun skips the finished runs and reproduces the table" \
  '[ $rc = 0 ] && grep -q "4 runs: 0 trained now, 4 finished earlier" "$dir/s2.txt" && [ "$(stat -c %Y.%s "$dir/s/attention/cca/seed1/study_run.json")" = "$stamp" ] && [ "$(cat "$dir/s/study.csv")" = "$before" ]'
"$zaya" study --study attention --variants cca,gqa --seeds 2 --steps 5 "${data[@]}" -o "$dir/s" > "$dir/s3.txt" 2>&1; rc=$?
check "rerun with other settings in the same -o: exit 1 naming the setting" '[ $rc = 1 ] && grep -q "other settings (key '"'"'steps'"'"' differs)" "$dir/s3.txt"'

# Ctrl-C in the middle of the second run: it checkpoints and the study exits 75; the rerun resumes it
# from its checkpoint and does not train the first run again.
# Every run is held as it enters step 6 (the trainer's pause handshake): the first is let go, the
# second is interrupted while held, so the Ctrl-C lands mid-run however loaded the machine.
res=(--study optimizer --seeds 2 --steps 12 "${data[@]}" -o "$dir/r")
ZAYA_PAUSE_AT=6 ZAYA_PAUSE_FILE="$dir/rpause" "$zaya" study "${res[@]}" > "$dir/r1.txt" 2> "$dir/r1.err" &
pid=$!
second="$dir/r/optimizer/muon_adamw/seed2"
held() { for _ in $(seq 1 12000); do [ -e "$dir/rpause.r00000" ] && return 0; kill -0 $pid 2>/dev/null || return 1; sleep 0.01; done; return 1; }
held && rm -f "$dir/rpause.r00000"
held
kill -INT $pid 2>/dev/null
rm -f "$dir/rpause.r00000"
wait $pid; rc=$?
check "interrupted study exits 75 with a resume hint" '[ $rc = 75 ] && grep -q "run the same command again" "$dir/r1.txt"'
check "the interrupted run is unfinished" '[ ! -e "$second/study_run.json" ] && [ -e "$second/study_settings.json" ]'
stamp=$(stat -c %Y.%s "$dir/r/optimizer/muon_adamw/seed1/study_run.json")
"$zaya" study "${res[@]}" > "$dir/r2.txt" 2> "$dir/r2.err"; rc=$?
check "rerun finishes: the first run skipped, the interrupted one resumed from its checkpoint" \
  '[ $rc = 0 ] && grep -q "4 runs: 3 trained now, 1 finished earlier" "$dir/r2.txt" && [ "$(stat -c %Y.%s "$dir/r/optimizer/muon_adamw/seed1/study_run.json")" = "$stamp" ] && grep -q "resumed from .*muon_adamw/seed2/ckpt" "$dir/r2.err"'
[ $rc = 0 ] || tail -20 "$dir/r2.err"
cat > "$dir/resumed.py" <<'PY'
import json, sys
run = sys.argv[1]
r = json.load(open(run + "/study_run.json"))
last = {}
for l in open(run + "/metrics.jsonl"):
    try:
        d = json.loads(l)
    except ValueError:
        print("metrics.jsonl: unreadable line:", l[:200])
        continue
    if "val_loss" in d:
        last[d["step"]] = d["val_loss"]
end = max(last)
ok = end == 12 and r["result"]["final_val_loss"] == last[end]
if not ok:
    print("resumed run: last validation step", end, "loss", last[end], "study result", r["result"])
sys.exit(0 if ok else 1)
PY
check "resumed run reaches the end" 'python3 "$dir/resumed.py" "$second"'
check "adamw variant ran with --optimizer adamw" 'python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[\"settings\"][\"optimizer\"] == \"adamw\" else 1)" "$dir/r/optimizer/adamw/seed1/study_run.json"'

# Ctrl-C between two runs (right after the first run's last checkpoint, while it writes its report and
# the study moves on): the request must not be lost. The study stops before training anything further
# (or checkpoints the run it has just started) and exits 75 with the resume hint; the rerun completes
# without redoing the finished run.
btw=(--study optimizer --seeds 2 --steps 8 "${data[@]}" -o "$dir/b")
"$zaya" study "${btw[@]}" > "$dir/b1.txt" 2> "$dir/b1.err" &
pid=$!
first="$dir/b/optimizer/muon_adamw/seed1"
for _ in $(seq 1 6000); do
  [ -e "$first/ckpt/step-00000008" ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.02
done
kill -INT $pid 2>/dev/null
wait $pid; rc=$?
check "Ctrl-C between runs: exit 75 with a resume hint naming -o" \
  '[ $rc = 75 ] && grep -q "run the same command again" "$dir/b1.txt" && grep -q -- "-o $dir/b" "$dir/b1.txt"'
[ $rc = 75 ] || { cat "$dir/b1.txt"; tail -5 "$dir/b1.err"; }
check "Ctrl-C between runs: the first run is recorded as finished, nothing after it is" \
  '[ -e "$first/study_run.json" ] && [ ! -e "$dir/b/optimizer/muon_adamw/seed2/study_run.json" ] && [ ! -e "$dir/b/optimizer/adamw/seed1/study_settings.json" ]'
stamp=$(stat -c %Y.%s "$first/study_run.json" 2>/dev/null)
"$zaya" study "${btw[@]}" > "$dir/b2.txt" 2> "$dir/b2.err"; rc=$?
check "Ctrl-C between runs: the rerun completes, the finished run not redone" \
  '[ $rc = 0 ] && grep -q "4 runs: 3 trained now, 1 finished earlier" "$dir/b2.txt" && [ "$(stat -c %Y.%s "$first/study_run.json")" = "$stamp" ]'
[ $rc = 0 ] || tail -5 "$dir/b2.txt"

echo "study_cli: $fail failed"
[ $fail = 0 ]
