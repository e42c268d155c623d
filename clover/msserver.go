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
	start time.Time
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

// Registrar registers local memory (verbs.Device satisfies it).
type Registrar interface {
	RegisterMR(buf []byte, access verbs.Access) (verbs.MemoryRegion, error)
}

type msClient struct {
	qp       verbs.QP
	mr       verbs.MemoryRegion
	buf      []byte
	sendBusy [msSendBuffers]bool
	next     int
	failed   bool // a SEND to it failed: its QP is in error
	// scratch work requests (copied by the RNIC when posted; guarded by
	// the server's mutex)
	sg  [1]verbs.SGE
	swr [1]verbs.SendWR
	rwr [1]verbs.RecvWR
}

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
	return &MetadataServer{core: core, dev: dev, cq: cq, start: time.Now(), tick: tick, clients: map[uint32]*msClient{}}, nil
}

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
// pair do not stop it (see Errors). A ticker advances the core's clock every
// T_r/4 (at most T_e/4) to reclaim slots and start epochs.
func (s *MetadataServer) Serve(ctx context.Context) error {
	tctx, stop := context.WithCancel(ctx)
	defer stop()
	ticked := make(chan error, 1)
	go func() {
		t := time.NewTicker(s.tick)
		defer t.Stop()
		for {
			select {
			case <-tctx.Done():
				ticked <- nil
				return
			case <-t.C:
				s.mu.Lock()
				var err error
				if s.core.Tick(time.Since(s.start)) {
					err = s.pushEpoch()
				}
				s.mu.Unlock()
				if err != nil {
					ticked <- err
					return
				}
			}
		}
	}()
	var wcs [32]verbs.WC
	for {
		n, err := s.cq.Wait(ctx, wcs[:])
		if err != nil {
			stop()
			if terr := <-ticked; terr != nil {
				return terr
			}
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("clover: metadata server: wait for completions: %w", err)
		}
		s.mu.Lock()
		now := time.Since(s.start)
		for _, wc := range wcs[:n] {
			if err := s.complete(wc, now); err != nil {
				s.mu.Unlock()
				stop()
				<-ticked
				return err
			}
		}
		s.mu.Unlock()
	}
}

func (s *MetadataServer) complete(wc verbs.WC, now time.Duration) error {
	c := s.clients[wc.QPN]
	if wc.ID&msSendTag != 0 {
		if c == nil {
			c = s.clients[uint32(wc.ID&^msSendTag>>8)]
		}
		if c != nil {
			c.sendBusy[wc.ID&0xff] = false
		}
		if wc.Status != verbs.StatusSuccess {
			// One client's broken connection must not stop the MS.
			s.sendErrors++
			if c != nil {
				c.failed = true
			}
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
	i := int(wc.ID)
	req := c.buf[i*MsgMax : i*MsgMax+int(wc.ByteLen)]
	j := c.sendBuf()
	for j < 0 { // all replies in flight: wait for one
		var w [1]verbs.WC
		if s.cq.Poll(w[:]) == 1 {
			if err := s.complete(w[0], now); err != nil {
				return err
			}
		}
		j = c.sendBuf()
	}
	off := (msRecvBuffers + j) * MsgMax
	n := s.core.Handle(req, c.buf[off:off+MsgMax], now)
	if err := c.postRecv(i); err != nil {
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
