#!/usr/bin/env bash
# tofino-devconfig.sh: packs a bf-p4c build into the P4Runtime device config
# that bf_switchd's P4Runtime server (the SDE's PI back end, bf-drivers
# src/pi/pi_imp.c, _pi_update_device_start) reads from
# SetForwardingPipelineConfig's p4_device_config: five chunks, each a
# little-endian 32-bit length and its bytes:
#   program name | tofino.bin | context.json | pipeline name | bf-rt.json
# The names are at most 100 bytes (the back end's limit).
#
#   scripts/deploy/tofino-devconfig.sh -o OUT NAME TOFINO_BIN CONTEXT_JSON PIPE BFRT_JSON
set -euo pipefail

SB_NAME=tofino-devconfig.sh
# shellcheck source=scripts/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
	echo "usage: scripts/deploy/tofino-devconfig.sh -o OUT NAME TOFINO_BIN CONTEXT_JSON PIPE BFRT_JSON"
	echo
	sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
[[ ${1:-} == -o ]] || sb_die "usage: -o OUT NAME TOFINO_BIN CONTEXT_JSON PIPE BFRT_JSON (see --help)"
(($# == 7)) || sb_die "usage: -o OUT NAME TOFINO_BIN CONTEXT_JSON PIPE BFRT_JSON (see --help)"
out=$2 name=$3 bin=$4 ctx=$5 pipe=$6 bfrt=$7
export LC_ALL=C # lengths in bytes
for n in "$name" "$pipe"; do
	((${#n} >= 1 && ${#n} <= 100)) || sb_die "name $n: 1..100 bytes (the PI back end's limit)"
done
for f in "$bin" "$ctx" "$bfrt"; do
	[[ -f $f ]] || sb_fail "$f: no such file (build the program first)"
done

# u32le N: N as four little-endian bytes.
u32le() {
	local n=$1
	# shellcheck disable=SC2059 # the format is built from hex digits only
	printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $(((n >> 8) & 255)))\\x$(printf %02x $(((n >> 16) & 255)))\\x$(printf %02x $(((n >> 24) & 255)))"
}
chunk_str() {
	u32le "${#1}"
	printf '%s' "$1"
}
chunk_file() {
	local size
	size=$(stat -c %s "$1")
	((size < 1 << 31)) || sb_fail "$1: larger than 2 GiB"
	u32le "$size"
	cat "$1"
}
tmp=$out.tmp.$$
{
	chunk_str "$name"
	chunk_file "$bin"
	chunk_file "$ctx"
	chunk_str "$pipe"
	chunk_file "$bfrt"
} >"$tmp"
mv "$tmp" "$out"
echo "$SB_NAME: wrote $out ($(stat -c %s "$out") bytes)" >&2
