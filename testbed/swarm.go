package testbed

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/swarm"
)

// SwarmConfig describes SWARM-KV on a software rack: Nodes memory nodes
// (N = 2f+1 replicas of every key, one per node), ClientHosts client RNICs
// running Threads client threads (each its own swarm.Client with one QP per
// memory node and its own CQ), joined by an L2 fabric of in-memory links
// and, with Middlebox, the SwordBox middlebox between the clients and the
// memory nodes.
type SwarmConfig struct {
	Nodes       int // default 3
	ClientHosts int // default 2
	Threads     int // default 8
	Keys        int // default 1024
	ValueSize   int // default 64 (the paper's)
	// LogBuffers per writer (default Keys + 1024).
	LogBuffers int
	// Middlebox puts the middlebox between clients and memory nodes: every
	// client QP is multiplexed onto one shared connection per memory node.
	// CASToWrite also has it replace the CMP_SWAPs on the key slots
	// (metadata and lock words) by WRITEs of their outcome.
	Middlebox, CASToWrite bool
	// Faults are injected on every link, both directions.
	Faults netio.Faults
	// RNICTimeout is every RNIC's ACK timeout (default 20ms).
	RNICTimeout time.Duration
	// Timing is the memory nodes' NIC timing model (nil: untimed).
	Timing *rnic.Timing
	// Grace is the clients' buffer-reuse grace (default: swarm's).
	Grace time.Duration
	// Now, if set, gives client t its clock (tests skew clocks with it).
	Now func(t int) func() time.Duration
}

// SwarmRack is SWARM-KV running on a software rack.
type SwarmRack struct {
	cfg        SwarmConfig
	Layout     swarm.Layout
	Mems       []*rnic.Device
	MemMRs     []*rnic.MR
	Hosts      []*rnic.Device
	Clients    []*swarm.Client
	Index      *swarm.Index
	Membership *swarm.Membership
	Mbox       *middlebox.Sharded

	hubs   []*l2Hub
	ports  []*duplexCounter
	links  []*netio.LinkPort
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
}

