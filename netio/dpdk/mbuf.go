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

// Mbuf is a DPDK packet buffer (struct rte_mbuf), used by pointer. Its
// bytes live in DPDK memory; a slice returned by Data stays valid until the
// mbuf is freed or transmitted.
type Mbuf C.struct_rte_mbuf

func (m *Mbuf) c() *C.struct_rte_mbuf { return (*C.struct_rte_mbuf)(m) }

// mbufArray views a slice of *Mbuf as the C array DPDK takes. The slice's
// memory holds only C pointers, so cgo may be handed it.
func mbufArray(ms []*Mbuf) **C.struct_rte_mbuf {
	return (**C.struct_rte_mbuf)(unsafe.Pointer(unsafe.SliceData(ms)))
}

// Data returns the frame bytes of the first segment, in place: writes go
// straight into the mbuf.
func (m *Mbuf) Data() []byte {
	c := m.c()
	return unsafe.Slice((*byte)(unsafe.Add(c.buf_addr, c.data_off)), int(c.data_len))
}

// Len returns the frame length (all segments).
func (m *Mbuf) Len() int { return int(m.c().pkt_len) }

// Segments returns the number of segments of the frame.
func (m *Mbuf) Segments() int { return int(m.c().nb_segs) }

// Headroom returns the bytes free before the frame.
func (m *Mbuf) Headroom() int { return int(m.c().data_off) }

func (m *Mbuf) cHeadroom() int { return int(C.sb_headroom(m.c())) }

// Tailroom returns the bytes free after the frame in its last segment.
func (m *Mbuf) Tailroom() int { return int(C.sb_tailroom(m.c())) }

// The edits below follow DPDK's static inline rte_pktmbuf_append, _trim,
// _adj and _prepend. For a single-segment mbuf (every frame netio carries,
// see the package doc) they run in Go on the mbuf's fields, which saves a
// cgo call per edit on the middlebox's hot path; chained mbufs go through
// the C wrappers. TestMbufEditsMatchDPDK holds the two paths equal.

// Append grows the frame by n bytes at the end (rte_pktmbuf_append) and
// returns the new bytes, uninitialised.
func (m *Mbuf) Append(n int) ([]byte, error) {
	c := m.c()
	if n < 0 || n > 0xffff {
		return nil, fmt.Errorf("dpdk: mbuf append %d bytes: out of range", n)
	}
	if c.nb_segs != 1 {
		return m.cAppend(n)
	}
	if n > int(c.buf_len)-int(c.data_off)-int(c.data_len) {
		return nil, fmt.Errorf("dpdk: mbuf append %d bytes: only %d bytes of tailroom", n, m.Tailroom())
	}
	tail := unsafe.Add(c.buf_addr, int(c.data_off)+int(c.data_len))
	c.data_len += C.uint16_t(n)
	c.pkt_len += C.uint32_t(n)
	return unsafe.Slice((*byte)(tail), n), nil
}

func (m *Mbuf) cAppend(n int) ([]byte, error) {
	p := C.sb_pktmbuf_append(m.c(), C.uint16_t(n))
	if p == nil {
		return nil, fmt.Errorf("dpdk: mbuf append %d bytes: only %d bytes of tailroom", n, m.Tailroom())
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n), nil
}

// Trim removes n bytes from the end of the frame (rte_pktmbuf_trim; from
// the last segment only, as DPDK does).
func (m *Mbuf) Trim(n int) error {
	c := m.c()
	if n < 0 || n > 0xffff {
		return fmt.Errorf("dpdk: mbuf trim %d bytes: out of range", n)
	}
	if c.nb_segs != 1 {
		return m.cTrim(n)
	}
	if n > int(c.data_len) {
		return fmt.Errorf("dpdk: mbuf trim %d bytes of a %d-byte frame: out of range", n, m.Len())
	}
	c.data_len -= C.uint16_t(n)
	c.pkt_len -= C.uint32_t(n)
	return nil
}

func (m *Mbuf) cTrim(n int) error {
	if C.sb_pktmbuf_trim(m.c(), C.uint16_t(n)) != 0 {
		return fmt.Errorf("dpdk: mbuf trim %d bytes of a %d-byte frame: out of range", n, m.Len())
	}
	return nil
}

