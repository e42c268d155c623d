#!/usr/bin/env bash
# bmv2.sh: swordbox on a BMv2 host. Compiles p4/swordbox.p4 with p4c
# (p4c-bm2-ss: BMv2 JSON and P4Info), starts simple_switch_grpc on veth or
# real ports with its P4Runtime server, and points `swordbox ctrl run` at it
# (the controller pushes the pipeline, then programs the rack file's hosts).
# docs/deploy.md walks through a whole rack.
set -euo pipefail

SB_NAME=bmv2.sh
# shellcheck source=scripts/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(sb_repo)

usage() {
	cat <<'EOF'
usage: scripts/deploy/bmv2.sh [options] --port N=IFACE [--port N=IFACE ...]
       scripts/deploy/bmv2.sh --stop [--veths]

Steps: build swordbox (unless --swordbox), compile the P4 program with
p4c-bm2-ss, (with --veths) create the ports as veth pairs, prepare the
interfaces (up, MTU, checksum offload off, IPv6 off), start simple_switch_grpc
with no program and its P4Runtime server, wait until it listens, start
`swordbox ctrl run` against it with the BMv2 JSON as device config, wait until
the controller is in charge, and list the switch's tables.

Options (numbers are checked; a value out of range is refused):
  --port N=IFACE         a switch port: pipeline port N (0..510, not the CPU
                         port) on interface IFACE; repeat for every port. The
                         rack file's host ports must be among them.
  --veths                create each IFACE as a veth pair (IFACE <-> IFACE-p,
                         scripts/veths.sh) for a one-host rack; --stop removes them
  --mtu BYTES            MTU set on every port interface, 1280..9216 (default 4200:
                         RoCEv2 with a 4096-byte path MTU needs 4096 + 78)
  --p4 FILE              P4 program (default p4/swordbox.p4)
  --build-dir DIR        compiler output (default build/bmv2)
  --run-dir DIR          logs and pid files (default build/bmv2/run)
  --rack FILE            the controller's rack file (default docs/examples/rack.yaml)
  --grpc-addr HOST:PORT  P4Runtime server address of the switch (default 0.0.0.0:9559)
  --switch HOST:PORT     address the controller dials (default 127.0.0.1:<grpc port>)
  --device-id N          P4Runtime device id, 0..4294967295 (default 1)
  --cpu-port N           BMv2 CPU port, 0..511 (default 255; must equal CPU_PORT
                         of the P4 program, checked)
  --thrift-port N        BMv2's Thrift port (simple_switch_CLI), 1..65535 (default 9090)
  --election-id N        the controller's election id, 1..1000000000 (default 10)
  --steering MODE        off | write | read-write (default write)
  --metrics HOST:PORT    the controller's Prometheus address (default 127.0.0.1:9464)
  --swordbox FILE        a built swordbox binary (default: go build into the build dir)
  --wait SECONDS         how long to wait for each daemon, 1..600 (default 30)
  --no-ctrl              start the switch only
  --ctrl-only            start the controller only (the switch runs, the pipeline is built;
                         e.g. after writing the memory node's region into the rack file)
  --stop                 stop the controller and the switch this script started
  --dry-run              print the plan (every command, every file) and run nothing
  -h, --help             this text
EOF
}

ports=() veths=0 mtu=4200 p4=p4/swordbox.p4 build=build/bmv2 rundir="" rack=docs/examples/rack.yaml
grpc=0.0.0.0:9559 sw="" devid=1 cpu=255 thrift=9090 election=10 steering=write metrics=127.0.0.1:9464
bin="" wait=30 noctrl=0 ctrlonly=0 stop=0
while (($#)); do
	case $1 in
	--port) sb_value "$1" $#; ports+=("$2"); shift ;;
	--veths) veths=1 ;;
	--mtu) sb_value "$1" $#; mtu=$2; shift ;;
	--p4) sb_value "$1" $#; p4=$2; shift ;;
	--build-dir) sb_value "$1" $#; build=$2; shift ;;
	--run-dir) sb_value "$1" $#; rundir=$2; shift ;;
	--rack) sb_value "$1" $#; rack=$2; shift ;;
	--grpc-addr) sb_value "$1" $#; grpc=$2; shift ;;
	--switch) sb_value "$1" $#; sw=$2; shift ;;
	--device-id) sb_value "$1" $#; devid=$2; shift ;;
	--cpu-port) sb_value "$1" $#; cpu=$2; shift ;;
	--thrift-port) sb_value "$1" $#; thrift=$2; shift ;;
	--election-id) sb_value "$1" $#; election=$2; shift ;;
	--steering) sb_value "$1" $#; steering=$2; shift ;;
	--metrics) sb_value "$1" $#; metrics=$2; shift ;;
	--swordbox) sb_value "$1" $#; bin=$2; shift ;;
	--wait) sb_value "$1" $#; wait=$2; shift ;;
	--no-ctrl) noctrl=1 ;;
	--ctrl-only) ctrlonly=1 ;;
	--stop) stop=1 ;;
	--dry-run) SB_DRY=1 ;;
	-h | --help) usage; exit 0 ;;
	*) sb_die "unknown argument $1 (see --help)" ;;
	esac
	shift
