#!/usr/bin/env bash
# tofino.sh: swordbox on a Tofino switch with the Intel/Barefoot SDE. Builds
# p4/tna/swordbox.p4 with bf-p4c through the SDE's CMake flow (P4Info with
# standard externs), packs the P4Runtime device config, loads the kernel
# driver, starts bf_switchd with no program and its P4Runtime server, brings
# the front-panel ports up through bfshell (ucli pm: port-add with speed and
# FEC, port-enb), and points `swordbox ctrl run` at it (the controller pushes
# the pipeline). docs/deploy.md walks through a whole rack.
set -euo pipefail

SB_NAME=tofino.sh
# shellcheck source=scripts/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
REPO=$(sb_repo)

usage() {
	cat <<'EOF'
usage: scripts/deploy/tofino.sh [options] --port FP/CH[:SPEED[:FEC]] [--port ...]
       scripts/deploy/tofino.sh --stop

Needs the SDE's environment: $SDE (the SDE tree, with p4studio/ and cmake/)
and $SDE_INSTALL (its install tree, with bin/bf_switchd and bin/bf-p4c), as
set by the SDE's set_sde.bash; bf_switchd built with P4Runtime (p4studio
profile with p4rt; `bf_switchd --help` lists --p4rt-server).

Steps: build swordbox (unless --swordbox), configure and build the program
with the SDE's CMake flow (-DP4_LANG=p4-16 -DP4_PATH -DTOFINO=ON, bf-p4c with
--p4runtime-files and --p4runtime-force-std-externs), pack tofino.bin,
context.json and bf-rt.json into the device config, reserve hugepages for the
driver's DMA, load bf_kdrv, start bf_switchd (--skip-p4, --p4rt-server),
wait until P4Runtime listens, add and enable the ports with bfshell, start
`swordbox ctrl run` with the packed device config, wait until it is in charge,
and list the switch's tables.

