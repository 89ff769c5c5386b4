#!/usr/bin/env bash
# The checkpoint commit protocol seen from a training run (world 1, tiny model, ~30-step runs under
# `zaya supervise`): every state a kill can leave behind must resume and end with final files
# bit-identical to an uninterrupted run.
#   - killed between the commit rename and the latest rewrite (latest names the step before, plus a
#     stale latest.tmp.PID and a staging directory of a dead process): resumes from the newest
#     complete step, latest repaired with an incident (0 steps lost), stale files removed;
#   - latest missing / empty / naming a step that does not exist: reconstructed from the step
#     directories, metrics.jsonl appended to, not truncated;
#   - one digit flipped in the manifest's JSON state (data_loader): refused by manifest_xxh3 with an
#     error naming the manifest, fallback to the step before, steps_lost = the difference;
#   - a step redone (--no-resume over existing checkpoints): replaced, never "already exists".
#   ckpt_commit.sh ZAYA
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_ckpt_commit.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
"$(dirname "$0")/tiny_corpus.sh" "$zaya" "$dir" || { echo "corpus preparation failed"; exit 1; }
. "$(dirname "$0")/ft_lib.sh"
# part NAME: the first 12 steps of a run, as if it had been stopped there (checkpoints 4, 8, 12)
part() { "$zaya" train "${C[@]}" --max-steps 12 -o "$dir/$1/train" > "$dir/$1.part.log" 2>&1; }
# resume NAME: the same run to the end under the supervisor
resume() { "$zaya" supervise -o "$dir/$1/sup" "${SUP[@]}" -- "$zaya" train "${C[@]}" --max-steps $STEPS -o "$dir/$1/train" \
    > "$dir/$1.log" 2>&1; }
completed() { # completed NAME RC: all steps, bit-identical, metrics of the first part kept
    local name=$1 rc=$2
    check "$name: completed all $STEPS steps (exit $rc)" '[ $rc = 0 ] && [ -f "$dir/$name/train/ckpt/$final/manifest.json" ]'
    check "$name: final weights and optimizer state bit-identical to the uninterrupted run" \
        'same_files "$dir/ref/ckpt/$final" "$dir/$name/train/ckpt/$final"'
    check "$name: metrics.jsonl kept the first part's steps (appended, not truncated)" \
        'grep -q "\"step\":0," "$dir/$name/train/metrics.jsonl" && grep -q "\"step\":29," "$dir/$name/train/metrics.jsonl"'
}

"$zaya" train "${C[@]}" --max-steps $STEPS -o "$dir/ref" > /dev/null 2>&1
check "reference trained" '[ -f "$dir/ref/ckpt/$final/manifest.json" ]'

# killed between the rename of step 12 and the rewrite of latest
part behind
echo "step-00000008" > "$dir/behind/train/ckpt/latest"
echo "step-00000012" > "$dir/behind/train/ckpt/latest.tmp.999999999"
mkdir -p "$dir/behind/train/ckpt/step-00000016.tmp-999999999"
resume behind; rc=$?
completed behind $rc
check "behind: resumed from the newest complete step 12, not the one latest named" \
    'grep -q "resumed from .*step-00000012" "$dir/behind/sup/attempt-001.log"'
check "behind: latest repaired with an incident, 0 steps lost" \
    '[ "$(incident behind latest_repaired steps_lost)" = 0 ] && grep -q "latest behind" "$dir/behind/sup/incidents.jsonl"'
check "behind: no 'already exists', stale latest.tmp and staging directory removed" \
    '! grep -q "already exists" "$dir/behind/sup/attempt-001.log" && ! ls "$dir/behind/train/ckpt" | grep -q tmp'

# latest missing, empty, naming a step that does not exist
for kind in missing empty absent; do
    part $kind
    case $kind in
        missing) rm "$dir/$kind/train/ckpt/latest" ;;
        empty) : > "$dir/$kind/train/ckpt/latest" ;;
        absent) echo "step-00003000" > "$dir/$kind/train/ckpt/latest" ;;
    esac
    resume $kind; rc=$?
    completed $kind $rc
    check "$kind latest: reconstructed as step 12 with an incident, 0 steps lost" \
        'grep -q "resumed from .*step-00000012" "$dir/$kind/sup/attempt-001.log" && [ "$(incident $kind latest_repaired steps_lost)" = 0 ]'
done
check "absent latest: the incident names the missing step" 'grep -q "step-00003000, which does not exist" "$dir/absent/sup/incidents.jsonl"'

# one digit of the manifest's JSON state flipped
part flip
python3 - "$dir/flip/train/ckpt/step-00000012/manifest.json" <<'PY'
import re, sys
p = sys.argv[1]; t = open(p).read()
i = t.index('"data_loader"'); m = re.compile(r'[0-9]').search(t, i)
d = t[m.start()]; t = t[:m.start()] + ("8" if d == "9" else str(int(d) + 1)) + t[m.start() + 1:]
open(p, "w").write(t)
PY
out=$("$zaya" ckpt verify "$dir/flip/train/ckpt/step-00000012" 2>&1); rc=$?
check "flip: zaya ckpt verify refuses it, naming the manifest (exit $rc)" \
    '[ $rc = 1 ] && grep -q "step-00000012/manifest.json: manifest checksum" <<<"$out"'
resume flip; rc=$?
completed flip $rc
check "flip: fell back to step 8, recorded as corrupt_checkpoint with 4 steps lost" \
    '[ "$(incident flip corrupt_checkpoint step)" = 12 ] && [ "$(incident flip corrupt_checkpoint steps_lost)" = 4 ] && grep -q "manifest checksum" "$dir/flip/sup/incidents.jsonl"'
check "flip: the bad checkpoint was moved aside, then removed once step 12 was committed again" \
    '! ls "$dir/flip/train/ckpt" | grep -q unusable'

# a step redone: --no-resume over existing checkpoints replaces them
part redo
cp "$dir/redo/train/ckpt/step-00000012/model-r00000.safetensors" "$dir/redo-model-12"
out=$("$zaya" train "${C[@]}" --max-steps 12 --no-resume -o "$dir/redo/train" 2>&1); rc=$?
check "redo: --no-resume over existing step directories succeeds (exit $rc), no 'already exists'" \
    '[ $rc = 0 ] && ! grep -q "already exists" <<<"$out"'
check "redo: the re-saved step is bit-identical" 'cmp -s "$dir/redo-model-12" "$dir/redo/train/ckpt/step-00000012/model-r00000.safetensors"'

echo "ckpt_commit: $fail failed"
[ $fail = 0 ]
