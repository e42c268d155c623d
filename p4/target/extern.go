package target

import (
	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"github.com/swordbox/swordbox/p4/target/frontend"
)

// externC is a register, counter or direct_counter instance.
type externC struct {
	kind  string // "register", "counter", "direct_counter"
	name  string // fully qualified
	id    uint32
	size  int
	t     *ptype // register cell type
	unit  configv1.CounterSpec_Unit
	munit configv1.MeterSpec_Unit // meters
	slot  int                     // direct_meter: the slot of its colour
	// action_profile, action_selector: the table it serves, and the
	// selector's hash algorithm and output width.
	selector bool
	algo     func([]byte) uint64
	outW     int
	idx      int     // index in the Device's array of its kind
	table    *tableC // direct_counter, direct_meter: its table
	anns     []frontend.Annotation
	p        frontend.Pos
	// tna externs
	tna    bool        // declared by a tna program (its methods are tna's)
	layout *cellLayout // Register: how a cell packs its type
	idxT   *ptype      // Register: the index type (nil: _)
	init   uint64      // Register, RegisterParam: the initial value
	ra     *regAction  // RegisterAction
	crc    *crcSpec    // CRCPolynomial
}

// declareExtern declares an extern instance of a control: v1model's
// register, counter, direct_counter, meter, direct_meter, action_profile
// and action_selector, or in a tna program tna's externs
// (declareTNAExtern); everything else is refused by name.
func (c *compiler) declareExtern(sc *scope, d *frontend.InstDecl) *externC {
	if c.inParser && !(c.tnaT != nil && d.T.Name == "Checksum") {
		c.fail(d.P, "extern instances in parsers are not supported")
	}
	x := &externC{name: c.fqName(d.Name, d.Anns), anns: d.Anns, p: d.P, kind: d.T.Name}
	p := c.prog
	if c.tnaT != nil {
		switch d.T.Name {
		case "Register", "RegisterAction", "RegisterParam", "Hash", "CRCPolynomial", "Random", "Checksum",
			"Counter", "DirectCounter", "Meter", "DirectMeter", "DirectRegister", "DirectRegisterAction", "Resubmit":
			return c.declareTNAExtern(sc, d, x)
		case "register", "counter", "direct_counter", "meter", "direct_meter", "action_profile", "action_selector":
			c.fail(d.P, "%s is a v1model extern; this program includes <tna.p4>", d.T.Name)
		}
		if tnaRefused[d.T.Name] {
			c.fail(d.P, "tna extern %s is not supported by this target", d.T.Name)
		}
	}
	if len(d.Methods) != 0 {
		c.fail(d.P, "%s instances have no initializer block", d.T.Name)
	}
	for _, a := range d.Args {
		if na, ok := a.(*frontend.NamedArg); ok {
			c.fail(na.P, "named arguments are only supported in tna extern instantiations")
		}
	}
	switch d.T.Name {
	case "register":
		if len(d.T.Args) < 1 || len(d.T.Args) > 2 {
			c.fail(d.P, "register needs a cell type: register<T>(size) or register<T, I>(size)")
		}
		x.t = c.resolveType(sc, d.T.Args[0])
		if x.t.kind != kBit {
			c.fail(d.P, "register cells must be bit<W>, found %s", x.t)
		}
		if len(d.T.Args) == 2 {
			if it := c.resolveType(sc, d.T.Args[1]); it != bitT(32) {
				c.fail(d.P, "register index type must be bit<32>, found %s", it)
			}
		}
		if len(d.Args) != 1 {
			c.fail(d.P, "register takes one constructor argument (its size)")
		}
		x.size = c.cellsArg(sc, d.Args[0])
		x.idx = len(p.registers)
		p.registers = append(p.registers, x)
	case "counter":
		if len(d.T.Args) != 0 || len(d.Args) != 2 {
			c.fail(d.P, "counter takes (size, CounterType)")
		}
		x.size = c.cellsArg(sc, d.Args[0])
		x.unit = c.counterUnit(sc, d.Args[1])
		x.idx = len(p.counters)
		p.counters = append(p.counters, x)
	case "direct_counter":
		if len(d.T.Args) != 0 || len(d.Args) != 1 {
			c.fail(d.P, "direct_counter takes (CounterType)")
		}
		x.unit = c.counterUnit(sc, d.Args[0])
		x.idx = len(p.directCounters)
		p.directCounters = append(p.directCounters, x)
	case "meter":
		if len(d.T.Args) != 0 || len(d.Args) != 2 {
			c.fail(d.P, "meter takes (size, MeterType)")
		}
		x.size = c.cellsArg(sc, d.Args[0])
		x.munit = meterUnit(c, sc, d.Args[1])
		x.idx = len(p.meters)
		p.meters = append(p.meters, x)
	case "direct_meter":
		if len(d.T.Args) != 1 || len(d.Args) != 1 {
			c.fail(d.P, "direct_meter takes a result type and (MeterType): direct_meter<T>(type)")
		}
		x.t = c.resolveType(sc, d.T.Args[0])
		x.munit = meterUnit(c, sc, d.Args[0])
		x.slot = c.alloc(1)
		x.idx = len(p.directMeters)
		p.directMeters = append(p.directMeters, x)
	case "action_profile", "action_selector":
		want := 1
		if d.T.Name == "action_selector" {
			want = 3
		}
		if len(d.T.Args) != 0 || len(d.Args) != want {
			c.fail(d.P, "%s takes %d constructor arguments", d.T.Name, want)
		}
		if want == 3 {
			x.selector = true
			x.algo = c.algo(sc, d.Args[0])
			x.size = c.sizeArg(sc, d.Args[1])
			w := c.constInt(sc, d.Args[2])
			if w < 1 || w > 64 {
				c.fail(d.Args[2].ExprPos(), "action_selector output width %d out of range (1 to 64)", w)
			}
			x.outW = int(w)
		} else {
			x.size = c.sizeArg(sc, d.Args[0])
		}
		x.idx = len(p.profiles)
		p.profiles = append(p.profiles, x)
	case "Checksum16", "Register":
		c.fail(d.P, "%s is not supported by this target", d.T.Name)
	default:
		c.fail(d.P, "unknown extern %s", d.T.Name)
	}
	return x
}

