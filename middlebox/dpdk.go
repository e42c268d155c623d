//go:build dpdk

package middlebox

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/netio/dpdk"
)

// dpdkBurst is the number of mbufs moved per RX burst.
const dpdkBurst = 32

// mbufSlice returns n mbuf pointers in memory allocated as plain words.
// The pointers are to DPDK memory, never to Go memory, so the collector
// need not see them; and cgo's pointer check, which walks the whole
// allocation of every slice passed to C looking for Go pointers, then
// skips it instead of costing more than the rest of the data path.
func mbufSlice(n int) []*dpdk.Mbuf {
	w := make([]uintptr, n)
	return unsafe.Slice((**dpdk.Mbuf)(unsafe.Pointer(unsafe.SliceData(w))), n)
}

// dpdkCore is the zero-copy loop of one engine over DPDK ports: it receives
// bursts of mbufs, lets the engine rewrite each frame inside its mbuf,
// transmits the rewritten mbuf itself (trimmed when a CMP_SWAP became a
// shorter WRITE), copies generated frames (ACKs, NAKs, replays) into fresh
// mbufs, and frees what the engine dropped or consumed.
type dpdkCore struct {
	eng  *Engine
	out  *Out
	pool *dpdk.Mempool
	tx   [2]*dpdk.EthPort // by Side
	rx   []*dpdk.EthPort
	side []Side // side of each rx port; sideByIP: decide per frame
	// sideByIP, for the benchmark's single input ring: a frame whose IPv4
	// source is a managed server arrives on the server side.
	sideByIP bool
	sink     *dpdk.EthPort // benchmark only: a loopback output to drain

	in      []*dpdk.Mbuf // own allocations: cgo refuses memory that also holds Go pointers
	gen     []*dpdk.Mbuf
	free    []*dpdk.Mbuf
	drain   []*dpdk.Mbuf
	txq     [2][]*dpdk.Mbuf
	frames  uint64
	outN    uint64
	noMbuf  uint64
	txDrops uint64
}

func (d *dpdkCore) sideOf(f []byte) Side {
	if len(f) >= 30 && f[12] == 0x08 && f[13] == 0 {
		if _, ok := d.eng.serverOf(f[26:30]); ok {
			return ServerSide
		}
	}
	return ClientSide
}

// poll runs one round: every rx port once. It reports whether any frame
// was received. Per burst: one RX call, the engine on every frame (all
// output into one Out), one bulk allocation for the generated frames, one
// TX call per side and one bulk free; a rewritten frame leaves in the mbuf
// it came in (its length set in Go, no cgo call).
func (d *dpdkCore) poll(now int64) bool {
	if d.in == nil {
		d.in = mbufSlice(dpdkBurst)
		d.gen = mbufSlice(4096)[:0]
		d.free = mbufSlice(4096 + dpdkBurst)[:0]
		d.txq[0] = mbufSlice(4096 + dpdkBurst)[:0]
		d.txq[1] = mbufSlice(4096 + dpdkBurst)[:0]
	}
	got := false
	for pi, p := range d.rx {
		n := p.RxBurst(0, d.in)
		if n == 0 {
			continue
		}
		got = true
		d.out.Reset()
		var owner [dpdkBurst + 1]int // Out index where input i's frames start
		for i, m := range d.in[:n] {
			owner[i] = d.out.Len()
			f := m.Data()
			side := d.side[pi%len(d.side)]
			if d.sideByIP {
				side = d.sideOf(f)
			}
			d.eng.Process(now, side, f, d.out)
		}
		owner[n] = d.out.Len()
		d.frames += uint64(n)
		d.outN += uint64(d.out.Len())
		ngen := d.out.Len()
		for _, fi := range d.out.FromInput {
			if fi {
				ngen--
			}
		}
		if ngen > cap(d.gen) {
			ngen = cap(d.gen)
		}
		d.gen = d.gen[:ngen]
		if ngen > 0 && d.pool.AllocBulk(d.gen) != nil {
			d.gen = d.gen[:0]
			d.noMbuf += uint64(ngen)
		}
		gi := 0
		d.free = d.free[:0]
		for i, m := range d.in[:n] {
			used := false
			for j := owner[i]; j < owner[i+1]; j++ {
				o, s := d.out.Frames[j], d.out.Sides[j]
				if d.out.FromInput[j] && !used {
					used = true
					if len(o) != m.Len() {
						_ = m.SetData(o) // same bytes: sets the shorter length (CMP_SWAP became WRITE)
					}
					d.txq[s] = append(d.txq[s], m)
					continue
				}
				if gi < len(d.gen) {
					g := d.gen[gi]
					gi++
					if g.SetData(o) == nil {
						d.txq[s] = append(d.txq[s], g)
					} else {
						d.free = append(d.free, g)
						d.noMbuf++
					}
				}
			}
			if !used {
				d.free = append(d.free, m)
			}
		}
		if d.tx[0] == d.tx[1] { // one port for both sides (the benchmark): one TX call
			d.txq[0] = append(d.txq[0], d.txq[1]...)
			d.txq[1] = d.txq[1][:0]
		}
		for s := range d.txq {
			q := d.txq[s]
			for len(q) > 0 {
				k := d.tx[s].TxBurst(0, q)
				if k == 0 {
					break
				}
				q = q[k:]
			}
			if len(q) > 0 {
				d.txDrops += uint64(len(q))
				d.free = append(d.free, q...)
			}
			d.txq[s] = d.txq[s][:0]
		}
		dpdk.FreeBulk(d.free)
		if d.sink != nil { // benchmark: the output loops back; free it here (TX completion)
			if d.drain == nil {
				d.drain = mbufSlice(1024)
			}
			for k := d.sink.RxBurst(0, d.drain); k > 0; k = d.sink.RxBurst(0, d.drain) {
				dpdk.FreeBulk(d.drain[:k])
				if k < len(d.drain) {
					break
				}
			}
		}
	}
	return got
}

