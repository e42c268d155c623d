#!/usr/bin/env bash
# tracked-keys.sh: the rack file's tracked-keys line for a Clover run of N
# keys, all of them tracked (as `swordbox bench` tracks them by default).
# Clover's YCSB clients (testbed/ycsb) name record i by YCSB's hashed insert
# order: FNV-1 64 of i's eight little-endian bytes, as a Java long, absolute
# value (ycsb.FNVHash64); the switch and the controller see those keys.
#
#   scripts/deploy/tracked-keys.sh 1024 >> rack.yaml   # then indent it under ctrl:
set -euo pipefail

SB_NAME=tracked-keys.sh
# shellcheck source=scripts/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
-h | --help)
	echo "usage: scripts/deploy/tracked-keys.sh N   (N: the run's --keys, 1..4096, the switch's key slots)"
	exit 0
	;;
esac
(($# == 1)) || sb_die "usage: scripts/deploy/tracked-keys.sh N (see --help)"
sb_int N "$1" 1 4096
command -v python3 >/dev/null || sb_fail "python3 not found: apt-get install python3"
python3 - "$((10#$1))" <<'PY'
import sys

M = 1 << 64


def fnv_hash64(v):
    h = 0xCBF29CE484222325
    for _ in range(8):
        h ^= v & 0xFF
        v >>= 8
        h = (h * 1099511628211) % M
    if h >= 1 << 63:  # negative as a Java long: Math.abs (MinInt64 stays, as 2^63)
        h = M - h
    return h


n = int(sys.argv[1])
print("tracked-keys: [" + ", ".join(str(fnv_hash64(i)) for i in range(n)) + "]")
PY
