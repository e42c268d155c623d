# shellcheck shell=bash
# Shared helpers of the deploy scripts (sourced, never run).
#
# Every script has two modes:
#   real     checks its prerequisites (all of them, then refuses listing every
#            missing one with how to get it), then runs its steps;
#   dry run  (--dry-run) prints its plan, the exact commands it would run, one
#            per line, files it would write as `cat > FILE <<'EOF'` blocks, and
#            runs nothing. Missing prerequisites become "# missing: ..."
#            comment lines, so a plan can be read on a machine without the
#            switch's tools (CI's).
# Numbers are checked in both modes: a value out of range is refused, naming
# the option and its range, before anything runs (exit 2).

# The script's name for messages, set by the sourcing script.
: "${SB_NAME:=deploy}"
SB_DRY=0
SB_MISSING=()

# sb_die MESSAGE: refuse (exit 2, usage errors and bad values).
sb_die() {
	echo "$SB_NAME: $*" >&2
	exit 2
}

# sb_fail MESSAGE: a step failed (exit 1).
sb_fail() {
	echo "$SB_NAME: $*" >&2
	exit 1
}

# sb_note TEXT: a comment line of the plan (dry run) or a progress line.
sb_note() {
	if [[ $SB_DRY == 1 ]]; then
		printf '# %s\n' "$*"
	else
		printf '%s: %s\n' "$SB_NAME" "$*" >&2
	fi
}

# sb_quote WORD...: the words as one command line, a word with characters
# the shell would interpret in single quotes. A "$" stays as it is: the plan
# of a machine without the SDE names its directories $SDE and $SDE_INSTALL,
# which the plan's reader has set.
sb_quote() {
	local out="" w q="'"
	for w in "$@"; do
		if [[ $w =~ ^[A-Za-z0-9_./:=@,+%^\$-]+$ ]]; then
			out+="$w "
		else
			out+="'${w//$q/$q\\$q$q}' "
		fi
	done
	printf '%s' "${out% }"
}

# sb_run CMD...: run a command, or print it in a dry run.
sb_run() {
	if [[ $SB_DRY == 1 ]]; then
		printf '%s\n' "$(sb_quote "$@")"
		return 0
	fi
	printf '+ %s\n' "$(sb_quote "$@")" >&2
	"$@"
}

# sb_sh 'SHELL TEXT': run a shell line (redirections, pipes) as written, or
# print it in a dry run. Used only where the text is built from checked values.
sb_sh() {
	if [[ $SB_DRY == 1 ]]; then
		printf '%s\n' "$1"
		return 0
	fi
	printf '+ %s\n' "$1" >&2
	bash -o pipefail -c "$1"
}

# sb_write FILE CONTENT: write a file, or print it as a here-document.
sb_write() {
	local file=$1 content=$2
	if [[ $SB_DRY == 1 ]]; then
		printf "cat > %s <<'EOF'\n%s\nEOF\n" "$(sb_quote "$file")" "$content"
		return 0
	fi
	mkdir -p "$(dirname "$file")"
	printf '%s\n' "$content" >"$file"
	echo "$SB_NAME: wrote $file" >&2
}

# sb_daemon NAME LOG CMD...: start a long-running process in the background
# with its output in LOG and its pid in $SB_RUNDIR/NAME.pid.
sb_daemon() {
	local name=$1 log=$2
	shift 2
	if [[ $SB_DRY == 1 ]]; then
		printf '%s >%s 2>&1 &   # pid in %s\n' "$(sb_quote "$@")" "$(sb_quote "$log")" "$SB_RUNDIR/$name.pid"
		return 0
	fi
	mkdir -p "$SB_RUNDIR" "$(dirname "$log")"
	local pidf="$SB_RUNDIR/$name.pid"
	if [[ -f $pidf ]] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
		sb_fail "$name is already running (pid $(cat "$pidf")); stop it first with --stop"
	fi
	printf '+ %s >%s 2>&1 &\n' "$(sb_quote "$@")" "$log" >&2
	nohup "$@" >"$log" 2>&1 &
	echo $! >"$pidf"
}

# sb_stop NAME...: stop the processes this script started (by their pid
# files), newest first; a stale pid file is removed.
sb_stop() {
	local name pidf pid i
	for name in "$@"; do
		pidf="$SB_RUNDIR/$name.pid"
		if [[ ! -f $pidf ]]; then
			sb_note "$name: no pid file $pidf, nothing to stop"
			continue
		fi
		pid=$(cat "$pidf")
		if [[ $SB_DRY == 1 ]]; then
			printf 'kill %s   # %s, from %s\n' "$pid" "$name" "$pidf"
			continue
		fi
		if kill "$pid" 2>/dev/null; then
			for ((i = 0; i < 50; i++)); do
				kill -0 "$pid" 2>/dev/null || break
				sleep 0.1
			done
			echo "$SB_NAME: stopped $name (pid $pid)" >&2
		fi
		rm -f "$pidf"
	done
}

