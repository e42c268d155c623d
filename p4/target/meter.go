package target

import (
	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/swordbox/swordbox/p4/target/frontend"
	"google.golang.org/grpc/codes"
)

// Meters: v1model's meter (execute_meter) and direct_meter (read), as
// two-rate three-colour markers (RFC 2698, colour-blind), configured by
// P4Runtime's MeterEntry, DirectMeterEntry and TableEntry.meter_config.
//
//   - Colours are v1model's: GREEN 0, YELLOW 1, RED 2. A meter that was
//     never configured (or whose config was cleared) marks every packet
//     GREEN, as the specification's default.
//   - Both buckets start full when a config is written. Time is the
//     Device's clock (Options.Now, microseconds); tokens are kept in
//     millionths of a unit, so a rate in units per second adds exactly
//     rate tokens per microsecond.
//   - A direct meter runs when its table hits; read gives that colour, and
//     GREEN on a miss.
//   - Configs: every field >= 0, cir <= pir (RFC 2698), eburst unset (the
//     meters are trTCM), rates and bursts at most maxMeterValue; otherwise
//     INVALID_ARGUMENT. Per-colour counters (counter_data) are not kept:
//     setting them is UNIMPLEMENTED.

const (
	colorGreen  = 0
	colorYellow = 1
	colorRed    = 2
)

// maxMeterValue bounds rates (units per second) and bursts (units), so
// that tokens in millionths fit in 63 bits.
const maxMeterValue = 1 << 40

// meterState is one meter cell: its config and its two token buckets.
type meterState struct {
	cfg    *p4v1.MeterConfig // nil: unconfigured (GREEN)
	tc, tp int64             // tokens, in millionths of a unit
	last   uint64            // time of the last refill, microseconds
}

// addTokens adds rate*dt tokens to tok, capped at max, without overflow.
func addTokens(tok, rate int64, dt uint64, max int64) int64 {
	room := max - tok
	if room <= 0 || rate == 0 {
		return min(tok, max)
	}
	if dt >= uint64(room/rate)+1 {
		return max
	}
	return tok + rate*int64(dt)
}

// exec marks one packet of size units at time now (microseconds).
func (m *meterState) exec(now uint64, size int64) uint64 {
	c := m.cfg
	if c == nil {
		return colorGreen
	}
	if now > m.last {
		dt := now - m.last
		m.tc = addTokens(m.tc, c.Cir, dt, c.Cburst*1e6)
		m.tp = addTokens(m.tp, c.Pir, dt, c.Pburst*1e6)
		m.last = now
	}
	b := size * 1e6
	switch {
	case m.tp < b:
		return colorRed
	case m.tc < b:
		m.tp -= b
		return colorYellow
	}
	m.tp -= b
	m.tc -= b
	return colorGreen
}

// configure sets (or with nil clears) the config; the buckets start full.
func (m *meterState) configure(c *p4v1.MeterConfig, now uint64) {
	*m = meterState{}
	if c == nil {
		return
	}
	m.cfg = &p4v1.MeterConfig{Cir: c.Cir, Cburst: c.Cburst, Pir: c.Pir, Pburst: c.Pburst}
	m.tc, m.tp, m.last = c.Cburst*1e6, c.Pburst*1e6, now
}

func checkMeterConfig(c *p4v1.MeterConfig, what string) error {
	if c == nil {
		return nil
	}
	for _, v := range []int64{c.Cir, c.Cburst, c.Pir, c.Pburst} {
		if v < 0 || v > maxMeterValue {
			return errf(codes.InvalidArgument, "%s: meter config values must be in 0..%d, got %v", what, int64(maxMeterValue), c)
		}
	}
	if c.Eburst != 0 {
		return errf(codes.InvalidArgument, "%s: eburst is for srTCM meters; this meter is trTCM", what)
	}
	if c.Cir > c.Pir {
		return errf(codes.InvalidArgument, "%s: cir %d above pir %d (RFC 2698)", what, c.Cir, c.Pir)
	}
	return nil
}

func meterUnit(c *compiler, sc *scope, e frontend.Expr) configv1.MeterSpec_Unit {
	v := c.expr(sc, e)
	if v.t != c.global.m["MeterType"].t || !v.isConst {
		c.fail(e.ExprPos(), "expected MeterType.packets or MeterType.bytes")
	}
	if v.k == 0 {
		return configv1.MeterSpec_PACKETS
	}
	return configv1.MeterSpec_BYTES
}

// meterSize is what a packet counts for a meter of unit u.
func meterSize(s *pktState, u configv1.MeterSpec_Unit) int64 {
	if u == configv1.MeterSpec_PACKETS {
		return 1
	}
	return int64(len(s.pkt) - s.pre)
}

func (s *pktState) now() uint64 {
	if !s.tsSet {
		s.ts, s.tsSet = s.dev.now(), true
	}
	return s.ts
}

// colorResult checks the out argument of execute_meter and read.
func (c *compiler) colorResult(sc *scope, e frontend.Expr, what string) *lval {
	v := c.expr(sc, e)
	if v.lv == nil || v.lv.readonly {
		c.fail(e.ExprPos(), "%s: the result must be assignable", what)
	}
	if v.t.kind != kBit || v.t.width < 2 {
		c.fail(e.ExprPos(), "%s: the result must be bit<W> with W >= 2, found %s", what, v.t)
	}
	return v.lv
}

// ---- P4Runtime ----

func (d *Device) meterByID(id uint32) (*externC, error) {
	for _, m := range d.prog.meters {
		if m.id == id {
			return m, nil
		}
	}
	return nil, errf(codes.NotFound, "no meter with id %d", id)
}

