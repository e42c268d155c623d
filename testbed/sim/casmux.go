package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
)

// Middlebox constants (docs/sim.md gives the sources).
const (
	// MiddleboxPacketTime is one DPDK core's time per packet: SwordBox
	// section 6.3, Figure 10, one core caps CAS-to-WRITE at 2.8 Mops, and
	// each operation crosses the core twice (request and answer).
	MiddleboxPacketTime = time.Second / (2 * 2_800_000)
	// MiddleboxCores is the middlebox's cores when every client QP may
	// have its own (section 6.3: 24 cores, one per client thread).
	MiddleboxCores = 24
)

// Middlebox is the middlebox node: the project's deterministic engine
// (middlebox.Engine) behind Cores cores, each serving its packets one
// after the other, MiddleboxPacketTime each. A client-side frame goes to
// the core of its UDP source port (its QP), a server-side frame to the
// core of its destination QP; with one core everything shares it (a
// multiplexed connection is served by one core, as DPDK's TX rule makes
// it on the paper's middlebox).
type Middlebox struct {
	E     *middlebox.Engine
	sim   *Sim
	out   *middlebox.Out
	per   int64
	free  []int64
	Links [2]*Link // by side: towards clients, towards servers
}

// NewMiddlebox makes a middlebox node with cores cores running cfg.
func NewMiddlebox(s *Sim, cfg middlebox.Config, cores int) (*Middlebox, error) {
	if cores < 1 || cores > 256 {
		return nil, fmt.Errorf("sim: middlebox cores %d: want 1 to 256", cores)
	}
	e, err := middlebox.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: middlebox: %w", err)
	}
	return &Middlebox{E: e, sim: s, out: middlebox.NewOut(64, 64<<10), per: int64(MiddleboxPacketTime), free: make([]int64, cores)}, nil
}

// Event implements Handler: a frame arrived on side arg.
func (m *Middlebox) Event(s *Sim, arg uint64, f *Frame) {
	if f == nil {
		return
	}
	side := middlebox.Side(arg)
	core := 0
	if len(m.free) > 1 {
		var p roce.Packet
		if roce.ParseInto(&p, f.B) == nil {
			if side == middlebox.ClientSide {
				core = int(p.UDP.SrcPort()) % len(m.free)
			} else {
				core = int(p.BTH.DestQP()) % len(m.free)
			}
		}
	}
	start := max(s.now, m.free[core])
	m.free[core] = start + m.per
	m.out.Reset()
	m.E.Process(start, side, f.B, m.out)
	for i, fr := range m.out.Frames {
		m.Links[m.out.Sides[i]].Send(start+m.per, fr)
	}
}

