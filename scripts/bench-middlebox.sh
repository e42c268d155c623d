#!/usr/bin/env bash
# bench-middlebox.sh: the middlebox over DPDK net_ring vdevs, side by side
# with dpdk-testpmd on the same kind of vdevs, in one run.
#
#   sudo scripts/bench-middlebox.sh            # 5 s each
#   DUR=10 CORES=1 sudo scripts/bench-middlebox.sh
#
# 1. dpdk-testpmd (one forwarding core, two net_ring vdevs, packets injected
#    with "start tx_first"), in io mode (the baseline: it moves mbuf
#    pointers between rings and never reads a packet) and in csum mode (it
#    parses every packet and checks its checksums, nearer to what the
#    middlebox does): Mpps = packets received on both ports between two
#    "show port stats" DUR seconds apart.
# 2. swordbox middlebox bench --io ring: the recorded mix (client CAS,
#    WRITE, READ, server ACKs) through the engine's zero-copy DPDK loop on
#    net_ring vdevs; Mpps per core (wall) and per core of CPU time. The same
#    run splits the cost per input frame (see mbbench.BenchDPDK): engine
#    vs the rest of the loop (RX, TX, frees, mbufs for the generated ACKs),
#    timed per burst inside the engine passes; and a loop-only pass that
#    replays the same frames with the engine replaced by a forwarder that
#    loads the loop as the engine did (what the loop alone could reach).
# Then it prints the figures and the ratios middlebox / testpmd io (the
# target: >= 0.3) and middlebox / testpmd csum.
#
# Memory: with HUGE=auto (default) both testpmd and the middlebox run on
# 2 MiB hugepages, as DPDK is meant to: the script reserves what they need
# (vm.nr_hugepages, and a hugetlbfs mount at /dev/hugepages if there is
# none) and puts both back as they were when it exits. With 4 KiB pages
# every mbuf touch is a TLB miss: measured here, the middlebox's engine took
# ~280 ns per frame on --no-huge memory and ~205 ns on hugepages. HUGE=0
# runs both on --no-huge memory (what CI's DPDK tests use).
# Needs root, dpdk-testpmd and libdpdk-dev.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${DUR:-5}
CORES=${CORES:-1}
HUGE=${HUGE:-auto}

if [[ $(id -u) -ne 0 ]]; then
	echo "bench-middlebox: needs root (DPDK without hugepages)" >&2
	exit 2
fi
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin # sudo's secure_path drops it
for c in dpdk-testpmd pkg-config go; do
	command -v "$c" >/dev/null || { echo "bench-middlebox: $c not found (apt-get install dpdk dpdk-dev libdpdk-dev)" >&2; exit 2; }
done
pkg-config --exists libdpdk || { echo "bench-middlebox: libdpdk-dev not installed" >&2; exit 2; }

tmp=$(mktemp -d)
hp_orig= hp_mounted=
cleanup() {
	rm -rf "$tmp" /var/run/dpdk/sbtp-$$-* /var/run/dpdk/sbmb-$$
	if [[ -n $hp_orig ]]; then echo "$hp_orig" >/proc/sys/vm/nr_hugepages || true; fi
	if [[ -n $hp_mounted ]]; then umount /dev/hugepages || true; fi
}
trap cleanup EXIT

# Memory: MEMFLAGS for both programs (MiB of DPDK memory with -m).
hp_need=640 # 2 MiB pages: testpmd's 1024 MiB, then the middlebox's, one at a time
if [[ $HUGE != 0 && -w /proc/sys/vm/nr_hugepages && $(awk '/Hugepagesize/ {print $2}' /proc/meminfo) == 2048 ]]; then
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if (( free < hp_need )); then
		hp_orig=$(cat /proc/sys/vm/nr_hugepages)
		echo $(( hp_orig + hp_need - free )) >/proc/sys/vm/nr_hugepages
	fi
	if ! grep -q hugetlbfs /proc/mounts; then
		mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages && hp_mounted=1
	fi
fi
if [[ $HUGE != 0 ]] && (( $(awk '/HugePages_Free/ {print $2}' /proc/meminfo) >= hp_need )) && grep -q hugetlbfs /proc/mounts; then
	MEMFLAGS=() MEMNOTE="2 MiB hugepages"
else
	[[ $HUGE == auto || $HUGE == 0 ]] || { echo "bench-middlebox: HUGE=$HUGE: could not get $hp_need hugepages" >&2; exit 2; }
	MEMFLAGS=(--no-huge) MEMNOTE="--no-huge (4 KiB pages)"
fi
echo "== memory: $MEMNOTE"

echo "== building swordbox with -tags dpdk"
go build -tags dpdk -o "$tmp/swordbox" ./cmd/swordbox

