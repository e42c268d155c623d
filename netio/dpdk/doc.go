// Package dpdk is a thin cgo layer over Debian's libdpdk 22.11 (build tag
// dpdk; `#cgo pkg-config: libdpdk`): EAL initialisation, packet mempools,
// ethdev port setup, RX/TX bursts, in-place mbuf edits (trim, append, adj,
// prepend), a netio.Port over a DPDK port that copies frames into the
// caller's buffers, and a zero-copy burst API for the middlebox, which
// rewrites frames inside the mbufs.
//
// It owns nothing of DPDK beyond what it wraps: no lcore launching, no
// multi-process support, no flow rules. Without the dpdk build tag the
// package holds only this documentation and Available (false), so builds
// and tests on machines without libdpdk stay green.
//
// Decisions where DPDK leaves a choice:
//   - The EAL can be initialised once per process (rte_eal_init refuses a
//     second call), so Init is package-level and idempotent for identical
//     arguments; it fails for different ones. It runs on a dedicated OS
//     thread whose CPU set it restores and which then exits, because
//     rte_eal_init pins its calling thread to the main lcore's CPU and no
//     Go runtime thread may keep that.
//     All callers are then non-EAL threads, and any goroutine may drive
//     any queue as long as one queue is driven by one goroutine at a time.
//     Mempool per-lcore caches serve only threads with an lcore id: a
//     data-path goroutine locks its OS thread and calls RegisterThread
//     (rte_thread_register) to get one; unregistered threads still work,
//     on the pool's shared ring.
//   - A zero-copy loop's output side is a TxBatch in C memory: transmit
//     lists for two ports, a free list and a stock of empty mbufs, flushed
//     together with the next RX burst in one cgo call (FlushRx).
//   - Mempools are made with a data room that holds MaxFrameSize plus the
//     headroom, so every frame netio can carry fits one segment and the
//     zero-copy API can hand out a frame as one []byte. Chained mbufs that a
//     PMD might still deliver are copied correctly by Recv; Mbuf.Data shows
//     the first segment only.
//   - The copying Port polls (DPDK has no interrupts on these vdevs): an
//     idle Recv spins briefly, then yields, then sleeps in steps growing to
//     50µs, so an idle port does not burn a core and Close wakes it within
//     that step. Send never blocks: what the TX queue refuses is freed and
//     counted, as a NIC drops on a full ring.
//   - Devices can be added after Init with Probe (rte_dev_probe), on the
//     calling OS thread: an af_packet vdev probed from a thread inside a
//     network namespace binds its socket there.
package dpdk
