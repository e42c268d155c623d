//go:build dpdk

package dpdk

/*
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

// Headroom returns the bytes free before the frame; Tailroom those free
// after it in the last segment.
func (m *Mbuf) Headroom() int { return int(C.sb_headroom(m.c())) }

// Tailroom returns the bytes free after the frame in the last segment.
func (m *Mbuf) Tailroom() int { return int(C.sb_tailroom(m.c())) }

// Append grows the frame by n bytes at the end (rte_pktmbuf_append) and
// returns the new bytes, uninitialised.
func (m *Mbuf) Append(n int) ([]byte, error) {
	if n < 0 || n > 0xffff {
		return nil, fmt.Errorf("dpdk: mbuf append %d bytes: out of range", n)
	}
	p := C.sb_pktmbuf_append(m.c(), C.uint16_t(n))
	if p == nil {
		return nil, fmt.Errorf("dpdk: mbuf append %d bytes: only %d bytes of tailroom", n, m.Tailroom())
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n), nil
}

// Trim removes n bytes from the end of the frame (rte_pktmbuf_trim).
func (m *Mbuf) Trim(n int) error {
	if n < 0 || n > 0xffff || C.sb_pktmbuf_trim(m.c(), C.uint16_t(n)) != 0 {
		return fmt.Errorf("dpdk: mbuf trim %d bytes of a %d-byte frame: out of range", n, m.Len())
	}
	return nil
}

// Adj removes n bytes from the start of the frame (rte_pktmbuf_adj).
func (m *Mbuf) Adj(n int) error {
	if n < 0 || n > 0xffff || C.sb_pktmbuf_adj(m.c(), C.uint16_t(n)) == nil {
		return fmt.Errorf("dpdk: mbuf adj %d bytes of a %d-byte frame: out of range", n, m.Len())
	}
	return nil
}

// Prepend grows the frame by n bytes at the start (rte_pktmbuf_prepend)
// and returns the new bytes, uninitialised.
func (m *Mbuf) Prepend(n int) ([]byte, error) {
	if n < 0 || n > 0xffff {
		return nil, fmt.Errorf("dpdk: mbuf prepend %d bytes: out of range", n)
	}
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

// Free returns the mbuf (and its chain) to its pool.
func (m *Mbuf) Free() { C.sb_pktmbuf_free(m.c()) }

// FreeBulk returns mbufs to their pools in one call.
func FreeBulk(ms []*Mbuf) {
	if len(ms) > 0 {
		C.rte_pktmbuf_free_bulk(mbufArray(ms), C.uint(len(ms)))
	}
}
