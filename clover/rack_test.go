package clover

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// hub is an L2 forwarder between in-memory links, by destination MAC; it
// counts frames and bytes. It stands for the top-of-rack switch with
// steering off.
type hub struct {
	mu     sync.RWMutex
	ports  map[[6]byte]*netio.LinkPort
	all    []*netio.LinkPort
	frames atomic.Uint64
	bytes  atomic.Uint64
	wg     sync.WaitGroup
}

func (h *hub) attach(mac [6]byte, p *netio.LinkPort) {
	h.mu.Lock()
	h.ports[mac] = p
	h.all = append(h.all, p)
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		bufs := make([][]byte, 32)
		for i := range bufs {
			bufs[i] = make([]byte, netio.MaxFrameSize)
		}
		for {
			for i := range bufs {
				bufs[i] = bufs[i][:cap(bufs[i])]
			}
			n, err := p.Recv(bufs)
			if err != nil {
				return
			}
			for _, f := range bufs[:n] {
				if len(f) < 14 {
					continue
				}
				var dst [6]byte
				copy(dst[:], f)
				h.mu.RLock()
				out := h.ports[dst]
				h.mu.RUnlock()
				if out == nil {
					continue
				}
				h.frames.Add(1)
				h.bytes.Add(uint64(len(f)))
				out.Send([][]byte{f})
			}
		}
	}()
}

func (h *hub) close() {
	for _, p := range h.all {
		p.Close()
	}
	h.wg.Wait()
}

type rackConfig struct {
	clients   int
	valueSize int
	layout    RegionLayout
	faults    netio.Faults // on every compute-node link, both ways
	tr        time.Duration
	epoch     time.Duration
	cache     int
}

type testRack struct {
	t       testing.TB
	hub     *hub
	mn      *rnic.Device
	region  verbs.MemoryRegion
	ms      *MetadataServer
	cns     []*rnic.Device
	clients []*Client
	cancel  context.CancelFunc
	msErr   chan error
}

func mac(i int) [6]byte { return [6]byte{2, 0, 0, 0, byte(i >> 8), byte(i)} }
func ip(i int) [4]byte  { return [4]byte{10, 0, byte(i >> 8), byte(i)} }

// newTestRack builds one memory node, one MS and one compute-node RNIC per
// client on a hub, all on the software RNIC.
func newTestRack(t testing.TB, rc rackConfig) *testRack {
	t.Helper()
	if rc.tr == 0 {
		rc.tr = 50 * time.Millisecond
	}
	if rc.epoch == 0 {
		rc.epoch = 200 * time.Millisecond
	}
	r := &testRack{t: t, hub: &hub{ports: map[[6]byte]*netio.LinkPort{}}, msErr: make(chan error, 1)}
	dev := func(i int, name string, f netio.Faults) *rnic.Device {
		a, b, err := netio.NewLink(name, "hub-"+name, netio.LinkConfig{Capacity: 8192, AtoB: f, BtoA: f})
		if err != nil {
			t.Fatal(err)
		}
		d, err := rnic.New(a, rnic.Config{Name: name, MAC: mac(i), IP: ip(i), Timeout: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r.hub.attach(mac(i), b)
		return d
	}
	r.mn = dev(1, "mn0", netio.Faults{})
	msDev := dev(2, "ms", netio.Faults{})
	buf := make([]byte, rc.layout.Size())
	if err := InitRegion(buf, 0, rc.layout); err != nil {
		t.Fatal(err)
	}
	var err error
	r.region, err = r.mn.RegisterMR(buf, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	mnCQ := r.mn.NewCQ(1024)
	msCQ := msDev.NewCQ(4096)
	r.ms, err = NewMetadataServer(MSConfig{Regions: []RegionLayout{rc.layout}, ReadTimeout: rc.tr, EpochPeriod: rc.epoch}, msDev, msCQ)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < rc.clients; i++ {
		f := rc.faults
		if f.Seed != 0 {
			f.Seed += int64(i)
		}
		cn := dev(10+i, "cn"+string(rune('a'+i%26))+string(rune('a'+i/26)), f)
		r.cns = append(r.cns, cn)
		cq := cn.NewCQ(1024)
		qpMN, _ := cn.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		mnQP, _ := r.mn.NewQP(verbs.QPConfig{SendCQ: mnCQ, RecvCQ: mnCQ})
		if err := rnic.Connect(qpMN, mnQP, uint32(i*7919), uint32(i*104729+5)); err != nil {
			t.Fatal(err)
		}
		qpMS, _ := cn.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		msQP, _ := msDev.NewQP(verbs.QPConfig{SendCQ: msCQ, RecvCQ: msCQ})
		if err := rnic.Connect(qpMS, msQP, uint32(i*31), uint32(i*37)); err != nil {
			t.Fatal(err)
		}
		if err := r.ms.AddClient(msQP); err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(ClientConfig{
			ID: i, ValueSize: rc.valueSize, Device: cn, CQ: cq, MS: qpMS, CursorCache: rc.cache, ReadTimeout: rc.tr,
			MemoryNodes: []MemoryNodeConn{{QP: qpMN, Region: verbs.RemoteRegion{Addr: r.region.Addr(), RKey: r.region.RKey(), Len: uint64(len(buf))}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		r.clients = append(r.clients, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.msErr <- r.ms.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-r.msErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("metadata server: %v", err)
		}
		for _, d := range r.cns {
			d.Close()
		}
		r.mn.Close()
		msDev.Close()
		r.hub.close()
	})
	return r
}

// mem returns the memory node's region bytes (tests read them only while
// no client runs).
func (r *testRack) mem() []byte { return r.region.Bytes() }
