package middlebox

import "time"

// DPDKConfig configures RunDPDK.
type DPDKConfig struct {
	EAL        []string // EAL arguments (the vdevs or PCI devices among them)
	ClientPort string   // DPDK port name of the client side
	ServerPort string   // DPDK port name of the server side
	Burst      int      // frames per RX burst (0: 32; at most 512)
}

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