// Adj removes n bytes from the start of the frame (rte_pktmbuf_adj; from
// the first segment only, as DPDK does).
func (m *Mbuf) Adj(n int) error {
	c := m.c()
	if n < 0 || n > 0xffff {
		return fmt.Errorf("dpdk: mbuf adj %d bytes: out of range", n)
	}
	if c.nb_segs != 1 {
		return m.cAdj(n)
	}
	if n > int(c.data_len) {
		return fmt.Errorf("dpdk: mbuf adj %d bytes of a %d-byte frame: out of range", n, m.Len())
	}
	c.data_len -= C.uint16_t(n)
	c.data_off += C.uint16_t(n)
	c.pkt_len -= C.uint32_t(n)
	return nil
}

func (m *Mbuf) cAdj(n int) error {
	if C.sb_pktmbuf_adj(m.c(), C.uint16_t(n)) == nil {
		return fmt.Errorf("dpdk: mbuf adj %d bytes of a %d-byte frame: out of range", n, m.Len())
	}
	return nil
}

// Prepend grows the frame by n bytes at the start (rte_pktmbuf_prepend)
// and returns the new bytes, uninitialised.
func (m *Mbuf) Prepend(n int) ([]byte, error) {
	c := m.c()
	if n < 0 || n > 0xffff {
		return nil, fmt.Errorf("dpdk: mbuf prepend %d bytes: out of range", n)
	}
	if c.nb_segs != 1 {
		return m.cPrepend(n)
	}
	if n > int(c.data_off) {
		return nil, fmt.Errorf("dpdk: mbuf prepend %d bytes: only %d bytes of headroom", n, m.Headroom())
	}
	c.data_off -= C.uint16_t(n)
	c.data_len += C.uint16_t(n)
	c.pkt_len += C.uint32_t(n)
	return unsafe.Slice((*byte)(unsafe.Add(c.buf_addr, c.data_off)), n), nil
}

func (m *Mbuf) cPrepend(n int) ([]byte, error) {
	p := C.sb_pktmbuf_prepend(m.c(), C.uint16_t(n))
	if p == nil {
		return nil, fmt.Errorf("dpdk: mbuf prepend %d bytes: only %d bytes of headroom", n, m.Headroom())
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n), nil
}

// SetData replaces the frame with a copy of b (single segment).
func (m *Mbuf) SetData(b []byte) error {
	c := m.c()
	if c.nb_segs != 1 {
		return fmt.Errorf("dpdk: mbuf set data: chained mbuf")
	}
	room := int(c.buf_len) - int(c.data_off)
	if len(b) > room {
		return fmt.Errorf("dpdk: mbuf set data: %d bytes do not fit %d", len(b), room)
	}
	c.data_len = C.uint16_t(len(b))
	c.pkt_len = C.uint32_t(len(b))
	copy(m.Data(), b)
	return nil
}

// Chain appends tail's segments to m's frame (rte_pktmbuf_chain); m owns
// tail from then on. It fails when the chain would be too long.
func (m *Mbuf) Chain(tail *Mbuf) error {
	if rc := C.sb_pktmbuf_chain(m.c(), tail.c()); rc != 0 {
		return fmt.Errorf("dpdk: mbuf chain: %w", errno(rc))
	}
	return nil
}

// Free returns the mbuf (and its chain) to its pool.
func (m *Mbuf) Free() { C.sb_pktmbuf_free(m.c()) }

// FreeBulk returns mbufs to their pools in one call.
func FreeBulk(ms []*Mbuf) {
	if len(ms) > 0 {
		C.rte_pktmbuf_free_bulk(mbufArray(ms), C.uint(len(ms)))
	}
}

// AllocMbufSlice returns a slice of n mbuf pointers that lives in C memory.
// Handing RxBurst, TxBurst and FreeBulk such a slice spares cgo's check of
// Go memory on every call (measurable at tens of Mpps). Release it with
// FreeMbufSlice; it does not free the mbufs it points to.
func AllocMbufSlice(n int) []*Mbuf {
	if n <= 0 {
		return nil
	}
	p := C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*Mbuf)(nil))))
	return unsafe.Slice((**Mbuf)(p), n)
}

// FreeMbufSlice releases a slice made by AllocMbufSlice.
func FreeMbufSlice(ms []*Mbuf) {
	if cap(ms) > 0 {
		C.free(unsafe.Pointer(unsafe.SliceData(ms[:1])))
	}
}
