package clover

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// MetadataServer is the MS's thin shell: it serves the MetaCore to clients
// over two-sided SEND/RECV on one RC queue pair per client and pushes a
// message to every client at each new epoch.
type MetadataServer struct {
	core  *MetaCore
	dev   Registrar
	cq    verbs.CQ
	clock verbs.Clock
	start time.Duration // clock time at NewMetadataServer: the core's time counts from it
	tick  time.Duration

	mu      sync.Mutex
	clients map[uint32]*msClient
	order   []*msClient

	sendErrors, recvErrors uint64
}

// Errors counts SENDs (replies, epoch pushes) and receives that completed
// in error because a client's queue pair broke; the MS stops serving that
// client and keeps serving the others.
func (s *MetadataServer) Errors() (send, recv uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendErrors, s.recvErrors
}

// Registrar is what the metadata server needs of its device (verbs.Device
// satisfies it): it registers the server's buffers and provides the clock
// the server's core runs in.
type Registrar interface {
	verbs.Registrar
	verbs.Clocked
}

type msClient struct {
	qp       verbs.QP
	mr       verbs.MemoryRegion
	buf      []byte
	sendBusy [msSendBuffers]bool
	next     int
	failed   bool // a SEND to it failed: its QP is in error
	// waiting holds requests received while every send buffer was in
	// flight, oldest first; a SEND's completion answers the oldest.
	waiting []msRequest
	// scratch work requests (copied by the RNIC when posted; guarded by
	// the server's mutex)
	sg  [1]verbs.SGE
	swr [1]verbs.SendWR
	rwr [1]verbs.RecvWR
}

// msRequest is a received request not answered yet: its receive buffer and
// length.
type msRequest struct{ buf, n int }

const (
	msRecvBuffers = 8
	msSendBuffers = 8
	msSendTag     = 1 << 62
)

// NewMetadataServer returns a metadata server whose queue pairs complete on
// cq (send and receive) and whose buffers dev registers.
func NewMetadataServer(cfg MSConfig, dev Registrar, cq verbs.CQ) (*MetadataServer, error) {
	core, err := NewMetaCore(cfg)
	if err != nil {
		return nil, err
	}
	if dev == nil || cq == nil {
		return nil, fmt.Errorf("clover: metadata server: need a device and a CQ")
	}
	tick := core.cfg.ReadTimeout / 4
	if e := core.cfg.EpochPeriod / 4; e < tick {
		tick = e
	}
	clock := dev.Clock()
	return &MetadataServer{core: core, dev: dev, cq: cq, clock: clock, start: clock.Now(), tick: tick, clients: map[uint32]*msClient{}}, nil
}

// now is the core's time: since NewMetadataServer on the device's clock.
func (s *MetadataServer) now() time.Duration { return s.clock.Now() - s.start }

// Stats returns the core's counters (safe while Serve runs).
func (s *MetadataServer) Stats() MSStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.core.Stats()
}

// AddClient serves a client's connected queue pair (whose CQs are the
// server's CQ) and posts its receive buffers.
func (s *MetadataServer) AddClient(qp verbs.QP) error {
	c := &msClient{qp: qp}
	mr, err := s.dev.RegisterMR(make([]byte, (msRecvBuffers+msSendBuffers)*MsgMax), verbs.AccessLocalWrite)
	if err != nil {
		return fmt.Errorf("clover: metadata server: register buffers for QP %#x: %w", qp.QPN(), err)
	}
	c.mr, c.buf = mr, mr.Bytes()
	s.mu.Lock()
	s.clients[qp.QPN()] = c
	s.order = append(s.order, c)
	s.mu.Unlock()
	for i := 0; i < msRecvBuffers; i++ {
		if err := c.postRecv(i); err != nil {
			return err
		}
	}
	return nil
}

func (c *msClient) sge(off, n int) verbs.SGE {
	return verbs.SGE{Addr: c.mr.Addr() + uint64(off), Length: uint32(n), LKey: c.mr.LKey()}
}

func (c *msClient) postRecv(i int) error {
	c.sg[0] = c.sge(i*MsgMax, MsgMax)
	c.rwr[0] = verbs.RecvWR{ID: uint64(i), SG: c.sg[:]}
	if err := c.qp.PostRecv(c.rwr[:]); err != nil {
		return fmt.Errorf("clover: metadata server: post receive on QP %#x: %w", c.qp.QPN(), err)
	}
	return nil
}

// sendBuf returns a free send buffer index, or -1 if all are in flight.
func (c *msClient) sendBuf() int {
	for k := 0; k < msSendBuffers; k++ {
		i := (c.next + k) % msSendBuffers
		if !c.sendBusy[i] {
			c.next = i + 1
			return i
		}
	}
	return -1
}