func meterConfigProto(m *meterState) *p4v1.MeterConfig {
	if m == nil || m.cfg == nil {
		return nil
	}
	c := m.cfg
	return &p4v1.MeterConfig{Cir: c.Cir, Cburst: c.Cburst, Pir: c.Pir, Pburst: c.Pburst}
}

// WriteMeterEntry sets (config unset: clears) one meter cell, or every
// cell when index is unset.
func (d *Device) WriteMeterEntry(me *p4v1.MeterEntry) error {
	if me == nil {
		return errf(codes.InvalidArgument, "no meter entry")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	m, err := d.meterByID(me.MeterId)
	if err != nil {
		return err
	}
	what := "meter " + m.name
	lo, hi, err := indexRange(me.Index, m.size, what)
	if err != nil {
		return err
	}
	if me.CounterData != nil {
		return errf(codes.Unimplemented, "%s: per-colour counters are not supported", what)
	}
	if err := checkMeterConfig(me.Config, what); err != nil {
		return err
	}
	now := d.now()
	cells := d.meters[m.idx]
	for i := lo; i < hi; i++ {
		cells[i].configure(me.Config, now)
	}
	return nil
}

// ReadMeterEntries calls fn for the cells filter selects (meter_id 0: all
// meters; unset index: all cells). An unconfigured cell has no config.
func (d *Device) ReadMeterEntries(filter *p4v1.MeterEntry, fn func(*p4v1.MeterEntry) error) error {
	var out []*p4v1.MeterEntry
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		ms := d.prog.meters
		if id := filter.GetMeterId(); id != 0 {
			m, err := d.meterByID(id)
			if err != nil {
				return err
			}
			ms = []*externC{m}
		}
		for _, m := range ms {
			lo, hi, err := indexRange(filter.GetIndex(), m.size, "meter "+m.name)
			if err != nil {
				return err
			}
			cells := d.meters[m.idx]
			for i := lo; i < hi; i++ {
				out = append(out, &p4v1.MeterEntry{MeterId: m.id, Index: &p4v1.Index{Index: int64(i)}, Config: meterConfigProto(&cells[i])})
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	return each(out, fn)
}

// directMeterEntry finds the entry of a DirectMeterEntry's table_entry
// (called with d.mu held).
func (d *Device) directMeterEntry(te *p4v1.TableEntry) (*tableRT, *entry, error) {
	if te == nil {
		return nil, nil, errf(codes.InvalidArgument, "direct meter entry needs a table entry")
	}
	rt, err := d.tableByID(te.TableId)
	if err != nil {
		return nil, nil, err
	}
	if rt.c.meter == nil {
		return nil, nil, errf(codes.InvalidArgument, "table %s has no direct meter", rt.c.name)
	}
	if te.IsDefaultAction {
		return nil, nil, errf(codes.InvalidArgument, "table %s: the default entry has no direct meter on this target", rt.c.name)
	}
	e, err := matchEntry(rt.c, te.Match, te.Priority)
	if err != nil {
		return nil, nil, err
	}
	x := rt.byID[rt.identity(e)]
	if x == nil {
		return nil, nil, errf(codes.NotFound, "table %s: no such entry", rt.c.name)
	}
	return rt, x, nil
}

// WriteDirectMeterEntry sets (config unset: clears) the direct meter of
// one entry.
func (d *Device) WriteDirectMeterEntry(dme *p4v1.DirectMeterEntry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	rt, x, err := d.directMeterEntry(dme.GetTableEntry())
	if err != nil {
		return err
	}
	what := "direct meter of table " + rt.c.name
	if dme.CounterData != nil {
		return errf(codes.Unimplemented, "%s: per-colour counters are not supported", what)
	}
	if err := checkMeterConfig(dme.Config, what); err != nil {
		return err
	}
	x.setMeter(dme.Config, d.now())
	return nil
}

// setMeter configures an entry's direct meter (nil config: GREEN).
func (e *entry) setMeter(c *p4v1.MeterConfig, now uint64) {
	if c == nil {
		e.meter = nil
		return
	}
	e.meter = &meterState{}
	e.meter.configure(c, now)
}

// ReadDirectMeterEntries calls fn with the direct meter config of the
// entries filter.table_entry selects: one entry (NOT_FOUND if it does not
// exist) or, without match fields, every entry of the table (table_id 0:
// of every table with a direct meter).
func (d *Device) ReadDirectMeterEntries(filter *p4v1.DirectMeterEntry, fn func(*p4v1.DirectMeterEntry) error) error {
	te := filter.GetTableEntry()
	var out []*p4v1.DirectMeterEntry
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		if te != nil && len(te.Match) > 0 {
			rt, x, err := d.directMeterEntry(te)
			if err != nil {
				return err
			}
			out = append(out, &p4v1.DirectMeterEntry{TableEntry: rt.entryProto(x, false), Config: meterConfigProto(x.meter)})
			return nil
		}
		tables := d.tables
		if id := te.GetTableId(); id != 0 {
			rt, err := d.tableByID(id)
			if err != nil {
				return err
			}
			if rt.c.meter == nil {
				return errf(codes.InvalidArgument, "table %s has no direct meter", rt.c.name)
			}
			tables = []*tableRT{rt}
		}
		for _, rt := range tables {
			if rt.c.meter == nil {
				continue
			}
			for _, x := range rt.sorted() {
				out = append(out, &p4v1.DirectMeterEntry{TableEntry: rt.entryProto(x, false), Config: meterConfigProto(x.meter)})
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	return each(out, fn)
}
