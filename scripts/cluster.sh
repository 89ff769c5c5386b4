#!/usr/bin/env bash
# A simulated cluster on one machine: N host network namespaces joined by a bridge in a switch
# namespace, links shaped with tc, and an Open MPI launch agent (scripts/cluster-agent.sh) so that
# mpirun started inside host 0 runs its daemons on the other hosts. docs/cluster.md.
#
#   scripts/cluster.sh up N [--slots S] [--rate R] [--delay D] [--jitter J] [--loss P]
#   scripts/cluster.sh down | status | hostfile | env
#   scripts/cluster.sh exec HOST CMD [ARGS...]
#   scripts/cluster.sh cut HOST | heal HOST | kill HOST | slow HOST FACTOR | fast HOST
#   scripts/cluster.sh shape HOST [--rate R] [--delay D] [--jitter J] [--loss P]
#
# HOST is an index (0 .. N-1), the host's name (PREFIX-hI) or its address. The machine's own network
# namespace is never touched: every interface, address and qdisc lives in namespaces created here.
# Environment: ZAYA_CLUSTER_PREFIX (default zc; names PREFIX-sw, PREFIX-hI, PREFIX-pI),
# ZAYA_CLUSTER_SUBNET (default 10.77.0: host I is SUBNET.(I+1)/24), ZAYA_CLUSTER_DIR (the state
# directory, default /tmp/zaya-cluster-PREFIX). Exit 77 when namespaces, veth, bridges or tc cannot
# be used here (the message names what is missing), 2 on a usage error, 1 on other failures.
set -u
PREFIX=${ZAYA_CLUSTER_PREFIX:-zc}
SUBNET=${ZAYA_CLUSTER_SUBNET:-10.77.0}
DIR=${ZAYA_CLUSTER_DIR:-/tmp/zaya-cluster-$PREFIX}
IFNAME=zc0 # the host's interface, the same name inside every host namespace
SW=$PREFIX-sw
BR=$PREFIX-br
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
AGENT=$HERE/cluster-agent.sh

die() { echo "cluster.sh: $*" >&2; exit 1; }
usage() { echo "cluster.sh: $*" >&2; echo "usage: cluster.sh up N [--slots S] [--rate R] [--delay D] [--jitter J] [--loss P] | down | status | hostfile | env | exec HOST CMD... | cut|heal|kill|fast HOST | slow HOST FACTOR | shape HOST [opts]" >&2; exit 2; }
skip() { echo "cluster.sh: cannot build a simulated cluster here: $*" >&2; exit 77; }

valid_prefix() { [[ $PREFIX =~ ^[a-z][a-z0-9]{0,5}$ ]] || usage "ZAYA_CLUSTER_PREFIX '$PREFIX': 1-6 lower-case letters/digits, starting with a letter"; }

# The tools and privileges the simulation needs; exit 77 naming the first one that is missing.
check_caps() {
    for t in ip tc unshare nsenter; do command -v "$t" >/dev/null 2>&1 || skip "'$t' is not installed (iproute2 / util-linux)"; done
    local probe=$PREFIX-probe$$ err
    if ! err=$(ip netns add "$probe" 2>&1); then skip "'ip netns add' failed (needs root: CAP_SYS_ADMIN and CAP_NET_ADMIN): $err"; fi
    if ! err=$(ip -n "$probe" link add zcpa type veth peer name zcpb 2>&1); then ip netns del "$probe"; skip "no veth devices (CONFIG_VETH): $err"; fi
    if ! err=$(ip -n "$probe" link add zcbr type bridge 2>&1); then ip netns del "$probe"; skip "no bridge devices (CONFIG_BRIDGE): $err"; fi
    if ! err=$(ip netns exec "$probe" tc qdisc add dev zcpa root tbf rate 1gbit burst 64k latency 10ms 2>&1); then ip netns del "$probe"; skip "no tbf qdisc (CONFIG_NET_SCH_TBF): $err"; fi
    if ! err=$(ip netns exec "$probe" unshare --uts true 2>&1); then ip netns del "$probe"; skip "'unshare --uts' failed (needs CAP_SYS_ADMIN): $err"; fi
    ip netns del "$probe"
}

