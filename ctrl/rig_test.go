package ctrl

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The software rack of the integration tests: the Go target running
// swordbox.p4 behind the real P4Runtime server on 127.0.0.1:0, a client
// RNIC on port 1 and a memory node RNIC on port 2. The switch's port 2 is
// wrapped in a tap that can drop CAS requests towards the memory node and
// ATOMIC ACKs coming back, and keeps what it dropped.

const (
	objectSize = 48 // node = 72 bytes: 24 + 48 (docs/clover-layout.md)
	nodeSize   = 24 + objectSize
	testKey    = 7
)

var (
	clientMAC = [6]byte{2, 0, 0, 0, 0, 1}
	clientIP  = [4]byte{10, 0, 0, 1}
	memMAC    = [6]byte{2, 0, 0, 0, 0, 2}
	memIP     = [4]byte{10, 0, 0, 2}
	audMAC    = [6]byte{2, 0, 0, 0, 0, 3}
	audIP     = [4]byte{10, 0, 0, 3}
)

// tap is the switch's end of the link to the memory node.
type tap struct {
	netio.Port
	mu            sync.Mutex
	dropCAS       int // drop the next n CAS requests towards the memory node
	dropAtomicAck int // drop the next n ATOMIC ACKs from the memory node
	dropped       chan []byte
}

func (t *tap) armCAS(n int) { t.mu.Lock(); t.dropCAS = n; t.mu.Unlock() }
func (t *tap) armAck(n int) { t.mu.Lock(); t.dropAtomicAck = n; t.mu.Unlock() }

func opcodeOf(frame []byte) (roce.Opcode, bool) {
	p, err := roce.Parse(frame)
	if err != nil {
		return 0, false
	}
	return p.Opcode, true
}

func (t *tap) Send(frames [][]byte) (int, error) {
	keep := frames[:0:0]
	t.mu.Lock()
	for _, f := range frames {
		if op, ok := opcodeOf(f); ok && op == roce.OpRCCompareSwap && t.dropCAS > 0 {
			t.dropCAS--
			t.dropped <- append([]byte(nil), f...)
			continue
		}
		keep = append(keep, f)
	}
	t.mu.Unlock()
	if len(keep) > 0 {
		if _, err := t.Port.Send(keep); err != nil {
			return 0, err
		}
	}
	return len(frames), nil
}

func (t *tap) Recv(bufs [][]byte) (int, error) {
	for {
		n, err := t.Port.Recv(bufs)
		if err != nil {
			return n, err
		}
		j := 0
		t.mu.Lock()
		for i := 0; i < n; i++ {
			if op, ok := opcodeOf(bufs[i]); ok && op == roce.OpRCAtomicAcknowledge && t.dropAtomicAck > 0 {
				t.dropAtomicAck--
				t.dropped <- append([]byte(nil), bufs[i]...)
				continue
			}
			if i != j {
				l := len(bufs[i])
				copy(bufs[j][:l], bufs[i])
				bufs[j] = bufs[j][:l]
			}
			j++
		}
		t.mu.Unlock()
		if j > 0 {
			return j, nil
		}
	}
}

type rig struct {
	t        testing.TB
	srv      *p4rt.Server
	addr     string
	src      []byte
	info     *p4cfg.P4Info
	tap      *tap
	cli, mem *rnic.Device
	cliCQ    *rnic.CQ
	cqp, mqp *rnic.QP
	mr       *rnic.MR // memory node region
	lmr      *rnic.MR // client buffer
	// The auditor, on port 3, reads the memory node's region with RDMA
	// READs through the switch: the tests look at remote memory the way a
	// client would, without racing the memory node's responder.
	aud    *rnic.Device
	audCQ  *rnic.CQ
	audQP  *rnic.QP
	audMR  *rnic.MR
	audSeq uint64
}

// swordboxP4 reads and compiles p4/swordbox.p4 with the Go target.
func swordboxP4(t testing.TB) ([]byte, *p4cfg.P4Info) {
	t.Helper()
	src, err := os.ReadFile("../p4/swordbox.p4")
	if err != nil {
		t.Fatal(err)
	}
	prog, err := target.Compile("swordbox.p4", src)
	if err != nil {
		t.Fatalf("compile swordbox.p4: %v", err)
	}
	return src, prog.P4Info()
}

// newRig starts the switch (no pipeline: the controller pushes it) and
// the two hosts, with the client's QP connected to the memory node's.
// cliTimeout is the client's retransmission timeout.
func newRig(t testing.TB, cliTimeout time.Duration) *rig {
	t.Helper()
	return newRigWith(t, cliTimeout, nil)
}