// NewSwarmRack builds the rack, registers every memory node's region and
// connects every client thread to every memory node.
func NewSwarmRack(ctx context.Context, cfg SwarmConfig) (_ *SwarmRack, err error) {
	if cfg.Nodes <= 0 {
		cfg.Nodes = 3
	}
	if cfg.Nodes%2 == 0 || cfg.Nodes > 9 {
		return nil, fmt.Errorf("testbed: swarm: %d memory nodes, want 1, 3, 5, 7 or 9", cfg.Nodes)
	}
	if cfg.ClientHosts <= 0 {
		cfg.ClientHosts = 2
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 8
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 1024
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 64
	}
	if cfg.LogBuffers <= 0 {
		cfg.LogBuffers = min(cfg.Keys+1024, swarm.MaxLogBuffers)
	}
	if cfg.RNICTimeout <= 0 {
		cfg.RNICTimeout = 20 * time.Millisecond
	}
	if cfg.CASToWrite && !cfg.Middlebox {
		return nil, fmt.Errorf("testbed: swarm: CAS to WRITE needs the middlebox")
	}
	layout := swarm.Layout{Keys: cfg.Keys, Writers: cfg.Threads, ValueSize: cfg.ValueSize, LogBuffers: cfg.LogBuffers}
	if err := layout.Validate(); err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	r := &SwarmRack{cfg: cfg, Layout: layout, Index: swarm.NewIndex(cfg.Keys), Membership: swarm.NewMembership(cfg.Nodes, cfg.Threads)}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	seed := cfg.Faults.Seed
	link := func(a, b string) (*netio.LinkPort, *netio.LinkPort, error) {
		f, f2 := cfg.Faults, cfg.Faults
		if seed != 0 {
			seed += 2
			f.Seed, f2.Seed = seed, seed+1
		}
		x, y, err := netio.NewLink(a, b, netio.LinkConfig{Capacity: 8192, AtoB: f, BtoA: f2})
		if err == nil {
			r.links = append(r.links, x, y)
		}
		return x, y, err
	}
	clientHub := newL2Hub()
	serverHub := clientHub
	r.hubs = append(r.hubs, clientHub)
	if cfg.Middlebox {
		serverHub = newL2Hub()
		r.hubs = append(r.hubs, serverHub)
	}
	attach := func(h *l2Hub, mac [6]byte, name string, uplink bool) (netio.Port, error) {
		hostSide, hubSide, err := link(name, "hub-"+name)
		if err != nil {
			return nil, fmt.Errorf("testbed: swarm: link %s: %w", name, err)
		}
		cp := &duplexCounter{Port: hubSide, memory: strings.HasPrefix(name, "mem")}
		r.ports = append(r.ports, cp)
		h.attach(mac, cp, uplink)
		return hostSide, nil
	}
	// Memory nodes are members 0..Nodes-1, client hosts follow.
	for i := 0; i < cfg.Nodes; i++ {
		p, err := attach(serverHub, HostMAC(i), fmt.Sprintf("mem%d", i), false)
		if err != nil {
			return nil, err
		}
		d, err := rnic.New(p, rnic.Config{Name: fmt.Sprintf("mem%d", i), MAC: HostMAC(i), IP: HostIP(i),
			Timeout: cfg.RNICTimeout, Timing: cfg.Timing})
		if err != nil {
			return nil, fmt.Errorf("testbed: swarm: memory node %d: %w", i, err)
		}
		r.Mems = append(r.Mems, d)
		mr, err := d.Register(make([]byte, layout.RegionSize()), verbs.AccessAll)
		if err != nil {
			return nil, fmt.Errorf("testbed: swarm: memory node %d: register: %w", i, err)
		}
		r.MemMRs = append(r.MemMRs, mr)
	}
	for h := 0; h < cfg.ClientHosts; h++ {
		m := cfg.Nodes + h
		p, err := attach(clientHub, HostMAC(m), fmt.Sprintf("host%d", h), false)
		if err != nil {
			return nil, err
		}
		d, err := rnic.New(p, rnic.Config{Name: fmt.Sprintf("host%d", h), MAC: HostMAC(m), IP: HostIP(m), Timeout: cfg.RNICTimeout})
		if err != nil {
			return nil, fmt.Errorf("testbed: swarm: client host %d: %w", h, err)
		}
		r.Hosts = append(r.Hosts, d)
	}
	ipStr := func(a [4]byte) string { return netip.AddrFrom4(a).String() }
	macStr := func(m [6]byte) string {
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
	}
	var conns []middlebox.ConnConfig
	memCQs := make([]*rnic.CQ, cfg.Nodes)
	for i, d := range r.Mems {
		memCQs[i] = d.NewCQ(1024)
	}
	for t := 0; t < cfg.Threads; t++ {
		h := t % cfg.ClientHosts
		host := r.Hosts[h]
		cq := host.NewCQ(1024)
		id, err := r.Membership.Join()
		if err != nil {
			return nil, err
		}
		var nodes []swarm.NodeConn
		for i, mem := range r.Mems {
			qc, err := host.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 256})
			if err != nil {
				return nil, fmt.Errorf("testbed: swarm: thread %d: %w", t, err)
			}
			qm, err := mem.NewQP(verbs.QPConfig{SendCQ: memCQs[i], RecvCQ: memCQs[i], MaxSendWR: 256})
			if err != nil {
				return nil, fmt.Errorf("testbed: swarm: memory node %d: %w", i, err)
			}
			s := psnSeed.Add(0x10001)
			psn := s & 0xffffff
			if err := rnic.Connect(qc, qm, psn, (s*7)&0xffffff); err != nil {
				return nil, fmt.Errorf("testbed: swarm: connect thread %d to memory node %d: %w", t, i, err)
			}
			nodes = append(nodes, swarm.NodeConn{QP: qc, Region: r.MemMRs[i].Remote()})
			hm := cfg.Nodes + h
			conns = append(conns, middlebox.ConnConfig{ClientIP: ipStr(HostIP(hm)), ServerIP: ipStr(HostIP(i)),
				ClientMAC: macStr(HostMAC(hm)), ServerMAC: macStr(HostMAC(i)),
				ClientPort: 0xC000 | uint16(qc.QPN()&0x3fff), ServerPort: 0xC000 | uint16(qm.QPN()&0x3fff),
				ClientQP: qc.QPN(), ServerQP: qm.QPN(), PSN: psn, PSNKnown: true})
		}
		ccfg := swarm.Config{ID: id, Layout: layout, Device: host, Nodes: nodes, CQ: cq, Index: r.Index,
			Membership: r.Membership, Grace: cfg.Grace}
		if cfg.Now != nil {
			ccfg.Now = cfg.Now(t)
		}
		c, err := swarm.NewClient(ccfg)
		if err != nil {
			return nil, fmt.Errorf("testbed: swarm: %w", err)
		}
		r.Clients = append(r.Clients, c)
	}
	if cfg.Middlebox {
		mcfg := middlebox.Config{Conns: conns, PMTU: 1024, MaxConns: len(conns) + 16}
		for i, mr := range r.MemMRs {
			s := middlebox.ServerConfig{IP: ipStr(HostIP(i)), Remap: []middlebox.Range{{}}}
			if cfg.CASToWrite {
				base := mr.Addr()
				s.CASToWrite = []middlebox.Range{{Lo: base, Hi: base + uint64(layout.SlotsSize())}}
				for kv := 0; kv < layout.Keys; kv++ {
					for w := 1; w <= layout.Writers; w++ {
						mcfg.Words = append(mcfg.Words,
							middlebox.WordConfig{VA: base + uint64(layout.LockOff(kv, w))},
							middlebox.WordConfig{VA: base + uint64(layout.MetaOff(kv)+8*(w-1))})
					}
				}
			}
			mcfg.Servers = append(mcfg.Servers, s)
		}
		mcfg.MaxWords = max(len(mcfg.Words), 1<<10)
		if r.Mbox, err = middlebox.NewSharded(mcfg, 1); err != nil {
			return nil, fmt.Errorf("testbed: swarm: middlebox: %w", err)
		}
		cside, err := attach(clientHub, [6]byte{}, "mbox-c", true)
		if err != nil {
			return nil, err
		}
		sside, err := attach(serverHub, [6]byte{}, "mbox-s", true)
		if err != nil {
			return nil, err
		}
		loop := &middlebox.Loop{S: r.Mbox, Ports: [2]netio.Port{cside, sside}}
		lctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.wg.Add(1)
		go func() { defer r.wg.Done(); _ = loop.Run(lctx) }()
	}
	return r, nil
}

