package middlebox

// DPDKConfig configures RunDPDK.
type DPDKConfig struct {
	EAL        []string // EAL arguments (the vdevs or PCI devices among them)
	ClientPort string   // DPDK port name of the client side
	ServerPort string   // DPDK port name of the server side
	Burst      int      // frames per RX burst (0: 32; at most 512)
}
