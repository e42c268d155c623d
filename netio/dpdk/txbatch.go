//go:build dpdk

package dpdk

/*
#include <stdlib.h>
#include "sbdpdk.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// TxBatchMax is how many mbufs a TxBatch queues per TX list (and per free
// list) before it flushes by itself.
const TxBatchMax = C.SB_TXB_MAX

// TxBatchStock is the largest stock of empty mbufs a TxBatch keeps.
const TxBatchStock = C.SB_TXB_STOCK

// TxBatch is the output side of a zero-copy forwarding loop, kept in C
// memory so that cgo neither copies nor checks it. Per burst the loop
// queues mbufs to transmit on one of two ports (Queue), hands back mbufs
// it is done with (Drop), and takes empty mbufs for the frames it
// generates from a stock refilled from a pool (Take). FlushRx then, in a
// single cgo call, transmits both lists, frees what the devices refused
// (counted, as a NIC drops on a full ring) and what was dropped, refills
// the stock, and receives the next burst; so a loop makes one cgo call per
// burst. Queue, Drop and Take run in Go without cgo calls (Take calls C
// only when the stock runs out within a burst).
//
// A TxBatch belongs to one goroutine. Register its OS thread with
// RegisterThread so that the pool's per-lcore cache serves the stock.
type TxBatch struct {
	c      *C.struct_sb_txbatch
	tx     [2][]*Mbuf // views of c.tx
	ntx    [2]int
	free   []*Mbuf // view of c.free
	nfree  int
	stock  []*Mbuf // view of c.stock
	nstock int
}

// NewTxBatch returns a TxBatch transmitting list s on queue 0 of ports[s]
// (both may be the same port) and keeping stock empty mbufs of pool at
// hand (at most TxBatchStock; 0 means none: Take then allocates).
func NewTxBatch(pool *Mempool, ports [2]*EthPort, stock int) (*TxBatch, error) {
	if pool == nil || ports[0] == nil || ports[1] == nil {
		return nil, fmt.Errorf("dpdk: tx batch: pool and both ports are required")
	}
	if stock < 0 || stock > TxBatchStock {
		return nil, fmt.Errorf("dpdk: tx batch: stock of %d mbufs: want 0 to %d", stock, TxBatchStock)
	}
	c := (*C.struct_sb_txbatch)(C.calloc(1, C.size_t(unsafe.Sizeof(C.struct_sb_txbatch{}))))
	if c == nil {
		return nil, fmt.Errorf("dpdk: tx batch: out of memory")
	}
	c.mp = pool.mp
	c.port[0], c.port[1] = C.uint16_t(ports[0].id), C.uint16_t(ports[1].id)
	c.sink = -1
	c.want = C.uint32_t(stock)
	b := &TxBatch{c: c}
	for s := range b.tx {
		b.tx[s] = unsafe.Slice((**Mbuf)(unsafe.Pointer(&c.tx[s][0])), TxBatchMax)
	}
	b.free = unsafe.Slice((**Mbuf)(unsafe.Pointer(&c.free[0])), TxBatchMax)
	b.stock = unsafe.Slice((**Mbuf)(unsafe.Pointer(&c.stock[0])), TxBatchStock)
	return b, nil
}

// SetSink makes every flush also drain queue 0 of p and free what it
// receives: a benchmark's stand-in for a NIC reclaiming transmitted mbufs
// when p is a loopback (net_ring) port.
func (b *TxBatch) SetSink(p *EthPort) {
	if p == nil {
		b.c.sink = -1
		return
	}
	b.c.sink = C.int32_t(p.id)
}

// Queue adds m to TX list s (0 or 1); the batch owns it from now on.
func (b *TxBatch) Queue(s int, m *Mbuf) {
	if b.ntx[s] == TxBatchMax {
		b.Flush()
	}
	b.tx[s][b.ntx[s]] = m
	b.ntx[s]++
}

// Drop hands m back: it is freed at the next flush.
func (b *TxBatch) Drop(m *Mbuf) {
	if b.nfree == TxBatchMax {
		b.Flush()
	}
	b.free[b.nfree] = m
	b.nfree++
}

// Take returns an empty mbuf from the stock (refilling it if need be), or
// nil when the pool is empty (counted in NoMbuf).
func (b *TxBatch) Take() *Mbuf {
	if b.nstock == 0 {
		b.refill()
		if b.nstock == 0 {
			return nil
		}
	}
	b.nstock--
	return b.stock[b.nstock]
}

func (b *TxBatch) refill() {
	b.c.nstock = C.uint32_t(b.nstock)
	want := b.c.want
	if want == 0 {
		b.c.want = 1
	}
	C.sb_txb_refill(b.c)
	b.c.want = want
	b.nstock = int(b.c.nstock)
}

func (b *TxBatch) sync() {
	b.c.ntx[0], b.c.ntx[1] = C.uint32_t(b.ntx[0]), C.uint32_t(b.ntx[1])
	b.c.nfree = C.uint32_t(b.nfree)
	b.c.nstock = C.uint32_t(b.nstock)
	b.ntx = [2]int{}
	b.nfree = 0
}

// Flush transmits and frees what is queued, drains the sink if any, and
// refills the stock: one cgo call.
func (b *TxBatch) Flush() {
	b.sync()
	C.sb_txb_flush(b.c)
	b.nstock = int(b.c.nstock)
}

// FlushRx flushes b, then receives up to len(ms) frames from queue q of p
// into ms and returns how many: one cgo call for the end of one burst and
// the start of the next.
func (b *TxBatch) FlushRx(p *EthPort, q uint16, ms []*Mbuf) int {
	b.sync()
	n := C.sb_txb_flush_rx(b.c, C.uint16_t(p.id), C.uint16_t(q), mbufArray(ms), C.uint16_t(min(len(ms), 0xffff)))
	b.nstock = int(b.c.nstock)
	return int(n)
}

// TxDropped returns how many queued mbufs the devices refused (freed).
func (b *TxBatch) TxDropped() uint64 { return uint64(b.c.txdrops) }

// NoMbuf returns how many refills of the stock ended short (pool empty).
func (b *TxBatch) NoMbuf() uint64 { return uint64(b.c.nombuf) }

// Drained returns how many mbufs the sink gave back.
func (b *TxBatch) Drained() uint64 { return uint64(b.c.drained) }

// Close flushes b, returns the stock to the pool and releases b.
func (b *TxBatch) Close() {
	if b.c == nil {
		return
	}
	b.c.want = 0 // no refill
	b.Flush()
	FreeBulk(b.stock[:b.nstock])
	C.free(unsafe.Pointer(b.c))
	*b = TxBatch{}
}