have_netem() {
    local probe=$PREFIX-nprobe$$ ok=1
    ip netns add "$probe" 2>/dev/null || return 1
    ip -n "$probe" link add zcpa type veth peer name zcpb 2>/dev/null && ip netns exec "$probe" tc qdisc add dev zcpa root netem delay 1ms 2>/dev/null && ok=0
    ip netns del "$probe" 2>/dev/null
    return $ok
}

# Rate as tc understands it, validated: 1gbit, 10gbit, 500mbit, ... (bits per second).
rate_bits() {
    local r=$1 n u
    [[ $r =~ ^([0-9]+)(|bit|kbit|mbit|gbit)$ ]] || return 1
    n=${BASH_REMATCH[1]}; u=${BASH_REMATCH[2]}
    case $u in '' | bit) echo "$n" ;; kbit) echo $((n * 1000)) ;; mbit) echo $((n * 1000000)) ;; gbit) echo $((n * 1000000000)) ;; esac
}
valid_time() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]]; }
valid_loss() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?%?$ ]] && awk -v p="${1%\%}" 'BEGIN{exit !(p>=0 && p<100)}'; }

# Parse shaping options into RATE DELAY JITTER LOSS (empty: not given).
parse_shape() {
    RATE=""; DELAY=""; JITTER=""; LOSS=""
    while [ $# -gt 0 ]; do
        case $1 in
            --rate) [ $# -ge 2 ] || usage "--rate needs a value"; rate_bits "$2" >/dev/null || usage "--rate '$2': a rate like 1gbit, 10gbit, 500mbit"; RATE=$2; shift 2 ;;
            --delay) [ $# -ge 2 ] || usage "--delay needs a value"; valid_time "$2" || usage "--delay '$2': a time like 200us, 1ms"; DELAY=$2; shift 2 ;;
            --jitter) [ $# -ge 2 ] || usage "--jitter needs a value"; valid_time "$2" || usage "--jitter '$2': a time like 20us"; JITTER=$2; shift 2 ;;
            --loss) [ $# -ge 2 ] || usage "--loss needs a value"; valid_loss "$2" || usage "--loss '$2': a percentage in [0, 100), e.g. 5 or 0.5%"; LOSS=${2%\%}; shift 2 ;;
            *) usage "unknown shaping option '$1'" ;;
        esac
    done
    if [ -n "$JITTER" ] && [ -z "$DELAY" ]; then usage "--jitter needs --delay"; fi
    if { [ -n "$DELAY" ] && [ "$DELAY" != 0us ]; } && ! have_netem; then
        skip "--delay/--jitter need the netem qdisc, which this kernel lacks (CONFIG_NET_SCH_NETEM; 'tc qdisc add ... netem' says 'Specified qdisc kind is unknown'); rate (tbf) and loss (a cBPF classifier) work without it"
    fi
}

# One direction of a link: qdiscs on device DEV of namespace NS.
# Without netem: root tbf (rate); with loss, an htb root whose filter (classic BPF on the kernel's
# random number) sends P% of the packets to a class whose queue holds nothing (a drop), the rest to
# the tbf. With netem (delay/jitter): netem at the root, the tbf below it.
apply_dev() {
    local ns=$1 dev=$2 rate=$3 delay=$4 jitter=$5 loss=$6
    ip netns exec "$ns" tc qdisc del dev "$dev" root 2>/dev/null
    local bits burst
    if [ -n "$rate" ]; then
        bits=$(rate_bits "$rate")
        # One millisecond of the rate, at least 128 KiB (a TSO super-packet must fit one burst).
        burst=$((bits / 8 / 1000)); [ $burst -lt 131072 ] && burst=131072
    fi
    if [ -n "$delay" ] && [ "$delay" != 0us ]; then
        local extra=""; [ -n "$jitter" ] && extra="$jitter distribution normal"
        local lossarg=""; [ -n "$loss" ] && [ "$loss" != 0 ] && lossarg="loss $loss%"
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem limit 100000 delay "$delay" $extra $lossarg || return 1
        [ -n "$rate" ] && { ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "$rate" burst "$burst" latency 100ms || return 1; }
        return 0
    fi
    if [ -n "$loss" ] && [ "$loss" != 0 ]; then
        local thr
        thr=$(awk -v p="$loss" 'BEGIN{printf "%.0f", p / 100 * 4294967295}')
        ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: htb default 10 r2q 100000 || return 1
        ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:10 htb rate 100gbit quantum 200000 || return 1
        ip netns exec "$ns" tc class add dev "$dev" parent 1: classid 1:20 htb rate 100gbit quantum 200000 || return 1
        ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:20 handle 20: bfifo limit 0 || return 1
        # ld [random]; if A >= thr: no match (class 1:10) else the filter's class 1:20 (dropped).
        ip netns exec "$ns" tc filter add dev "$dev" parent 1: protocol all prio 1 bpf \
            bytecode "4,32 0 0 4294963256,53 1 0 $thr,6 0 0 4294967295,6 0 0 0" flowid 1:20 || return 1
        [ -n "$rate" ] && { ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:10 handle 10: tbf rate "$rate" burst "$burst" latency 100ms || return 1; }
        return 0
    fi
    [ -n "$rate" ] && { ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: tbf rate "$rate" burst "$burst" latency 100ms || return 1; }
    return 0
}

