package testbed

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/testbed/report"
)

// Modes of the cas-mux scenario (SwordBox Figure 10).
const (
	// ModeCAS: every client's CMP_SWAP goes through the middlebox on its own
	// QP, unchanged; the memory node's NIC serializes them on one word.
	ModeCAS = "cas"
	// ModeCASToWrite: the middlebox multiplexes every client onto one
	// server-side connection and replaces each CMP_SWAP by a WRITE of its
	// outcome, answering the client with an ATOMIC ACK.
	ModeCASToWrite = "cas-to-write"
)

// CASMuxSpec is one cell of the cas-mux scenario: QPs client QPs, each in a
// closed loop of lock CMP_SWAP(0 -> 1) until it succeeds, then unlock
// CMP_SWAP(1 -> 0), all on one 8-byte word of the memory node, through the
// middlebox (SwordBox section 6.3, Figure 10).
type CASMuxSpec struct {
	Mode     string
	QPs      int
	Duration time.Duration
	Warmup   time.Duration
	// Timing is the memory node's NIC timing model; the paper's effect
	// needs one (CMP_SWAP on one address is capped at the NIC, WRITE is not).
	Timing *rnic.Timing
}

// RunCASMux runs one cas-mux cell. Every operation is one CMP_SWAP from the
// client's view; CASSuccessRate is the fraction of lock attempts that took
// the lock. It checks mutual exclusion as it goes: a lock that returns
// anything but 0 or 1, or an unlock that does not find 1, is an error.
func RunCASMux(ctx context.Context, spec CASMuxSpec) (report.Cell, error) {
	cell := report.Cell{System: "lock", Scenario: ScenarioCASMux, Mode: spec.Mode, Workload: "lock", Param: fmt.Sprintf("qps=%d", spec.QPs), Clients: spec.QPs}
	if spec.QPs <= 0 {
		return cell, fmt.Errorf("testbed: cas-mux: %d QPs", spec.QPs)
	}
	conv := false
	switch spec.Mode {
	case ModeCAS:
	case ModeCASToWrite:
		conv = true
	default:
		return cell, fmt.Errorf("testbed: cas-mux: mode %q: want %s or %s", spec.Mode, ModeCAS, ModeCASToWrite)
	}
	cliMAC, srvMAC := HostMAC(1), HostMAC(0)
	cliIP, srvIP := HostIP(1), HostIP(0)
	cliPort, mbC, err := netio.NewLink("client", "mbox-client-side", netio.LinkConfig{Capacity: 8192})
	if err != nil {
		return cell, err
	}
	mbS, srvPort, err := netio.NewLink("mbox-server-side", "memnode", netio.LinkConfig{Capacity: 8192})
	if err != nil {
		return cell, err
	}
	cli, err := rnic.New(cliPort, rnic.Config{Name: "client", MAC: cliMAC, IP: cliIP, Timeout: 500 * time.Millisecond})
	if err != nil {
		return cell, err
	}
	defer cli.Close()
	srv, err := rnic.New(srvPort, rnic.Config{Name: "mem0", MAC: srvMAC, IP: srvIP, Timeout: 500 * time.Millisecond, Timing: spec.Timing})
	if err != nil {
		return cell, err
	}
	defer srv.Close()
	mr, err := srv.Register(make([]byte, 4096), verbs.AccessAll)
	if err != nil {
		return cell, err
	}
	lock := mr.Addr()
	scq := srv.NewCQ(64)
	type client struct {
		q   *rnic.QP
		cq  *rnic.CQ
		buf *rnic.MR
	}
	var clients []client
	var conns []middlebox.ConnConfig
	for i := 0; i < spec.QPs; i++ {
		cq := cli.NewCQ(16)
		q, err := cli.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			return cell, err
		}
		s, err := srv.NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
		if err != nil {
			return cell, err
		}
		psn := uint32(i*5003+1) & 0xffffff
		if err := rnic.Connect(q, s, psn, 77); err != nil {
			return cell, err
		}
		buf, err := cli.Register(make([]byte, 8), verbs.AccessAll)
		if err != nil {
			return cell, err
		}
		clients = append(clients, client{q, cq, buf})
		conns = append(conns, MiddleboxConn(cliMAC, srvMAC, cliIP, srvIP, q, s, psn))
	}
	sh, err := middlebox.NewSharded(CASMuxConfig(srvIP, conns, lock, conv), 1)
	if err != nil {
		return cell, fmt.Errorf("testbed: cas-mux: middlebox: %w", err)
	}
	cp, sp := &countingPort{Port: mbC}, &countingPort{Port: mbS}
	loop := &middlebox.Loop{S: sh, Ports: [2]netio.Port{cp, sp}}
	lctx, cancel := context.WithCancel(ctx)
	var lwg sync.WaitGroup
	lwg.Add(1)
	go func() { defer lwg.Done(); _ = loop.Run(lctx) }()
	defer func() { cancel(); mbC.Close(); mbS.Close(); lwg.Wait() }()

	var measuring atomic.Bool
	var ops, attempts, locks atomic.Uint64
	var stop atomic.Bool
	hists := make([]*hdrhistogram.Histogram, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i := range clients {
		hists[i] = newHist()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := clients[i]
			wcs := make([]verbs.WC, 1)
			sg := []verbs.SGE{{Addr: c.buf.Addr(), Length: 8, LKey: c.buf.LKey()}}
			wr := []verbs.SendWR{{Op: verbs.OpCompareSwap, RemoteAddr: lock, RKey: mr.RKey(), Flags: verbs.Signaled, SG: sg}}
			do := func(cmp, swap uint64) (uint64, error) {
				wr[0].Compare, wr[0].SwapAdd = cmp, swap
				t0 := time.Now()
				if err := c.q.PostSend(wr); err != nil {
					return 0, err
				}
				wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := c.cq.Wait(wctx, wcs)
				wcancel()
				if err != nil {
					return 0, fmt.Errorf("client %d: CMP_SWAP: %w", i, err)
				}
				if wcs[0].Status != verbs.StatusSuccess {
					return 0, fmt.Errorf("client %d: CMP_SWAP %v", i, wcs[0].Status)
				}
				if measuring.Load() {
					hists[i].RecordValue(int64(time.Since(t0)))
					ops.Add(1)
				}
				return wcs[0].Orig, nil
			}
			for !stop.Load() {
				for {
					v, err := do(0, 1)
					if err != nil {
						errs[i] = err
						return
					}
					if measuring.Load() {
						attempts.Add(1)
					}
					if v == 0 {
						break
					}
					if v != 1 {
						errs[i] = fmt.Errorf("testbed: cas-mux: client %d: lock word holds %d", i, v)
						return
					}
					if stop.Load() {
						return // not holding the lock: nothing to release
					}
				}
				if measuring.Load() {
					locks.Add(1)
				}
				v, err := do(1, 0)
				if err != nil {
					errs[i] = err
					return
				}
				if v != 1 {
					errs[i] = fmt.Errorf("testbed: cas-mux: client %d: unlock found %d: mutual exclusion broken", i, v)
					return
				}
			}
		}(i)
	}
	// The warm-up and the measurement end early when ctx does (SIGINT or
	// SIGTERM in the bench): the cell then has no result.
	wait := func(d time.Duration) bool { return rnic.WallClock{}.Sleep(ctx, d) == nil }
	var w0, w1 uint64
	var elapsed time.Duration
	measured := wait(spec.Warmup)
	if measured {
		w0 = cp.bytes.Load() + sp.bytes.Load()
		measuring.Store(true)
		start := time.Now()
		measured = wait(spec.Duration)
		measuring.Store(false)
		elapsed = time.Since(start)
		w1 = cp.bytes.Load() + sp.bytes.Load()
	}
	stop.Store(true)
	wg.Wait()
	if !measured {
		return cell, fmt.Errorf("testbed: cas-mux: %w", ctx.Err())
	}
	for _, e := range errs {
		if e != nil {
			return cell, e
		}
	}
	all := newHist()
	for _, h := range hists {
		all.Merge(h)
	}
	n := float64(ops.Load())
	cell.Ops, cell.Seconds = ops.Load(), elapsed.Seconds()
	cell.OpsPerSec = n / elapsed.Seconds()
	cell.P50us, cell.P99us, cell.P999us = Percentile(all, 50), Percentile(all, 99), Percentile(all, 99.9)
	cell.ReadP99us, cell.WriteP99us = math.NaN(), cell.P99us
	cell.BytesPerOp = float64(w1-w0) / n
	cell.VerbsPerOp = 1
	cell.CASSuccessRate = math.NaN()
	if a := attempts.Load(); a > 0 {
		cell.CASSuccessRate = float64(locks.Load()) / float64(a)
		cell.RetriesPerOp = float64(a-locks.Load()) / n
	}
	c := sh.Counters()
	cell.Steering = map[string]uint64{"cas_to_write": c.CASToWrite, "remapped": c.Remapped}
	return cell, nil
}

