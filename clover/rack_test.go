package clover

import (
	"context"
	"encoding/binary"
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
	// toFrames/toBytes count by the destination MAC's last byte.
	toFrames, toBytes [256]atomic.Uint64
	wg                sync.WaitGroup
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
				h.toFrames[dst[5]].Add(1)
				h.toBytes[dst[5]].Add(uint64(len(f)))
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
	timeout   time.Duration // RNIC ACK timeout (default 10ms)
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
		rc.epoch = 5 * time.Second
	}
	if rc.timeout == 0 {
		// Generous: the machine is shared, and a starved ACK must not
		// exhaust the retries (the faults are what the tests inject).
		rc.timeout = 50 * time.Millisecond
	}
	r := &testRack{t: t, hub: &hub{ports: map[[6]byte]*netio.LinkPort{}}, msErr: make(chan error, 1)}
	dev := func(i int, name string, f netio.Faults) *rnic.Device {
		a, b, err := netio.NewLink(name, "hub-"+name, netio.LinkConfig{Capacity: 8192, AtoB: f, BtoA: f})
		if err != nil {
			t.Fatal(err)
		}
		d, err := rnic.New(a, rnic.Config{Name: name, MAC: mac(i), IP: ip(i), Timeout: rc.timeout})
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

// checkChains verifies the chain invariants in memory-node memory, with
// every client stopped: for each key the MS knows, the chain from the MS's
// latest pointer, from the shortcut and from every client's cursor reaches
// one tail without cycles, through nodes of that key with the versions the
// pointers name; and exactly one live (allocated) node of the key is a tail.
func (r *testRack) checkChains(t *testing.T, keys []uint64) map[uint64]Ptr {
	t.Helper()
	r.ms.mu.Lock()
	defer r.ms.mu.Unlock()
	mem := r.mem()
	node := func(p Ptr) Node { return Node(mem[p.LH.Offset() : p.LH.Offset()+NodeOverhead]) }
	tails := map[uint64]Ptr{}
	// walk follows a chain to its tail; with lenient, a slot that was
	// reclaimed on the way (version or key mismatch, which a client detects)
	// ends the walk with a zero Ptr instead of failing.
	walkL := func(key uint64, p Ptr, from string, lenient bool) Ptr {
		seen := map[LH]bool{}
		for {
			if !p.LH.IsSlot() || seen[p.LH] {
				t.Fatalf("key %d from %s: chain reaches %v twice or a non-slot", key, from, p)
			}
			seen[p.LH] = true
			n := node(p)
			if n.Key() != key || n.Header().EntryVersion() != p.Ver || !n.Header().Valid() {
				if lenient {
					return Ptr{}
				}
				t.Fatalf("key %d from %s: node %v holds key %d header %v", key, from, p, n.Key(), n.Header())
			}
			if n.Header().IsTail() {
				return p
			}
			p = Ptr{LH: n.Header().Next(), Ver: n.Header().NextVersion()}
		}
	}
	walk := func(key uint64, p Ptr, from string) Ptr { return walkL(key, p, from, false) }
	for _, key := range keys {
		ki, err := r.ms.core.Lookup(key)
		if err != nil {
			t.Fatalf("key %d: %v", key, err)
		}
		tail := walk(key, ki.Latest, "MS latest")
		tails[key] = tail
		sc := DecodeShortcut(binary.LittleEndian.Uint64(mem[ShortcutAreaOff+ShortcutSize*ki.Shortcut.Index():]))
		if !sc.IsZero() {
			if got := walk(key, sc, "shortcut"); got != tail {
				t.Fatalf("key %d: shortcut chain ends at %v, MS chain at %v", key, got, tail)
			}
		}
		for _, c := range r.clients {
			if e := c.entry(key); e != nil && !e.ptr.IsZero() {
				si := r.ms.core.slots[e.ptr.LH]
				if si == nil || si.ver != e.ptr.Ver || si.state != slotAllocated {
					continue // a cursor to a reclaimed slot: the client detects it by version
				}
				// A cursor may rest on a node that is not reclaimed yet but
				// whose successors are (its retire is late, or unknown after
				// a steered link): the client sees the version mismatch and
				// recovers. What must never happen is another tail or a cycle.
				if got := walkL(key, e.ptr, "client cursor", true); !got.IsZero() && got != tail {
					t.Fatalf("key %d: client %d cursor chain ends at %v, MS chain at %v", key, c.cfg.ID, got, tail)
				}
			}
		}
	}
	// One live tail per key: scan every allocated slot.
	count := map[uint64]int{}
	for lh, si := range r.ms.core.slots {
		if si.state != slotAllocated {
			continue
		}
		n := node(Ptr{LH: lh})
		if n.Header().EntryVersion() == si.ver && n.Header().IsTail() && n.Header().Valid() {
			count[n.Key()]++
		}
	}
	for _, key := range keys {
		if count[key] != 1 {
			t.Fatalf("key %d: %d live tails in memory, want 1", key, count[key])
		}
	}
	return tails
}
