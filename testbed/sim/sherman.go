package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// hub is the client side's top-of-rack: a frame from the middlebox goes
// out on the link of the client host whose MAC it is addressed to.
type hub struct {
	out map[[6]byte]*Link
}

// Event implements Handler.
func (h *hub) Event(s *Sim, _ uint64, f *Frame) {
	if f == nil || len(f.B) < 6 {
		return
	}
	if l := h.out[[6]byte(f.B[:6])]; l != nil {
		l.Send(s.now, f.B)
	}
}

// RunShermanCell runs one cell of the Sherman benchmark (the cells of
// testbed.ShermanSuiteConfig, the wall-clock bench's) in virtual time:
// one memory node (data in host memory, the lock words in its NIC's
// device memory, its directory thread under the scheduler), spec.ClientHosts
// client hosts behind a hub, the middlebox node between them, 100 Gb/s
// links. Every RNIC runs the virtual ConnectX-5 model, the memory node's
// with spec.Timing's atomic caps when set. The modes wire the middlebox as
// testbed.NewShermanRack does: plain and hierarchical forward every
// connection; cas-to-write moves the lock region onto one shared
// connection and converts lock CMP_SWAP to WRITE; cas-to-write-node moves
// the data region onto it too. The key space is loaded first (key numbers
// 1 .. WarmRatio*KeySpace, spread over the threads), then every thread
// runs a closed loop, DefaultClientCPU before each operation, a search
// with probability ReadRatio/100 else an insert, for spec.Warmup and then
// spec.Duration of virtual time. The tree's invariants and the lock words
// are checked afterwards; a broken one is an error. Every figure of the
// cell is virtual time; one seed gives the same cell.
func RunShermanCell(ctx context.Context, spec testbed.ShermanCellSpec) (report.Cell, error) {
	cell := report.Cell{System: "sherman", Scenario: testbed.ScenarioSherman, Mode: spec.Mode, Workload: spec.Workload(),
		Param: fmt.Sprintf("threads=%d", spec.Threads), Clients: spec.Threads}
	conv := false
	switch spec.Mode {
	case testbed.ShermanPlain, testbed.ShermanHierarchical:
	case testbed.ShermanCASToWrite, testbed.ShermanCASToWriteNode:
		conv = true
	default:
		return cell, fmt.Errorf("sim: sherman: mode %q: want one of %v", spec.Mode, testbed.ShermanModes)
	}
	if spec.MemoryNodes > 1 {
		return cell, fmt.Errorf("sim: sherman: %d memory nodes: the virtual-time rack runs one", spec.MemoryNodes)
	}
	if spec.Threads < 1 || spec.Threads > 1024 {
		return cell, fmt.Errorf("sim: sherman: %d threads: want 1..1024", spec.Threads)
	}
	if spec.KeySpace < 64 || spec.KeySpace > 1<<22 || !(spec.WarmRatio > 0 && spec.WarmRatio <= 1) {
		return cell, fmt.Errorf("sim: sherman: key space %d, warm ratio %g: want 64..4194304 and (0, 1]", spec.KeySpace, spec.WarmRatio)
	}
	if spec.Duration <= 0 || spec.Warmup < 0 {
		return cell, fmt.Errorf("sim: sherman: duration %s, warm-up %s: want a positive duration", spec.Duration, spec.Warmup)
	}
	hosts := max(1, min(spec.ClientHosts, spec.Threads))
	var zipf *ycsb.Zipfian
	if spec.Dist == testbed.DistZipf {
		z, err := ycsb.NewZipfian(0, int64(spec.KeySpace)-1, spec.Zipf)
		if err != nil {
			return cell, fmt.Errorf("sim: sherman: %w", err)
		}
		zipf = z
	}

	s := New(spec.Seed)
	sch := NewSched(s)
	nic := rnic.VirtualConnectX5()
	memNIC := nic
	if spec.Timing != nil {
		memNIC.Timing = *spec.Timing
	}
	const timeout = 500 * time.Millisecond
	mem, err := NewHost(s, rnic.Config{Name: "mem0", MAC: testbed.HostMAC(0), IP: testbed.HostIP(0), Timeout: timeout}, memNIC)
	if err != nil {
		return cell, err
	}
	memSize := testbed.ShermanMemory(spec.KeySpace, spec.Threads)
	data, err := mem.Device().Register(make([]byte, memSize), verbs.AccessAll)
	if err != nil {
		return cell, err
	}
	locks, err := mem.Device().AllocDM(sherman.LockRegionSize, verbs.AccessAll)
	if err != nil {
		return cell, err
	}
	dirCQ := sch.NewCQ(mem, 4096)
	dir, err := sherman.NewMemoryNode(sherman.MemoryNodeConfig{Node: 0, Data: data, Locks: locks}, sch.Device(mem), dirCQ)
	if err != nil {
		return cell, err
	}
	memCQ := mem.Device().NewCQ(1024)
	var cns []*Host
	var shs []*sherman.Host
	for j := 0; j < hosts; j++ {
		h, err := NewHost(s, rnic.Config{Name: fmt.Sprintf("cn%d", j), MAC: testbed.HostMAC(100 + j), IP: testbed.HostIP(100 + j), Timeout: timeout}, nic)
		if err != nil {
			return cell, err
		}
		cns = append(cns, h)
		shs = append(shs, sherman.NewHost(sherman.HostConfig{ID: uint16(j + 1), MemoryNodes: 1,
			HierarchicalLocks: spec.Mode == testbed.ShermanHierarchical}))
	}
	var conns []middlebox.ConnConfig
	pair := func(h int, cq *rnic.CQ, scq *rnic.CQ, psn uint32) (*rnic.QP, *rnic.QP, error) {
		q, err := cns[h].Device().NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 256, MaxRecvWR: 256})
		if err != nil {
			return nil, nil, err
		}
		sq, err := mem.Device().NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq, MaxSendWR: 256, MaxRecvWR: 256})
		if err != nil {
			return nil, nil, err
		}
		if err := rnic.Connect(q, sq, psn, psn^0x5a5a5); err != nil {
			return nil, nil, err
		}
		conns = append(conns, testbed.MiddleboxConn(testbed.HostMAC(100+h), testbed.HostMAC(0), testbed.HostIP(100+h), testbed.HostIP(0), q, sq, psn))
		return q, sq, nil
	}
	type thread struct {
		h   int
		cq  *CQ
		mns []sherman.MemoryNodeConn
	}
	var ths []thread
	for t := 0; t < spec.Threads; t++ {
		h := t % hosts
		cq := sch.NewCQ(cns[h], 1024)
		dq, _, err := pair(h, cq.Q, memCQ, uint32(t*7919+1)&0xffffff)
		if err != nil {
			return cell, fmt.Errorf("sim: sherman thread %d: %w", t, err)
		}
		rq, rs, err := pair(h, cq.Q, dirCQ.Q, uint32(t*104729+3)&0xffffff)
		if err != nil {
			return cell, fmt.Errorf("sim: sherman thread %d: %w", t, err)
		}
		if err := dir.AddClient(rs); err != nil {
			return cell, err
		}
		ths = append(ths, thread{h, cq, []sherman.MemoryNodeConn{{QP: dq, RPC: rq, Remote: dir.Remote()}}})
	}
	mcfg := middlebox.Config{Conns: conns, PMTU: 1024, MaxConns: len(conns) + 16, MaxWords: sherman.NumLocks}
	srv := middlebox.ServerConfig{IP: netip.AddrFrom4(testbed.HostIP(0)).String()}
	if conv {
		lo := locks.Addr()
		rg := middlebox.Range{Lo: lo, Hi: lo + sherman.LockRegionSize}
		srv.Remap, srv.CASToWrite, srv.AnswerFailedCAS, srv.WaitFailedCAS, srv.AnswerAtSend = []middlebox.Range{rg}, []middlebox.Range{rg}, true, true, true
		for w := uint64(0); w < sherman.NumLocks; w++ {
			mcfg.Words = append(mcfg.Words, middlebox.WordConfig{VA: lo + 8*w})
		}
		if spec.Mode == testbed.ShermanCASToWriteNode {
			srv.Remap = append(srv.Remap, middlebox.Range{Lo: data.Addr(), Hi: data.Addr() + uint64(memSize)})
		}
	}
	mcfg.Servers = []middlebox.ServerConfig{srv}
	mb, err := NewMiddlebox(s, mcfg, MiddleboxCores)
	if err != nil {
		return cell, err
	}
	link := func(h Handler, arg uint64) (*Link, error) {
		return NewLink(s, LinkConfig{QueueBytes: DefaultHostQueueBytes}, h, arg)
	}
	hb := &hub{out: map[[6]byte]*Link{}}
	for j, h := range cns {
		up, err := link(mb, uint64(middlebox.ClientSide))
		if err != nil {
			return cell, err
		}
		h.Attach(up)
		down, err := link(h, hostRx)
		if err != nil {
			return cell, err
		}
		hb.out[testbed.HostMAC(100+j)] = down
	}
	var wires [3]*Link
	if wires[0], err = link(mb, uint64(middlebox.ServerSide)); err != nil {
		return cell, err
	}
	mem.Attach(wires[0])
	if wires[1], err = link(hb, 0); err != nil {
		return cell, err
	}
	if wires[2], err = link(mem, hostRx); err != nil {
		return cell, err
	}
	mb.Links = [2]*Link{wires[1], wires[2]}
	wire := func() uint64 {
		var b uint64
		for _, h := range cns {
			b += h.Out.Bytes
		}
		return b + wires[0].Bytes
	}

	sch.Go("directory", dir.Serve)
	ks := uint64(spec.KeySpace)
	warmEnd := uint64(spec.WarmRatio * float64(spec.KeySpace))
	clock := sch.Clock()
	var (
		measuring, stop bool
		ops, reads, wrs uint64
		firstErr        error
		m0, m1          sherman.Metrics
	)
	all, rd, wr := newHist(), newHist(), newHist()
	clients := make([]*sherman.Client, len(ths))
	loaded := 0
	for i, p := range ths {
		sch.Go(fmt.Sprintf("sherman%d", i), func(ctx context.Context) error {
			c, err := sherman.NewClient(ctx, sherman.ClientConfig{Host: shs[p.h], Thread: uint16(i / hosts), Device: sch.Device(cns[p.h]),
				CQ: p.cq, MemoryNodes: p.mns})
			if err != nil {
				return err
			}
			clients[i] = c
			for k := 1 + uint64(i); k < warmEnd; k += uint64(len(ths)) {
				if err := c.Insert(ctx, testbed.ShermanKey(k, ks), 2*k); err != nil {
					return fmt.Errorf("load: key number %d: %w", k, err)
				}
			}
			loaded++
			for loaded < len(ths) {
				if err := clock.Sleep(ctx, time.Microsecond); err != nil {
					return err
				}
			}
			rng := rand.New(rand.NewPCG(spec.Seed, uint64(i)))
			var z *ycsb.Zipfian
			if zipf != nil {
				z = zipf.Clone()
			}
			for seq := uint64(1); !stop; seq++ {
				if err := clock.Sleep(ctx, DefaultClientCPU); err != nil {
					return err
				}
				var n uint64
				if z != nil {
					n = uint64(z.Next(rng))
				} else {
					n = rng.Uint64N(ks)
				}
				key := testbed.ShermanKey(n, ks)
				read := rng.IntN(100) < spec.ReadRatio
				t0 := s.Now()
				if read {
					_, _, err = c.Search(ctx, key)
				} else {
					err = c.Insert(ctx, key, uint64(i+1)<<40|seq)
				}
				if err != nil {
					return fmt.Errorf("operation %d: %w", seq, err)
				}
				// Counted when it completes inside the window, with its whole
				// latency: an operation that starved through the window's
				// start is in the tail it belongs to.
				if measuring {
					d := s.Now() - t0
					all.RecordValue(d)
					if read {
						rd.RecordValue(d)
						reads++
					} else {
						wr.RecordValue(d)
						wrs++
					}
					ops++
				}
			}
			return nil
		})
	}
	// Load: until every thread has loaded its share, bounded by a virtual
	// minute (the load of the largest key space takes well under that).
	limit := int64(time.Minute)
	step := int64(100 * time.Microsecond)
	for loaded < len(ths) && s.Now() < limit && ctx.Err() == nil {
		if failed(sch) {
			break
		}
		sch.Run(s.Now() + step)
	}
	if err := procErr(sch); err != nil {
		sch.Stop()
		return cell, fmt.Errorf("sim: sherman: %w", err)
	}
	if loaded < len(ths) {
		sch.Stop()
		if ctx.Err() != nil {
			return cell, ctx.Err()
		}
		return cell, fmt.Errorf("sim: sherman: load did not finish in %v of virtual time", time.Duration(limit))
	}
	start := s.Now()
	sch.Run(start + int64(spec.Warmup))
	sum := func() sherman.Metrics {
		var m sherman.Metrics
		for _, c := range clients {
			x := c.Metrics()
			m.Verbs += x.Verbs
			m.CAS += x.CAS
			m.CASFailures += x.CASFailures
			m.HandOvers += x.HandOvers
			m.CacheHits += x.CacheHits
			m.CacheMisses += x.CacheMisses
			m.LeafSplits += x.LeafSplits
		}
		return m
	}
	m0, w0, c0 := sum(), wire(), mb.E.Counters()
	measuring = true
	t0 := s.Now()
	sch.Run(t0 + int64(spec.Duration))
	measuring = false
	m1, w1, c1 := sum(), wire(), mb.E.Counters()
	stop = true
	sch.Run(s.Now() + int64(10*time.Millisecond))
	if err := sch.Stop(); err != nil {
		return cell, fmt.Errorf("sim: sherman: %w", err)
	}
	if err := procErr(sch); err != nil {
		firstErr = err
	}
	if firstErr != nil {
		return cell, fmt.Errorf("sim: sherman: %w", firstErr)
	}
	n := float64(ops)
	cell.Ops, cell.Seconds = ops, spec.Duration.Seconds()
	cell.OpsPerSec = n / spec.Duration.Seconds()
	cell.P50us, cell.P99us, cell.P999us = testbed.Percentile(all, 50), testbed.Percentile(all, 99), testbed.Percentile(all, 99.9)
	cell.ReadP99us, cell.WriteP99us = testbed.Percentile(rd, 99), testbed.Percentile(wr, 99)
	cell.BytesPerOp = float64(w1-w0) / n
	cell.VerbsPerOp = float64(m1.Verbs-m0.Verbs) / n
	cas, fails := m1.CAS-m0.CAS, m1.CASFailures-m0.CASFailures
	cell.CASSuccessRate = math.NaN()
	if cas > 0 {
		cell.CASSuccessRate = 1 - float64(fails)/float64(cas)
	}
	cell.RetriesPerOp = float64(fails) / n
	cell.Steering = map[string]uint64{
		"lock_cas": cas, "lock_cas_failed": fails, "hand_overs": m1.HandOvers - m0.HandOvers,
		"cache_hits": m1.CacheHits - m0.CacheHits, "cache_misses": m1.CacheMisses - m0.CacheMisses,
		"leaf_splits": m1.LeafSplits - m0.LeafSplits, "reads": reads, "writes": wrs,
		"mbox_cas_to_write": c1.CASToWrite - c0.CASToWrite, "mbox_remapped": c1.Remapped - c0.Remapped,
		"mbox_barrier_drops": c1.Drops[middlebox.DropBarrier] - c0.Drops[middlebox.DropBarrier],
		"mbox_parked":        c1.Parked - c0.Parked, "mbox_cas_answered_locally": c1.CASAnsweredLocally - c0.CASAnsweredLocally,
		"mbox_retransmits": c1.Retransmits - c0.Retransmits, "mbox_drops": c1.TotalDrops() - c0.TotalDrops(),
	}
	_, st, err := sherman.CheckTree([][]byte{data.Bytes()}, sherman.DefaultChunkSize)
	if err != nil {
		return cell, fmt.Errorf("sim: sherman: after the run: %w", err)
	}
	if err := sherman.CheckLocksFree(locks.Bytes()); err != nil {
		return cell, fmt.Errorf("sim: sherman: after the run: %w", err)
	}
	cell.Note = fmt.Sprintf("virtual time; tree after the run: %d levels, %d leaves, %d keys; invariants hold, all locks free", st.Height, st.Leaves, st.Keys)
	return cell, nil
}

