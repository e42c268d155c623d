// Package rnic is a userspace software RNIC speaking RoCEv2 reliable
// connection (RC) transport byte-exactly over a netio.Port: memory regions,
// queue pairs with the IB state machine, a requester and a responder per QP,
// completion queues, connection setup (in-process and an rdma_cm-like
// manager over TCP), a responder sharded over workers, and an optional NIC
// timing model. It implements roce/verbs.
//
// It owns transport semantics only. Frames are encoded and decoded by
// package roce (roce.Build, roce.ParseInto, the ICRC); frames move through
// netio. Memory systems program against roce/verbs and never import rnic,
// except to create a device. A device's Clock (verbs.Clock) is the wall
// clock, counted from one epoch per process (clock.go).
//
// # Structure
//
// The requester (requester.go, with its completer in completer.go) and
// the responder (responder.go) are deterministic engines: functions of
// (state, packet or work request, now) that emit packets to an emitter and
// push completions. Goroutines live only
// in the thin loops of device.go: one receive loop per device, optional
// responder workers, and one timer loop that drives retransmission timers.
// NewVirtual (virtual.go) is the other shell: no goroutines, the engines
// driven by a discrete-event simulation (testbed/sim) in virtual time, with
// the timing model of every verb in VirtualTiming (timing.go).
//
// # Decisions where the IBA and the papers leave room
//
//   - One device is one MAC, one IPv4 address, one port, many QPs. QPNs are
//     handed out from 0x100 upwards. A QP's UDP source port is 0xC000 | (QPN
//     & 0x3fff). Every frame has DF set, TTL 64, P_Key 0xffff, MigReq set
//     (as mlx5 sends), UDP checksum 0.
//   - Region keys: lkey == rkey (as on mlx5); the high 24 bits index the
//     region table, the low 8 bits change with each registration. Host
//     regions get virtual addresses from 0x7f00_0000_0000 (2 MiB aligned,
//     deterministic); device memory regions are zero-based (their first
//     byte has address 0), so only their rkey tells them apart.
//   - Atomics operate on little-endian 8-byte words and must be 8-byte
//     aligned (else NAK invalid request). Every DMA on a region holds the
//     region's lock, so an atomic is atomic with respect to every operation
//     from every QP.
//   - Requester: PSNs are assigned at post time; AckReq is set on the last
//     packet of every message and on every READ and atomic request. A
//     timeout retransmits from the oldest unacknowledged PSN and costs one
//     retry; a NAK sequence error, or a response that reveals a lost READ
//     response or atomic ACK, rewinds to that PSN (go-back-N) without
//     costing a retry; any forward progress restores the retry budgets.
//     Consecutive timeouts back off exponentially (Timeout, 2x, 4x, ... up
//     to 64x), like mlx5's adaptive retransmission, and the timer loop
//     pushes deadlines back by any stall it detects in its own ticks: a
//     host that stalls for a few hundred milliseconds (a loaded machine)
//     does not kill its QPs.
//   - Go-back-N ignores stale news: after a go-back-N, responses to packets
//     sent before it still arrive with gaps. A gap inferred from a response
//     (a missing READ response or atomic ACK), or a repeated NAK for the
//     PSN the last go-back-N started from, is acted on only if the missing
//     PSN was last sent at least one round trip ago (the least round trip
//     of a request sent once, Karn's rule), or, before any such sample, if
//     the last go-back-N did not already resend it.
//     After RetryCount timeouts without progress the QP enters ERR: the
//     oldest request completes RETRY_EXC_ERR and the rest WR_FLUSH_ERR. A
//     retried READ asks only for the data not yet received.
//   - Responder: see responder.go for the rules. Coalesced ACKs (default)
//     are cumulative: one ACK for the newest PSN per receive burst.
//   - Completion queues grow instead of overrunning.
//   - Local protection errors (an SGE outside its region) complete the
//     request with LOC_PROT_ERR and move the QP to ERR, as on hardware.
package rnic
