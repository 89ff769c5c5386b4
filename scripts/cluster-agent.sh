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
# The host's cgroup (cluster.sh slow writes its path to slow-cgroup-NAME).
cg=""
if [ -f "$dir/slow-cgroup-$1" ]; then
    cg=$(cat "$dir/slow-cgroup-$1")
    [ -f "$cg/cgroup.procs" ] || { echo "cluster-agent.sh: cannot see the cgroup $cg of $1" >&2; exit 255; }
fi
# Joined before entering the host; nsenter switches the network namespace only (not /sys).
[ -n "$cg" ] && { echo $$ >"$cg/cgroup.procs" || exit 255; }
exec nsenter --net="/run/netns/$2" unshare --uts sh -c '
    hostname "$1" || exit 255
    [ -f "$2" ] && . "$2"
    exec sh -c "$3"' sh "$1" "$dir/env" "$3"
