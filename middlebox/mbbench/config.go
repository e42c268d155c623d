package mbbench

import "time"

// DPDKBenchConfig configures BenchDPDK.
type DPDKBenchConfig struct {
	Mix      MixConfig
	Cores    int
	Duration time.Duration
	// EAL defaults to dpdk.VirtualArgs (--no-huge, --no-pci, no shared
	// config, -l 0) with the vdevs and -m 256+128*Cores.
	EAL []string
	// Vdevs lists two vdev arguments per core (client side, server side);
	// default net_ring pairs.
	Vdevs []string
	Ring  bool // the --io ring variant (net_ring vdevs)
}