func (c *msClient) send(i, n int) error {
	c.sendBusy[i] = true
	off := (msRecvBuffers + i) * MsgMax
	c.sg[0] = c.sge(off, n)
	c.swr[0] = verbs.SendWR{ID: msSendTag | uint64(c.qp.QPN())<<8 | uint64(i), Op: verbs.OpSend, SG: c.sg[:], Flags: verbs.Signaled}
	if err := c.qp.PostSend(c.swr[:]); err != nil {
		c.sendBusy[i] = false
		return fmt.Errorf("clover: metadata server: reply on QP %#x: %w", c.qp.QPN(), err)
	}
	return nil
}

// Serve runs the server until ctx is done. Errors on one client's queue
// pair do not stop it (see Errors). The core's clock advances every T_r/4
// (at most T_e/4) to reclaim slots and start epochs. Serve is one goroutine
// that blocks only in CQ.Wait, bounded by the next tick in the device
// clock's time, so it runs as well under a virtual-time scheduler.
func (s *MetadataServer) Serve(ctx context.Context) error {
	var wcs [32]verbs.WC
	next := s.now() + s.tick
	wctx, cancel := s.clock.WithTimeout(ctx, s.tick)
	defer func() { cancel() }()
	for {
		n, err := s.cq.Wait(wctx, wcs[:])
		if err != nil && ctx.Err() != nil {
			return nil
		}
		if err != nil && wctx.Err() == nil {
			return fmt.Errorf("clover: metadata server: wait for completions: %w", err)
		}
		s.mu.Lock()
		now := s.now()
		for _, wc := range wcs[:n] {
			if err := s.complete(wc, now); err != nil {
				s.mu.Unlock()
				return err
			}
		}
		if now >= next {
			next = now + s.tick
			if s.core.Tick(now) {
				err = s.pushEpoch()
			} else {
				err = nil
			}
		} else {
			err = nil
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if wctx.Err() != nil {
			cancel()
			wctx, cancel = s.clock.WithTimeout(ctx, max(next-s.now(), 0))
		}
	}
}

func (s *MetadataServer) complete(wc verbs.WC, now time.Duration) error {
	c := s.clients[wc.QPN]
	if wc.ID&msSendTag != 0 {
		if c == nil {
			c = s.clients[uint32(wc.ID&^msSendTag>>8)]
		}
		if c == nil {
			if wc.Status != verbs.StatusSuccess {
				s.sendErrors++
			}
			return nil
		}
		c.sendBusy[wc.ID&0xff] = false
		if wc.Status != verbs.StatusSuccess {
			// One client's broken connection must not stop the MS.
			s.sendErrors++
			c.failed = true
		}
		if c.failed {
			c.waiting = c.waiting[:0]
			return nil
		}
		if len(c.waiting) > 0 {
			r := c.waiting[0]
			c.waiting = append(c.waiting[:0], c.waiting[1:]...)
			return s.answer(c, r, now)
		}
		return nil
	}
	if c == nil {
		s.recvErrors++
		return nil // not one of ours: nothing to answer
	}
	if wc.Status != verbs.StatusSuccess {
		// The client's QP broke (flushed receives): stop serving it.
		s.recvErrors++
		c.failed = true
		return nil
	}
	r := msRequest{buf: int(wc.ID), n: int(wc.ByteLen)}
	if len(c.waiting) > 0 {
		c.waiting = append(c.waiting, r)
		return nil
	}
	return s.answer(c, r, now)
}

// answer handles request r of client c and sends the reply, or queues r
// until a send buffer is free (all replies in flight).
func (s *MetadataServer) answer(c *msClient, r msRequest, now time.Duration) error {
	j := c.sendBuf()
	if j < 0 {
		c.waiting = append(c.waiting, r)
		return nil
	}
	req := c.buf[r.buf*MsgMax : r.buf*MsgMax+r.n]
	off := (msRecvBuffers + j) * MsgMax
	n := s.core.Handle(req, c.buf[off:off+MsgMax], now)
	if err := c.postRecv(r.buf); err != nil {
		return err
	}
	return c.send(j, n)
}

func (s *MetadataServer) pushEpoch() error {
	for _, c := range s.order {
		if c.failed {
			continue
		}
		j := c.sendBuf()
		if j < 0 {
			continue // the client will learn the epoch from the replies in flight
		}
		off := (msRecvBuffers + j) * MsgMax
		n := EncodeEpoch(c.buf[off:off+MsgMax], s.core.Epoch())
		if err := c.send(j, n); err != nil {
			return err
		}
	}
	return nil
}
