#!/usr/bin/env bash
# dpdk-host.sh: the swordbox middlebox on a DPDK host. Reserves hugepages,
# checks the IOMMU, binds the two NIC ports to vfio-pci with dpdk-devbind.py
# (not for mlx5 NICs, whose DPDK driver works beside the kernel's), builds
# swordbox with -tags dpdk, writes the middlebox's config file (EAL arguments,
# ports, memory servers and their ranges) and starts `swordbox middlebox run`.
# docs/deploy.md walks through a whole rack.
set -euo pipefail

SB_NAME=dpdk-host.sh
# shellcheck source=scripts/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(sb_repo)

usage() {
	cat <<'EOF'
usage: scripts/deploy/dpdk-host.sh [options] --client-pci ADDR --server-pci ADDR --server IP [--server IP ...]
       scripts/deploy/dpdk-host.sh --stop

The middlebox has two ports: the client side (cabled to the switch, which
forwards the memory nodes' MACs there) and the server side (towards the
memory nodes). Every operation of a --server's clients moves onto one shared
RC connection to it; CMP_SWAP and FETCH_ADD on words in a --cas-to-write
range become WRITEs (docs/middlebox.md).

Steps: build swordbox with -tags dpdk (unless --swordbox), reserve hugepages
and mount hugetlbfs, check the IOMMU and load vfio-pci, take the ports' kernel
interfaces down and bind them to vfio-pci, write the config file, start
`swordbox middlebox run --config FILE`, wait for its first counters.

Options (numbers are checked; a value out of range is refused):
  --client-pci ADDR      PCI address of the client-side port (DDDD:BB:DD.F, e.g. 0000:3b:00.0)
  --server-pci ADDR      PCI address of the server-side port
  --driver vfio-pci|mlx5 vfio-pci: bind the ports to it (Intel, Broadcom, ...); mlx5:
                         leave them on mlx5_core, DPDK's mlx5 driver works beside it
                         (needs rdma-core) (default vfio-pci)
  --server IP            a memory node whose traffic the middlebox multiplexes (every
                         address of it remapped); repeat for each node, at most 64
  --cas-to-write IP=LO-HI  a range [LO, HI) (hex or decimal) of that server whose CAS
                         and FETCH_ADD become WRITEs; repeatable
  --lcore N              the EAL's core (-l), 0..<CPUs - 1> (default 1: keep core 0
                         for the kernel)
  --hugepages N          2 MiB hugepages to reserve, 64..65536 (default 512: 1 GiB)
  --pmtu BYTES           path MTU of the RC connections: 256 512 1024 2048 4096 (default 4096)
  --ring-size N          map entries of a shared connection, a power of two 64..1048576 (default 4096)
  --window N             operations a client may have outstanding, a power of two 1..1048576 (default 256)
  --burst N              frames received at once, 1..512 (default 32)
  --nak-recovery MODE    replay | broadcast (default replay)
  --stats-period DUR     print the counters this often, 10ms..24h (default 5s)
  --file-prefix NAME     the EAL's --file-prefix (default swordbox-mbox)
  --run-dir DIR          config, log and pid file (default build/dpdk/run)
  --swordbox FILE        a swordbox binary built with -tags dpdk (default: build it)
  --wait SECONDS         how long to wait for the first counters, 1..600 (default 30)
  --stop                 stop the middlebox this script started
  --dry-run              print the plan (every command, every file) and run nothing
  -h, --help             this text
EOF
}

cpci="" spci="" driver=vfio-pci servers=() cas=() lcore=1 huge=512 pmtu=4096 ring=4096 window=256 burst=32
nak=replay stats=5s prefix=swordbox-mbox rundir="" bin="" wait=30 stop=0
while (($#)); do
	case $1 in
	--client-pci) sb_value "$1" $#; cpci=$2; shift ;;
	--server-pci) sb_value "$1" $#; spci=$2; shift ;;
	--driver) sb_value "$1" $#; driver=$2; shift ;;
	--server) sb_value "$1" $#; servers+=("$2"); shift ;;
	--cas-to-write) sb_value "$1" $#; cas+=("$2"); shift ;;
	--lcore) sb_value "$1" $#; lcore=$2; shift ;;
	--hugepages) sb_value "$1" $#; huge=$2; shift ;;
	--pmtu) sb_value "$1" $#; pmtu=$2; shift ;;
	--ring-size) sb_value "$1" $#; ring=$2; shift ;;
	--window) sb_value "$1" $#; window=$2; shift ;;
	--burst) sb_value "$1" $#; burst=$2; shift ;;
	--nak-recovery) sb_value "$1" $#; nak=$2; shift ;;
	--stats-period) sb_value "$1" $#; stats=$2; shift ;;
	--file-prefix) sb_value "$1" $#; prefix=$2; shift ;;
	--run-dir) sb_value "$1" $#; rundir=$2; shift ;;
	--swordbox) sb_value "$1" $#; bin=$2; shift ;;
	--wait) sb_value "$1" $#; wait=$2; shift ;;
	--stop) stop=1 ;;
	--dry-run) SB_DRY=1 ;;
	-h | --help) usage; exit 0 ;;
	*) sb_die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
