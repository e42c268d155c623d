package testbed

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/sherman"
)

// Sherman modes: how lock traffic is handled.
const (
	// ShermanPlain: every thread CASes the lock word itself; the middlebox
	// in the path forwards every connection unchanged.
	ShermanPlain = "plain"
	// ShermanHierarchical: Sherman's own CN-local lock table with
	// hand-over; the middlebox forwards unchanged.
	ShermanHierarchical = "hierarchical"
	// ShermanCASToWrite: plain locks, and the middlebox multiplexes each
	// memory node's lock region onto one shared connection and replaces
	// every lock CMP_SWAP by a WRITE of its outcome (SwordBox 4.3, 4.4.1).
	ShermanCASToWrite = "cas-to-write"
	// ShermanCASToWriteNode: as ShermanCASToWrite, and the node's data
	// region moves onto the same shared connection, so that RC order on
	// that one connection puts every release behind the data WRITE
	// chained before it, with no barrier round trip.
	ShermanCASToWriteNode = "cas-to-write-node"
)

// ShermanModes lists the modes in report order (baseline first).
var ShermanModes = []string{ShermanPlain, ShermanHierarchical, ShermanCASToWrite, ShermanCASToWriteNode}

// ShermanConfig describes Sherman on a software rack: memory nodes behind a
// middlebox, client hosts in front of it, over in-memory links (a side with
// more than one member joins its members through an L2 hub).
type ShermanConfig struct {
	Mode        string
	MemoryNodes int // default 1
	ClientHosts int // default 2
	Threads     int // client threads in all, spread over the hosts; default 8
	// MemorySize is each memory node's data region (default 64 MiB), in
	// chunks of ChunkSize (default sherman.DefaultChunkSize).
	MemorySize int
	ChunkSize  uint64
	// Timing is the memory nodes' NIC timing model (nil: untimed).
	Timing *rnic.Timing
	// Faults are injected on every link, both directions (each direction
	// its own seed derived from Faults.Seed).
	Faults netio.Faults
	// RNICTimeout is every RNIC's local ACK timeout (default 50ms).
	RNICTimeout  time.Duration
	NoIndexCache bool
	// MboxTap, if set, sees every frame the middlebox receives (sent
	// false) and sends (sent true) on each side (0 clients, 1 memory
	// nodes), and (side 2) every frame a client host receives and sends:
	// test instrumentation.
	MboxTap func(side int, sent bool, frame []byte)
}

// ShermanRack is Sherman running on a software rack.
type ShermanRack struct {
	cfg      ShermanConfig
	Memory   []*rnic.Device
	Data     []*rnic.MR
	Locks    []*rnic.MR
	Dirs     []*sherman.MemoryNode
	Hosts    []*rnic.Device
	CNs      []*sherman.Host
	Clients  []*sherman.Client
	Mbox     *middlebox.Sharded
	mbPorts  [2]*countingPort
	links    []*netio.LinkPort
	hubs     []*l2Hub
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	closed   bool
	dirErrs  chan error
	devices  []*rnic.Device
	linkSeed int64
}

