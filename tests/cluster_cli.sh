#!/usr/bin/env bash
# scripts/cluster.sh: hosts, addresses, hostnames, the launch agent, the transport per peer (tcp
# between hosts, never shared memory), the fault verbs (cut / heal / kill / slow / shape), usage errors,
# the skip without privileges, and nothing left behind (namespaces, cgroups, the root namespace's
# links unchanged). Exit 77 where namespaces cannot be created.
set -u
zaya="$1"
dir=$(mktemp -d /tmp/zaya_cluster_cli.XXXXXX)
. "$(dirname "$0")/cluster_lib.sh"
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=$((fail+1)); fi; }
root_links_before=$(ip -o link show | awk -F': ' '{print $2}' | sort)

cluster_up 2 --slots 2 --rate 1gbit
P=$ZAYA_CLUSTER_PREFIX
check "hostfile: one line per host with its slots" '[ "$("$cluster" hostfile)" = "$(printf "10.77.0.1 slots=2\n10.77.0.2 slots=2")" ]'
check "each host has its own hostname and address" '[ "$("$cluster" exec 1 hostname)" = "$P-h1" ] && "$cluster" exec 1 ip -o -4 addr show zc0 | grep -q "10.77.0.2/24"'
check "the links are shaped (tbf 1Gbit both ways)" '"$cluster" exec 0 tc qdisc show dev zc0 | grep -q "tbf.*rate 1Gbit" && ip netns exec $P-sw tc qdisc show dev $P-p1 | grep -q "rate 1Gbit"'
check "up again replaces the cluster (idempotent)" '"$cluster" up 2 --slots 2 > "$dir/up2.log" 2>&1 && [ "$(ip netns list | grep -c "^$P-")" = 3 ]'
"$cluster" status > "$dir/status.log"; cat "$dir/status.log"
check "status lists both hosts up" '[ "$(grep -c "link up" "$dir/status.log")" = 2 ]'

# mpirun inside host 0, daemons through the agent: 2 hosts x 2 ranks, the transport per peer.
cx env OMP_WAIT_POLICY=passive "${cmpi[@]}" -np 4 --mca btl_base_verbose 100 "$zaya" bench coll -b 8 -e 1K -f 4 -n 2 -w 1 --coll allreduce \
    --out "$dir/coll" > "$dir/mpi.log" 2>&1; rc=$?
check "mpirun across 2 hosts x 2 ranks runs" '[ $rc = 0 ]'
check "ranks on both hosts" 'grep -q "\[$P-h0:" "$dir/mpi.log" && grep -q "\[$P-h1:" "$dir/mpi.log"'
check "tcp to every peer on the other host, shared memory only within a host" 'transports "$dir/mpi.log" 2'

# bench coll --placement hosts: the intra-host rows (each host's 2 ranks) and the inter-host rows
# (one rank per host) apart from the whole world's.
cx env OMP_WAIT_POLICY=passive "${cmpi[@]}" -np 4 "$zaya" bench coll -b 8 -e 4K -f 8 -n 2 -w 1 --coll allreduce \
    --placement hosts --out "$dir/hosts" > "$dir/hosts.log" 2>&1; rc=$?
check "bench coll --placement hosts across 2 hosts x 2 ranks" '[ $rc = 0 ] && grep -q "2 hosts (ranks grouped by hostname)" "$dir/hosts.log"'
check "coll.json: packed rows of 4 ranks, intra-host and inter-host rows of 2" 'python3 - "$dir/hosts/coll.json" <<"PY"
import json, sys
rows = json.load(open(sys.argv[1]))["results"]
got = sorted({(r["placement"], r["ranks"]) for r in rows})
print("  placements:", got)
sys.exit(0 if got == [("inter-host", 2), ("intra-host", 2), ("packed", 4)] else 1)
PY'
env OMP_WAIT_POLICY=passive mpirun --allow-run-as-root --oversubscribe -np 2 "$zaya" bench coll -b 8 -e 64 -n 2 -w 1 --coll allreduce \
    --placement hosts --out "$dir/onehost" > "$dir/onehost.log" 2>&1; rc=$?
check "--placement hosts on one host: intra-host rows only, said so" '[ $rc = 0 ] && grep -q "one host: no inter-host group" "$dir/onehost.log" && grep -q "intra-host" "$dir/onehost/coll.json" && ! grep -q "inter-host" "$dir/onehost/coll.json"'

# cut: no answer at all from the host (not even a refusal); heal: answers again.
probe() { cx timeout 2 bash -c "exec 3<>/dev/tcp/10.77.0.2/9" 2>&1 | grep -q refused; }
check "host 1 answers" 'probe'
"$cluster" cut 1 > /dev/null
check "cut: host 1 does not answer" '! probe'
"$cluster" status | grep -q "$P-h1 .*link cut" || { echo "FAIL: status shows the cut"; fail=$((fail+1)); }
"$cluster" heal 1 > /dev/null
check "heal: host 1 answers again" 'probe'

