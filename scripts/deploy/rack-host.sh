#!/usr/bin/env bash
# rack-host.sh: a memory node or a Clover host of a real rack. swordbox's
# hosts run the software RNIC (roce/rnic) on an AF_PACKET port of the host's
# data NIC, with an RNIC MAC and IP of their own; queue pairs are set up over
# TCP (the connection managers) on the management network. The script
# prepares the data NIC (MTU, no GRO/LRO, promiscuous when the RNIC's MAC is
# not the NIC's, IPv6 off, the RNIC's IP not the kernel's) and runs the role:
#   memnode         swordbox memnode (ICRC check off: the steering switch rewrites
#                   addresses without recomputing it), in the background
#   clover-ms       swordbox clover ms (Clover's metadata server), in the background
#   clover-clients  swordbox clover clients in the foreground: it reads load,
#                   warmup, run, quit on stdin (or --steps) and prints JSON events
# docs/deploy.md walks through a whole rack.
set -euo pipefail

SB_NAME=rack-host.sh
# shellcheck source=scripts/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(sb_repo)

usage() {
	cat <<'EOF'
usage: scripts/deploy/rack-host.sh memnode|clover-ms|clover-clients --iface IFACE --ip IP [options]
       scripts/deploy/rack-host.sh memnode|clover-ms --stop

Common options (numbers are checked; a value out of range is refused):
  --iface IFACE          the data NIC (cabled to the switch); AF_PACKET, root
  --ip IP                the RNIC's IPv4 address (the rack file's host ip); must not be
                         an address of the kernel on IFACE
  --mac MAC              the RNIC's MAC (the rack file's host mac; default: IFACE's own,
                         which needs no promiscuous mode)
  --mtu BYTES            RoCE path MTU: 256 512 1024 2048 4096 (default 1024)
  --link-mtu BYTES       IFACE's MTU, 1280..9216 (default 9000); at least --mtu + 78
  --ack-timeout DUR      the RNIC's ACK timeout (clover roles; default 67ms, 10us..10s)
  --run-dir DIR          logs and pid files (default build/rack/run)
  --swordbox FILE        a built swordbox binary (default: go build into build/rack)
  --wait SECONDS         how long to wait for a daemon, 1..600 (default 30)
  --stop                 stop the daemon of this role this script started
  --dry-run              print the plan (every command) and run nothing
  -h, --help             this text
memnode:
  --listen HOST:PORT     connection manager, on the management network (default 0.0.0.0:7471)
  --size BYTES           registered memory, 4KiB..half of this host's memory (default 1GiB;
                         suffixes KiB MiB GiB)
  --regions N            equal regions, each with its own rkey, 1..1024 (default 1)
  --workers N            responder workers, 0..64 (default 0: the receive loop)
  --check-icrc           verify received ICRCs (only without a steering switch in front)
clover-ms:
  --listen HOST:PORT     its connection manager (default 0.0.0.0:7472)
  --memnode HOST:PORT    the memory node's connection manager
  --keys N               1..1048576 (default 1024); --threads N 1..4096 (default 32)
  --read-timeout DUR     Clover's T_r, 1us..1m (default: swordbox's)
clover-clients:
  --memnode HOST:PORT, --ms HOST:PORT   the connection managers
  --host N               this host's index, 0..63; --hosts N client hosts, 1..64
  --threads N            client threads in the whole rack, 1..4096 (default 32)
  --workload W           a b c d f write-only (default a)
  --keys N               1..1048576 (default 1024); --value-size N 1..4072 (default 128)
  --zipf F               0.01..5 (default 0.99); --seed N 0..2^63-1 (default 1)
  --warmup DUR           0..1h (default 1s); --duration DUR 10ms..24h (default 8s)
  --read-timeout DUR     Clover's T_r, as at the metadata server
  --steps LIST           commands to send, comma separated, e.g. load,warmup,run,quit
                         (default: read them from this terminal)
EOF
}