// NewShermanRack builds the rack, starts the directories and the
// middlebox, and connects every client thread (the first creates the root).
func NewShermanRack(ctx context.Context, cfg ShermanConfig) (_ *ShermanRack, err error) {
	if cfg.Mode == "" {
		cfg.Mode = ShermanPlain
	}
	switch cfg.Mode {
	case ShermanPlain, ShermanHierarchical, ShermanCASToWrite, ShermanCASToWriteNode:
	default:
		return nil, fmt.Errorf("testbed: sherman mode %q: want one of %v", cfg.Mode, ShermanModes)
	}
	if cfg.MemoryNodes <= 0 {
		cfg.MemoryNodes = 1
	}
	if cfg.ClientHosts <= 0 {
		cfg.ClientHosts = 2
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 8
	}
	if cfg.MemoryNodes > 100 || cfg.ClientHosts > 100 {
		return nil, fmt.Errorf("testbed: sherman: %d memory nodes, %d client hosts: at most 100 each", cfg.MemoryNodes, cfg.ClientHosts)
	}
	if cfg.MemorySize <= 0 {
		cfg.MemorySize = 64 << 20
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = sherman.DefaultChunkSize
	}
	if cfg.RNICTimeout <= 0 {
		cfg.RNICTimeout = 50 * time.Millisecond
	}
	if err := cfg.Faults.Validate(); err != nil {
		return nil, fmt.Errorf("testbed: sherman faults: %w", err)
	}
	r := &ShermanRack{cfg: cfg, dirErrs: make(chan error, cfg.MemoryNodes), linkSeed: cfg.Faults.Seed}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	// Members: memory node i is rack member i, client host j member 100+j.
	mnMember := func(i int) int { return i }
	cnMember := func(j int) int { return 100 + j }
	// Each side of the middlebox: a direct link when it has one member,
	// else an L2 hub whose default port leads to the middlebox.
	var mbPort [2]*netio.LinkPort
	var hubs [2]*l2Hub
	members := [2]int{cfg.ClientHosts, cfg.MemoryNodes}
	for side, n := range members {
		if n > 1 {
			hubs[side] = newL2Hub()
			r.hubs = append(r.hubs, hubs[side])
			mb, hp, err := r.link(fmt.Sprintf("mbox-side-%d", side), fmt.Sprintf("hub-mbox-%d", side))
			if err != nil {
				return nil, err
			}
			mbPort[side] = mb
			hubs[side].attach([6]byte{}, hp, true)
		}
	}
	newDev := func(name string, member, side int, timing *rnic.Timing) (*rnic.Device, error) {
		devPort, other, err := r.link(name, "peer-"+name)
		if err != nil {
			return nil, err
		}
		var dp netio.Port = devPort
		if side == 0 && cfg.MboxTap != nil {
			dp = &mboxTapPort{Port: devPort, side: 2, tap: cfg.MboxTap} // a client host's own view
		}
		d, err := rnic.New(dp, rnic.Config{Name: name, MAC: HostMAC(member), IP: HostIP(member), Timeout: cfg.RNICTimeout, Timing: timing})
		if err != nil {
			return nil, err
		}
		r.devices = append(r.devices, d)
		if hubs[side] != nil {
			hubs[side].attach(HostMAC(member), other, false)
		} else {
			mbPort[side] = other
		}
		return d, nil
	}
	var dirCQs []*rnic.CQ
	for i := 0; i < cfg.MemoryNodes; i++ {
		d, err := newDev(fmt.Sprintf("mem%d", i), mnMember(i), 1, cfg.Timing)
		if err != nil {
			return nil, err
		}
		r.Memory = append(r.Memory, d)
		data, err := d.Register(make([]byte, cfg.MemorySize), verbs.AccessAll)
		if err != nil {
			return nil, err
		}
		locks, err := d.AllocDM(sherman.LockRegionSize, verbs.AccessAll)
		if err != nil {
			return nil, err
		}
		r.Data, r.Locks = append(r.Data, data), append(r.Locks, locks)
		dcq := d.NewCQ(4096)
		dirCQs = append(dirCQs, dcq)
		dir, err := sherman.NewMemoryNode(sherman.MemoryNodeConfig{Node: uint16(i), Data: data, Locks: locks, ChunkSize: cfg.ChunkSize}, d, dcq)
		if err != nil {
			return nil, err
		}
		r.Dirs = append(r.Dirs, dir)
	}
	for j := 0; j < cfg.ClientHosts; j++ {
		d, err := newDev(fmt.Sprintf("cn%d", j), cnMember(j), 0, nil)
		if err != nil {
			return nil, err
		}
		r.Hosts = append(r.Hosts, d)
		r.CNs = append(r.CNs, sherman.NewHost(sherman.HostConfig{ID: uint16(j + 1), MemoryNodes: cfg.MemoryNodes,
			HierarchicalLocks: cfg.Mode == ShermanHierarchical, NoIndexCache: cfg.NoIndexCache}))
	}
	// Connect the threads, recording every connection for the middlebox.
	var conns []middlebox.ConnConfig
	macStr := func(m [6]byte) string {
		return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
	}
	ipStr := func(a [4]byte) string { return netip.AddrFrom4(a).String() }
	type pending struct {
		host int
		cq   *rnic.CQ
		mns  []sherman.MemoryNodeConn
	}
	var threads []pending
	memCQs := make([]*rnic.CQ, cfg.MemoryNodes)
	for i := range memCQs {
		memCQs[i] = r.Memory[i].NewCQ(1024)
	}
	for t := 0; t < cfg.Threads; t++ {
		h := t % cfg.ClientHosts
		host := r.Hosts[h]
		cq := host.NewCQ(1024)
		p := pending{host: h, cq: cq}
		for i := 0; i < cfg.MemoryNodes; i++ {
			mem := r.Memory[i]
			pair := func(serverCQ *rnic.CQ, psn uint32) (*rnic.QP, *rnic.QP, error) {
				q, err := host.NewQP(qpConfig(cq, 256))
				if err != nil {
					return nil, nil, err
				}
				s, err := mem.NewQP(qpConfig(serverCQ, 256))
				if err != nil {
					return nil, nil, err
				}
				if err := rnic.Connect(q, s, psn, psn^0x5a5a5); err != nil {
					return nil, nil, err
				}
				conns = append(conns, middlebox.ConnConfig{ClientIP: ipStr(HostIP(cnMember(h))), ServerIP: ipStr(HostIP(mnMember(i))),
					ClientMAC: macStr(HostMAC(cnMember(h))), ServerMAC: macStr(HostMAC(mnMember(i))),
					ClientPort: 0xC000 | uint16(q.QPN()&0x3fff), ServerPort: 0xC000 | uint16(s.QPN()&0x3fff),
					ClientQP: q.QPN(), ServerQP: s.QPN(), PSN: psn, PSNKnown: true})
				return q, s, nil
			}
			dq, _, err := pair(memCQs[i], uint32(t*7919+i*131+1)&0xffffff)
			if err != nil {
				return nil, fmt.Errorf("testbed: sherman thread %d: memory node %d: %w", t, i, err)
			}
			rq, rs, err := pair(dirCQs[i], uint32(t*104729+i*17+3)&0xffffff)
			if err != nil {
				return nil, fmt.Errorf("testbed: sherman thread %d: directory %d: %w", t, i, err)
			}
			if err := r.Dirs[i].AddClient(rs); err != nil {
				return nil, err
			}
			p.mns = append(p.mns, sherman.MemoryNodeConn{QP: dq, RPC: rq, Remote: r.Dirs[i].Remote()})
		}
		threads = append(threads, p)
	}
	mcfg := middlebox.Config{Conns: conns, PMTU: 1024, MaxConns: len(conns) + 16, MaxWords: cfg.MemoryNodes * sherman.NumLocks}
	for i := 0; i < cfg.MemoryNodes; i++ {
		s := middlebox.ServerConfig{IP: ipStr(HostIP(mnMember(i)))}
		if cfg.Mode == ShermanCASToWrite || cfg.Mode == ShermanCASToWriteNode {
			lo := r.Locks[i].Addr()
			rg := middlebox.Range{Lo: lo, Hi: lo + sherman.LockRegionSize}
			s.Remap, s.CASToWrite, s.AnswerFailedCAS, s.WaitFailedCAS, s.AnswerAtSend = []middlebox.Range{rg}, []middlebox.Range{rg}, true, true, true
			for w := uint64(0); w < sherman.NumLocks; w++ {
				mcfg.Words = append(mcfg.Words, middlebox.WordConfig{VA: lo + 8*w})
			}
			if cfg.Mode == ShermanCASToWriteNode {
				d := r.Data[i].Addr()
				s.Remap = append(s.Remap, middlebox.Range{Lo: d, Hi: d + uint64(cfg.MemorySize)})
			}
		}
		mcfg.Servers = append(mcfg.Servers, s)
	}
	r.Mbox, err = middlebox.NewSharded(mcfg, 1)
	if err != nil {
		return nil, fmt.Errorf("testbed: sherman middlebox: %w", err)
	}
	r.mbPorts = [2]*countingPort{{Port: mbPort[0]}, {Port: mbPort[1]}}
	lctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	loop := &middlebox.Loop{S: r.Mbox, Ports: [2]netio.Port{r.mbPorts[0], r.mbPorts[1]}}
	if cfg.MboxTap != nil {
		loop.Ports = [2]netio.Port{&mboxTapPort{Port: r.mbPorts[0], side: 0, tap: cfg.MboxTap}, &mboxTapPort{Port: r.mbPorts[1], side: 1, tap: cfg.MboxTap}}
	}
	r.wg.Add(1)
	go func() { defer r.wg.Done(); _ = loop.Run(lctx) }()
	for _, d := range r.Dirs {
		d := d
		r.wg.Add(1)
		go func() { defer r.wg.Done(); r.dirErrs <- d.Serve(lctx) }()
	}
	for t, p := range threads {
		c, err := sherman.NewClient(ctx, sherman.ClientConfig{Host: r.CNs[p.host], Thread: uint16(t / cfg.ClientHosts), Device: r.Hosts[p.host],
			CQ: p.cq, MemoryNodes: p.mns, ChunkSize: cfg.ChunkSize})
		if err != nil {
			return nil, fmt.Errorf("testbed: sherman thread %d: %w", t, err)
		}
		r.Clients = append(r.Clients, c)
	}
	return r, nil
}

