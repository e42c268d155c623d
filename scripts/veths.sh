#!/usr/bin/env bash
# Creates (up) or removes (down) the veth pairs the docs' AF_PACKET examples
# name, in the current network namespace. Needs root (CAP_NET_ADMIN).
#
#   scripts/veths.sh up   NAME...   each NAME becomes a veth pair NAME <-> NAME-p,
#                                   both ends up, checksum offload off (frames
#                                   on the wire as sent), IPv6 off (the kernel
#                                   sends nothing on its own)
#   scripts/veths.sh down NAME...   removes the pairs (removing one end removes both)
#
# Examples:
#   scripts/veths.sh up veth1 veth2              # swordbox switch --ports 1=veth1,2=veth2
#   scripts/veths.sh up mbox-c mbox-s            # swordbox middlebox run --config docs/examples/mbox.yaml
#   scripts/veths.sh down veth1 veth2 mbox-c mbox-s
set -euo pipefail

usage() { echo "usage: $0 up|down NAME..." >&2; exit 2; }
[ $# -ge 2 ] || usage
what=$1; shift
if [ "$(id -u)" != 0 ]; then
  echo "$0: needs root (creating interfaces needs CAP_NET_ADMIN)" >&2
  exit 1
fi
for n in "$@"; do
  if [ ${#n} -gt 13 ]; then
    echo "$0: $n: at most 13 characters (the peer $n-p must fit the kernel's 15)" >&2
    exit 1
  fi
done
case $what in
  up)
    for n in "$@"; do
      if ip link show "$n" >/dev/null 2>&1; then
        echo "$0: $n exists, left as it is"
        continue
      fi
      ip link add "$n" type veth peer name "$n-p"
      for i in "$n" "$n-p"; do
        sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1" 2>/dev/null || true
        ethtool -K "$i" tx off rx off >/dev/null 2>&1 || true
        ip link set "$i" up
      done
      echo "$0: $n <-> $n-p up"
    done
    ;;
  down)
    for n in "$@"; do
      ip link del "$n" 2>/dev/null && echo "$0: $n removed" || echo "$0: $n: not there"
    done
    ;;
  *) usage ;;
esac