Options (numbers are checked; a value out of range is refused):
  --port FP/CH[:SPEED[:FEC]]  a front-panel port (FP 1..65) and channel (CH
                         0..7, or - for the whole port), e.g. 1/0:100G:RS or
                         3/-; SPEED and FEC default to --speed and --fec.
                         The rack file's ports are DEVICE ports (D_P in
                         `pm show`), not front-panel numbers: see docs/deploy.md
  --speed SPEED          as ucli pm port-add takes it: 1G 10G 25G 40G 40G-R2 50G 50G-R2
                         50G-R2-C 50G-R1 100G 100G-R4 100G-R2 100G-R1 200G 200G-R4 200G-R2
                         200G-R8 400G 400G-R8 400G-R4 (default 100G)
  --fec FEC              NONE | FC | RS (default RS; 100G and faster need RS)
  --autoneg MODE         default | on | off: an-set 0 | 1 | 2 per port (default: off,
                         as for DAC and optics between switch and NICs)
  --p4 FILE              the TNA program (default p4/tna/swordbox.p4)
  --name NAME            program name, 1..100 characters (default swordbox)
  --pipe NAME            the program's pipeline instance, 1..100 characters (default pipe)
  --arch tofino|tofino2  chip (default tofino)
  --build-dir DIR        build tree (default build/tofino)
  --run-dir DIR          logs and pid files (default build/tofino/run)
  --skip-conf FILE       bf_switchd conf of no program (default
                         $SDE_INSTALL/share/p4/targets/<arch>/<arch>_skip_p4.conf)
  --rack FILE            the controller's rack file (default docs/examples/rack.yaml)
  --p4rt-addr HOST:PORT  bf_switchd's P4Runtime server (default 0.0.0.0:9559)
  --switch HOST:PORT     address the controller dials (default 127.0.0.1:<p4rt port>)
  --device-id N          P4Runtime device id, 0..255 (default 0: the first ASIC)
  --hugepages N          2 MiB pages for the driver's DMA, 64..65536 (default 196, the SDE's)
  --election-id N        the controller's election id, 1..1000000000 (default 10)
  --cpu-port N           device port of the chip's PCIe CPU port, 0..511, required unless
                         --ctrl-only: 192 on a 2-pipe Tofino (Wedge100BF-32X), 320 on a
                         4-pipe one (Wedge100BF-65X), 64 (the CPU Ethernet port) on the
                         Tofino model; compiled in as -DSWORDBOX_CPU_PORT (PacketIn/Out,
                         which the controller's CAS repair uses)
  --steering MODE        off | write | read-write (default write)
  --metrics HOST:PORT    the controller's Prometheus address (default 127.0.0.1:9464)
  --swordbox FILE        a built swordbox binary (default: go build into the build dir)
  --wait SECONDS         how long to wait for each daemon, 1..600 (default 120: the
                         driver's cold boot takes a while)
  --no-kdrv              do not load bf_kdrv (the Tofino model, or a driver loaded otherwise)
  --no-ctrl              start the switch and the ports only
  --ctrl-only            start the controller only (the switch runs, the pipeline is built;
                         e.g. after writing the memory node's region into the rack file)
  --stop                 stop the controller and bf_switchd this script started
  --dry-run              print the plan (every command, every file) and run nothing
  -h, --help             this text
EOF
}

ports=() speed=100G fec=RS autoneg=off p4=p4/tna/swordbox.p4 name=swordbox pipe=pipe arch=tofino
build=build/tofino rundir="" skipconf="" rack=docs/examples/rack.yaml p4rt=0.0.0.0:9559 sw=""
devid=0 cpu="" huge=196 election=10 steering=write metrics=127.0.0.1:9464 bin="" wait=120 nokdrv=0 noctrl=0 ctrlonly=0 stop=0
while (($#)); do
	case $1 in
	--port) sb_value "$1" $#; ports+=("$2"); shift ;;
	--speed) sb_value "$1" $#; speed=$2; shift ;;
	--fec) sb_value "$1" $#; fec=$2; shift ;;
	--autoneg) sb_value "$1" $#; autoneg=$2; shift ;;
	--p4) sb_value "$1" $#; p4=$2; shift ;;
	--name) sb_value "$1" $#; name=$2; shift ;;
	--pipe) sb_value "$1" $#; pipe=$2; shift ;;
	--arch) sb_value "$1" $#; arch=$2; shift ;;
	--build-dir) sb_value "$1" $#; build=$2; shift ;;
	--run-dir) sb_value "$1" $#; rundir=$2; shift ;;
	--skip-conf) sb_value "$1" $#; skipconf=$2; shift ;;
	--rack) sb_value "$1" $#; rack=$2; shift ;;
	--p4rt-addr) sb_value "$1" $#; p4rt=$2; shift ;;
	--switch) sb_value "$1" $#; sw=$2; shift ;;
	--device-id) sb_value "$1" $#; devid=$2; shift ;;
	--hugepages) sb_value "$1" $#; huge=$2; shift ;;
	--election-id) sb_value "$1" $#; election=$2; shift ;;
	--cpu-port) sb_value "$1" $#; cpu=$2; shift ;;
	--steering) sb_value "$1" $#; steering=$2; shift ;;
	--metrics) sb_value "$1" $#; metrics=$2; shift ;;
	--swordbox) sb_value "$1" $#; bin=$2; shift ;;
	--wait) sb_value "$1" $#; wait=$2; shift ;;
	--no-kdrv) nokdrv=1 ;;
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

if ((stop)); then
	sb_stop ctrl bf_switchd
	exit 0
fi

# Values.
# The speeds of ucli pm port-add (bf-drivers src/bf_pm/bf_pm_ucli.c).
speeds=(1G 10G 25G 40G 40G-R2 50G 50G-R2 50G-R2-C 50G-R1 100G 100G-R4 100G-R2 100G-R1 200G 200G-R4 200G-R2 200G-R8 400G 400G-R8 400G-R4)
fecs=(NONE FC RS)
sb_oneof --speed "$speed" "${speeds[@]}"
sb_oneof --fec "$fec" "${fecs[@]}"
sb_oneof --autoneg "$autoneg" default on off
sb_oneof --arch "$arch" tofino tofino2
sb_oneof --steering "$steering" off write read-write
[[ $name =~ ^[A-Za-z_][A-Za-z0-9_]{0,99}$ ]] || sb_die "--name $name: 1..100 characters of letters, digits and _, not starting with a digit"
[[ $pipe =~ ^[A-Za-z_][A-Za-z0-9_]{0,99}$ ]] || sb_die "--pipe $pipe: 1..100 characters of letters, digits and _, not starting with a digit"
sb_int --device-id "$devid" 0 255
sb_int --hugepages "$huge" 64 65536
sb_int --election-id "$election" 1 1000000000
if ((ctrlonly == 0)); then
	[[ -n $cpu ]] || sb_die "--cpu-port: required to build the program (192 on a 2-pipe Tofino, 320 on a 4-pipe one, 64 on the Tofino model; see --help)"
	sb_int --cpu-port "$cpu" 0 511