// newRigWith is newRig with the P4Runtime service wrapped by wrap (nil:
// the server as is).
func newRigWith(t testing.TB, cliTimeout time.Duration, wrap func(p4.P4RuntimeServer) p4.P4RuntimeServer) *rig {
	t.Helper()
	r := &rig{t: t}
	r.src, r.info = swordboxP4(t)

	swCli, hostCli := netio.Pipe()
	swMem, hostMem := netio.Pipe()
	swAud, hostAud := netio.Pipe()
	r.tap = &tap{Port: swMem, dropped: make(chan []byte, 16)}
	r.srv = p4rt.New(p4rt.Options{DeviceID: 1, Ports: map[uint32]netio.Port{1: swCli, 2: r.tap, 3: swAud}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	var svc p4.P4RuntimeServer = r.srv
	if wrap != nil {
		svc = wrap(svc)
	}
	p4.RegisterP4RuntimeServer(gs, svc)
	r.srv.Start()
	go gs.Serve(lis)
	r.addr = lis.Addr().String()

	if r.cli, err = rnic.New(hostCli, rnic.Config{Name: "client0", MAC: clientMAC, IP: clientIP, Timeout: cliTimeout}); err != nil {
		t.Fatal(err)
	}
	if r.mem, err = rnic.New(hostMem, rnic.Config{Name: "mem0", MAC: memMAC, IP: memIP, SkipICRC: true}); err != nil {
		t.Fatal(err)
	}
	if r.aud, err = rnic.New(hostAud, rnic.Config{Name: "auditor", MAC: audMAC, IP: audIP}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gs.Stop()
		r.cli.Close()
		r.aud.Close()
		r.mem.Close()
		r.srv.Close()
	})
	if r.mr, err = r.mem.Register(make([]byte, 1<<16), verbs.AccessAll); err != nil {
		t.Fatal(err)
	}
	if r.lmr, err = r.cli.Register(make([]byte, 4096), verbs.AccessAll); err != nil {
		t.Fatal(err)
	}
	r.cliCQ = r.cli.NewCQ(1024)
	memCQ := r.mem.NewCQ(1024)
	if r.cqp, err = r.cli.NewQP(verbs.QPConfig{SendCQ: r.cliCQ, RecvCQ: r.cliCQ, SignalAll: true}); err != nil {
		t.Fatal(err)
	}
	if r.mqp, err = r.mem.NewQP(verbs.QPConfig{SendCQ: memCQ, RecvCQ: memCQ}); err != nil {
		t.Fatal(err)
	}
	if err := rnic.Connect(r.cqp, r.mqp, 100, 5000); err != nil {
		t.Fatal(err)
	}
	if r.audMR, err = r.aud.Register(make([]byte, 1<<16), verbs.AccessAll); err != nil {
		t.Fatal(err)
	}
	r.audCQ = r.aud.NewCQ(64)
	mqp2, err := r.mem.NewQP(verbs.QPConfig{SendCQ: memCQ, RecvCQ: memCQ})
	if err != nil {
		t.Fatal(err)
	}
	if r.audQP, err = r.aud.NewQP(verbs.QPConfig{SendCQ: r.audCQ, RecvCQ: r.audCQ, SignalAll: true}); err != nil {
		t.Fatal(err)
	}
	if err := rnic.Connect(r.audQP, mqp2, 7000, 9000); err != nil {
		t.Fatal(err)
	}
	return r
}

// rackConfig is the configuration of the rig's rack.
func (r *rig) rackConfig(edit func(*rack.Config)) *rack.Rack {
	r.t.Helper()
	c := rack.Defaults()
	c.Switch = r.addr
	c.P4Info, c.DeviceConfig = "unused", "unused"
	c.ObjectSize = objectSize
	c.Hosts = []rack.Host{
		{Name: "client0", MAC: "02:00:00:00:00:01", IP: "10.0.0.1", Port: 1},
		{Name: "mem0", MAC: "02:00:00:00:00:02", IP: "10.0.0.2", Port: 2},
		{Name: "auditor", MAC: "02:00:00:00:00:03", IP: "10.0.0.3", Port: 3},
	}
	c.MemoryNodes = []rack.MemoryNode{{Host: "mem0", Regions: []rack.Region{{
		Base: "0x" + hex64(r.mr.Addr()), Length: "65536"}}}}
	c.TrackedKeys = []uint64{testKey}
	c.RepairPeriod, c.RepairThreshold = 20*time.Millisecond, 20*time.Millisecond
	// Tails stay fresh for the whole test: the tests step through puts at
	// their own pace (the TTL itself is tested in p4/ptf).
	c.TailTTL = time.Minute
	if edit != nil {
		edit(&c)
	}
	rk, err := c.Parse()
	if err != nil {
		r.t.Fatal(err)
	}
	return rk
}

func hex64(v uint64) string { return fmt.Sprintf("%x", v) }

// controller starts a controller for the rig; now may be nil (real clock).
func (r *rig) controller(rk *rack.Rack, now func() time.Time) *Controller {
	r.t.Helper()
	c, err := New(rk, Options{P4Info: r.info, DeviceConfig: r.src, Now: now})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

// primary waits for c to be primary and takes charge of the switch.
func (r *rig) primary(c *Controller) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Client.WaitRole(ctx, p4rtc.Primary); err != nil {
		r.t.Fatal(err)
	}
	if err := c.TakeCharge(ctx); err != nil {
		r.t.Fatal(err)
	}
}

// hw is a Clover header word (docs/clover-layout.md).
func hw(nextLH uint32, nextVer, entryVer uint8) uint64 {
	return uint64(nextLH)<<28 | uint64(nextVer)<<19 | uint64(entryVer)<<11
}

// memRead reads n bytes at offset off of the memory node's region with an
// RDMA READ from the auditor, through the switch (the forward table must be
// installed).
func (r *rig) memRead(off, n int) []byte {
	r.t.Helper()
	r.audSeq++
	if err := r.audQP.PostSend([]verbs.SendWR{{ID: r.audSeq, Op: verbs.OpRead,
		SG:         []verbs.SGE{{Addr: r.audMR.Addr(), Length: uint32(n), LKey: r.audMR.LKey()}},
		RemoteAddr: r.mr.Addr() + uint64(off), RKey: r.mr.RKey()}}); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	buf := make([]verbs.WC, 4)
	for {
		k, err := r.audCQ.Wait(ctx, buf)
		if err != nil {
			r.t.Fatalf("auditor READ: %v", err)
		}
		for _, wc := range buf[:k] {
			if wc.ID == r.audSeq {
				if wc.Status != verbs.StatusSuccess {
					r.t.Fatalf("auditor READ: %+v", wc)
				}
				return append([]byte(nil), r.audMR.Bytes()[:n]...)
			}
		}
	}
}

// memWord reads the little-endian word at offset off of the memory node's region.
func (r *rig) memWord(off int) uint64 {
	return binary.LittleEndian.Uint64(r.memRead(off, 8))
}

// setMemWord initialises a word of the region before any traffic touches it.
func (r *rig) setMemWord(off int, v uint64) {
	binary.LittleEndian.PutUint64(r.mr.Bytes()[off:], v)
}

// writeNode posts a node WRITE of key at region offset off, with its own
// logical handle lh and entry version ev.
func (r *rig) writeNode(off int, key uint64, lh uint32, ev uint8) {
	r.t.Helper()
	b := r.lmr.Bytes()[:nodeSize]
	binary.LittleEndian.PutUint64(b[0:], hw(0, 0, ev))
	binary.LittleEndian.PutUint64(b[8:], key)
	binary.LittleEndian.PutUint64(b[16:], uint64(lh))
	for i := 24; i < nodeSize; i++ {
		b[i] = byte(i)
	}
	if err := r.cqp.PostSend([]verbs.SendWR{{ID: 1, Op: verbs.OpWrite,
		SG:         []verbs.SGE{{Addr: r.lmr.Addr(), Length: nodeSize, LKey: r.lmr.LKey()}},
		RemoteAddr: r.mr.Addr() + uint64(off), RKey: r.mr.RKey()}}); err != nil {
		r.t.Fatal(err)
	}
}

// cas posts a CAS on the region word at off.
func (r *rig) cas(id uint64, off int, compare, swap uint64) {
	r.t.Helper()
	if err := r.cqp.PostSend([]verbs.SendWR{{ID: id, Op: verbs.OpCompareSwap,
		SG:         []verbs.SGE{{Addr: r.lmr.Addr() + 1024, Length: 8, LKey: r.lmr.LKey()}},
		RemoteAddr: r.mr.Addr() + uint64(off), RKey: r.mr.RKey(), Compare: compare, SwapAdd: swap}}); err != nil {
		r.t.Fatal(err)
	}
}

// waitWC waits for the completion of work request id.
func (r *rig) waitWC(id uint64, d time.Duration) verbs.WC {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	buf := make([]verbs.WC, 16)
	for {
		n, err := r.cliCQ.Wait(ctx, buf)
		if err != nil {
			r.t.Fatalf("waiting for completion %d: %v", id, err)
		}
		for _, wc := range buf[:n] {
			if wc.ID == id {
				return wc
			}
		}
	}
}

// eventually polls cond every millisecond until it holds or d passes (a
// liveness bound, not a performance assertion).
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(time.Millisecond)
	}
}