done
cd "$REPO"
SB_RUNDIR=${rundir:-$build/run}

# Values.
sb_int --mtu "$mtu" 1280 9216
sb_int --device-id "$devid" 0 4294967295
sb_int --cpu-port "$cpu" 0 511
sb_int --thrift-port "$thrift" 1 65535
sb_int --election-id "$election" 1 1000000000
sb_int --wait "$wait" 1 600
sb_oneof --steering "$steering" off write read-write
sb_hostport --grpc-addr "$grpc"
sb_hostport --metrics "$metrics"
gport=${grpc##*:}
sw=${sw:-127.0.0.1:$gport}
sb_hostport --switch "$sw"
declare -A seen=()
ifaces=() portnums=() iargs=()
for p in "${ports[@]}"; do
	[[ $p =~ ^([0-9]+)=(.+)$ ]] || sb_die "--port $p: want N=IFACE"
	n=${BASH_REMATCH[1]} ifc=${BASH_REMATCH[2]}
	sb_int "--port $p: port number" "$n" 0 510
	((10#$n != 10#$cpu)) || sb_die "--port $p: $n is the CPU port (--cpu-port)"
	[[ -z ${seen[$((10#$n))]:-} ]] || sb_die "--port $p: port $n given twice"
	seen[$((10#$n))]=1
	sb_iface_name "--port $p: interface" "$ifc"
	if ((veths)) && ((${#ifc} > 13)); then
		sb_die "--port $p: with --veths an interface name has at most 13 characters (its peer $ifc-p must fit 15)"
	fi
	ifaces+=("$ifc") portnums+=("$((10#$n))") iargs+=(-i "$((10#$n))@$ifc")
done

if ((stop)); then
	sb_stop ctrl simple_switch_grpc
	if ((veths)) && ((${#ifaces[@]})); then
		sb_run scripts/veths.sh down "${ifaces[@]}"
	fi
	exit 0
fi
((${#ports[@]})) || sb_die "give at least one --port N=IFACE (see --help)"

# The CPU port must be the program's: PacketOut enters and PacketIn leaves there.
if [[ -f $p4 ]]; then
	if prog_cpu=$(grep -oE 'const +bit<9> +CPU_PORT *= *[0-9]+' "$p4" | grep -oE '[0-9]+$'); then
		[[ $prog_cpu == "$((10#$cpu))" ]] || sb_die "--cpu-port $cpu: $p4 declares CPU_PORT = $prog_cpu"
	fi
fi
# Every host port of the rack file must be a switch port.
if [[ -f $rack ]]; then
	while read -r rp; do
		[[ -n ${seen[$rp]:-} ]] || sb_die "--rack $rack: a host is on port $rp, which no --port gives"
	done < <(grep -oE '(^|[ {,])port: *[0-9]+' "$rack" | grep -oE '[0-9]+$' | sort -un)
fi

json=$build/swordbox.json
p4info=$build/swordbox.p4info.txt
sb_default_bin "$build/swordbox"

# Prerequisites.
sb_need_cmd p4c-bm2-ss "p4c's BMv2 back end: build p4c (github.com/p4lang/p4c, README 'Installing') or run on a host with the p4lang/p4c image"
sb_need_cmd simple_switch_grpc "BMv2 built with P4Runtime: github.com/p4lang/behavioral-model, ./configure --with-pi (needs PI and gRPC), then targets/simple_switch_grpc"
sb_need_file "$p4" "the P4 program (run from a swordbox checkout)"
sb_need_file "$rack" "the controller's rack file: copy docs/examples/rack.yaml and describe your hosts (docs/deploy.md)"
if ((build_bin)); then
	sb_need_cmd go "Go 1.26 (go.dev/dl) to build swordbox, or pass --swordbox with a built binary"
elif ((noctrl == 0)); then
	sb_need_file "$bin" "a swordbox binary: go build -o swordbox ./cmd/swordbox"
fi
sb_need_cmd ip "apt-get install iproute2"
sb_need_cmd ethtool "apt-get install ethtool"
sb_need_root "simple_switch_grpc opens the ports' interfaces and the script configures them"
if ((veths == 0)); then
	for i in "${ifaces[@]}"; do
		sb_need_iface "$i" "a port interface of this host (ip link); for a one-host rack pass --veths"
	done
fi

sb_note "BMv2 rack: ${#ports[@]} ports (${iargs[*]}), P4Runtime on $grpc, controller dials $sw"
((noctrl + ctrlonly < 2)) || sb_die "--no-ctrl and --ctrl-only exclude each other"
if ((ctrlonly)); then
	sb_need_file "$json" "the BMv2 JSON: run without --ctrl-only first"
	sb_need_file "$p4info" "the P4Info: run without --ctrl-only first"
fi
sb_check_missing

sb_run mkdir -p "$build" "$SB_RUNDIR"
if ((build_bin)); then
	sb_run go build -o "$bin" ./cmd/swordbox
fi
if ((ctrlonly)); then
	sb_note "--ctrl-only: the switch runs; the build and switch steps skipped"
else
	sb_note "1. swordbox and the pipeline: BMv2 JSON and P4Info from $p4"
	sb_run p4c-bm2-ss --std p4-16 --arch v1model --p4runtime-files "$p4info" -o "$json" "$p4"

	sb_note "2. ports: up, MTU $mtu, checksum offload off (frames leave as sent), no IPv6 chatter"
	if ((veths)); then
		sb_run scripts/veths.sh up "${ifaces[@]}"
	fi
	for i in "${ifaces[@]}"; do
		sb_run ip link set dev "$i" mtu "$mtu" up
		sb_sh "ethtool -K $i tx off rx off >/dev/null 2>&1 || true"
		sb_run sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1"
	done

	sb_note "3. simple_switch_grpc: no program (the controller pushes it), P4Runtime on $grpc"
	sb_daemon simple_switch_grpc "$SB_RUNDIR/simple_switch_grpc.log" \
		simple_switch_grpc --no-p4 --device-id "$((10#$devid))" --thrift-port "$((10#$thrift))" "${iargs[@]}" \
		-- --grpc-server-addr "$grpc" --cpu-port "$((10#$cpu))"
	ghost=${grpc%:*}
	[[ $ghost == 0.0.0.0 ]] && ghost=127.0.0.1
	sb_wait_tcp simple_switch_grpc "$ghost" "$gport" "$wait" "$SB_RUNDIR/simple_switch_grpc.log"
fi

if ((noctrl)); then
	sb_note "switch up; --no-ctrl: start the controller yourself (docs/deploy.md)"
	exit 0
fi

sb_note "4. the controller: pushes $json with its P4Info, programs $rack"
sb_ctrl_up simple_switch_grpc "$ctrlonly" "$wait" "$bin" "$sw" "$((10#$devid))" \
	--config "$rack" --election-id "$((10#$election))" --p4info "$p4info" --device-config "$json" \
	--push-pipeline --steering "$steering" --metrics "$metrics"
sb_note "up: logs in $SB_RUNDIR; stop with scripts/deploy/bmv2.sh --stop"
