#!/usr/bin/env bash
# pgo.sh: regenerate cmd/swordbox/default.pgo, the CPU profile the Go
# toolchain uses for profile-guided optimization of the swordbox binary
# (go build/run/install ./cmd/swordbox pick it up by themselves: -pgo=auto).
#
#   scripts/pgo.sh            # ~1 minute (MBOX_DUR, RACK_DUR: the two runs)
#
# The profile is the merge of two runs of the binary built without PGO:
#   1. swordbox middlebox bench --io engine (the middlebox's recorded mix,
#      the engine's per-frame hot path), and
#   2. swordbox bench (the main job: the A/B benchmark on the in-process
#      rack, shortened), so that its hot paths are weighed too.
# PGO mostly inlines the hot calls and lays out the hot blocks; it changes
# no behaviour. Regenerate it after large changes to the hot paths (a stale
# profile only loses part of the gain; the build stays correct).
#
# Benchmarks with go test do not use it unless asked:
#   go test ./middlebox/mbbench -run XXX -bench EngineMix -pgo=$PWD/cmd/swordbox/default.pgo
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -pgo=off -o "$tmp/swordbox" ./cmd/swordbox
"$tmp/swordbox" --cpuprofile "$tmp/mbox.pprof" middlebox bench --io engine --duration "${MBOX_DUR:-20s}" >/dev/null
"$tmp/swordbox" --cpuprofile "$tmp/rack.pprof" bench --duration "${RACK_DUR:-2s}" --warmup 500ms \
	--workloads c,a --results "" --no-progress >/dev/null
go tool pprof -proto "$tmp/mbox.pprof" "$tmp/rack.pprof" >"$tmp/merged.pgo" 2>/dev/null
mv "$tmp/merged.pgo" cmd/swordbox/default.pgo
ls -l cmd/swordbox/default.pgo