# sb_wait_tcp NAME HOST PORT SECONDS LOG: wait until HOST:PORT accepts a TCP
# connection; on timeout show LOG's tail and fail.
sb_wait_tcp() {
	local name=$1 host=$2 port=$3 secs=$4 log=$5 i
	if [[ $SB_DRY == 1 ]]; then
		printf '# wait up to %ss until %s accepts TCP on %s:%s\n' "$secs" "$name" "$host" "$port"
		return 0
	fi
	for ((i = 0; i < secs * 10; i++)); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
			echo "$SB_NAME: $name listens on $host:$port" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "$SB_NAME: $name does not listen on $host:$port after ${secs}s; last lines of $log:" >&2
	tail -n 20 "$log" >&2 || true
	exit 1
}

# sb_wait_log NAME LOG PATTERN SECONDS HINT: wait until LOG holds PATTERN
# (grep -E); on timeout show the log's tail and HINT, and fail.
sb_wait_log() {
	local name=$1 log=$2 pat=$3 secs=$4 hint=$5 i
	if [[ $SB_DRY == 1 ]]; then
		printf '# wait up to %ss until %s logs "%s" in %s\n' "$secs" "$name" "$pat" "$log"
		return 0
	fi
	for ((i = 0; i < secs * 10; i++)); do
		if grep -qE "$pat" "$log" 2>/dev/null; then
			echo "$SB_NAME: $name: $(grep -E "$pat" "$log" | tail -n 1)" >&2
			return 0
		fi
		sleep 0.1
	done
	echo "$SB_NAME: $name did not log \"$pat\" within ${secs}s; last lines of $log:" >&2
	tail -n 20 "$log" >&2 || true
	[[ -n $hint ]] && echo "$SB_NAME: $hint" >&2
	exit 1
}

# Prerequisites: collected, then reported together by sb_check_missing.

# sb_need_cmd CMD HOW: CMD must be on PATH (or an executable path).
sb_need_cmd() {
	if ! command -v "$1" >/dev/null 2>&1; then
		SB_MISSING+=("command $1: $2")
	fi
}

# sb_need_file FILE HOW
sb_need_file() {
	if [[ ! -e $1 ]]; then
		SB_MISSING+=("file $1: $2")
	fi
}

# sb_need_dir DIR HOW
sb_need_dir() {
	if [[ ! -d $1 ]]; then
		SB_MISSING+=("directory $1: $2")
	fi
}

# sb_need_root WHY
sb_need_root() {
	if [[ $(id -u) != 0 ]]; then
		SB_MISSING+=("root: $1 (run as root)")
	fi
}

# sb_need_iface IFACE HOW: a network interface of this host.
sb_need_iface() {
	if [[ ! -e /sys/class/net/$1 ]]; then
		SB_MISSING+=("interface $1: $2")
	fi
}