# Both directions of host I's link: its own interface (host -> switch) and its switch port.
apply_link() {
    local i=$1
    apply_dev "$PREFIX-h$i" "$IFNAME" "$RATE" "$DELAY" "$JITTER" "$LOSS" &&
        apply_dev "$SW" "$PREFIX-p$i" "$RATE" "$DELAY" "$JITTER" "$LOSS" &&
        printf '%s\n' "rate=${RATE:-none} delay=${DELAY:-0us} jitter=${JITTER:-0us} loss=${LOSS:-0}" >"$DIR/shape-$i"
}

nhosts() { [ -f "$DIR/map" ] || die "no cluster is up (no $DIR/map; run 'cluster.sh up N')"; wc -l <"$DIR/map"; }

# HOST (index, name or address) -> index.
host_index() {
    local h=$1 i name ns ip
    [ -f "$DIR/map" ] || die "no cluster is up (no $DIR/map; run 'cluster.sh up N')"
    while read -r i name ns ip; do
        if [ "$h" = "$i" ] || [ "$h" = "$name" ] || [ "$h" = "$ip" ]; then echo "$i"; return 0; fi
    done <"$DIR/map"
    die "unknown host '$h' (the hosts: $(awk '{s = s (NR > 1 ? ", " : "") $2 " (" $4 ")"} END {print s}' "$DIR/map"))"
}

do_down() {
    local found=0
    # Processes first (a namespace with live processes outlives 'ip netns del' as an orphan).
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$PREFIX-(h[0-9]+|sw)\$"); do
        found=1
        local pids; pids=$(ip netns pids "$ns" 2>/dev/null)
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        ip netns del "$ns" 2>/dev/null
    done
    for cg in /sys/fs/cgroup/cpu/$PREFIX-h* /sys/fs/cgroup/unified/$PREFIX-h* /sys/fs/cgroup/$PREFIX-h*; do
        [ -d "$cg" ] && rmdir "$cg" 2>/dev/null
    done
    rm -rf "$DIR"
    [ $found = 1 ] && echo "cluster.sh: $PREFIX down"
    return 0
}