role=""

iface="" ip="" mac="" mtu=1024 linkmtu=9000 acktimeout=67ms rundir="" bin="" wait=30 stop=0
listen="" size=1GiB regions=1 workers=0 checkicrc=0 memnode="" ms="" keys=1024 threads=32 readto=""
host=0 hosts=1 workload=a valuesize=128 zipf=0.99 seed=1 warmup=1s duration=8s steps=""
while (($#)); do
	case $1 in
	--iface) sb_value "$1" $#; iface=$2; shift ;;
	--ip) sb_value "$1" $#; ip=$2; shift ;;
	--mac) sb_value "$1" $#; mac=$2; shift ;;
	--mtu) sb_value "$1" $#; mtu=$2; shift ;;
	--link-mtu) sb_value "$1" $#; linkmtu=$2; shift ;;
	--ack-timeout) sb_value "$1" $#; acktimeout=$2; shift ;;
	--run-dir) sb_value "$1" $#; rundir=$2; shift ;;
	--swordbox) sb_value "$1" $#; bin=$2; shift ;;
	--wait) sb_value "$1" $#; wait=$2; shift ;;
	--stop) stop=1 ;;
	--dry-run) SB_DRY=1 ;;
	--listen) sb_value "$1" $#; listen=$2; shift ;;
	--size) sb_value "$1" $#; size=$2; shift ;;
	--regions) sb_value "$1" $#; regions=$2; shift ;;
	--workers) sb_value "$1" $#; workers=$2; shift ;;
	--check-icrc) checkicrc=1 ;;
	--memnode) sb_value "$1" $#; memnode=$2; shift ;;
	--ms) sb_value "$1" $#; ms=$2; shift ;;
	--keys) sb_value "$1" $#; keys=$2; shift ;;
	--threads) sb_value "$1" $#; threads=$2; shift ;;
	--read-timeout) sb_value "$1" $#; readto=$2; shift ;;
	--host) sb_value "$1" $#; host=$2; shift ;;
	--hosts) sb_value "$1" $#; hosts=$2; shift ;;
	--workload) sb_value "$1" $#; workload=$2; shift ;;
	--value-size) sb_value "$1" $#; valuesize=$2; shift ;;
	--zipf) sb_value "$1" $#; zipf=$2; shift ;;
	--seed) sb_value "$1" $#; seed=$2; shift ;;
	--warmup) sb_value "$1" $#; warmup=$2; shift ;;
	--duration) sb_value "$1" $#; duration=$2; shift ;;
	--steps) sb_value "$1" $#; steps=$2; shift ;;
	memnode | clover-ms | clover-clients)
		[[ -z $role ]] || sb_die "$1: the role is already $role"
		role=$1
		;;
	-h | --help) usage; exit 0 ;;
	*) sb_die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
cd "$REPO"
SB_RUNDIR=${rundir:-build/rack/run}
[[ -n $role ]] || sb_die "give the role: memnode, clover-ms or clover-clients (see --help)"

if ((stop)); then
	[[ $role != clover-clients ]] || sb_die "--stop: clover-clients runs in the foreground (send quit, or Ctrl-C)"
	sb_stop "$role"
	exit 0
fi

