package clover

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

// The metadata server against hand-driven verbs: a CQ the test fills, a
// QP that hands the test every SEND, and a manual clock whose timeouts
// expire only when the test advances it. Nothing here runs on the wall
// clock, so the test shows the server takes its time from its device.

type manualClock struct {
	mu     sync.Mutex
	now    time.Duration
	timers []manualTimer
}

type manualTimer struct {
	at     time.Duration
	cancel context.CancelFunc
}

func (c *manualClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// advance moves the clock by d and expires the timeouts due by then.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now += d
	keep := c.timers[:0]
	var due []context.CancelFunc
	for _, t := range c.timers {
		if t.at <= c.now {
			due = append(due, t.cancel)
		} else {
			keep = append(keep, t)
		}
	}
	c.timers = keep
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}

func (c *manualClock) Sleep(ctx context.Context, d time.Duration) error {
	ctx, cancel := c.WithTimeout(ctx, d)
	defer cancel()
	<-ctx.Done()
	if ctx.Err() == context.DeadlineExceeded {
		return nil
	}
	return ctx.Err()
}

func (c *manualClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	// A context whose deadline is the manual clock's: canceled with
	// DeadlineExceeded as its cause when the clock passes it.
	tctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	at := c.now + d
	expired := at <= c.now
	if !expired {
		c.timers = append(c.timers, manualTimer{at: at, cancel: func() { cancel(context.DeadlineExceeded) }})
	}
	c.mu.Unlock()
	if expired {
		cancel(context.DeadlineExceeded)
	}
	return tctx, func() { cancel(context.Canceled) }
}

func (c *manualClock) NewEvent() verbs.Event { panic("not used by the metadata server") }

type fakeMR struct {
	buf  []byte
	addr uint64
}

func (m *fakeMR) Bytes() []byte { return m.buf }
func (m *fakeMR) Addr() uint64  { return m.addr }
func (m *fakeMR) LKey() uint32  { return 1 }
func (m *fakeMR) RKey() uint32  { return 1 }

type fakeDev struct {
	clock *manualClock
	mr    *fakeMR
}

func (d *fakeDev) RegisterMR(buf []byte, _ verbs.Access) (verbs.MemoryRegion, error) {
	d.mr = &fakeMR{buf: buf, addr: 0x10000}
	return d.mr, nil
}

func (d *fakeDev) Clock() verbs.Clock { return d.clock }

type fakeCQ struct{ wcs chan verbs.WC }

func (q *fakeCQ) Poll(wcs []verbs.WC) int {
	n := 0
	for n < len(wcs) {
		select {
		case wcs[n] = <-q.wcs:
			n++
		default:
			return n
		}
	}
	return n
}

func (q *fakeCQ) Wait(ctx context.Context, wcs []verbs.WC) (int, error) {
	select {
	case wcs[0] = <-q.wcs:
		return 1 + q.Poll(wcs[1:]), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// sent is one SEND the server posted: its work request id and payload.
type sent struct {
	id      uint64
	payload []byte
}

type fakeQP struct {
	dev  *fakeDev
	sent chan sent
}

func (q *fakeQP) QPN() uint32                     { return 0x100 }
func (q *fakeQP) State() verbs.QPState            { return verbs.StateRTS }
func (q *fakeQP) PostRecv(_ []verbs.RecvWR) error { return nil }
func (q *fakeQP) PostSend(wrs []verbs.SendWR) error {
	for _, wr := range wrs {
		sg := wr.SG[0]
		off := sg.Addr - q.dev.mr.addr
		q.sent <- sent{id: wr.ID, payload: append([]byte(nil), q.dev.mr.buf[off:off+uint64(sg.Length)]...)}
	}
	return nil
}

// TestMSServeOnDeviceClock: requests that arrive while every reply buffer
// is in flight are answered in order as SENDs complete, and the server
// ticks (here: starts an epoch and pushes it) when its device's clock says
// so, whatever the wall clock does.
func TestMSServeOnDeviceClock(t *testing.T) {
	clk := &manualClock{now: 5 * time.Hour}
	dev := &fakeDev{clock: clk}
	cq := &fakeCQ{wcs: make(chan verbs.WC, 64)}
	const te = time.Hour
	s, err := NewMetadataServer(MSConfig{Regions: []RegionLayout{{Shortcuts: 16, Chunks: 1, ChunkSize: 1 << 14}},
		ReadTimeout: te, EpochPeriod: te}, dev, cq)
	if err != nil {
		t.Fatal(err)
	}
	qp := &fakeQP{dev: dev, sent: make(chan sent, 64)}
	if err := s.AddClient(qp); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	// A request (LOOKUP of a missing key, id) lands in receive buffer i.
	request := func(i int, id uint32) {
		b := dev.mr.buf[i*MsgMax : (i+1)*MsgMax]
		Request(b).SetType(MsgLookup)
		Request(b).SetCount(0)
		Request(b).SetID(id)
		binary.LittleEndian.PutUint64(b[ReqHeaderSize:], 99)
		cq.wcs <- verbs.WC{ID: uint64(i), Op: verbs.OpRecv, ByteLen: ReqHeaderSize + keyBodySize, QPN: qp.QPN()}
	}
	next := func(what string) sent {
		t.Helper()
		select {
		case x := <-qp.sent:
			return x
		case <-time.After(10 * time.Second):
			t.Fatalf("no SEND: %s", what)
			return sent{}
		}
	}
	reply := func(want uint32) sent {
		t.Helper()
		x := next("reply")
		rp := Reply(x.payload)
		if rp.Type() != MsgLookup|MsgReply || rp.Status() != StatusNotFound || rp.ID() != want {
			t.Fatalf("SEND % x: want the NOT_FOUND reply to request %d", x.payload, want)
		}
		return x
	}

	var inFlight []sent
	for i := 0; i < msRecvBuffers; i++ {
		request(i, uint32(1+i))
		inFlight = append(inFlight, reply(uint32(1+i)))
	}
	// Every reply buffer is in flight: these two wait.
	request(0, 100)
	request(1, 101)
	for k, want := range []uint32{100, 101} {
		cq.wcs <- verbs.WC{ID: inFlight[k].id, Op: verbs.OpSend, QPN: qp.QPN()}
		inFlight = append(inFlight, reply(want))
	}
	for _, x := range inFlight[2:] {
		cq.wcs <- verbs.WC{ID: x.id, Op: verbs.OpSend, QPN: qp.QPN()}
	}
	// One more request, behind those completions on the CQ: its reply
	// shows the server has freed every other reply buffer.
	request(2, 102)
	reply(102)

	// Half an epoch on the device's clock: no epoch. A whole one: the
	// server starts epoch 1 and pushes it.
	clk.advance(te / 2)
	if st := s.Stats(); st.Epoch != 0 {
		t.Fatalf("MS epoch %d after half a T_e of device time", st.Epoch)
	}
	clk.advance(te / 2)
	x := next("epoch push")
	if rp := Reply(x.payload); rp.Type() != MsgEpoch|MsgReply || rp.Epoch() != 1 {
		t.Fatalf("SEND % x: want the push of epoch 1", x.payload)
	}
	if st := s.Stats(); st.Epoch != 1 {
		t.Fatalf("MS epoch %d after one T_e of device time", st.Epoch)
	}
}