# kill: every process of the host ends (the sleeper is seen in the namespace before the kill).
"$cluster" exec 1 sleep 1000 & sleeper=$!
for i in $(seq 1 200); do [ -n "$(ip netns pids $P-h1)" ] && break; sleep 0.05; done
"$cluster" kill 1 > /dev/null
wait $sleeper 2>/dev/null
check "kill: the host's processes are gone" '[ -z "$(ip netns pids $P-h1)" ]'

# slow: a CPU quota on the host's cgroup; processes started there later join it.
if "$cluster" slow 1 4 > "$dir/slow.log" 2>&1; then
    cg=$(ls -d /sys/fs/cgroup/cpu/$P-h1 /sys/fs/cgroup/$P-h1 2>/dev/null | head -1)
    check "slow: the host's cgroup has a quota" '[ -n "$cg" ] && { [ "$(cat $cg/cpu.cfs_quota_us 2>/dev/null)" = $(( $(nproc) * 100000 / 4 )) ] || grep -q "^$(( $(nproc) * 100000 / 4 )) " $cg/cpu.max 2>/dev/null; }'
    check "slow: a process started on the host is in it" '"$cluster" exec 1 cat /proc/self/cgroup | grep -q "$P-h1"'
    "$cluster" fast 1 > /dev/null
else
    rc=$?; cat "$dir/slow.log"; check "slow skipped only where there is no cgroup cpu controller" '[ $rc = 77 ]'
fi

# shape: rate and loss on one link (loss: packets counted as dropped by the drop class).
"$cluster" shape 1 --rate 100mbit --loss 50 > /dev/null
check "shape: host 1 at 100Mbit" 'ip netns exec $P-sw tc qdisc show dev $P-p1 | grep -q "rate 100Mbit"'
for i in $(seq 1 20); do cx timeout 1 bash -c "exec 3<>/dev/tcp/10.77.0.2/9" > /dev/null 2>&1; done
check "shape --loss 50: packets dropped" '[ "$("$cluster" exec 1 tc -s qdisc show dev zc0 | awk "/bfifo/{f=1} f && /dropped/{gsub(\",\",\"\"); print \$7; exit}")" -gt 0 ]'
"$cluster" shape 1 --rate 1gbit > /dev/null
"$cluster" shape 1 --delay 1ms > "$dir/delay.log" 2>&1; rc=$?
check "--delay works or exits 77 naming netem" '[ $rc = 0 ] || { [ $rc = 77 ] && grep -q netem "$dir/delay.log"; }'

# usage errors (2) and runtime errors (1), each naming the problem
err() { "$cluster" "${@:2}" > "$dir/err.log" 2>&1; local rc=$?; [ $rc = "$1" ] || { echo "  exit $rc:"; cat "$dir/err.log"; return 1; }; }
check "up 0: usage error" 'err 2 up 0 && grep -q "number of hosts" "$dir/err.log"'
check "up --rate fast: usage error" 'err 2 up 2 --rate fast && grep -q -- "--rate" "$dir/err.log"'
check "up --loss 100: usage error" 'err 2 up 2 --loss 100 && grep -q -- "--loss" "$dir/err.log"'
check "unknown command: usage error" 'err 2 frobnicate && grep -q "unknown command" "$dir/err.log"'
check "--help: the usage, exit 0" '"$cluster" --help | grep -q "cluster.sh up N"'
check "unknown host names the hosts" 'err 1 exec 7 true && grep -q "unknown host .7." "$dir/err.log" && grep -q "$P-h1" "$dir/err.log"'
check "the agent refuses an unknown host" 'ZAYA_CLUSTER_DIR=$ZAYA_CLUSTER_DIR "$root_dir/scripts/cluster-agent.sh" 10.99.0.1 true > "$dir/err.log" 2>&1; [ $? = 255 ] && grep -q "unknown host" "$dir/err.log"'
check "without privileges: exit 77 naming what is missing" 'setpriv --reuid 65534 --regid 65534 --clear-groups env ZAYA_CLUSTER_DIR=/tmp/zaya-cluster-nobody-$$ "$cluster" up 2 > "$dir/err.log" 2>&1; [ $? = 77 ] && grep -q "needs root" "$dir/err.log"'

"$cluster" down > /dev/null
check "down: no namespace, cgroup or state left" '[ -z "$(ip netns list | grep "^$P-")" ] && [ ! -e "$ZAYA_CLUSTER_DIR" ] && ! ls -d /sys/fs/cgroup/cpu/$P-* /sys/fs/cgroup/$P-* > /dev/null 2>&1'
check "the root namespace's links are unchanged" '[ "$(ip -o link show | awk -F": " "{print \$2}" | sort)" = "$root_links_before" ]'
echo "cluster_cli: $fail failed"
[ $fail = 0 ]