# Values.
[[ -n $iface ]] || sb_die "--iface is required (the data NIC; see --help)"
[[ -n $ip ]] || sb_die "--ip is required (the RNIC's address; see --help)"
sb_iface_name --iface "$iface"
sb_ipv4 --ip "$ip"
[[ -z $mac ]] || sb_mac --mac "$mac"
sb_oneof --mtu "$mtu" 256 512 1024 2048 4096
sb_int --link-mtu "$linkmtu" 1280 9216
((10#$linkmtu >= mtu + 78)) || sb_die "--link-mtu $linkmtu: below --mtu $mtu + 78 (IPv4, UDP, BTH, RETH, ICRC)"
sb_duration --ack-timeout "$acktimeout"
sb_int --wait "$wait" 1 600
case $role in
memnode)
	listen=${listen:-0.0.0.0:7471}
	sb_hostport --listen "$listen"
	[[ $size =~ ^([0-9]{1,15})(B|K|KB|KiB|M|MB|MiB|G|GB|GiB)?$ ]] || sb_die "--size $size: want a byte count (a number with B, KiB, MiB or GiB)"
	n=$((10#${BASH_REMATCH[1]}))
	case ${BASH_REMATCH[2]} in
	K | KB | KiB) n=$((n << 10)) ;;
	M | MB | MiB) n=$((n << 20)) ;;
	G | GB | GiB) n=$((n << 30)) ;;
	esac
	memkb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
	((n >= 4096)) || sb_die "--size $size: out of range 4KiB..$((memkb / 2 / 1024))MiB (half of this host's memory)"
	((n <= memkb * 1024 / 2)) || sb_die "--size $size: out of range 4KiB..$((memkb / 2 / 1024))MiB (half of this host's memory)"
	sb_int --regions "$regions" 1 1024
	((n / 10#$regions >= 4096)) || sb_die "--size $size split into --regions $regions leaves regions under 4KiB"
	sb_int --workers "$workers" 0 64
	;;
clover-ms)
	listen=${listen:-0.0.0.0:7472}
	sb_hostport --listen "$listen"
	[[ -n $memnode ]] || sb_die "--memnode is required for clover-ms"
	sb_hostport --memnode "$memnode"
	sb_int --keys "$keys" 1 1048576
	sb_int --threads "$threads" 1 4096
	[[ -z $readto ]] || sb_duration --read-timeout "$readto"
	;;
clover-clients)
	[[ -n $memnode ]] || sb_die "--memnode is required for clover-clients"
	[[ -n $ms ]] || sb_die "--ms is required for clover-clients"
	sb_hostport --memnode "$memnode"
	sb_hostport --ms "$ms"
	sb_int --hosts "$hosts" 1 64
	sb_int --host "$host" 0 $((10#$hosts - 1))
	sb_int --threads "$threads" 1 4096
	sb_oneof --workload "$workload" a b c d f write-only
	sb_int --keys "$keys" 1 1048576
	sb_int --value-size "$valuesize" 1 4072
	if ! [[ $zipf =~ ^[0-9]{1,2}(\.[0-9]{1,6})?$ ]] || ! awk -v z="$zipf" 'BEGIN { exit !(z >= 0.01 && z <= 5) }'; then
		sb_die "--zipf $zipf: out of range 0.01..5"
	fi
	sb_int --seed "$seed" 0 9223372036854775807
	sb_duration --warmup "$warmup"
	sb_duration --duration "$duration"
	[[ -z $readto ]] || sb_duration --read-timeout "$readto"
	if [[ -n $steps ]]; then
		IFS=, read -r -a stepv <<<"$steps"
		for s in "${stepv[@]}"; do
			sb_oneof "--steps $steps: step" "$s" load warmup run quit
		done
	fi
	;;
esac

sb_default_bin build/rack/swordbox

# Prerequisites.
sb_need_root "AF_PACKET on $iface and the NIC's settings"
sb_need_iface "$iface" "the data NIC cabled to the switch (ip link lists this host's interfaces)"
sb_need_cmd ip "apt-get install iproute2"
sb_need_cmd ethtool "apt-get install ethtool"
if ((build_bin)); then
	sb_need_cmd go "Go 1.26 (go.dev/dl) to build swordbox, or pass --swordbox with a built binary"
else
	sb_need_file "$bin" "a swordbox binary: go build -o swordbox ./cmd/swordbox"
fi
if [[ -z $mac ]]; then
	if [[ -r /sys/class/net/$iface/address ]]; then
		mac=$(cat "/sys/class/net/$iface/address")
	else
		mac=02:00:00:00:00:01
		sb_note "no $iface here: the plan uses the placeholder MAC $mac where a real run uses $iface's own"
	fi
fi
promisc=0
if [[ -r /sys/class/net/$iface/address ]] && [[ ${mac,,} != "$(cat "/sys/class/net/$iface/address")" ]]; then
	promisc=1
fi
if [[ -e /sys/class/net/$iface ]] && ip -4 -o addr show dev "$iface" 2>/dev/null | grep -qw "inet $ip"; then
	sb_die "--ip $ip is an address of the kernel on $iface: the kernel would answer the RNIC's UDP 4791 with ICMP; give the RNIC an address of its own"
fi

sb_note "$role on $iface: RNIC $mac $ip, path MTU $mtu"
sb_check_missing

sb_note "1. swordbox"
sb_run mkdir -p "$SB_RUNDIR"
if ((build_bin)); then
	sb_run go build -o "$bin" ./cmd/swordbox
fi

sb_note "2. the data NIC: MTU $linkmtu, no GRO/LRO (AF_PACKET sees frames as on the wire), IPv6 off"
sb_run ip link set dev "$iface" mtu "$((10#$linkmtu))" up
sb_sh "ethtool -K $iface gro off lro off >/dev/null 2>&1 || true"
sb_run sysctl -qw "net.ipv6.conf.$iface.disable_ipv6=1"
if ((promisc)); then
	sb_note "the RNIC's MAC $mac is not $iface's: promiscuous mode, or the NIC drops its frames"
	sb_run ip link set dev "$iface" promisc on
fi

common=(--iface "$iface" --mac "$mac" --ip "$ip" --mtu "$mtu")
case $role in
memnode)
	sb_note "3. the memory node: its regions (address, rkey) are printed at start; the rack file's memory-nodes regions must lie inside them"
	args=(memnode "${common[@]}" --listen "$listen" --size "$size" --regions "$((10#$regions))" --workers "$((10#$workers))")
	((checkicrc)) || args+=(--skip-icrc)
	log=$SB_RUNDIR/memnode.log
	sb_daemon memnode "$log" "$bin" "${args[@]}"
	sb_wait_log memnode "$log" 'memnode: listening' "$wait" ""
	sb_sh "grep '^memnode: region' $log"
	;;
clover-ms)
	sb_note "3. Clover's metadata server: writes the region header into the memory node, then serves"
	args=(clover ms "${common[@]}" --ack-timeout "$acktimeout" --listen "$listen" --memnode "$memnode" --keys "$((10#$keys))" --threads "$((10#$threads))")
	[[ -z $readto ]] || args+=(--read-timeout "$readto")
	log=$SB_RUNDIR/clover-ms.log
	sb_daemon clover-ms "$log" "$bin" "${args[@]}"
	sb_wait_log clover-ms "$log" 'clover ms: ready' "$wait" "is the memory node up, and reachable on the management network?"
	;;
clover-clients)
	args=(clover clients "${common[@]}" --ack-timeout "$acktimeout" --memnode "$memnode" --ms "$ms"
		--host "$((10#$host))" --hosts "$((10#$hosts))" --threads "$((10#$threads))" --workload "$workload"
		--keys "$((10#$keys))" --value-size "$((10#$valuesize))" --zipf "$zipf" --seed "$((10#$seed))"
		--warmup "$warmup" --duration "$duration")
	[[ -z $readto ]] || args+=(--read-timeout "$readto")
	out=$SB_RUNDIR/clients-$((10#$host)).jsonl
	if [[ -n $steps ]]; then
		sb_note "3. client host $host: commands ${steps//,/ } in order (each runs to its end before the next), events to $out"
		sb_sh "printf '%s\\n' ${steps//,/ } | $(sb_quote "$bin" "${args[@]}") | tee -a $out"
	else
		sb_note "3. client host $host: type load, warmup, run, quit (each answers with a JSON event), events to $out"
		sb_sh "$(sb_quote "$bin" "${args[@]}") | tee -a $out"
	fi
	;;
esac