// RunDPDK runs one engine (shard 0 of s) between two DPDK ports on the
// calling goroutine's OS thread until ctx is done. Several cores need one
// port pair each (RSS is not used): run one RunDPDK per pair.
func RunDPDK(ctx context.Context, s *Sharded, cfg DPDKConfig) error {
	if s.Shards() != 1 {
		return fmt.Errorf("middlebox: DPDK run drives one engine per port pair; got %d shards", s.Shards())
	}
	if err := dpdk.Init(cfg.EAL); err != nil {
		return err
	}
	pool, err := dpdk.NewMempool(fmt.Sprintf("mbox%d", os.Getpid()), 8191, 0, 0)
	if err != nil {
		return err
	}
	cp, err := dpdk.OpenPort(cfg.ClientPort, dpdk.PortConfig{Pool: pool})
	if err != nil {
		return fmt.Errorf("middlebox: client side: %w", err)
	}
	defer cp.Close()
	sp, err := dpdk.OpenPort(cfg.ServerPort, dpdk.PortConfig{Pool: pool})
	if err != nil {
		return fmt.Errorf("middlebox: server side: %w", err)
	}
	defer sp.Close()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sh := s.shards[0]
	d := &dpdkCore{eng: sh.eng, out: sh.out, pool: pool, tx: [2]*dpdk.EthPort{cp, sp},
		rx: []*dpdk.EthPort{cp, sp}, side: []Side{ClientSide, ServerSide}}
	start := time.Now()
	idle := 0
	for ctx.Err() == nil {
		sh.mu.Lock()
		got := d.poll(int64(time.Since(start)))
		sh.mu.Unlock()
		if got {
			idle = 0
		} else if idle++; idle > 1024 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	return nil
}

// BenchDPDK replays the mix through the engine's zero-copy DPDK loop. Per
// core, on one OS thread: a chunk of the recorded mix is transmitted, in
// trace order, on a loopback net_ring vdev (untimed: it comes back as that
// vdev's RX, as if from the wire); then the middlebox loop receives it in
// bursts, processes it and transmits on a second vdev, whose loopback it
// drains and frees after each burst (as a driver reclaims transmitted
// mbufs), until the input is empty (timed). Mpps per core: frames over the
// timed wall time, and over the thread's CPU time in it.
func BenchDPDK(cfg DPDKBenchConfig) (BenchResult, error) {
	if cfg.Cores < 1 {
		return BenchResult{}, fmt.Errorf("middlebox: bench: %d cores", cfg.Cores)
	}
	io := "dpdk"
	if cfg.Ring {
		io = "ring"
	}
	vdevs := cfg.Vdevs
	if len(vdevs) == 0 {
		for k := 0; k < cfg.Cores; k++ {
			vdevs = append(vdevs, fmt.Sprintf("net_ring%d", 2*k), fmt.Sprintf("net_ring%d", 2*k+1))
		}
	}
	if len(vdevs) != 2*cfg.Cores {
		return BenchResult{}, fmt.Errorf("middlebox: bench: %d vdevs for %d cores: want two per core", len(vdevs), cfg.Cores)
	}
	eal := cfg.EAL
	if len(eal) == 0 {
		eal = dpdk.VirtualArgs(fmt.Sprintf("swordbox-mbox-%d", os.Getpid()), vdevs...)
		for i := range eal {
			if eal[i] == "-m" && i+1 < len(eal) {
				eal[i+1] = fmt.Sprint(256 + 128*cfg.Cores) // room for one pool per core
			}
		}
	}
	if err := dpdk.Init(eal); err != nil {
		return BenchResult{}, err
	}
	res := BenchResult{IO: io, Cores: cfg.Cores, Mix: cfg.Mix, PerCore: make([]CoreStats, cfg.Cores)}
	errs := make([]error, cfg.Cores)
	var wg sync.WaitGroup
	start := time.Now()
	for k := 0; k < cfg.Cores; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			errs[k] = benchDPDKCore(cfg, k, devName(vdevs[2*k]), devName(vdevs[2*k+1]), &res.PerCore[k])
		}(k)
	}
	wg.Wait()
	res.Wall = time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	for _, c := range res.PerCore {
		res.TotalMpp += c.Mpps
		res.TotalCPU += c.MppsCPU
	}
	return res, nil
}