// MiddleboxConn describes the connection of client QP q (on the host at
// cliMAC, cliIP) to server QP s (at srvMAC, srvIP), starting at psn, as the
// middlebox's configuration wants it. The UDP ports are the ones rnic picks
// for a QP: 0xC000 | the low 14 bits of its QPN.
func MiddleboxConn(cliMAC, srvMAC [6]byte, cliIP, srvIP [4]byte, q, s *rnic.QP, psn uint32) middlebox.ConnConfig {
	return middlebox.ConnConfig{ClientIP: netip.AddrFrom4(cliIP).String(), ServerIP: netip.AddrFrom4(srvIP).String(),
		ClientMAC: net.HardwareAddr(cliMAC[:]).String(), ServerMAC: net.HardwareAddr(srvMAC[:]).String(),
		ClientPort: 0xC000 | uint16(q.QPN()&0x3fff), ServerPort: 0xC000 | uint16(s.QPN()&0x3fff),
		ClientQP: q.QPN(), ServerQP: s.QPN(), PSN: psn, PSNKnown: true}
}

// CASMuxConfig is the middlebox configuration of a cas-mux cell: conns to
// the one memory node at srvIP and, with conv, the 8-byte lock word at lock
// remapped and its CMP_SWAPs turned into WRITEs.
func CASMuxConfig(srvIP [4]byte, conns []middlebox.ConnConfig, lock uint64, conv bool) middlebox.Config {
	mcfg := middlebox.Config{Servers: []middlebox.ServerConfig{{IP: netip.AddrFrom4(srvIP).String()}}, Conns: conns, PMTU: 1024}
	if conv {
		mcfg.Servers[0].Remap = []middlebox.Range{{Lo: lock, Hi: lock + 8}}
		mcfg.Servers[0].CASToWrite = []middlebox.Range{{Lo: lock, Hi: lock + 8}}
		mcfg.Words = []middlebox.WordConfig{{VA: lock, Value: 0}}
	}
	return mcfg
}
