# Shared by the simulated-cluster tests (tests/cluster_*.sh): a private cluster prefix and state
# directory per test process, brought down on every exit path; exit 77 (skip) when scripts/cluster.sh
# cannot build namespaces here. Source it after setting `dir`.
root_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cluster="$root_dir/scripts/cluster.sh"
export ZAYA_CLUSTER_PREFIX="zt$(( $$ % 10000 ))"
export ZAYA_CLUSTER_DIR="$dir/cluster"
cluster_cleanup() { "$cluster" down >/dev/null 2>&1; [ -n "${ZAYA_KEEP:-}" ] || rm -rf "$dir"; }
trap cluster_cleanup EXIT
trap 'exit 130' INT TERM
# cluster_up ARGS...: up or skip the whole test (exit 77 with cluster.sh's reason).
cluster_up() {
    "$cluster" up "$@" > "$dir/up.log" 2>&1
    local rc=$?
    if [ $rc = 77 ]; then cat "$dir/up.log"; echo "SKIP: $(tail -1 "$dir/up.log")"; exit 77; fi
    [ $rc = 0 ] || { cat "$dir/up.log"; echo "FAIL: cluster.sh up $* (exit $rc)"; exit 1; }
}
# The launcher inside host 0: mpirun reaches the other hosts through the launch agent.
cx() { "$cluster" exec 0 "$@"; }
cmpi=(mpirun --allow-run-as-root --bind-to none -x OMP_WAIT_POLICY)
# transports LOG RANKS_PER_HOST: every "Using BTL for send to [[J,1],PEER]" line of an Open MPI log
# run with --mca btl_base_verbose 100, checked: a peer on another host over tcp, one on the same host
# over vader or self. Prints one line per (host, peer rank, btl) and fails on a wrong one.
transports() {
    python3 - "$1" "$2" <<'PY'
import re, sys
per = int(sys.argv[2])
seen, bad = set(), []
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"\[([^:\]]+):\d+\] mca: bml: Using (\w+) btl for send to \[\[\d+,\d+\],(\d+)\]", line)
    if not m:
        continue
    host, btl, peer = m.group(1), m.group(2), int(m.group(3))
    me = int(host.rsplit("-h", 1)[1])
    remote = peer // per != me
    seen.add((host, peer, btl))
    if (remote and btl != "tcp") or (not remote and btl not in ("vader", "self")):
        bad.append(f"{host} -> rank {peer}: {btl}")
for host, peer, btl in sorted(seen):
    print(f"  {host} -> rank {peer} (host {peer // per}): {btl}")
if bad or not seen:
    print("wrong transports:", bad or "none reported")
    sys.exit(1)
PY
}