// Size limits: one extern array holds at most maxCells cells, a program
// at most maxTotalCells (each cell is 8 bytes, or 16 for counters).
const (
	maxCells      = 1 << 20
	maxTotalCells = 1 << 22
	maxTableSize  = 1 << 24
)

func (c *compiler) sizeArg(sc *scope, e frontend.Expr) int {
	n := c.constInt(sc, e)
	if n < 1 || n > maxTableSize {
		c.fail(e.ExprPos(), "size %d out of range (1 to %d)", n, maxTableSize)
	}
	return int(n)
}

func (c *compiler) cellsArg(sc *scope, e frontend.Expr) int {
	n := c.constInt(sc, e)
	if n < 1 || n > maxCells {
		c.fail(e.ExprPos(), "size %d out of range (1 to %d)", n, maxCells)
	}
	c.cells += int(n)
	if c.cells > maxTotalCells {
		c.fail(e.ExprPos(), "registers and counters hold more than %d cells in total", maxTotalCells)
	}
	return int(n)
}

func (c *compiler) counterUnit(sc *scope, e frontend.Expr) configv1.CounterSpec_Unit {
	v := c.expr(sc, e)
	ct := c.global.m["CounterType"].t
	if v.t != ct || !v.isConst {
		c.fail(e.ExprPos(), "expected CounterType.packets, .bytes or .packets_and_bytes")
	}
	switch v.k {
	case 0:
		return configv1.CounterSpec_PACKETS
	case 1:
		return configv1.CounterSpec_BYTES
	}
	return configv1.CounterSpec_BOTH
}

func (c *compiler) externCall(sc *scope, x *externC, method string, e *frontend.CallExpr) stmtFn {
	st := c.externCall0(sc, x, method, e)
	if x.kind == "register" && method == "read" {
		res := c.expr(sc, e.Args[0])
		return c.dirtying(st, res.lv.base, 1)
	}
	return st
}

