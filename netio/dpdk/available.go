//go:build !dpdk

package dpdk

// Available reports whether this build includes the DPDK layer (build tag
// dpdk). Without it the package holds no API.
const Available = false
