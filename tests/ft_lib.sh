# Shared setup of the supervised-run tests (ckpt_commit.sh, ft_hygiene.sh); source it after `dir` is
# set and the tiny corpus is written there. Defines the run arguments, the final step's name and
#   same_files A B          the model and state files of two checkpoint steps are identical
#   incident NAME KIND KEY  KEY of the first KIND incident in NAME's supervisor log
export OMP_WAIT_POLICY=passive
unset ZAYA_HEARTBEAT_DIR ZAYA_ATTEMPT ZAYA_SUPERVISOR_PID ZAYA_SUPERVISOR_START
STEPS=30
C=(--config "$dir/config.json" --run "$dir/run.json" --eval-every 0 --eval-batches 1 --samples 0 --peak-gflops 100 -q
   --save-every 4)
SUP=(--backoff 0.2 --backoff-max 1 --hang-floor 3 --hang-cap 60 --grace 2)
final=$(printf "step-%08d" $STEPS)
same_files() {
    cmp -s "$1/model-r00000.safetensors" "$2/model-r00000.safetensors" || return 1
    for f in "$1"/state-r*.safetensors; do cmp -s "$f" "$2/$(basename "$f")" || return 1; done
}
incident() { python3 -c 'import json,sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j["kind"] == sys.argv[2]: print(j[sys.argv[3]]); break' "$dir/$1/sup/incidents.jsonl" "$2" "$3" 2>/dev/null; }
