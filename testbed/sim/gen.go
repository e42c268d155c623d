package sim

import (
	"fmt"

	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// GenConfig configures a raw verbs traffic generator: QPs from one host to
// one memory node, each keeping Window requests outstanding, as the
// microbenchmarks of SwordBox Figures 3 and 4 do.
type GenConfig struct {
	// Op is the verb: verbs.OpWrite, OpRead, OpCompareSwap or OpFetchAdd.
	Op verbs.Opcode
	// QPs (1 to 1024) and Window (outstanding requests per QP, 1 to 1024).
	QPs, Window int
	// Size is the payload of a READ or WRITE (default 8).
	Size int
	// SameAddr sends every request to one word; otherwise each request
	// slot has its own 64-byte line (data-independent addresses).
	SameAddr bool
	// DeviceMemory targets a region of the memory node's device memory
	// instead of its host memory region.
	DeviceMemory bool
}

// Gen is a running generator: on every engine step of its host it takes
// the completions and posts the next request of each completed slot.
type Gen struct {
	cfg    GenConfig
	sim    *Sim
	qps    []*rnic.QP
	byQPN  map[uint32]int
	cq     *rnic.CQ
	wcs    []verbs.WC
	wr     [1]verbs.SendWR
	sges   [][]verbs.SGE // by qp*Window+slot
	remote verbs.RemoteRegion
	next   uint64
	line   int

	// Done counts successful completions from MeasureFrom on; Errors
	// failed ones (the first is kept in Err).
	MeasureFrom int64
	Done        uint64
	Errors      uint64
	Err         error
}

// NewGen sets up a generator on host h against memory node m of r and
// posts its first windows at the current virtual time.
func NewGen(r *Rack, h *Host, m int, cfg GenConfig) (*Gen, error) {
	switch cfg.Op {
	case verbs.OpWrite, verbs.OpRead, verbs.OpCompareSwap, verbs.OpFetchAdd:
	default:
		return nil, fmt.Errorf("sim: generator verb %v: want WRITE, READ, CMP_SWAP or FETCH_ADD", cfg.Op)
	}
	if cfg.QPs < 1 || cfg.QPs > 1024 {
		return nil, fmt.Errorf("sim: generator QPs %d: want 1 to 1024", cfg.QPs)
	}
	if cfg.Window < 1 || cfg.Window > 1024 {
		return nil, fmt.Errorf("sim: generator window %d: want 1 to 1024", cfg.Window)
	}
	if cfg.Size == 0 {
		cfg.Size = 8
	}
	if cfg.Size < 1 || cfg.Size > 4096 {
		return nil, fmt.Errorf("sim: generator size %d: want 1 to 4096", cfg.Size)
	}
	if m < 0 || m >= len(r.Memory) {
		return nil, fmt.Errorf("sim: generator memory node %d: the rack has %d", m, len(r.Memory))
	}
	if h.AfterFire != nil {
		return nil, fmt.Errorf("sim: host %s already runs a generator", h.Device().Name())
	}
	slots := cfg.QPs * cfg.Window
	line := 64
	if cfg.Size > line {
		line = (cfg.Size + 63) &^ 63
	}
	span := line * slots
	if cfg.SameAddr {
		span = line
	}
	g := &Gen{cfg: cfg, sim: r.Sim, byQPN: map[uint32]int{}, wcs: make([]verbs.WC, 64)}
	mem := r.Memory[m]
	if cfg.DeviceMemory {
		dm, err := mem.Device().AllocDM(span, verbs.AccessAll)
		if err != nil {
			return nil, fmt.Errorf("sim: generator: %w", err)
		}
		g.remote = dm.Remote()
	} else {
		g.remote = r.MemoryMR[m].Remote()
		if uint64(span) > g.remote.Len {
			return nil, fmt.Errorf("sim: generator needs %d bytes, the region has %d", span, g.remote.Len)
		}
	}
	local, err := h.Device().Register(make([]byte, line*slots), verbs.AccessAll)
	if err != nil {
		return nil, fmt.Errorf("sim: generator: %w", err)
	}
	g.cq = h.Device().NewCQ(4 * slots)
	for i := 0; i < cfg.QPs; i++ {
		q, _, err := r.Connect(h, g.cq, mem, nil, cfg.Window)
		if err != nil {
			return nil, fmt.Errorf("sim: generator: %w", err)
		}
		g.byQPN[q.QPN()] = i
		g.qps = append(g.qps, q)
	}
	n := uint32(cfg.Size)
	if cfg.Op == verbs.OpCompareSwap || cfg.Op == verbs.OpFetchAdd {
		n = 8
	}
	for s := 0; s < slots; s++ {
		g.sges = append(g.sges, []verbs.SGE{{Addr: local.Addr() + uint64(s*line), Length: n, LKey: local.LKey()}})
	}
	g.line = line
	h.AfterFire = g.poll
	for i := range g.qps {
		for s := 0; s < cfg.Window; s++ {
			g.post(i, s)
		}
	}
	if g.Err != nil {
		return nil, g.Err
	}
	return g, nil
}

func (g *Gen) post(qi, slot int) {
	k := qi*g.cfg.Window + slot
	addr := g.remote.Addr
	if !g.cfg.SameAddr {
		addr += uint64(k * g.line)
	}
	g.next++
	g.wr[0] = verbs.SendWR{ID: uint64(k), Op: g.cfg.Op, SG: g.sges[k], RemoteAddr: addr, RKey: g.remote.RKey,
		Compare: g.next - 1, SwapAdd: g.next, Flags: verbs.Signaled}
	if err := g.qps[qi].PostSend(g.wr[:]); err != nil && g.Err == nil {
		g.Err = fmt.Errorf("sim: generator: post: %w", err)
	}
}

func (g *Gen) poll() {
	for {
		k := g.cq.Poll(g.wcs)
		if k == 0 {
			return
		}
		for _, wc := range g.wcs[:k] {
			if wc.Status != verbs.StatusSuccess {
				g.Errors++
				if g.Err == nil {
					g.Err = fmt.Errorf("sim: generator: completion %v on QP %#x", wc.Status, wc.QPN)
				}
				continue
			}
			if g.sim.now >= g.MeasureFrom {
				g.Done++
			}
			qi := g.byQPN[wc.QPN]
			g.post(qi, int(wc.ID)%g.cfg.Window)
		}
	}
}

// Measure runs the simulation for warm of virtual time, then counts the
// completions of span and returns them in millions per second.
func (g *Gen) Measure(warm, span int64) float64 {
	s := g.sim
	s.RunUntil(s.now + warm)
	g.MeasureFrom, g.Done = s.now, 0
	s.RunUntil(s.now + span)
	return float64(g.Done) / (float64(span) / 1e3)
}