func devName(vdev string) string {
	for i := 0; i < len(vdev); i++ {
		if vdev[i] == ',' {
			return vdev[:i]
		}
	}
	return vdev
}

func benchDPDKCore(cfg DPDKBenchConfig, k int, inName, outName string, st *CoreStats) error {
	mc := cfg.Mix
	mc.Server = byte(k + 1)
	mc.Seed += uint64(k)
	m, err := NewMix(mc)
	if err != nil {
		return err
	}
	e, err := New(m.EngineConfig())
	if err != nil {
		return err
	}
	pool, err := dpdk.NewMempool(fmt.Sprintf("mbox%d-%d", os.Getpid(), k), 8191, 0, 0)
	if err != nil {
		return err
	}
	in, err := dpdk.OpenPort(inName, dpdk.PortConfig{Pool: pool})
	if err != nil {
		return err
	}
	defer in.Close()
	outp, err := dpdk.OpenPort(outName, dpdk.PortConfig{Pool: pool})
	if err != nil {
		return err
	}
	defer outp.Close()
	d := &dpdkCore{eng: e, out: NewOut(4096, 1<<18), pool: pool, tx: [2]*dpdk.EthPort{outp, outp},
		rx: []*dpdk.EthPort{in}, side: []Side{ClientSide}, sideByIP: true, sink: outp}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Alternate, on this one thread: load a chunk of the recorded mix into
	// the input ring (untimed: this is the traffic source), then run the
	// middlebox loop until the ring is empty (timed, wall and thread CPU).
	const chunk = 512 // within net_ring's 1024-slot rings
	tr := NewTrace(4 * chunk)
	ms := mbufSlice(chunk)
	var wall time.Duration
	var cpu int64
	next := 0
	deadline := time.Now().Add(cfg.Duration)
	for time.Now().Before(deadline) {
		if next == len(tr.Frames) {
			m.Fill(tr, 4*chunk)
			next = 0
		}
		n := min(chunk, len(tr.Frames)-next)
		if err := pool.AllocBulk(ms[:n]); err != nil {
			return fmt.Errorf("middlebox: bench: %w", err)
		}
		for j := 0; j < n; j++ {
			if err := ms[j].SetData(tr.Frames[next+j]); err != nil {
				dpdk.FreeBulk(ms[:n])
				return err
			}
		}
		sent := 0
		for sent < n {
			k := in.TxBurst(0, ms[sent:n])
			if k == 0 {
				break
			}
			sent += k
		}
		if sent < n {
			dpdk.FreeBulk(ms[sent:n])
			return fmt.Errorf("middlebox: bench: input ring took %d of %d frames", sent, n)
		}
		next += n
		t0, c0 := time.Now(), threadCPU()
		for d.poll(0) {
		}
		cpu += threadCPU() - c0
		wall += time.Since(t0)
	}
	c := e.Counters()
	*st = CoreStats{FramesIn: d.frames, FramesOut: d.outN, Busy: wall.Seconds(), CPU: float64(cpu) / 1e9,
		Mpps: float64(d.frames) / wall.Seconds() / 1e6, Drops: c.TotalDrops() + d.noMbuf + d.txDrops,
		Counters: fmt.Sprintf("%s no-mbuf=%d tx-drops=%d", c.String(), d.noMbuf, d.txDrops)}
	if cpu > 0 {
		st.MppsCPU = float64(d.frames) / (float64(cpu) / 1e9) / 1e6
	}
	return nil
}

var _ = netio.MaxFrameSize
