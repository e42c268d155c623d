//go:build !dpdk

package mbbench

import "github.com/swordbox/swordbox/middlebox"

// BenchDPDK replays the mix through the engine on DPDK vdevs (build tag
// dpdk); without the tag it returns middlebox.ErrNoDPDK.
func BenchDPDK(cfg DPDKBenchConfig) (BenchResult, error) { return BenchResult{}, middlebox.ErrNoDPDK }
