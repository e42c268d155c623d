#!/usr/bin/env bash
# The single test entry point of swordbox: the README's test command and what
# CI runs. On a fresh Debian machine, as root, it first installs the Debian
# packages the tests use as oracles or substrates (tshark, scapy, DPDK, iproute2,
# and the linter of scripts/deploy, shellcheck) when they are missing;
# elsewhere, tests that need them skip with a message.
#
#   scripts/test.sh            vet + all tests (+ DPDK tests when libdpdk is there)
#   scripts/test.sh -short     the same, with long tests shortened
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v tshark >/dev/null 2>&1 || need+=(tshark)
/usr/bin/python3 -c 'import scapy.contrib.roce' >/dev/null 2>&1 || need+=(python3-scapy)
/usr/bin/python3 -c 'import grpc' >/dev/null 2>&1 || need+=(python3-grpcio)
pkg-config --exists libdpdk 2>/dev/null || need+=(dpdk-dev libdpdk-dev)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v ethtool >/dev/null 2>&1 || need+=(ethtool)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "scripts/test.sh: installing ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" python3 >/dev/null
  else
    echo "scripts/test.sh: not root: tests needing ${need[*]} will skip"
  fi
fi

go vet ./...
go test -count=1 -timeout 20m "$@" ./...
if pkg-config --exists libdpdk 2>/dev/null && [ -d netio/dpdk ]; then
  go vet -tags dpdk ./netio/dpdk/... ./middlebox/...
  go test -count=1 -timeout 10m -tags dpdk "$@" ./netio/dpdk/... ./middlebox/...
fi
