// Package netio moves whole Ethernet frames between the components of a rack.
//
// It owns the Port abstraction (bursts of frames in and out), in-memory links
// with seeded fault injection, AF_PACKET ports on real interfaces, and a pcap
// tap that records what crosses a port. It knows nothing about P4 or any
// memory system, and of RoCEv2 only what the corrupter needs (flip bits in
// the UDP payload, never in the one BTH byte the ICRC does not cover). It
// imports nothing of swordbox's, and every component (the software RNIC,
// the switch target, the middlebox) reaches the world only through a Port,
// so the same component runs in-process, on veth or on DPDK (netio/dpdk,
// build tag dpdk).
//
// Implementations:
//   - LinkPort (NewLink, Pipe): the two ends of an in-memory link, each
//     direction a bounded FIFO of recycled buffers behind a seeded fault
//     injector (Faults, Stats). A full queue drops at the tail like a NIC
//     ring. Closing one end unblocks its Recv; what the peer sends to a
//     closed end is counted as Overflow.
//   - FaultPort (NewFaultPort): the same injector on the send side of any
//     Port.
//   - AFPacketPort (NewAFPacketPort, Linux): a raw socket on a named
//     interface; bursts are single recvmmsg/sendmmsg calls, frames the
//     interface itself sent (PACKET_OUTGOING) are never returned.
//   - Tap (NewTap, NewTapFile): records every frame a Port sends and
//     receives to a nanosecond pcap file.
//   - dpdk.EthPort (netio/dpdk, build tag dpdk): a DPDK ethdev port.
//
// None of them allocates per frame once warm; benchmarks are in
// bench_test.go (go test -run X -bench . ./netio/).
package netio

import "errors"

// MaxFrameSize is the largest frame a Port carries: a 4096-byte path MTU plus
// Ethernet, IPv4, UDP, BTH, extension headers and ICRC, rounded up. Receive
// buffers must have at least this capacity.
const MaxFrameSize = 4096 + 256

// ErrClosed is returned by Recv and Send once the port has been closed.
var ErrClosed = errors.New("netio: port closed")

// Port moves bursts of whole Ethernet frames (no FCS).
//
// Ownership: Recv copies frames into the caller's buffers; Send copies the
// caller's frames before it returns. Neither keeps a reference to the
// caller's slices, so a caller can reuse one set of buffers forever and the
// steady state allocates nothing.
type Port interface {
	// Name identifies the port in errors, counters and captures.
	Name() string
	// Recv blocks until at least one frame is available, then copies up to
	// len(bufs) frames into bufs, setting bufs[i] = bufs[i][:frameLen]. Each
	// bufs[i] must have capacity MaxFrameSize (a shorter buffer gets a
	// truncated frame). It returns the number of frames received, or
	// ErrClosed after Close.
	Recv(bufs [][]byte) (int, error)
	// Send transmits the frames in order and returns how many were accepted.
	// A port may drop frames the way a NIC queue does when full; it never
	// blocks forever.
	Send(frames [][]byte) (int, error)
	// Close releases the port and unblocks a pending Recv with ErrClosed.
	Close() error
}
