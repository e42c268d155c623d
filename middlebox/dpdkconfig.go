package middlebox

import "time"

// DPDKConfig configures RunDPDK.
type DPDKConfig struct {
	EAL        []string // EAL arguments (the vdevs or PCI devices among them)
	ClientPort string   // DPDK port name of the client side
	ServerPort string   // DPDK port name of the server side
	Burst      int      // frames per RX burst (default 32)
}

// DPDKBenchConfig configures BenchDPDK.
type DPDKBenchConfig struct {
	Mix      MixConfig
	Cores    int
	Duration time.Duration
	EAL      []string // default: --no-huge -m 512 --no-pci --file-prefix swordbox-mbox-<pid>
	// Vdevs lists two vdev arguments per core (client side, server side);
	// default net_ring pairs.
	Vdevs []string
	Ring  bool // the --io ring variant (net_ring vdevs)
}