cd "$REPO"
SB_RUNDIR=${rundir:-build/dpdk/run}

if ((stop)); then
	sb_stop middlebox
	exit 0
fi

# Values.
cpus=$(getconf _NPROCESSORS_ONLN)
pcire='^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$'
[[ -n $cpci ]] || sb_die "--client-pci is required (see --help)"
[[ -n $spci ]] || sb_die "--server-pci is required (see --help)"
[[ $cpci =~ $pcire ]] || sb_die "--client-pci $cpci: want a full PCI address DDDD:BB:DD.F (lspci -D)"
[[ $spci =~ $pcire ]] || sb_die "--server-pci $spci: want a full PCI address DDDD:BB:DD.F (lspci -D)"
[[ ${cpci,,} != "${spci,,}" ]] || sb_die "--client-pci and --server-pci are the same port $cpci"
sb_oneof --driver "$driver" vfio-pci mlx5
sb_int --lcore "$lcore" 0 $((cpus - 1))
sb_int --hugepages "$huge" 64 65536
sb_oneof --pmtu "$pmtu" 256 512 1024 2048 4096
sb_pow2 --ring-size "$ring" 64 1048576
sb_pow2 --window "$window" 1 1048576
sb_int --burst "$burst" 1 512
sb_oneof --nak-recovery "$nak" replay broadcast
sb_duration --stats-period "$stats"
sb_int --wait "$wait" 1 600
[[ $prefix =~ ^[A-Za-z0-9_-]{1,64}$ ]] || sb_die "--file-prefix $prefix: 1..64 characters of letters, digits, _ and -"
((${#servers[@]})) || sb_die "give at least one --server IP (see --help)"
((${#servers[@]} <= 64)) || sb_die "--server: ${#servers[@]} servers, at most 64"
declare -A srv=() ranges=()
for s in "${servers[@]}"; do
	sb_ipv4 --server "$s"
	[[ -z ${srv[$s]:-} ]] || sb_die "--server $s given twice"
	srv[$s]=1
done
numre='^(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,18})$'
for c in "${cas[@]}"; do
	[[ $c =~ ^([^=]+)=([^-]+)-(.+)$ ]] || sb_die "--cas-to-write $c: want IP=LO-HI"
	ip=${BASH_REMATCH[1]} lo=${BASH_REMATCH[2]} hi=${BASH_REMATCH[3]}
	[[ -n ${srv[$ip]:-} ]] || sb_die "--cas-to-write $c: $ip is not a --server"
	[[ $lo =~ $numre && $hi =~ $numre ]] || sb_die "--cas-to-write $c: LO and HI are addresses (hex 0x... up to 16 digits, or decimal up to 18 digits)"
	# Compare as unsigned 64-bit: printf prints both as 16 hex digits.
	lx=$(printf '%016x' "$lo" 2>/dev/null) || sb_die "--cas-to-write $c: $lo is not a 64-bit address"
	hx=$(printf '%016x' "$hi" 2>/dev/null) || sb_die "--cas-to-write $c: $hi is not a 64-bit address"
	[[ $lx < $hx ]] || sb_die "--cas-to-write $c: empty range (want LO < HI)"
	ranges[$ip]+="{lo: 0x$lx, hi: 0x$hx}, "
done

sb_default_bin build/dpdk/swordbox

# Prerequisites.
sb_need_root "hugepages, vfio-pci binding and DPDK's access to the NIC"
sb_need_cmd dpdk-devbind.py "apt-get install dpdk (its usertools)"
if ((build_bin)); then
	sb_need_cmd go "Go 1.26 (go.dev/dl) to build swordbox, or pass --swordbox with a binary built with -tags dpdk"
	sb_need_cmd pkg-config "apt-get install pkg-config"
	sb_need_cmd gcc "apt-get install gcc (cgo)"
	if ! pkg-config --exists libdpdk 2>/dev/null; then
		SB_MISSING+=("library libdpdk: apt-get install libdpdk-dev (DPDK 22.11 on Debian 12)")
	fi
else
	sb_need_file "$bin" "a swordbox binary built with: go build -tags dpdk -o swordbox ./cmd/swordbox"
fi
for p in "$cpci" "$spci"; do
	sb_need_file "/sys/bus/pci/devices/$p" "no PCI device $p on this host (lspci -D lists them)"
done
if [[ $driver == vfio-pci ]]; then
	sb_need_module vfio-pci "the kernel's vfio-pci driver (in Debian's stock kernel)"
	if [[ -z $(ls -A /sys/kernel/iommu_groups 2>/dev/null) ]]; then
		SB_MISSING+=("IOMMU: /sys/kernel/iommu_groups is empty; enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on iommu=pt (or amd_iommu=on), then reboot")
	fi
else
	sb_need_module mlx5_ib "mlx5 needs the RDMA stack: apt-get install rdma-core ibverbs-providers (and DPDK's librte-net-mlx5)"
fi

sb_note "middlebox: client side $cpci, server side $spci ($driver), lcore $lcore, servers ${servers[*]}"
sb_check_missing

sb_note "1. swordbox with DPDK"
sb_run mkdir -p "$SB_RUNDIR"
if ((build_bin)); then
	sb_run go build -tags dpdk -o "$bin" ./cmd/swordbox
fi

sb_note "2. hugepages: $huge pages of 2 MiB, hugetlbfs on /dev/hugepages"
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
sb_sh "[ \"\$(cat $hp)\" -ge $((10#$huge)) ] || echo $((10#$huge)) > $hp"
sb_sh "[ \"\$(cat $hp)\" -ge $((10#$huge)) ] || { echo 'only '\"\$(cat $hp)\"' hugepages: memory too fragmented; reserve them at boot (hugepages=$((10#$huge)) on the kernel command line)' >&2; exit 1; }"
sb_sh "mountpoint -q /dev/hugepages || { mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; }"

if [[ $driver == vfio-pci ]]; then
	sb_note "3. vfio-pci: the ports' kernel interfaces down, then bound (dpdk-devbind.py refuses an interface that is up)"
	sb_run modprobe vfio-pci
	for p in "$cpci" "$spci"; do
		sb_sh "for n in /sys/bus/pci/devices/$p/net/*; do [ -e \"\$n\" ] && ip link set dev \"\$(basename \"\$n\")\" down; done; true"
	done
	sb_run dpdk-devbind.py -b vfio-pci "$cpci" "$spci"
	sb_run dpdk-devbind.py --status-dev net
else
	sb_note "3. mlx5: no binding; the ports stay on mlx5_core and their interfaces up"
	for p in "$cpci" "$spci"; do
		sb_sh "for n in /sys/bus/pci/devices/$p/net/*; do [ -e \"\$n\" ] && ip link set dev \"\$(basename \"\$n\")\" up; done; true"
	done
fi

sb_note "4. the config file (docs/middlebox.md describes every key)"
cfg=$SB_RUNDIR/mbox.yaml
body="# Written by scripts/deploy/dpdk-host.sh.
middlebox:
  io: dpdk
  client-iface: \"$cpci\"
  server-iface: \"$spci\"
  dpdk-args: [\"-l\", \"$((10#$lcore))\", \"-n\", \"4\", \"-a\", \"$cpci\", \"-a\", \"$spci\", \"--file-prefix\", \"$prefix\", \"--in-memory\"]
  cores: 1
  burst: $((10#$burst))
  stats-period: $stats
  ring-size: $((10#$ring))
  window: $((10#$window))
  pmtu: $pmtu
  nak-recovery: $nak
  servers:"
for s in "${servers[@]}"; do
	body+="
    - ip: $s
      remap: [{lo: 0, hi: 0}]"
	if [[ -n ${ranges[$s]:-} ]]; then
		body+="
      cas-to-write: [${ranges[$s]%, }]"
	fi
done
sb_write "$cfg" "$body"

sb_note "5. the middlebox"
log=$SB_RUNDIR/middlebox.log
sb_daemon middlebox "$log" "$bin" middlebox run --config "$cfg"
sb_wait_log middlebox "$log" '^middlebox: ' "$wait" "EAL errors above? (hugepages, IOMMU, the ports' binding)"
sb_note "up: counters every $stats in $log; stop with scripts/deploy/dpdk-host.sh --stop"