do_up() {
    [ $# -ge 1 ] || usage "up needs the number of hosts"
    local n=$1; shift
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || usage "up: number of hosts '$n' must be 1..200"
    local slots=1 args=()
    while [ $# -gt 0 ]; do
        case $1 in
            --slots) [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || usage "--slots needs a positive integer"; slots=$2; shift 2 ;;
            *) args+=("$1"); shift ;;
        esac
    done
    parse_shape "${args[@]+"${args[@]}"}"
    check_caps
    do_down >/dev/null
    trap 'echo "cluster.sh: up failed; removing the partial cluster" >&2; do_down >/dev/null' EXIT
    mkdir -p "$DIR" || die "cannot create $DIR"
    : >"$DIR/map.tmp"
    ip netns add "$SW" || exit 1
    ip -n "$SW" link set lo up || exit 1
    ip -n "$SW" link add "$BR" type bridge || exit 1
    ip -n "$SW" link set "$BR" up || exit 1
    local i
    for ((i = 0; i < n; i++)); do
        local ns=$PREFIX-h$i ip=$SUBNET.$((i + 1))
        ip netns add "$ns" || exit 1
        ip -n "$ns" link set lo up || exit 1
        ip -n "$SW" link add "$PREFIX-p$i" type veth peer name "$IFNAME" netns "$ns" || exit 1
        ip -n "$SW" link set "$PREFIX-p$i" master "$BR" up || exit 1
        ip -n "$ns" addr add "$ip/24" dev "$IFNAME" || exit 1
        ip -n "$ns" link set "$IFNAME" up || exit 1
        apply_link "$i" || exit 1
        echo "$i $PREFIX-h$i $ns $ip" >>"$DIR/map.tmp"
    done
    : >"$DIR/hosts.tmp"
    for ((i = 0; i < n; i++)); do echo "$SUBNET.$((i + 1)) slots=$slots" >>"$DIR/hosts.tmp"; done
    mv "$DIR/hosts.tmp" "$DIR/hosts" && mv "$DIR/map.tmp" "$DIR/map" || exit 1
    # Every host answers from host 0 before the cluster counts as up.
    for ((i = 1; i < n; i++)); do
        local ok=0 try
        for try in 1 2 3 4 5 6 7 8 9 10; do
            # A TCP connect to a closed port: "refused" (an RST came back) is an answer.
            if ip netns exec "$PREFIX-h0" timeout 2 bash -c "exec 3<>/dev/tcp/$SUBNET.$((i + 1))/9" 2>&1 | grep -q refused; then ok=1; break; fi
        done
        [ $ok = 1 ] || { echo "cluster.sh: host $i ($SUBNET.$((i + 1))) does not answer host 0" >&2; exit 1; }
    done
    trap - EXIT
    echo "cluster.sh: $PREFIX up: $n hosts x $slots slots, $SUBNET.1..$SUBNET.$n on $IFNAME, $(cat "$DIR/shape-0"); hostfile $DIR/hosts"
}

do_status() {
    [ -f "$DIR/map" ] || { echo "cluster.sh: $PREFIX is down"; return 3; }
    local i name ns ip
    echo "cluster $PREFIX: $(wc -l <"$DIR/map") hosts, hostfile $DIR/hosts"
    while read -r i name ns ip; do
        local state pids link
        link=$(ip -n "$SW" -o link show "$PREFIX-p$i" 2>/dev/null | grep -q 'state UP' && echo up || echo cut)
        pids=$(ip netns pids "$ns" 2>/dev/null | wc -l)
        state=""; [ -f "$DIR/slow-$i" ] && state=" slow x$(cat "$DIR/slow-$i")"
        printf '  %-8s %-14s link %-3s %s processes %s%s\n' "$name" "$ip" "$link" "$(cat "$DIR/shape-$i" 2>/dev/null)" "$pids" "$state"
    done <"$DIR/map"
}

# The environment of a command run inside a host: the launch agent, TCP between hosts on the
# host's interface only, the hostfile.
cluster_env() {
    cat <<EOF
export ZAYA_CLUSTER_DIR=$DIR
export ZAYA_CLUSTER_HOSTFILE=$DIR/hosts
export OMPI_MCA_plm_rsh_agent=$AGENT
export OMPI_MCA_plm_rsh_no_tree_spawn=1
export OMPI_MCA_oob_tcp_if_include=$IFNAME
export OMPI_MCA_btl_tcp_if_include=$IFNAME
export OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_pml=ob1
export OMPI_MCA_orte_default_hostfile=$DIR/hosts
EOF
}

do_exec() {
    [ $# -ge 2 ] || usage "exec needs HOST and a command"
    local i; i=$(host_index "$1") || exit 1; shift
    cluster_env >"$DIR/env"
    # Own UTS namespace: the hostname is the host's name, so Open MPI (and anyone) tells hosts apart.
    # The host's cgroup (cluster.sh slow) is joined here. nsenter switches the network namespace only
    # ('ip netns exec' would also remount /sys, hiding the cgroup file systems from the launch agent).
    local cg; cg=$(cg_path "$i")
    if [ -n "$cg" ] && [ -d "$cg" ]; then echo $$ >"$cg/cgroup.procs" || die "cannot join $cg"; fi
    exec nsenter --net="/run/netns/$PREFIX-h$i" unshare --uts sh -c '
        hostname "$1" || exit 1
        . "$2"
        shift 2; exec "$@"' sh "$PREFIX-h$i" "$DIR/env" "$@"
}

cg_path() {
    if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cpu.cfs_period_us ]; then echo "/sys/fs/cgroup/cpu/$PREFIX-h$1"
    elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo "/sys/fs/cgroup/$PREFIX-h$1"
    else echo ""; fi
}

do_slow() {
    [ $# -eq 2 ] || usage "slow needs HOST FACTOR"
    local i; i=$(host_index "$1") || exit 1
    [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v f="$2" 'BEGIN{exit !(f>=1)}' || usage "slow: FACTOR '$2' must be a number >= 1"
    local cg; cg=$(cg_path "$i")
    [ -n "$cg" ] || skip "no cgroup cpu controller under /sys/fs/cgroup"
    mkdir -p "$cg" || die "cannot create cgroup $cg"
    local ncpu; ncpu=$(nproc)
    if [ -f "$cg/cpu.cfs_quota_us" ]; then
        echo 100000 >"$cg/cpu.cfs_period_us"
        awk -v n="$ncpu" -v f="$2" 'BEGIN{printf "%d\n", n * 100000 / f}' >"$cg/cpu.cfs_quota_us" || die "cannot set the quota of $cg"
    else
        awk -v n="$ncpu" -v f="$2" 'BEGIN{printf "%d 100000\n", n * 100000 / f}' >"$cg/cpu.max" || die "cannot set $cg/cpu.max"
    fi
    for p in $(ip netns pids "$PREFIX-h$i"); do echo "$p" >"$cg/cgroup.procs" 2>/dev/null; done
    echo "$2" >"$DIR/slow-$i"
    echo "$cg" >"$DIR/slow-cgroup-$PREFIX-h$i"
    echo "cluster.sh: $PREFIX-h$i slowed: CPU quota 1/$2 of $ncpu cores"
}

do_fast() {
    local i; i=$(host_index "$1") || exit 1
    local cg; cg=$(cg_path "$i")
    if [ -n "$cg" ] && [ -d "$cg" ]; then
        if [ -f "$cg/cpu.cfs_quota_us" ]; then echo -1 >"$cg/cpu.cfs_quota_us"; else echo "max 100000" >"$cg/cpu.max"; fi
    fi
    rm -f "$DIR/slow-$i" "$DIR/slow-cgroup-$PREFIX-h$i"
    echo "cluster.sh: $PREFIX-h$i at full speed"
}

cmd=${1:-}; [ $# -gt 0 ] && shift
valid_prefix
case $cmd in
    up) do_up "$@" ;;
    down) do_down ;;
    status) do_status ;;
    hostfile) nhosts >/dev/null && cat "$DIR/hosts" ;;
    env) nhosts >/dev/null && cluster_env ;;
    exec) do_exec "$@" ;;
    cut)
        [ $# -eq 1 ] || usage "cut needs HOST"
        i=$(host_index "$1") || exit 1
        ip -n "$SW" link set "$PREFIX-p$i" down || die "cannot cut $PREFIX-p$i"
        echo "cluster.sh: $PREFIX-h$i cut from the switch" ;;
    heal)
        [ $# -eq 1 ] || usage "heal needs HOST"
        i=$(host_index "$1") || exit 1
        ip -n "$SW" link set "$PREFIX-p$i" up || die "cannot heal $PREFIX-p$i"
        echo "cluster.sh: $PREFIX-h$i back on the switch" ;;
    kill)
        [ $# -eq 1 ] || usage "kill needs HOST"
        i=$(host_index "$1") || exit 1
        pids=$(ip netns pids "$PREFIX-h$i")
        [ -n "$pids" ] && kill -9 $pids 2>/dev/null
        echo "cluster.sh: $PREFIX-h$i: killed $(echo $pids | wc -w) processes" ;;
    slow) do_slow "$@" ;;
    fast) [ $# -eq 1 ] || usage "fast needs HOST"; do_fast "$1" ;;
    shape)
        [ $# -ge 1 ] || usage "shape needs HOST"
        i=$(host_index "$1") || exit 1; shift
        parse_shape "$@"
        apply_link "$i" || die "cannot shape $PREFIX-h$i"
        echo "cluster.sh: $PREFIX-h$i: $(cat "$DIR/shape-$i")" ;;
    -h | --help) sed -n '2,/^set -u/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    '') usage "a command is needed" ;;
    *) usage "unknown command '$cmd'" ;;
esac