# testpmd MODE: Mpps of dpdk-testpmd forwarding in MODE on net_ring0/net_ring1
# (one forwarding core), from two "show port stats all" DUR seconds apart.
testpmd() {
	local mode=$1 out="$tmp/testpmd-$1.out" in="$tmp/testpmd-$1.in"
	# Commands go through a FIFO once testpmd shows its prompt: piped all at
	# once they would run back to back after its (slow, --no-huge) start-up.
	mkfifo "$in"
	dpdk-testpmd -l 0-1 "${MEMFLAGS[@]}" -m 1024 --no-pci --no-shconf --no-telemetry \
		--file-prefix "sbtp-$$-$mode" --vdev net_ring0 --vdev net_ring1 -- \
		-i --forward-mode="$mode" --nb-cores=1 --total-num-mbufs=16384 <"$in" >"$out" 2>&1 &
	local tp=$!
	exec 3>"$in"
	for _ in $(seq 300); do
		grep -q 'testpmd> ' "$out" && break
		kill -0 "$tp" 2>/dev/null || break
		sleep 0.1
	done
	echo "start tx_first 16" >&3
	sleep 1
	echo "show port stats all" >&3
	local t0 t1
	t0=$(date +%s.%N)
	sleep "$DUR"
	echo "show port stats all" >&3
	t1=$(date +%s.%N)
	sleep 0.5
	echo "stop" >&3
	echo "quit" >&3
	exec 3>&-
	wait "$tp" || true
	local rx
	mapfile -t rx < <(grep -E '^ *RX-packets: [0-9]+ +RX-missed' "$out" | awk '{print $2}')
	if [[ ${#rx[@]} -lt 4 ]]; then
		echo "bench-middlebox: could not read testpmd's port statistics ($mode):" >&2
		tail -20 "$out" >&2
		exit 1
	fi
	local pkts=$(( rx[2] + rx[3] - rx[0] - rx[1] ))
	awk -v p="$pkts" -v a="$t0" -v b="$t1" -v m="$mode" 'BEGIN { printf "testpmd %s: %.0f packets in %.2fs by 1 core: %.3f Mpps\n", m, p, b - a, p / (b - a) / 1e6 }' >&2
	awk -v p="$pkts" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", p / (b - a) / 1e6 }'
}

echo "== dpdk-testpmd io forwarding (the baseline) and csum forwarding (which parses every packet) on net_ring0/net_ring1, ${DUR}s each"
tp_mpps=$(testpmd io)
tp_csum=$(testpmd csum)

echo "== swordbox middlebox bench --io ring --cores $CORES, ${DUR}s"
vdevs=()
for (( k = 0; k < 2 * CORES; k++ )); do vdevs+=(--vdev "net_ring$k"); done
eal=("${MEMFLAGS[@]}" -m $(( 256 + 128 * CORES )) --no-pci --no-shconf --no-telemetry --file-prefix "sbmb-$$" -l 0 --log-level '*:warning' "${vdevs[@]}")
"$tmp/swordbox" middlebox bench --io ring --cores "$CORES" --duration "${DUR}s" --json --dpdk-args="$(IFS=,; echo "${eal[*]}")" >"$tmp/mbox.json"
grep -E '"(frames_in|frames_out|drops|mpps|mpps_cpu)"' "$tmp/mbox.json" | tr -d ' ,'
mb_mpps=$(grep -o '"total_mpps": [0-9.e+-]*' "$tmp/mbox.json" | awk '{printf "%.3f", $2 / '"$CORES"'}')
mb_cpu=$(grep -o '"total_mpps_cpu": [0-9.e+-]*' "$tmp/mbox.json" | awk '{printf "%.3f", $2 / '"$CORES"'}')
# split KEY: the mean over cores of KEY=value in the per-core counters.
split() {
	grep -o '"counters": "[^"]*"' "$tmp/mbox.json" | tr ' "' '\n\n' |
		awk -F= -v k="$1" '$1 == k { s += $2; n++ } END { if (n) printf "%.1f", s / n; else print "?" }'
}
eng_ns=$(split engine-ns/frame)
loop_ns=$(split loop-ns/frame)
lo_ns=$(split loop-only-ns/frame)
lo_cpu_ns=$(split loop-only-cpu-ns/frame)

echo "== result (all measured in this run on this machine, both on $MEMNOTE; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "testpmd io forwarding:   ${tp_mpps} Mpps per core"
echo "testpmd csum forwarding: ${tp_csum} Mpps per core"
echo "swordbox middlebox:      ${mb_mpps} Mpps per core (wall), ${mb_cpu} Mpps per core of CPU time"
echo "  per input frame:       engine ${eng_ns} ns + loop ${loop_ns} ns (wall, timed per burst in the same passes)"
awk -v w="$lo_ns" -v c="$lo_cpu_ns" 'BEGIN {
	if (w > 0 && c > 0) printf "  loop alone:            %s ns/frame wall, %s ns/frame CPU: %.3f Mpps per core (wall), %.3f per core of CPU time\n", w, c, 1e3 / w, 1e3 / c
}'
awk -v m="$mb_mpps" -v c="$mb_cpu" -v t="$tp_mpps" -v s="$tp_csum" -v l="$lo_ns" 'BEGIN {
	if (t > 0) printf "ratio middlebox/testpmd io:   %.4f (wall), %.4f (middlebox CPU time vs testpmd wall)\n", m / t, c / t
	if (s > 0) printf "ratio middlebox/testpmd csum: %.3f (wall), %.3f (middlebox CPU time vs testpmd wall)\n", m / s, c / s
	if (l > 0 && t > 0 && s > 0) printf "ratio loop alone/testpmd io:  %.4f; loop alone/testpmd csum: %.3f (wall)\n", 1e3 / l / t, 1e3 / l / s
}'