# sb_need_module MOD HOW: a kernel module, loaded or loadable.
sb_need_module() {
	if [[ -d /sys/module/${1//-/_} ]]; then
		return 0
	fi
	if ! modinfo "$1" >/dev/null 2>&1; then
		SB_MISSING+=("kernel module $1: $2")
	fi
}

# sb_need_env VAR HOW: an environment variable naming an existing directory.
sb_need_env() {
	local v=${!1:-}
	if [[ -z $v ]]; then
		SB_MISSING+=("environment \$$1: $2")
	elif [[ ! -d $v ]]; then
		SB_MISSING+=("environment \$$1=$v: not a directory; $2")
	fi
}

# sb_check_missing: refuse with every missing prerequisite (real run), or
# list them as comments of the plan (dry run).
sb_check_missing() {
	local m
	if [[ ${#SB_MISSING[@]} == 0 ]]; then
		return 0
	fi
	if [[ $SB_DRY == 1 ]]; then
		for m in "${SB_MISSING[@]}"; do
			printf '# missing on this machine (a real run refuses): %s\n' "$m"
		done
		return 0
	fi
	echo "$SB_NAME: missing prerequisites:" >&2
	for m in "${SB_MISSING[@]}"; do
		echo "  - $m" >&2
	done
	exit 1
}

# Checked values: each refuses with the option's name and its range.

# sb_int OPTION VALUE LO HI: a decimal integer in [LO, HI].
sb_int() {
	local opt=$1 v=$2 lo=$3 hi=$4
	if [[ ! $v =~ ^[0-9]+$ ]] || ((${#v} > 18)); then
		sb_die "$opt $v: not a whole number (range $lo..$hi)"
	fi
	if ((10#$v < lo || 10#$v > hi)); then
		sb_die "$opt $v: out of range $lo..$hi"
	fi
}

# sb_pow2 OPTION VALUE LO HI: a power of two in [LO, HI].
sb_pow2() {
	sb_int "$1" "$2" "$3" "$4"
	local v=$((10#$2))
	if ((v & (v - 1))); then
		sb_die "$1 $2: want a power of two in $3..$4"
	fi
}

# sb_oneof OPTION VALUE CHOICE...: one of the listed words.
sb_oneof() {
	local opt=$1 v=$2 c
	shift 2
	for c in "$@"; do
		[[ $v == "$c" ]] && return 0
	done
	sb_die "$opt $v: want one of $*"
}

# sb_hostport OPTION VALUE: HOST:PORT with a port in 1..65535.
sb_hostport() {
	local opt=$1 v=$2
	if [[ ! $v =~ ^([^:]+):([0-9]+)$ ]]; then
		sb_die "$opt $v: want HOST:PORT"
	fi
	local p=${BASH_REMATCH[2]}
	if ((${#p} > 5 || 10#$p < 1 || 10#$p > 65535)); then
		sb_die "$opt $v: port $p out of range 1..65535"
	fi
}

# sb_ipv4 OPTION VALUE: a dotted IPv4 address.
sb_ipv4() {
	local opt=$1 v=$2 o
	if [[ ! $v =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]]; then
		sb_die "$opt $v: not an IPv4 address"
	fi
	for o in "${BASH_REMATCH[@]:1}"; do
		((10#$o <= 255)) || sb_die "$opt $v: not an IPv4 address (octet $o out of range 0..255)"
	done
}

# sb_mac OPTION VALUE: a unicast MAC-48 address.
sb_mac() {
	local opt=$1 v=$2
	if [[ ! $v =~ ^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$ ]]; then
		sb_die "$opt $v: not a MAC address (six hex octets separated by ':')"
	fi
	if ((16#${v:0:2} & 1)); then
		sb_die "$opt $v: a multicast address (low bit of the first octet set); want a unicast MAC"
	fi
}

# sb_iface_name OPTION VALUE: a Linux interface name (1..15 characters).
sb_iface_name() {
	local opt=$1 v=$2
	if [[ ! $v =~ ^[A-Za-z0-9_.@-]{1,15}$ ]]; then
		sb_die "$opt $v: not an interface name (1..15 characters of letters, digits, _ . - @)"
	fi
}

# sb_duration OPTION VALUE: a Go duration as swordbox takes it (300ms, 8s, 2m).
sb_duration() {
	local opt=$1 v=$2
	if [[ ! $v =~ ^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$ ]]; then
		sb_die "$opt $v: not a duration (a number with ns, us, ms, s, m or h: 300ms, 8s)"
	fi
}

# sb_value OPTION ARGC: the option needs a value (used as: sb_value "$1" $#).
sb_value() {
	(($2 >= 2)) || sb_die "$1 needs a value (see --help)"
}

# sb_default_bin DEFAULT: when no --swordbox was given ($bin empty), the
# binary is DEFAULT and the script builds it (build_bin=1).
# shellcheck disable=SC2034 # bin and build_bin belong to the sourcing script
sb_default_bin() {
	if [[ -z $bin ]]; then
		bin=$1
		build_bin=1
	else
		build_bin=0
	fi
}

# sb_ctrl_up SERVER REPLACE WAIT BIN SWITCH DEVICE_ID ARGS...: start
# `BIN ctrl run --switch SWITCH --device-id DEVICE_ID ARGS...` as the daemon
# ctrl (REPLACE 1: stop the one this script started before), wait up to WAIT
# seconds until it is in charge, then list the switch's tables (the config
# table's default entry holds the steering mode). SERVER names the switch's
# P4Runtime server for messages. A controller that logs "take charge"
# instead could not program the switch: a failure, with its error.
sb_ctrl_up() {
	local server=$1 replace=$2 wait=$3 bin=$4 sw=$5 devid=$6
	shift 6
	local log=$SB_RUNDIR/ctrl.log
	if ((replace)); then
		sb_stop ctrl # a controller this script started before: replaced
	fi
	sb_daemon ctrl "$log" "$bin" ctrl run --switch "$sw" --device-id "$devid" "$@"
	sb_wait_log ctrl "$log" 'in charge|msg="take charge"' "$wait" "is $server up, and the rack file right?"
	if [[ $SB_DRY == 0 ]] && ! grep -q 'in charge' "$log"; then
		grep 'take charge' "$log" | tail -n 1 >&2
		sb_fail "the controller could not take charge: see the error above and $log"
	fi
	sb_note "$server's P4Runtime server is PI's, which implements no register reads or writes: steering is configured through the config table and works; CAS repair needs register reads, so the controller logs 'repair is off' once and keeps steering (docs/deploy.md, 'Registers over P4Runtime')"
	sb_note "check: the switch's tables as the controller left them (config's default entry: set_config with the steering mode)"
	sb_run "$bin" ctrl show tables --switch "$sw" --device-id "$devid"
}

# sb_repo: the repository's root (the scripts live in scripts/deploy).
sb_repo() {
	cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd
}