// CrashNode stops memory node i's RNIC: it never answers again, and what
// it held is gone for the clients.
func (r *SwarmRack) CrashNode(i int) error {
	if i < 0 || i >= len(r.Mems) {
		return fmt.Errorf("testbed: swarm: no memory node %d", i)
	}
	return r.Mems[i].Close()
}

// KVs returns the clients as harness KVs.
func (r *SwarmRack) KVs() []KV {
	out := make([]KV, len(r.Clients))
	for i, c := range r.Clients {
		out[i] = c
	}
	return out
}

// Metrics sums the clients' counters.
func (r *SwarmRack) Metrics() swarm.Metrics {
	var s swarm.Metrics
	for _, c := range r.Clients {
		s.Add(c.Metrics())
	}
	return s
}

// MemoryWire is the frames and bytes (Ethernet header to ICRC) on the
// memory nodes' links, both directions: what the memory nodes' NICs
// handle, the same count with or without the middlebox in the path.
func (r *SwarmRack) MemoryWire() WireStats {
	var w WireStats
	for _, p := range r.ports {
		if p.memory {
			w.Frames += p.frames.Load()
			w.Bytes += p.bytes.Load()
		}
	}
	return w
}

// duplexCounter counts the frames and bytes a hub port receives and sends.
type duplexCounter struct {
	netio.Port
	memory        bool
	frames, bytes atomic.Uint64
}

func (c *duplexCounter) Recv(bufs [][]byte) (int, error) {
	n, err := c.Port.Recv(bufs)
	c.count(bufs[:max(n, 0)])
	return n, err
}

func (c *duplexCounter) Send(frames [][]byte) (int, error) {
	n, err := c.Port.Send(frames)
	c.count(frames[:max(n, 0)])
	return n, err
}

func (c *duplexCounter) count(fs [][]byte) {
	var b uint64
	for _, f := range fs {
		b += uint64(len(f))
	}
	c.frames.Add(uint64(len(fs)))
	c.bytes.Add(b)
}

// Close stops everything.
func (r *SwarmRack) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	if r.cancel != nil {
		r.cancel()
	}
	for _, h := range r.Hosts {
		h.Close()
	}
	for _, m := range r.Mems {
		m.Close()
	}
	for _, l := range r.links {
		l.Close()
	}
	for _, h := range r.hubs {
		h.wait()
	}
	r.wg.Wait()
	return nil
}

// l2Hub forwards frames between ports by destination MAC; a frame for an
// unknown MAC goes to the uplink (the middlebox), if any. It stands for a
// top-of-rack switch doing plain forwarding.
type l2Hub struct {
	mu     sync.RWMutex
	ports  map[[6]byte]netio.Port
	uplink netio.Port
	wg     sync.WaitGroup
}

func newL2Hub() *l2Hub { return &l2Hub{ports: map[[6]byte]netio.Port{}} }

func (h *l2Hub) attach(mac [6]byte, p netio.Port, uplink bool) {
	h.mu.Lock()
	if uplink {
		h.uplink = p
	} else {
		h.ports[mac] = p
	}
	h.mu.Unlock()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		bufs := make([][]byte, 32)
		for i := range bufs {
			bufs[i] = make([]byte, netio.MaxFrameSize)
		}
		out := make([][]byte, 1)
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
				o, ok := h.ports[dst]
				if !ok {
					o = h.uplink
				}
				h.mu.RUnlock()
				if o == nil || o == p {
					continue
				}
				out[0] = f
				o.Send(out)
			}
		}
	}()
}

func (h *l2Hub) wait() { h.wg.Wait() }
