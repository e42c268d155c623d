//go:build dpdk

package dpdk

/*
#include <stdlib.h>
#include "sbdpdk.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/swordbox/swordbox/netio"
)

// MaxBurst is the most frames the copying Port moves per DPDK call.
const MaxBurst = 64

// PortConfig configures a DPDK ethdev port.
type PortConfig struct {
	// Pool supplies RX mbufs and the mbufs the copying Send fills. Required.
	Pool *Mempool
	// RxQueues and TxQueues default to 1.
	RxQueues, TxQueues int
	// RxDesc and TxDesc are ring sizes per queue (default 1024; the PMD
	// may adjust them).
	RxDesc, TxDesc int
	// NoPromisc leaves promiscuous mode off.
	NoPromisc bool
}

// PortStats are the device counters (rte_eth_stats) plus the copying
// Port's own.
type PortStats struct {
	RxPackets, TxPackets uint64 // from the device
	RxMissed, RxErrors   uint64
	TxErrors, RxNoMbuf   uint64
	// TxDropped counts frames the copying Send accepted but the TX queue
	// refused (freed, as a NIC drops on a full ring).
	TxDropped uint64
	// Truncated counts frames longer than the caller's Recv buffer.
	Truncated uint64
}

// EthPort is a started DPDK ethdev port. It implements netio.Port on queue
// 0 (copying frames in and out), and offers RxBurst and TxBurst on any
// queue for zero-copy use. Each queue must be driven by one goroutine at a
// time; the netio.Port methods serialise themselves.
type EthPort struct {
	id   uint16
	name string
	pool *Mempool

	closed atomic.Bool
	cmu    sync.Mutex // Close

	rmu sync.Mutex
	r   *burstState
	wmu sync.Mutex
	w   *burstState

	txDropped, truncated atomic.Uint64
}

// burstState is the scratch memory of one copying burst. It lives in C
// memory (it holds no Go pointers), so cgo does not scan it on every call.
type burstState struct {
	mbuf [MaxBurst]*Mbuf
	data [MaxBurst]unsafe.Pointer
	len  [MaxBurst]C.uint32_t
	wlen [MaxBurst]C.uint16_t
	segs [MaxBurst]C.uint16_t
}

func newBurstState() *burstState {
	return (*burstState)(C.calloc(1, C.size_t(unsafe.Sizeof(burstState{}))))
}

// OpenPort configures and starts the device called name ("net_ring0").
func OpenPort(name string, cfg PortConfig) (*EthPort, error) {
	id, err := PortByName(name)
	if err != nil {
		return nil, err
	}
	if cfg.Pool == nil {
		return nil, fmt.Errorf("dpdk: port %s: no mempool", name)
	}
	def := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	nrx, ntx := def(cfg.RxQueues, 1), def(cfg.TxQueues, 1)
	rxd, txd := def(cfg.RxDesc, 1024), def(cfg.TxDesc, 1024)
	if nrx > 1024 || ntx > 1024 || rxd > 0xffff || txd > 0xffff {
		return nil, fmt.Errorf("dpdk: port %s: queue counts or sizes out of range", name)
	}
	promisc := C.int(1)
	if cfg.NoPromisc {
		promisc = 0
	}
	var stage C.int
	if rc := C.sb_port_setup(C.uint16_t(id), C.uint16_t(nrx), C.uint16_t(ntx), C.uint16_t(rxd), C.uint16_t(txd), cfg.Pool.mp, promisc, &stage); rc != 0 {
		what := [...]string{"configure", "adjust descriptors", "rx queue setup", "tx queue setup", "start"}[stage]
		return nil, fmt.Errorf("dpdk: port %s: %s: %w", name, what, errno(rc))
	}
	return &EthPort{id: id, name: name, pool: cfg.Pool, r: newBurstState(), w: newBurstState()}, nil
}

// ID returns the ethdev port id.
func (p *EthPort) ID() uint16 { return p.id }

// Name implements netio.Port: the device name.
func (p *EthPort) Name() string { return p.name }

// RxBurst receives up to len(ms) frames from queue q into ms without
// copying and returns how many. The caller owns them: it must transmit or
// free each one.
func (p *EthPort) RxBurst(q uint16, ms []*Mbuf) int {
	if len(ms) == 0 {
		return 0
	}
	return int(C.sb_rx_burst(C.uint16_t(p.id), C.uint16_t(q), mbufArray(ms), C.uint16_t(min(len(ms), 0xffff))))
}

// TxBurst queues ms on queue q and returns how many the device took; it
// owns those. The rest stay the caller's (retry or FreeBulk them).
func (p *EthPort) TxBurst(q uint16, ms []*Mbuf) int {
	if len(ms) == 0 {
		return 0
	}
	return int(C.sb_tx_burst(C.uint16_t(p.id), C.uint16_t(q), mbufArray(ms), C.uint16_t(min(len(ms), 0xffff))))
}

// Recv implements netio.Port on queue 0: it polls until frames arrive (see
// the package doc for the idle back-off) and copies them into bufs.
func (p *EthPort) Recv(bufs [][]byte) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	want := min(len(bufs), MaxBurst)
	for idle := 0; ; idle++ {
		if p.closed.Load() {
			return 0, netio.ErrClosed
		}
		r := p.r
		k := int(C.sb_rx_info(C.uint16_t(p.id), 0, mbufArray(r.mbuf[:]), C.uint16_t(want), &r.data[0], &r.len[0], &r.segs[0]))
		if k > 0 {
			p.copyOut(bufs, k)
			return k, nil
		}
		idleWait(idle)
	}
}

// copyOut copies k received frames into bufs and frees their mbufs.
func (p *EthPort) copyOut(bufs [][]byte, k int) {
	for i := range k {
		b := bufs[i][:cap(bufs[i])]
		l := int(p.r.len[i])
		if l > len(b) {
			p.truncated.Add(1)
			l = len(b)
		}
		if p.r.segs[i] == 1 {
			copy(b, unsafe.Slice((*byte)(p.r.data[i]), l))
		} else if l > 0 {
			l = int(C.sb_copy_chain(p.r.mbuf[i].c(), unsafe.Pointer(&b[0]), C.uint32_t(l)))
		}
		bufs[i] = b[:l]
	}
	FreeBulk(p.r.mbuf[:k])
}

// idleWait backs off an idle poll loop: spin, then yield, then sleep in
// steps growing to 50µs.
func idleWait(idle int) {
	switch {
	case idle < 64:
	case idle < 256:
		runtime.Gosched()
	default:
		d := time.Duration(idle-255) * time.Microsecond
		time.Sleep(min(d, 50*time.Microsecond))
	}
}

// Send implements netio.Port on queue 0: it copies the frames into mbufs of
// the port's pool and transmits them. Frames the TX queue refuses are freed
// and counted (PortStats.TxDropped); Send still reports them accepted, as a
// NIC does. It fails when the pool runs dry or a frame exceeds MaxFrameSize.
func (p *EthPort) Send(frames [][]byte) (int, error) {
	if p.closed.Load() {
		return 0, netio.ErrClosed
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if p.closed.Load() {
		return 0, netio.ErrClosed
	}
	w := p.w
	sent := 0
	for sent < len(frames) {
		chunk := frames[sent:min(len(frames), sent+MaxBurst)]
		for i, f := range chunk {
			if len(f) > netio.MaxFrameSize {
				return sent, fmt.Errorf("dpdk: port %s: frame of %d bytes exceeds MaxFrameSize", p.name, len(f))
			}
			w.wlen[i] = C.uint16_t(len(f))
		}
		n := len(chunk)
		switch C.sb_tx_prepare(p.pool.mp, mbufArray(w.mbuf[:]), &w.wlen[0], C.uint16_t(n), &w.data[0]) {
		case 0:
		case -1:
			return sent, fmt.Errorf("dpdk: port %s: mempool %s empty", p.name, p.pool.name)
		default:
			return sent, fmt.Errorf("dpdk: port %s: frame does not fit one mbuf of pool %s", p.name, p.pool.name)
		}
		for i, f := range chunk {
			copy(unsafe.Slice((*byte)(w.data[i]), len(f)), f)
		}
		k := int(C.sb_tx_send(C.uint16_t(p.id), 0, mbufArray(w.mbuf[:]), C.uint16_t(n)))
		p.txDropped.Add(uint64(n - k))
		sent += n
	}
	return sent, nil
}

// Stats returns the device counters and the copying Port's own.
func (p *EthPort) Stats() (PortStats, error) {
	var st C.struct_rte_eth_stats
	if rc := C.rte_eth_stats_get(C.uint16_t(p.id), &st); rc != 0 {
		return PortStats{}, fmt.Errorf("dpdk: port %s: stats: %w", p.name, errno(rc))
	}
	return PortStats{
		RxPackets: uint64(st.ipackets), TxPackets: uint64(st.opackets),
		RxMissed: uint64(st.imissed), RxErrors: uint64(st.ierrors),
		TxErrors: uint64(st.oerrors), RxNoMbuf: uint64(st.rx_nombuf),
		TxDropped: p.txDropped.Load(), Truncated: p.truncated.Load(),
	}, nil
}

// Close implements netio.Port: it wakes a polling Recv with
// netio.ErrClosed, then stops the device (rte_eth_dev_stop; the mempool
// stays the caller's). The device can be opened again with OpenPort, or
// removed with Remove.
func (p *EthPort) Close() error {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	p.rmu.Lock() // wait for Recv to notice
	p.wmu.Lock()
	defer p.rmu.Unlock()
	defer p.wmu.Unlock()
	C.free(unsafe.Pointer(p.r))
	C.free(unsafe.Pointer(p.w))
	p.r, p.w = nil, nil
	if rc := C.rte_eth_dev_stop(C.uint16_t(p.id)); rc != 0 {
		return fmt.Errorf("dpdk: port %s: stop: %w", p.name, errno(rc))
	}
	return nil
}

var _ netio.Port = (*EthPort)(nil)

// Remove detaches a virtual device added with Probe or --vdev
// (rte_eal_hotplug_remove); its port must be closed first.
func Remove(name string) error {
	if !Initialized() {
		return ErrNotInitialized
	}
	bus, dev := C.CString("vdev"), C.CString(name)
	defer C.free(unsafe.Pointer(bus))
	defer C.free(unsafe.Pointer(dev))
	if rc := C.rte_eal_hotplug_remove(bus, dev); rc != 0 {
		return fmt.Errorf("dpdk: remove %s: %w", name, errno(rc))
	}
	return nil
}
