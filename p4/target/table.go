package target

import (
	"encoding/binary"
	"fmt"
	"github.com/swordbox/swordbox/p4/target/frontend"
	"math/big"
	"sort"
	"strings"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// tableKind is how a table is looked up.
type tableKind uint8

const (
	tkKeyless tableKind = iota // no key: always the default action
	tkExact                    // all keys exact: one hash map
	tkLPM                      // one lpm key, the rest exact: a hash map per prefix length
	tkTernary                  // any ternary key: priority-ordered scan
)

type keyC struct {
	name  string
	fn    exprFn
	slot  int // >= 0: the key is slots[slot]
	w     int
	match string // "exact", "lpm", "ternary", "range", "optional"
}

type tableActionRef struct {
	act   *actionC
	scope configv1.ActionRef_Scope
	anns  []frontend.Annotation
}

// tableC is a compiled table.
type tableC struct {
	name      string
	localName string
	id        uint32
	keys      []keyC
	actions   []tableActionRef
	defAI     int
	defParams []uint64
	defConst  bool
	size      int
	entries   []*entry // initial entries (const entries or entries)
	isConst   bool
	counter   *externC
	meter     *externC // direct meter
	prof      *externC // implementation: action profile or selector
	dreg      *externC // tna: the DirectRegister of registers = ...
	idle      bool     // support_timeout = true
	selKeys   []dataField
	meterSlot int // the colour of the direct meter's last run
	hitSlot   int
	runSlot   int
	keySlot   int
	idx       int
	kind      tableKind
	lpmKey    int
	isRange   []bool // per key: a range key (nil when the table has none)
	anns      []frontend.Annotation
	p         frontend.Pos
}

// entry is one table entry. vals are already masked; for exact keys the
// mask is all ones, for lpm the prefix mask, for ternary the given mask.
type entry struct {
	vals, masks []uint64
	his         []uint64 // range keys: the upper bound (vals the lower); nil without range keys
	plen        int      // lpm prefix length (tkLPM)
	prio        int32
	ai          int // index in the table's actions
	params      []uint64
	packets     uint64
	bytes       uint64
	meta        uint64      // controller_metadata
	metaBytes   []byte      // metadata
	meter       *meterState // direct meter (nil: GREEN)
	// Indirect tables: the member or group the entry uses, or its one-shot
	// action set (then mem or grp is the entry's own).
	indirect bool
	mem      *apMember
	grp      *apGroup
	oneShot  *p4v1.ActionProfileActionSet
	// Idle timeout (tables with support_timeout): the TTL and the time of
	// the last hit (the Device's clock, microseconds).
	idleNs  int64
	lastHit uint64
	dreg    uint64 // tna: the DirectRegister cell, xor its initial value (a new entry holds the initial value)
	seq     uint64 // insertion order (ties between equal priorities)
}

// declareTable compiles a table declaration: keys, actions (NoAction
// added as @defaultonly when there is no default action), size, entries,
// direct counters, meters and registers, action profiles, idle timeout,
// and picks the lookup structure (keyless, exact hash, LPM, or a
// priority-ordered scan for ternary, range and optional keys).
func (c *compiler) declareTable(sc *scope, d *frontend.TableDecl) *tableC {
	t := &tableC{name: c.fqName(d.Name, d.Anns), localName: d.Name, anns: d.Anns, p: d.P, size: 1024, defAI: -1}
	t.idx = len(c.prog.tables)
	seen := map[string]bool{}
	var defProp, entProp *frontend.TableProp
	for i := range d.Props {
		pr := &d.Props[i]
		if seen[pr.Name] {
			c.fail(pr.P, "table property %s given twice", pr.Name)
		}
		seen[pr.Name] = true
		switch pr.Name {
		case "key":
			for _, k := range pr.Keys {
				v := c.typed(c.rvalue(sc, k.E, nil), k.E.ExprPos())
				if v.t.kind != kBit && v.t.kind != kBool {
					c.fail(k.P, "table key of type %s is not supported (bit<W> or bool)", v.t)
				}
				switch k.Match {
				case "exact", "lpm", "ternary", "range", "optional", "selector":
				default:
					c.fail(k.P, "unknown match kind %s", k.Match)
				}
				name := exprString(k.E)
				for _, a := range k.Anns {
					if a.Name == "name" && len(a.Args) == 1 && a.Args[0].Kind == frontend.TString {
						name = a.Args[0].Text
					}
				}
				kc := keyC{name: name, fn: v.fn, w: widthOf(v.t), match: k.Match, slot: -1}
				if v.isSlot {
					kc.slot = v.slot
				}
				t.keys = append(t.keys, kc)
			}
		case "actions":
			for _, ar := range pr.Actions {
				s := sc.lookup(ar.Name)
				if s == nil || s.kind != sAction {
					c.fail(ar.P, "unknown action %s", ar.Name)
				}
				if len(ar.Args) > 0 {
					c.fail(ar.P, "binding action arguments in the actions list is not supported")
				}
				for _, p := range s.act.params {
					if p.dir != "" {
						c.fail(ar.P, "action %s has directional parameters and cannot be a table action", ar.Name)
					}
				}
				for _, prev := range t.actions {
					if prev.act == s.act {
						c.fail(ar.P, "action %s listed twice", ar.Name)
					}
				}
				ref := tableActionRef{act: s.act, scope: configv1.ActionRef_TABLE_AND_DEFAULT, anns: ar.Anns}
				for _, a := range ar.Anns {
					switch a.Name {
					case "defaultonly":
						ref.scope = configv1.ActionRef_DEFAULT_ONLY
					case "tableonly":
						ref.scope = configv1.ActionRef_TABLE_ONLY
					}
				}
				t.actions = append(t.actions, ref)
			}
		case "default_action":
			defProp = pr
		case "size":
			t.size = c.sizeArg(sc, pr.Val)
		case "entries":
			entProp = pr
			t.isConst = pr.IsConst
		case "counters":
			t.counter = c.attachDirect(sc, pr, t, "direct_counter")
		case "implementation":
			id, ok := pr.Val.(*frontend.IdentExpr)
			var s *symbol
			if ok {
				s = sc.lookup(id.Name)
			}
			if s == nil || s.kind != sExtern || (s.ext.kind != "action_profile" && s.ext.kind != "action_selector") {
				c.fail(pr.P, "implementation must name an action_profile or action_selector")
			}
			if s.ext.table != nil {
				c.fail(pr.P, "%s %s already serves table %s (shared profiles are not supported)", s.ext.kind, id.Name, s.ext.table.name)
			}
			s.ext.table = t
			t.prof = s.ext
		case "registers":
			if c.tnaT == nil {
				c.fail(pr.P, "table property registers is tna's (DirectRegister)")
			}
			t.dreg = c.attachDirect(sc, pr, t, "direct_register")
		case "meters":
			t.meter = c.attachDirect(sc, pr, t, "direct_meter")
			t.meterSlot = t.meter.slot
		case "support_timeout":
			v := c.rvalue(sc, pr.Val, boolT)
			if !v.isConst {
				c.fail(pr.P, "support_timeout must be a constant")
			}
			t.idle = v.k != 0
		default:
			c.fail(pr.P, "table property %s is not supported", pr.Name)
		}
	}
	if !seen["actions"] {
		c.fail(d.P, "table %s has no actions property", d.Name)
	}
	// Selector keys feed the selector's hash; they are not match fields.
	var matchKeys []keyC
	for _, k := range t.keys {
		if k.match != "selector" {
			matchKeys = append(matchKeys, k)
			continue
		}
		if t.prof == nil || !t.prof.selector {
			c.fail(d.P, "table %s: selector key %s needs implementation = an action_selector", d.Name, k.name)
		}
		t.selKeys = append(t.selKeys, dataField{fn: k.fn, w: k.w, slot: k.slot})
	}
	t.keys = matchKeys
	if t.prof != nil && t.prof.selector && len(t.selKeys) == 0 {
		c.fail(d.P, "table %s: an action_selector needs selector keys", d.Name)
	}
	if t.prof != nil && entProp != nil {
		c.fail(entProp.P, "table %s: entries of a table with an action profile are not supported", d.Name)
	}
	// Lookup structure.
	nl, nt := 0, 0
	for i, k := range t.keys {
		switch k.match {
		case "lpm":
			nl++
			t.lpmKey = i
		case "ternary", "optional":
			nt++
		case "range":
			nt++
			if t.isRange == nil {
				t.isRange = make([]bool, len(t.keys))
			}
			t.isRange[i] = true
		}
	}
	switch {
	case len(t.keys) == 0:
		t.kind = tkKeyless
	case nt == 0 && nl == 0:
		t.kind = tkExact
	case nt == 0 && nl == 1:
		t.kind = tkLPM
	default:
		t.kind = tkTernary
	}
	// Default action.
	if defProp != nil {
		ai, params := c.actionCall(sc, t, defProp.Val, true)
		t.defAI, t.defParams, t.defConst = ai, params, defProp.IsConst
	} else {
		na := c.global.m["NoAction"].act
		for i, r := range t.actions {
			if r.act == na {
				t.defAI = i
			}
		}
		if t.defAI < 0 {
			t.actions = append(t.actions, tableActionRef{act: na, scope: configv1.ActionRef_DEFAULT_ONLY})
			t.defAI = len(t.actions) - 1
		}
	}
	if entProp != nil {
		for i, en := range entProp.Entries {
			e := c.constEntry(sc, t, &en)
			e.prio = int32(len(entProp.Entries) - i)
			e.seq = uint64(i)
			if t.kind != tkTernary {
				e.prio = 0
			}
			t.entries = append(t.entries, e)
		}
		if len(t.entries) > t.size {
			c.fail(entProp.P, "table %s has %d entries but size %d", d.Name, len(t.entries), t.size)
		}
	}
	t.hitSlot = c.alloc(1)
	t.runSlot = c.alloc(1)
	t.keySlot = c.alloc(len(t.keys))
	for _, r := range t.actions {
		r.act.inInfo = true
	}
	c.prog.tables = append(c.prog.tables, t)
	return t
}

// attachDirect attaches the direct extern a table property (counters,
// meters) names to t.
func (c *compiler) attachDirect(sc *scope, pr *frontend.TableProp, t *tableC, kind string) *externC {
	id, ok := pr.Val.(*frontend.IdentExpr)
	var s *symbol
	if ok {
		s = sc.lookup(id.Name)
	}
	if s == nil || s.kind != sExtern || s.ext.kind != kind {
		c.fail(pr.P, "%s must name a %s", pr.Name, kind)
	}
	if s.ext.table != nil {
		c.fail(pr.P, "%s %s is already attached to table %s", kind, id.Name, s.ext.table.name)
	}
	s.ext.table = t
	return s.ext
}

// actionCall resolves an action invocation a(args) of a table (default
// action or entry) with constant action data.
func (c *compiler) actionCall(sc *scope, t *tableC, e frontend.Expr, isDefault bool) (int, []uint64) {
	var name string
	var args []frontend.Expr
	at := e.ExprPos()
	switch x := e.(type) {
	case *frontend.IdentExpr:
		name = x.Name
	case *frontend.CallExpr:
		id, ok := x.Fn.(*frontend.IdentExpr)
		if !ok {
			c.fail(at, "expected an action call")
		}
		name, args = id.Name, x.Args
	default:
		c.fail(at, "expected an action call")
	}
	s := sc.lookup(name)
	if s == nil || s.kind != sAction {
		c.fail(at, "unknown action %s", name)
	}
	ai := -1
	for i, r := range t.actions {
		if r.act == s.act {
			ai = i
		}
	}
	if ai < 0 {
		c.fail(at, "action %s is not in the actions of table %s", name, t.localName)
	}
	scope := t.actions[ai].scope
	if isDefault && scope == configv1.ActionRef_TABLE_ONLY {
		c.fail(at, "action %s is @tableonly", name)
	}
	if !isDefault && scope == configv1.ActionRef_DEFAULT_ONLY {
		c.fail(at, "action %s is @defaultonly", name)
	}
	dp := s.act.dataParams()
	if len(args) != len(dp) {
		c.fail(at, "action %s takes %d arguments, got %d", name, len(dp), len(args))
	}
	var params []uint64
	for i, p := range dp {
		v := c.rvalue(sc, args[i], p.t)
		if !v.isConst {
			c.fail(args[i].ExprPos(), "action data must be a compile-time constant")
		}
		params = append(params, v.k)
	}
	return ai, params
}

func (c *compiler) constEntry(sc *scope, t *tableC, en *frontend.EntryAST) *entry {
	keys := en.Keys
	if len(keys) != len(t.keys) {
		c.fail(en.P, "entry has %d key values, table %s has %d keys", len(keys), t.localName, len(t.keys))
	}
	e := &entry{}
	if t.isRange != nil {
		e.his = make([]uint64, len(t.keys))
	}
	for i, k := range t.keys {
		kt := bitT(k.w)
		v, m := c.keysetValue(sc, keys[i], kt)
		switch k.match {
		case "range":
			// A value matches itself, _ the whole range (lo .. hi
			// keysets are not parsed).
			switch m {
			case 0:
				v, m, e.his[i] = 0, 0, mask(k.w)
			case mask(k.w):
				e.his[i], m = v, 0
			default:
				c.fail(keys[i].ExprPos(), "range key %s needs a value or _", k.name)
			}
		case "optional":
			if m != 0 && m != mask(k.w) {
				c.fail(keys[i].ExprPos(), "optional key %s needs a value or _", k.name)
			}
		case "exact":
			if m != mask(k.w) {
				c.fail(keys[i].ExprPos(), "exact key %s needs a value", k.name)
			}
		case "lpm":
			pl := prefixLen(m, k.w)
			if pl < 0 {
				c.fail(keys[i].ExprPos(), "lpm key %s: mask is not a prefix", k.name)
			}
			e.plen = pl
		}
		e.vals = append(e.vals, v)
		e.masks = append(e.masks, m)
	}
	e.ai, e.params = c.actionCall(sc, t, actionRefExpr(en.Action), false)
	return e
}

func actionRefExpr(a frontend.ActionRefAST) frontend.Expr {
	if a.Args == nil {
		return &frontend.IdentExpr{P: a.P, Name: a.Name}
	}
	return &frontend.CallExpr{P: a.P, Fn: &frontend.IdentExpr{P: a.P, Name: a.Name}, Args: a.Args}
}

// prefixLen returns the prefix length of mask m over w bits, or -1.
func prefixLen(m uint64, w int) int {
	for pl := 0; pl <= w; pl++ {
		if m == prefixMask(pl, w) {
			return pl
		}
	}
	return -1
}

func prefixMask(pl, w int) uint64 {
	return mask(w) &^ mask(w-pl)
}

// exprString prints a key expression the way p4c names match fields.
func exprString(e frontend.Expr) string {
	switch e := e.(type) {
	case *frontend.IdentExpr:
		return e.Name
	case *frontend.MemberExpr:
		return exprString(e.X) + "." + e.Name
	case *frontend.CallExpr:
		var args []string
		for _, a := range e.Args {
			args = append(args, exprString(a))
		}
		return exprString(e.Fn) + "(" + strings.Join(args, ", ") + ")"
	case *frontend.SliceExpr:
		return fmt.Sprintf("%s[%s:%s]", exprString(e.X), exprString(e.Hi), exprString(e.Lo))
	case *frontend.IntExpr:
		return e.Text
	case *frontend.CastExpr:
		return "(" + typeString(e.T) + ")" + exprString(e.X)
	case *frontend.BinExpr:
		return exprString(e.L) + " " + e.Op + " " + exprString(e.R)
	}
	return "key"
}

func typeString(t *frontend.TypeRef) string {
	switch t.Kind {
	case "bit", "int", "varbit":
		if ie, ok := t.Width.(*frontend.IntExpr); ok {
			return fmt.Sprintf("%s<%s>", t.Kind, ie.Val)
		}
		return t.Kind
	case "name":
		return t.Name
	}
	return t.Kind
}

// Runtime side.

// tableRT is a table's runtime state in a Device.
type tableRT struct {
	c         *tableC
	byID      map[string]*entry // identity (match + priority) -> entry
	exact     map[string]*entry // tkExact lookup
	exact1    map[uint64]*entry // tkExact lookup with one key
	lpm       map[int]map[string]*entry
	plens     []int // prefix lengths present, longest first
	tern      []*entry
	defAI     int
	defParams []uint64
	seq       uint64
}

func newTableRT(t *tableC) *tableRT {
	rt := &tableRT{c: t}
	rt.reset()
	return rt
}

func (rt *tableRT) reset() {
	t := rt.c
	rt.byID = map[string]*entry{}
	rt.exact = map[string]*entry{}
	rt.exact1 = map[uint64]*entry{}
	rt.lpm = map[int]map[string]*entry{}
	rt.plens = nil
	rt.tern = nil
	rt.defAI, rt.defParams = t.defAI, append([]uint64(nil), t.defParams...)
	for _, e := range t.entries {
		cp := *e
		cp.vals = append([]uint64(nil), e.vals...)
		cp.masks = append([]uint64(nil), e.masks...)
		if e.his != nil {
			cp.his = append([]uint64(nil), e.his...)
		}
		cp.params = append([]uint64(nil), e.params...)
		rt.insert(&cp)
	}
}

// identity is the key of an entry for P4Runtime (match fields and priority).
func (rt *tableRT) identity(e *entry) string {
	b := make([]byte, 0, 16*len(e.vals)+4)
	for i := range e.vals {
		b = binary.BigEndian.AppendUint64(b, e.vals[i])
		b = binary.BigEndian.AppendUint64(b, e.masks[i])
		if e.his != nil {
			b = binary.BigEndian.AppendUint64(b, e.his[i])
		}
	}
	b = binary.BigEndian.AppendUint32(b, uint32(e.prio))
	return string(b)
}

func lookupKey(b []byte, vals []uint64, lpmKey int, lpmMask uint64) []byte {
	for i, v := range vals {
		if i == lpmKey {
			v &= lpmMask
		}
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func (rt *tableRT) insert(e *entry) {
	rt.seq++
	e.seq = rt.seq
	rt.byID[rt.identity(e)] = e
	t := rt.c
	switch t.kind {
	case tkExact:
		if len(t.keys) == 1 {
			rt.exact1[e.vals[0]] = e
		} else {
			rt.exact[string(lookupKey(nil, e.vals, -1, 0))] = e
		}
	case tkLPM:
		m := rt.lpm[e.plen]
		if m == nil {
			m = map[string]*entry{}
			rt.lpm[e.plen] = m
			rt.plens = append(rt.plens, e.plen)
			sort.Sort(sort.Reverse(sort.IntSlice(rt.plens)))
		}
		m[string(lookupKey(nil, e.vals, t.lpmKey, e.masks[t.lpmKey]))] = e
	case tkTernary:
		rt.tern = append(rt.tern, e)
		sort.SliceStable(rt.tern, func(i, j int) bool {
			if rt.tern[i].prio != rt.tern[j].prio {
				return rt.tern[i].prio > rt.tern[j].prio
			}
			return rt.tern[i].seq < rt.tern[j].seq
		})
	}
}

func (rt *tableRT) remove(e *entry) {
	delete(rt.byID, rt.identity(e))
	t := rt.c
	switch t.kind {
	case tkExact:
		if len(t.keys) == 1 {
			delete(rt.exact1, e.vals[0])
		} else {
			delete(rt.exact, string(lookupKey(nil, e.vals, -1, 0)))
		}
	case tkLPM:
		m := rt.lpm[e.plen]
		delete(m, string(lookupKey(nil, e.vals, t.lpmKey, e.masks[t.lpmKey])))
		if len(m) == 0 {
			delete(rt.lpm, e.plen)
			for i, pl := range rt.plens {
				if pl == e.plen {
					rt.plens = append(rt.plens[:i], rt.plens[i+1:]...)
					break
				}
			}
		}
	case tkTernary:
		for i, x := range rt.tern {
			if x == e {
				rt.tern = append(rt.tern[:i], rt.tern[i+1:]...)
				break
			}
		}
	}
}

// sorted returns the entries in insertion order.
func (rt *tableRT) sorted() []*entry {
	list := make([]*entry, 0, len(rt.byID))
	for _, e := range rt.byID {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	return list
}

// lookup finds the entry matching the key values in s.slots[keySlot:].
func (rt *tableRT) lookup(s *pktState) *entry {
	t := rt.c
	keys := s.slots[t.keySlot : t.keySlot+len(t.keys)]
	switch t.kind {
	case tkExact:
		if len(keys) == 1 {
			return rt.exact1[keys[0]]
		}
		s.keyBuf = lookupKey(s.keyBuf[:0], keys, -1, 0)
		return rt.exact[string(s.keyBuf)]
	case tkLPM:
		w := t.keys[t.lpmKey].w
		for _, pl := range rt.plens {
			s.keyBuf = lookupKey(s.keyBuf[:0], keys, t.lpmKey, prefixMask(pl, w))
			if e := rt.lpm[pl][string(s.keyBuf)]; e != nil {
				return e
			}
		}
	case tkTernary:
		if t.isRange != nil {
			return rt.lookupRange(keys)
		}
	next:
		for _, e := range rt.tern {
			for i, k := range keys {
				if k&e.masks[i] != e.vals[i] {
					continue next
				}
			}
			return e
		}
	}
	return nil
}

// lookupRange is the priority-ordered scan of a table with range keys.
func (rt *tableRT) lookupRange(keys []uint64) *entry {
	isRange := rt.c.isRange
next:
	for _, e := range rt.tern {
		for i, k := range keys {
			if isRange[i] {
				if k < e.vals[i] || k > e.his[i] {
					continue next
				}
			} else if k&e.masks[i] != e.vals[i] {
				continue next
			}
		}
		return e
	}
	return nil
}

// applyFn compiles t.apply().
func (t *tableC) applyFn() stmtFn {
	keys := t.keys
	ks, hs, rs, idx := t.keySlot, t.hitSlot, t.runSlot, t.idx
	acts := make([]*actionC, len(t.actions))
	slots := make([][]int, len(t.actions))
	for i, r := range t.actions {
		acts[i] = r.act
		for _, p := range r.act.dataParams() {
			slots[i] = append(slots[i], p.slot)
		}
	}
	tc := t
	dreg := t.dreg
	// meter runs after the lookup of a table with a direct meter or idle
	// timeouts (nil otherwise).
	var meter func(s *pktState, e *entry)
	if t.meter != nil {
		ms, unit := t.meterSlot, t.meter.munit
		meter = func(s *pktState, e *entry) {
			s.slots[ms] = colorGreen
			if e != nil && e.meter != nil {
				s.slots[ms] = e.meter.exec(s.now(), meterSize(s, unit))
			}
		}
	}
	if t.idle {
		m := meter
		meter = func(s *pktState, e *entry) {
			if e != nil {
				e.lastHit = s.now()
			}
			if m != nil {
				m(s, e)
			}
		}
	}
	return func(s *pktState) flow {
		for i := range keys {
			if src := keys[i].slot; src >= 0 {
				s.slots[ks+i] = s.slots[src]
			} else {
				s.slots[ks+i] = keys[i].fn(s)
			}
		}
		rt := s.dev.tables[idx]
		ai, params := rt.defAI, rt.defParams
		hit := uint64(0)
		e := rt.lookup(s)
		if e != nil {
			hit = 1
			ai, params = e.ai, e.params
			if e.indirect {
				var ok bool
				if ai, params, ok = tc.resolve(s, e); !ok {
					hit, ai, params = 0, rt.defAI, rt.defParams
				}
			}
			e.packets++
			e.bytes += uint64(len(s.pkt) - s.pre)
		}
		if meter != nil {
			meter(s, e)
		}
		s.slots[hs] = hit
		s.slots[rs] = uint64(ai)
		for i, sl := range slots[ai] {
			s.slots[sl] = params[i]
		}
		if dreg == nil {
			acts[ai].body(s)
		} else {
			s.dcell, s.dcellOf = nil, dreg
			if e != nil {
				s.dcell = &e.dreg
			}
			acts[ai].body(s)
			s.dcell, s.dcellOf = nil, nil
		}
		if s.exited {
			return flowReturn
		}
		return flowNext
	}
}

var _ = big.NewInt