// link makes an in-memory link with the rack's faults on both directions.
func (r *ShermanRack) link(a, b string) (*netio.LinkPort, *netio.LinkPort, error) {
	f1, f2 := r.cfg.Faults, r.cfg.Faults
	r.linkSeed++
	f1.Seed = r.linkSeed * 7919
	f2.Seed = r.linkSeed*7919 + 1
	pa, pb, err := netio.NewLink(a, b, netio.LinkConfig{Capacity: 8192, AtoB: f1, BtoA: f2})
	if err != nil {
		return nil, nil, err
	}
	r.links = append(r.links, pa, pb)
	return pa, pb, nil
}

// Wire returns the frames and bytes that entered the middlebox, both sides.
func (r *ShermanRack) Wire() WireStats {
	return WireStats{Frames: r.mbPorts[0].frames.Load() + r.mbPorts[1].frames.Load(), Bytes: r.mbPorts[0].bytes.Load() + r.mbPorts[1].bytes.Load()}
}

// Metrics sums the clients' counters (call while they are idle).
func (r *ShermanRack) Metrics() sherman.Metrics {
	var m sherman.Metrics
	for _, c := range r.Clients {
		m.Add(c.Metrics())
	}
	return m
}

// Check checks the tree's invariants and that every lock is free; call it
// while no operation runs. It returns the tree's contents.
func (r *ShermanRack) Check() (map[uint64]uint64, sherman.TreeStats, error) {
	mem := make([][]byte, len(r.Data))
	for i, d := range r.Data {
		mem[i] = d.Bytes()
	}
	kv, st, err := sherman.CheckTree(mem, r.cfg.ChunkSize)
	if err != nil {
		return kv, st, err
	}
	for i, l := range r.Locks {
		if err := sherman.CheckLocksFree(l.Bytes()); err != nil {
			return kv, st, fmt.Errorf("memory node %d: %w", i, err)
		}
	}
	return kv, st, nil
}

// Close stops everything.
func (r *ShermanRack) Close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	if r.cancel != nil {
		r.cancel()
	}
	for _, d := range r.devices {
		d.Close()
	}
	for _, l := range r.links {
		l.Close()
	}
	for _, h := range r.hubs {
		h.wait()
	}
	r.wg.Wait()
	var errs []error
	for len(r.dirErrs) > 0 {
		if e := <-r.dirErrs; e != nil {
			errs = append(errs, e)
		}
	}
	return errors.Join(errs...)
}

// mboxTapPort shows every frame received and sent through a middlebox port
// to tap (ShermanConfig.MboxTap).
type mboxTapPort struct {
	netio.Port
	side int
	tap  func(side int, sent bool, frame []byte)
}

func (p *mboxTapPort) Recv(bufs [][]byte) (int, error) {
	n, err := p.Port.Recv(bufs)
	for _, f := range bufs[:n] {
		p.tap(p.side, false, f)
	}
	return n, err
}

func (p *mboxTapPort) Send(frames [][]byte) (int, error) {
	for _, f := range frames {
		p.tap(p.side, true, f)
	}
	return p.Port.Send(frames)
}
