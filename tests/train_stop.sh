#!/usr/bin/env bash
# Ctrl-C and resume of zaya train on the tiny corpus, synchronised on events (the trainer's pause
# handshake holds it at step 6 while SIGINT goes in, then lets it go):
#   - SIGINT: exit 75 after a checkpoint at the step in flight (7), no validation after the request,
#     the last progress line shows step 7 (not the run's total);
#   - the same command again resumes at 7 and completes; summary.json and the end line keep the run's
#     history: steps of the run and of this attempt, first validation and train loss of the run (equal
#     to an uninterrupted run's).
#   train_stop.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_train_stop.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
unset ZAYA_HEARTBEAT_DIR ZAYA_ATTEMPT ZAYA_PAUSE_AT ZAYA_PAUSE_FILE
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 4 --eval-batches 1 --samples 0 --peak-gflops 100
   --max-steps 16 --log-every 100)

"$zaya" train "${C[@]}" -o "$dir/ref" > "$dir/ref.log" 2>&1
check "uninterrupted reference trained" '[ -s "$dir/ref/summary.json" ]'

ZAYA_PAUSE_AT=6 ZAYA_PAUSE_FILE="$dir/pause" "$zaya" train "${C[@]}" -o "$dir/t" > "$dir/t1.out" 2> "$dir/t1.err" &
pid=$!
for _ in $(seq 1 12000); do [ -e "$dir/pause.r00000" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.01; done
kill -INT $pid
rm -f "$dir/pause.r00000"
wait $pid; rc=$?
check "SIGINT: exit 75 with the resume hint (rc $rc)" '[ $rc = 75 ] && grep -q "preempted after 7 steps" "$dir/t1.out"'
check "SIGINT: the checkpoint is step 7" '[ "$(cat "$dir/t/ckpt/latest" 2>/dev/null)" = step-00000007 ]'
check "SIGINT: no validation after the stop request (last at step 4)" \
  '[ "$(python3 -c "import json,sys; print(max(json.loads(l)[\"step\"] for l in open(sys.argv[1]) if \"val_loss\" in l))" "$dir/t/metrics.jsonl")" = 4 ]'
check "SIGINT: the last progress line shows step 7" \
  'grep "\"progress\":\"train\"" "$dir/t1.err" | tail -1 | grep -q "\"done\":7,\"total\":16"'

"$zaya" train "${C[@]}" -o "$dir/t" > "$dir/t2.out" 2> "$dir/t2.err"; rc=$?
check "the same command resumes at step 7 and completes (rc $rc)" '[ $rc = 0 ] && grep -q "resumed at step 7: the run has 16 steps" "$dir/t2.out"'
cat > "$dir/hist.py" <<'PY'
import json, sys
ref, got = (json.load(open(p + "/summary.json")) for p in sys.argv[1:3])
rows = [json.loads(l) for l in open(sys.argv[2] + "/metrics.jsonl")]
first_val = next(r["val_loss"] for r in rows if "val_loss" in r)
first_loss = next(r["loss"] for r in rows if "loss" in r)
ok = got["steps"] == 16 and got["steps_this_attempt"] == 9 and got["resumed_at_step"] == 7
ok = ok and got["tokens"] == ref["tokens"] and 0 < got["tokens_this_attempt"] < got["tokens"]
ok = ok and abs(got["first_val_loss"] - ref["first_val_loss"]) < 1e-6 and abs(got["first_val_loss"] - first_val) < 1e-5
ok = ok and abs(got["first_train_loss"] - ref["first_train_loss"]) < 1e-6 and abs(got["first_train_loss"] - first_loss) < 1e-6
ok = ok and abs(got["last_val_loss"] - ref["last_val_loss"]) < 1e-6
if not ok:
    print("reference", ref, "\nresumed", got, "\nfirst val", first_val, "first loss", first_loss)
sys.exit(0 if ok else 1)
PY
check "summary.json after the resume: the run's steps and tokens, this attempt's, the run's first losses" \
  'python3 "$dir/hist.py" "$dir/ref" "$dir/t"'
check "the end line names the run's first validation loss" \
  'grep -q "validation loss $(python3 -c "import json,sys; print(\"%.4f\" % json.load(open(sys.argv[1]))[\"first_val_loss\"])" "$dir/ref/summary.json") ->" "$dir/t2.out"'

echo "train_stop: $fail failed"
[ $fail = 0 ]