// RunCASMux runs one cell of the cas-mux scenario (SwordBox Figure 10) in
// virtual time: spec.QPs client QPs on one client RNIC, each a goroutine
// under the scheduler in a closed loop of lock CMP_SWAP(0 -> 1) until it
// succeeds, then unlock CMP_SWAP(1 -> 0), all on one word of the memory
// node, through the middlebox over 100 Gb/s links. In mode cas every
// client QP has its own connection and core; in cas-to-write the engine
// multiplexes them onto one server connection, on one core, and replaces
// each CMP_SWAP by a WRITE of its outcome. The memory node's NIC runs the
// virtual ConnectX-5 model with spec.Timing's atomic caps when set. It
// checks mutual exclusion as it goes.
func RunCASMux(ctx context.Context, spec testbed.CASMuxSpec, seed uint64) (report.Cell, error) {
	cell := report.Cell{System: "lock", Scenario: testbed.ScenarioCASMux, Mode: spec.Mode, Workload: "lock", Param: fmt.Sprintf("qps=%d", spec.QPs), Clients: spec.QPs}
	if spec.QPs <= 0 || spec.QPs > 1024 {
		return cell, fmt.Errorf("sim: cas-mux: %d QPs: want 1 to 1024", spec.QPs)
	}
	conv, cores := false, min(spec.QPs, MiddleboxCores)
	switch spec.Mode {
	case testbed.ModeCAS:
	case testbed.ModeCASToWrite:
		conv, cores = true, 1
	default:
		return cell, fmt.Errorf("sim: cas-mux: mode %q: want %s or %s", spec.Mode, testbed.ModeCAS, testbed.ModeCASToWrite)
	}
	s := New(seed)
	nic := rnic.VirtualConnectX5()
	if spec.Timing != nil {
		nic.Timing = *spec.Timing
	}
	cliMAC, srvMAC, cliIP, srvIP := testbed.HostMAC(1), testbed.HostMAC(0), testbed.HostIP(1), testbed.HostIP(0)
	cli, err := NewHost(s, rnic.Config{Name: "client", MAC: cliMAC, IP: cliIP, Timeout: 500 * time.Millisecond}, nic)
	if err != nil {
		return cell, err
	}
	srv, err := NewHost(s, rnic.Config{Name: "mem0", MAC: srvMAC, IP: srvIP, Timeout: 500 * time.Millisecond}, nic)
	if err != nil {
		return cell, err
	}
	mr, err := srv.Device().Register(make([]byte, 4096), verbs.AccessAll)
	if err != nil {
		return cell, err
	}
	lock := mr.Addr()
	sch := NewSched(s)
	scq := srv.Device().NewCQ(64)
	type client struct {
		q   *rnic.QP
		cq  *CQ
		buf *rnic.MR
	}
	var clients []client
	var conns []middlebox.ConnConfig
	for i := 0; i < spec.QPs; i++ {
		cq := sch.NewCQ(cli, 16)
		q, err := cli.Device().NewQP(verbs.QPConfig{SendCQ: cq.Q, RecvCQ: cq.Q})
		if err != nil {
			return cell, err
		}
		sq, err := srv.Device().NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
		if err != nil {
			return cell, err
		}
		psn := uint32(i*5003+1) & 0xffffff
		if err := rnic.Connect(q, sq, psn, 77); err != nil {
			return cell, err
		}
		buf, err := cli.Device().Register(make([]byte, 8), verbs.AccessAll)
		if err != nil {
			return cell, err
		}
		clients = append(clients, client{q, cq, buf})
		conns = append(conns, testbed.MiddleboxConn(cliMAC, srvMAC, cliIP, srvIP, q, sq, psn))
	}
	mb, err := NewMiddlebox(s, testbed.CASMuxConfig(srvIP, conns, lock, conv), cores)
	if err != nil {
		return cell, err
	}
	link := func(h Handler, arg uint64, q int) (*Link, error) {
		return NewLink(s, LinkConfig{QueueBytes: q}, h, arg)
	}
	var up, down [2]*Link
	if up[0], err = link(mb, uint64(middlebox.ClientSide), DefaultHostQueueBytes); err != nil {
		return cell, err
	}
	if up[1], err = link(mb, uint64(middlebox.ServerSide), DefaultHostQueueBytes); err != nil {
		return cell, err
	}
	if down[0], err = link(cli, hostRx, DefaultHostQueueBytes); err != nil {
		return cell, err
	}
	if down[1], err = link(srv, hostRx, DefaultHostQueueBytes); err != nil {
		return cell, err
	}
	cli.Attach(up[0])
	srv.Attach(up[1])
	mb.Links = down

	var measuring bool
	var ops, attempts, locks uint64
	all := newHist()
	end := int64(spec.Warmup + spec.Duration)
	for i := range clients {
		c := clients[i]
		sch.Go(fmt.Sprintf("lock%d", i), func(ctx context.Context) error {
			wcs := make([]verbs.WC, 1)
			sg := []verbs.SGE{{Addr: c.buf.Addr(), Length: 8, LKey: c.buf.LKey()}}
			wr := []verbs.SendWR{{Op: verbs.OpCompareSwap, RemoteAddr: lock, RKey: mr.RKey(), Flags: verbs.Signaled, SG: sg}}
			do := func(cmp, swap uint64) (uint64, error) {
				wr[0].Compare, wr[0].SwapAdd = cmp, swap
				t0 := s.Now()
				if err := c.q.PostSend(wr); err != nil {
					return 0, err
				}
				if _, err := c.cq.Wait(ctx, wcs); err != nil {
					return 0, fmt.Errorf("client %d: CMP_SWAP: %w", i, err)
				}
				if wcs[0].Status != verbs.StatusSuccess {
					return 0, fmt.Errorf("client %d: CMP_SWAP %v", i, wcs[0].Status)
				}
				if measuring {
					all.RecordValue(s.Now() - t0)
					ops++
				}
				return wcs[0].Orig, nil
			}
			for s.Now() < end {
				for {
					v, err := do(0, 1)
					if err != nil {
						return err
					}
					if measuring {
						attempts++
					}
					if v == 0 {
						break
					}
					if v != 1 {
						return fmt.Errorf("sim: cas-mux: client %d: lock word holds %d", i, v)
					}
					if s.Now() >= end {
						return nil // not holding the lock: nothing to release
					}
				}
				if measuring {
					locks++
				}
				v, err := do(1, 0)
				if err != nil {
					return err
				}
				if v != 1 {
					return fmt.Errorf("sim: cas-mux: client %d: unlock found %d: mutual exclusion broken", i, v)
				}
			}
			return nil
		})
	}
	sch.Run(int64(spec.Warmup))
	w0 := up[0].Bytes + up[1].Bytes
	measuring = true
	sch.Run(end)
	measuring = false
	w1 := up[0].Bytes + up[1].Bytes
	sch.Run(end + int64(10*time.Millisecond))
	if err := sch.Stop(); err != nil {
		return cell, err
	}
	for _, p := range sch.Procs() {
		if p.Err != nil {
			return cell, fmt.Errorf("%s: %w", p.name, p.Err)
		}
	}
	n := float64(ops)
	cell.Ops, cell.Seconds = ops, spec.Duration.Seconds()
	cell.OpsPerSec = n / spec.Duration.Seconds()
	cell.P50us, cell.P99us, cell.P999us = testbed.Percentile(all, 50), testbed.Percentile(all, 99), testbed.Percentile(all, 99.9)
	cell.ReadP99us, cell.WriteP99us = math.NaN(), cell.P99us
	cell.BytesPerOp = float64(w1-w0) / n
	cell.VerbsPerOp = 1
	cell.CASSuccessRate = math.NaN()
	if attempts > 0 {
		cell.CASSuccessRate = float64(locks) / float64(attempts)
		cell.RetriesPerOp = float64(attempts-locks) / n
	}
	mc := mb.E.Counters()
	cell.Steering = map[string]uint64{"cas_to_write": mc.CASToWrite, "remapped": mc.Remapped}
	return cell, nil
}