fi
sb_int --wait "$wait" 1 600
sb_hostport --p4rt-addr "$p4rt"
sb_hostport --metrics "$metrics"
pport=${p4rt##*:}
sw=${sw:-127.0.0.1:$pport}
sb_hostport --switch "$sw"
an=$(case $autoneg in default) echo 0 ;; on) echo 1 ;; off) echo 2 ;; esac)
declare -A seen=()
pm=(ucli pm)
for p in "${ports[@]}"; do
	[[ $p =~ ^([0-9]+)/([0-9]+|-)(:([^:]+))?(:([^:]+))?$ ]] || sb_die "--port $p: want FP/CH[:SPEED[:FEC]] (e.g. 1/0:100G:RS or 3/-)"
	fp=${BASH_REMATCH[1]} ch=${BASH_REMATCH[2]} ps=${BASH_REMATCH[4]:-$speed} pf=${BASH_REMATCH[6]:-$fec}
	sb_int "--port $p: front-panel port" "$fp" 1 65
	[[ $ch == - ]] || sb_int "--port $p: channel" "$ch" 0 7
	sb_oneof "--port $p: speed" "$ps" "${speeds[@]}"
	sb_oneof "--port $p: FEC" "$pf" "${fecs[@]}"
	if [[ $ps == 100G* || $ps == 200G* || $ps == 400G* ]] && [[ $pf != RS ]]; then
		sb_note "warning: --port $p: $ps without RS FEC links only if the NIC's FEC is off too (IEEE 802.3 clause 91 asks for RS)"
	fi
	spec=$((10#$fp))/$ch
	[[ -z ${seen[$spec]:-} ]] || sb_die "--port $p: port $spec given twice"
	seen[$spec]=1
	pm+=("port-add $spec $ps $pf")
	[[ $autoneg == default ]] || pm+=("an-set $spec $an")
	pm+=("port-enb $spec")
done
((${#ports[@]})) || sb_die "give at least one --port FP/CH[:SPEED[:FEC]] (see --help)"
pm+=(show exit exit)

sde=${SDE:-\$SDE}
inst=${SDE_INSTALL:-\$SDE_INSTALL}
skipconf=${skipconf:-$inst/share/p4/targets/$arch/${arch}_skip_p4.conf}
out=$build/$name/$arch
p4info=$build/$name.p4info.txt
devcfg=$build/$name.devconfig
sb_default_bin "$build/swordbox"

# Prerequisites.
sb_need_env SDE "source the SDE's set_sde.bash (it sets \$SDE and \$SDE_INSTALL); the SDE comes from Intel (or github.com/p4lang/open-p4studio)"
sb_need_env SDE_INSTALL "source the SDE's set_sde.bash"
if [[ -n ${SDE_INSTALL:-} ]]; then
	sb_need_file "$SDE_INSTALL/bin/bf_switchd" "build the SDE with p4studio (profile with bf-drivers and p4rt)"
	sb_need_file "$SDE_INSTALL/bin/bf-p4c" "the SDE's P4 compiler: p4studio profile with the compiler (bf-p4c)"
	sb_need_file "$SDE_INSTALL/bin/bfshell" "the SDE's shell, built with bf_switchd"
	sb_need_file "$skipconf" "the SDE's conf of no program (p4-examples install it); or pass --skip-conf"
	if ((nokdrv == 0)); then
		sb_need_file "$SDE_INSTALL/bin/bf_kdrv_mod_load" "the SDE's kernel driver (bf-drivers kdrv); --no-kdrv on the Tofino model"
	fi
fi
if [[ -n ${SDE:-} ]]; then
	sb_need_dir "$SDE/p4studio" "the SDE tree's p4studio/ (its CMakeLists.txt builds a user's program)"
	sb_need_dir "$SDE/cmake" "the SDE tree's cmake/ modules"
fi
sb_need_file "$p4" "the TNA program (p4/tna/swordbox.p4 in a swordbox checkout)"
sb_need_file "$rack" "the controller's rack file: copy docs/examples/rack.yaml, ports as device ports (docs/deploy.md)"
sb_need_cmd cmake "apt-get install cmake (the SDE's build flow)"
sb_need_cmd make "apt-get install make"
if ((build_bin)); then
	sb_need_cmd go "Go 1.26 (go.dev/dl) to build swordbox, or pass --swordbox with a built binary"
elif ((noctrl == 0)); then
	sb_need_file "$bin" "a swordbox binary: go build -o swordbox ./cmd/swordbox"
fi
sb_need_root "bf_switchd maps the ASIC (bf_kdrv) and hugepages"

sb_note "Tofino ($arch): ${#ports[@]} ports, P4Runtime on $p4rt, controller dials $sw, program $p4"
((noctrl + ctrlonly < 2)) || sb_die "--no-ctrl and --ctrl-only exclude each other"
if ((ctrlonly)); then
	sb_need_file "$devcfg" "the device config: run without --ctrl-only first"
	sb_need_file "$p4info" "the P4Info: run without --ctrl-only first"
fi
sb_check_missing

# absolute FILE: FILE from the repository's root, for the SDE's build tree.
absolute() {
	if [[ $1 == /* ]]; then echo "$1"; else echo "$REPO/$1"; fi
}
abs_p4=$(absolute "$p4")
tof=OFF tof2=OFF
[[ $arch == tofino ]] && tof=ON
[[ $arch == tofino2 ]] && tof2=ON

sb_run mkdir -p "$build" "$SB_RUNDIR"
if ((build_bin)); then
	sb_run go build -o "$bin" ./cmd/swordbox
fi
if ((ctrlonly)); then
	sb_note "--ctrl-only: the switch runs; the build and switch steps skipped"
else
	sb_note "1. swordbox and the pipeline: bf-p4c through the SDE's CMake flow, P4Info with standard externs"
	sb_run cmake -S "$sde/p4studio" -B "$build" \
		-DCMAKE_INSTALL_PREFIX="$inst" -DCMAKE_MODULE_PATH="$sde/cmake" \
		-DP4_NAME="$name" -DP4_PATH="$abs_p4" -DP4_LANG=p4-16 -DTOFINO="$tof" -DTOFINO2="$tof2" \
		"-DP4FLAGS=--p4runtime-files $(absolute "$p4info") --p4runtime-force-std-externs" \
		"-DP4PPFLAGS=-DSWORDBOX_CPU_PORT=$((10#$cpu))"
	sb_run make -C "$build" "$name"
	sb_note "2. the device config: $devcfg (tofino.bin, context.json, bf-rt.json of pipeline $pipe)"
	bin_name=tofino.bin
	[[ $arch == tofino2 ]] && bin_name=tofino2.bin
	sb_run scripts/deploy/tofino-devconfig.sh -o "$devcfg" "$name" "$out/$pipe/$bin_name" "$out/$pipe/context.json" "$pipe" "$out/bf-rt.json"

	sb_note "3. the driver: hugepages for DMA, bf_kdrv"
	sb_sh "[ \"\$(sysctl -n vm.nr_hugepages)\" -ge $((10#$huge)) ] || sysctl -w vm.nr_hugepages=$((10#$huge))"
	if ((nokdrv == 0)); then
		sb_sh "[ -d /sys/module/bf_kdrv ] || $inst/bin/bf_kdrv_mod_load $inst"
	fi

	sb_note "4. bf_switchd: no program (the controller pushes it), P4Runtime on $p4rt"
	sb_daemon bf_switchd "$SB_RUNDIR/bf_switchd.log" \
		env "SDE=$sde" "SDE_INSTALL=$inst" "LD_LIBRARY_PATH=$inst/lib" \
		"$inst/bin/bf_switchd" --install-dir "$inst" --conf-file "$skipconf" --skip-p4 --background \
		--p4rt-server "$p4rt"
	phost=${p4rt%:*}
	[[ $phost == 0.0.0.0 ]] && phost=127.0.0.1
	sb_wait_tcp bf_switchd "$phost" "$pport" "$wait" "$SB_RUNDIR/bf_switchd.log"

	sb_note "5. ports: ucli pm (port-add SPEED FEC, an-set, port-enb); 'show' lists each port's D_P, the device port the rack file names"
	pmfile=$SB_RUNDIR/ports.ucli
	sb_write "$pmfile" "$(printf '%s\n' "${pm[@]}")"
	sb_sh "env SDE=$sde SDE_INSTALL=$inst LD_LIBRARY_PATH=$inst/lib $inst/bin/bfshell -f $pmfile | tee $SB_RUNDIR/ports.log"
fi

if ((noctrl)); then
	sb_note "switch and ports up; --no-ctrl: start the controller yourself (docs/deploy.md)"
	exit 0
fi

sb_note "6. the controller: pushes $devcfg with its P4Info, programs $rack"
sb_ctrl_up bf_switchd "$ctrlonly" "$wait" "$bin" "$sw" "$((10#$devid))" \
	--config "$rack" --election-id "$((10#$election))" --p4info "$p4info" --device-config "$devcfg" \
	--push-pipeline --steering "$steering" --metrics "$metrics"
sb_note "up: logs in $SB_RUNDIR; stop with scripts/deploy/tofino.sh --stop"