// failed reports whether a goroutine of sch ended with an error.
func failed(sch *Sched) bool { return procErr(sch) != nil }

// procErr is the first error a client goroutine of sch ended with (the
// directory's ends with the scheduler's stop).
func procErr(sch *Sched) error {
	for _, p := range sch.Procs() {
		if p.Err != nil && p.name != "directory" {
			return fmt.Errorf("%s: %w", p.name, p.Err)
		}
	}
	return nil
}

// RunShermanSuite runs the cells of c (testbed.ShermanSuiteConfig.Cells,
// the wall-clock bench's cells) on a fresh virtual-time rack each; c's
// Warmup and Duration are virtual time. progress, if set, is called
// before each cell.
func RunShermanSuite(ctx context.Context, c testbed.ShermanSuiteConfig, progress func(i, n int, label string)) (*report.Run, error) {
	specs, err := c.Cells()
	if err != nil {
		return nil, err
	}
	started := time.Now()
	timing := c.Timing
	if timing == "" {
		timing = "none"
	}
	run := &report.Run{ID: started.UTC().Format("20060102-150405"), Started: started, Scenario: testbed.ScenarioSherman, Baseline: testbed.ShermanPlain}
	if len(specs) > 0 {
		s := specs[0]
		run.Config = [][2]string{
			{"clock", "virtual: every time and rate below is simulated time (testbed/sim, docs/sim.md)"},
			{"system", "Sherman (sherman/): B-link tree, 1 KB pages, locks in the memory node's device memory, clients and directory under the virtual-time scheduler"},
			{"rack", fmt.Sprintf("1 memory node, %d client hosts behind a hub (threads spread over them, each its own QPs), the middlebox node (%d cores, %v per packet) between, 100 Gb/s links", max(1, min(s.ClientHosts, s.Threads)), MiddleboxCores, MiddleboxPacketTime)},
			{"modes", "plain: every thread CASes lock words; hierarchical: Sherman's CN-local lock table with hand-over (<= 8); cas-to-write: the middlebox moves the lock region onto one shared connection and converts lock CAS to WRITE; cas-to-write-node: the data region on the shared connection too"},
			{"RNIC timing model", "ConnectX-5 model (rnic.VirtualConnectX5) on every RNIC; memory node's atomic caps from --timing " + timing},
			{"client CPU per operation", DefaultClientCPU.String()},
			{"key space", fmt.Sprintf("%d keys, key = (CityHash64(n)+1) mod key space (Sherman's to_key); %.0f%% loaded before the run", s.KeySpace, 100*s.WarmRatio)},
			{"operations", "search with probability read ratio, else insert (update or insert); zipf is YCSB's zipfian over key numbers"},
			{"duration per cell", fmt.Sprintf("%s measured after %s warm-up, virtual time", s.Duration, s.Warmup)},
			{"seed", strconv.FormatUint(s.Seed, 10)},
		}
	}
	return run, runCells(ctx, run, len(specs), progress,
		func(i int) string {
			return fmt.Sprintf("%s threads=%d %s", specs[i].Workload(), specs[i].Threads, specs[i].Mode)
		},
		func(i int) (report.Cell, error) { return RunShermanCell(ctx, specs[i]) })
}