// externCall0 compiles a method call on a v1model extern (and tna's
// Counter and DirectCounter, which share their semantics), specialised
// for slot and constant operands on the hot paths.
func (c *compiler) externCall0(sc *scope, x *externC, method string, e *frontend.CallExpr) stmtFn {
	if c.inParser {
		c.fail(e.P, "externs cannot be used in parsers")
	}
	idx := x.idx
	switch x.kind + "." + method {
	case "register.read":
		if len(e.Args) != 2 {
			c.fail(e.P, "register.read takes (out result, index)")
		}
		res := c.expr(sc, e.Args[0])
		if res.lv == nil {
			c.fail(e.Args[0].ExprPos(), "register.read result must be assignable")
		}
		if res.lv.readonly {
			c.fail(e.Args[0].ExprPos(), "register.read result: %s", roReason(res.lv))
		}
		if res.t != x.t {
			c.fail(e.Args[0].ExprPos(), "type mismatch: register %s holds %s, result is %s", x.name, x.t, res.t)
		}
		ixv := c.typed(c.rvalue(sc, e.Args[1], bitT(32)), e.Args[1].ExprPos())
		ix := ixv.fn
		l := res.lv
		if !l.sliced && ixv.isSlot {
			b, is := l.base, ixv.slot
			return func(s *pktState) flow {
				cells := s.dev.regs[idx]
				if i := s.slots[is]; i < uint64(len(cells)) {
					s.slots[b] = cells[i]
				} else {
					s.slots[b] = 0
				}
				return flowNext
			}
		}
		if !l.sliced {
			b := l.base
			return func(s *pktState) flow {
				cells := s.dev.regs[idx]
				i := ix(s)
				if i < uint64(len(cells)) {
					s.slots[b] = cells[i]
				} else {
					s.slots[b] = 0
				}
				return flowNext
			}
		}
		return func(s *pktState) flow {
			cells := s.dev.regs[idx]
			i := ix(s)
			v := uint64(0)
			if i < uint64(len(cells)) {
				v = cells[i]
			}
			storeUint(l, s, v)
			return flowNext
		}
	case "register.write":
		if len(e.Args) != 2 {
			c.fail(e.P, "register.write takes (index, value)")
		}
		ixv := c.typed(c.rvalue(sc, e.Args[0], bitT(32)), e.Args[0].ExprPos())
		vv := c.typed(c.rvalue(sc, e.Args[1], x.t), e.Args[1].ExprPos())
		ix, v := ixv.fn, vv.fn
		switch {
		case ixv.isSlot && vv.isSlot:
			is, vs := ixv.slot, vv.slot
			return func(s *pktState) flow {
				cells := s.dev.regs[idx]
				if i := s.slots[is]; i < uint64(len(cells)) {
					cells[i] = s.slots[vs]
				}
				return flowNext
			}
		case ixv.isSlot && vv.isConst:
			is, k := ixv.slot, vv.k
			return func(s *pktState) flow {
				cells := s.dev.regs[idx]
				if i := s.slots[is]; i < uint64(len(cells)) {
					cells[i] = k
				}
				return flowNext
			}
		case ixv.isSlot:
			is := ixv.slot
			return func(s *pktState) flow {
				cells := s.dev.regs[idx]
				if i := s.slots[is]; i < uint64(len(cells)) {
					cells[i] = v(s)
				}
				return flowNext
			}
		}
		return func(s *pktState) flow {
			cells := s.dev.regs[idx]
			i := ix(s)
			if i < uint64(len(cells)) {
				cells[i] = v(s)
			}
			return flowNext
		}
	case "counter.count":
		if len(e.Args) != 1 {
			c.fail(e.P, "counter.count takes (index)")
		}
		// v1model's counter.count takes bit<32>; tna's Counter<W, I> takes I.
		ixT := bitT(32)
		if x.idxT != nil {
			ixT = x.idxT
		}
		ixv := c.typed(c.rvalue(sc, e.Args[0], ixT), e.Args[0].ExprPos())
		ix := ixv.fn
		if ixv.isSlot {
			is := ixv.slot
			return func(s *pktState) flow {
				ct := &s.dev.counters[idx]
				if i := s.slots[is]; i < uint64(len(ct.packets)) {
					ct.packets[i]++
					ct.bytes[i] += uint64(len(s.pkt) - s.pre)
				}
				return flowNext
			}
		}
		if ixv.isConst {
			k := ixv.k
			return func(s *pktState) flow {
				ct := &s.dev.counters[idx]
				if k < uint64(len(ct.packets)) {
					ct.packets[k]++
					ct.bytes[k] += uint64(len(s.pkt) - s.pre)
				}
				return flowNext
			}
		}
		return func(s *pktState) flow {
			ct := &s.dev.counters[idx]
			i := ix(s)
			if i < uint64(len(ct.packets)) {
				ct.packets[i]++
				ct.bytes[i] += uint64(len(s.pkt) - s.pre)
			}
			return flowNext
		}
	case "meter.execute_meter":
		if len(e.Args) != 2 {
			c.fail(e.P, "meter.execute_meter takes (index, out result)")
		}
		ix := c.typed(c.rvalue(sc, e.Args[0], bitT(32)), e.Args[0].ExprPos()).fn
		l := c.colorResult(sc, e.Args[1], "execute_meter")
		unit := x.munit
		return c.dirtying(func(s *pktState) flow {
			cells := s.dev.meters[idx]
			v := uint64(colorGreen)
			if i := ix(s); i < uint64(len(cells)) {
				v = cells[i].exec(s.now(), meterSize(s, unit))
			}
			storeUint(l, s, v)
			return flowNext
		}, l.base, 1)
	case "direct_meter.read":
		if len(e.Args) != 1 {
			c.fail(e.P, "direct_meter.read takes (out result)")
		}
		l := c.colorResult(sc, e.Args[0], "direct_meter.read")
		ms := x.slot
		return c.dirtying(func(s *pktState) flow {
			storeUint(l, s, s.slots[ms])
			return flowNext
		}, l.base, 1)
	case "direct_counter.count":
		if len(e.Args) != 0 {
			c.fail(e.P, "direct_counter.count takes no arguments")
		}
		// Direct counters count every hit of their table's entries; the
		// explicit call v1model allows in an action adds nothing.
		return func(*pktState) flow { return flowNext }
	}
	c.fail(e.P, "%s has no method %s", x.kind, method)
	return nil
}
