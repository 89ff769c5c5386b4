#!/bin/sh
# Open MPI launch agent of the simulated cluster (plm_rsh_agent; scripts/cluster.sh, docs/cluster.md):
# called as `cluster-agent.sh HOST CMD...` where ssh would be, it runs CMD (the words joined by
# spaces and run by sh, as ssh's remote shell does) inside HOST's network namespace, in a UTS
# namespace of its own named after the host. HOST is an address or name from $ZAYA_CLUSTER_DIR/map.
dir=${ZAYA_CLUSTER_DIR:?cluster-agent.sh: ZAYA_CLUSTER_DIR is not set (run the launcher through scripts/cluster.sh exec)}
[ $# -ge 2 ] || { echo "cluster-agent.sh: usage: cluster-agent.sh HOST CMD..." >&2; exit 2; }
host=$1; shift
line=$(awk -v h="$host" '$1 == h || $2 == h || $4 == h {print; exit}' "$dir/map")
[ -n "$line" ] || { echo "cluster-agent.sh: unknown host '$host' (not in $dir/map)" >&2; exit 255; }
set -- "$(echo "$line" | awk '{print $2}')" "$(echo "$line" | awk '{print $3}')" "$*"
cg=""
for c in /sys/fs/cgroup/cpu/$1 /sys/fs/cgroup/$1; do [ -d "$c" ] && cg=$c && break; done
# The host's cgroup (cluster.sh slow) is joined before 'ip netns exec', which remounts /sys without it.
[ -n "$cg" ] && { echo $$ >"$cg/cgroup.procs" || exit 255; }
exec ip netns exec "$2" unshare --uts sh -c '
    hostname "$1" || exit 255
    [ -f "$2" ] && . "$2"
    exec sh -c "$3"' sh "$1" "$dir/env" "$3"
