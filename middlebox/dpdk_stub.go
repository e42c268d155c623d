//go:build !dpdk

package middlebox

import (
	"context"
	"errors"
)

// ErrNoDPDK is returned by the DPDK entry points of a binary built without
// the dpdk build tag.
var ErrNoDPDK = errors.New("middlebox: built without DPDK (rebuild with -tags dpdk)")

// RunDPDK runs the engine on DPDK ports (build tag dpdk).
func RunDPDK(ctx context.Context, s *Sharded, cfg DPDKConfig) error { return ErrNoDPDK }
