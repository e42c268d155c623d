// Package mbbench measures the middlebox: a synthetic recorded mix of
// client and server traffic (Mix, for an engine configured with
// Mix.EngineConfig), and the drivers that replay it through the engine
// alone (BenchEngine, BenchmarkEngineMix) and through the zero-copy DPDK
// loop (BenchDPDK, build tag dpdk), reporting Mpps per core on wall time
// and on the thread's CPU time.
//
// It owns the measurement only: the engine, its I/O loops and the DPDK
// loop it drives (middlebox.DPDKLoop, with the hooks DPDKHooks that let it
// decide which side a frame came from, stand a forwarder in for the engine
// and time the engine's share) are package middlebox's; the ports and
// mbufs are netio/dpdk's. `swordbox middlebox bench` is its command line;
// docs/middlebox.md has the figures and how they were taken.
package mbbench
