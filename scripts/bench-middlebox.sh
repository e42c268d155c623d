#!/usr/bin/env bash
# bench-middlebox.sh: the middlebox over DPDK net_ring vdevs, side by side
# with dpdk-testpmd io forwarding on the same kind of vdevs, in one run.
#
#   sudo scripts/bench-middlebox.sh            # 5 s each
#   DUR=10 CORES=1 sudo scripts/bench-middlebox.sh
#
# 1. dpdk-testpmd (io forwarding, one forwarding core, two net_ring vdevs,
#    packets injected with "start tx_first"): Mpps = packets received on
#    both ports between two "show port stats" DUR seconds apart.
# 2. swordbox middlebox bench --io ring: the recorded mix (client CAS,
#    WRITE, READ, server ACKs) through the engine's zero-copy DPDK loop on
#    net_ring vdevs; Mpps per core (wall) and per core of CPU time.
# Then it prints both and the ratio middlebox / testpmd (goal >= 0.3).
# Needs root (no hugepages: --no-huge), dpdk-testpmd and libdpdk-dev.
set -euo pipefail
cd "$(dirname "$0")/.."

DUR=${DUR:-5}
CORES=${CORES:-1}

if [[ $(id -u) -ne 0 ]]; then
	echo "bench-middlebox: needs root (DPDK without hugepages)" >&2
	exit 2
fi
for c in dpdk-testpmd pkg-config go; do
	command -v "$c" >/dev/null || { echo "bench-middlebox: $c not found (apt-get install dpdk dpdk-dev libdpdk-dev)" >&2; exit 2; }
done
pkg-config --exists libdpdk || { echo "bench-middlebox: libdpdk-dev not installed" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== building swordbox with -tags dpdk"
go build -tags dpdk -o "$tmp/swordbox" ./cmd/swordbox

echo "== dpdk-testpmd io forwarding on net_ring0/net_ring1, ${DUR}s"
# Commands go through a FIFO once testpmd shows its prompt: piped all at
# once they would run back to back after its (slow, --no-huge) start-up.
mkfifo "$tmp/testpmd.in"
dpdk-testpmd -l 0-1 --no-huge -m 1024 --no-pci --no-shconf --no-telemetry \
	--file-prefix "sbtp-$$" --vdev net_ring0 --vdev net_ring1 -- \
	-i --forward-mode=io --nb-cores=1 --total-num-mbufs=16384 <"$tmp/testpmd.in" >"$tmp/testpmd.out" 2>&1 &
tp=$!
exec 3>"$tmp/testpmd.in"
for _ in $(seq 300); do
	grep -q 'testpmd> ' "$tmp/testpmd.out" && break
	kill -0 "$tp" 2>/dev/null || break
	sleep 0.1
done
echo "start tx_first 16" >&3
sleep 1
echo "show port stats all" >&3
t0=$(date +%s.%N)
sleep "$DUR"
echo "show port stats all" >&3
t1=$(date +%s.%N)
sleep 0.5
echo "stop" >&3
echo "quit" >&3
exec 3>&-
wait "$tp" || true
# The "RX-packets:" lines of the two "show port stats all": 2 ports x 2 snapshots.
mapfile -t rx < <(grep -E '^ *RX-packets: [0-9]+ +RX-missed' "$tmp/testpmd.out" | awk '{print $2}')
if [[ ${#rx[@]} -lt 4 ]]; then
	echo "bench-middlebox: could not read testpmd's port statistics:" >&2
	tail -20 "$tmp/testpmd.out" >&2
	exit 1
fi
tp_pkts=$(( rx[2] + rx[3] - rx[0] - rx[1] ))
tp_mpps=$(awk -v p="$tp_pkts" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", p / (b - a) / 1e6 }')
echo "testpmd: ${tp_pkts} packets forwarded in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')s by 1 core: ${tp_mpps} Mpps"

echo "== swordbox middlebox bench --io ring --cores $CORES, ${DUR}s"
"$tmp/swordbox" middlebox bench --io ring --cores "$CORES" --duration "${DUR}s" --json >"$tmp/mbox.json"
grep -E '"(frames_in|frames_out|drops|mpps|mpps_cpu)"' "$tmp/mbox.json" | tr -d ' ,'
mb_mpps=$(grep -o '"total_mpps": [0-9.e+-]*' "$tmp/mbox.json" | awk '{printf "%.3f", $2 / '"$CORES"'}')
mb_cpu=$(grep -o '"total_mpps_cpu": [0-9.e+-]*' "$tmp/mbox.json" | awk '{printf "%.3f", $2 / '"$CORES"'}')

echo "== result (both measured in this run on this machine; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "testpmd io forwarding:  ${tp_mpps} Mpps per core"
echo "swordbox middlebox:     ${mb_mpps} Mpps per core (wall), ${mb_cpu} Mpps per core of CPU time"
awk -v m="$mb_mpps" -v c="$mb_cpu" -v t="$tp_mpps" 'BEGIN {
	if (t > 0) printf "ratio middlebox/testpmd: %.2f (wall), %.2f (middlebox CPU time vs testpmd wall)\n", m / t, c / t
}'
