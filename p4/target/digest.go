package target

import (
	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/swordbox/swordbox/p4/target/frontend"
)

// Digests: v1model's digest<T>(receiver, data). One digest instance per
// type T, named (and its P4Info ID hashed) after T, as p4c does; its data
// is a struct of bit<W> or bool fields (a struct value, or a list
// expression with T given explicitly). Each call queues one record on the
// Device; a server takes them with TakeDigests. The queue holds at most
// digestQueueCap records per digest: further records are dropped and
// counted (Stats.DigestDrops), as a learn engine's buffer would. The
// receiver argument is evaluated and ignored (BMv2 ignores it too).

const digestQueueCap = 1024

// digestC is a compiled digest instance.
type digestC struct {
	name   string // the type's name
	id     uint32
	t      *ptype
	fields []pfieldW
	idx    int
	anns   []frontend.Annotation
	p      frontend.Pos
}

type pfieldW struct {
	name string
	w    int
}

// digestQ is the runtime queue of one digest: a ring of records of
// len(fields) values each.
type digestQ struct {
	vals       []uint64
	head, n    int
	nf         int
	recordsCap int
}

func (q *digestQ) push(s *pktState, fields []exprFn) bool {
	if q.n == q.recordsCap {
		return false
	}
	at := ((q.head + q.n) % q.recordsCap) * q.nf
	for i, f := range fields {
		q.vals[at+i] = f(s)
	}
	q.n++
	return true
}

// digestCall compiles digest<T>(receiver, data).
func (c *compiler) digestCall(sc *scope, e *frontend.CallExpr) stmtFn {
	if c.inParser {
		c.fail(e.P, "digest cannot be called from a parser")
	}
	if len(e.Args) != 2 {
		c.fail(e.P, "digest takes (receiver, data)")
	}
	if len(e.Targs) > 1 {
		c.fail(e.P, "digest takes one type argument")
	}
	recv := c.typed(c.rvalue(sc, e.Args[0], bitT(32)), e.Args[0].ExprPos()).fn
	var t *ptype
	if len(e.Targs) == 1 {
		t = c.resolveType(sc, e.Targs[0])
	}
	var fns []exprFn
	if l, ok := e.Args[1].(*frontend.ListExpr); ok {
		if t == nil {
			c.fail(e.P, "digest of a list needs its struct type: digest<T>(receiver, {...})")
		}
		if t.kind != kStruct || len(l.Elems) != len(t.fields) {
			c.fail(e.Args[1].ExprPos(), "digest data: %d values for %s", len(l.Elems), t)
		}
		for i, el := range l.Elems {
			fns = append(fns, c.typed(c.rvalue(sc, el, t.fields[i].t), el.ExprPos()).fn)
		}
	} else {
		v := c.expr(sc, e.Args[1])
		if v.t.kind != kStruct || v.lv == nil {
			c.fail(e.Args[1].ExprPos(), "digest data must be a struct (or a list with digest<T>), found %s", v.t)
		}
		if t != nil && t != v.t {
			c.fail(e.Args[1].ExprPos(), "digest data is %s, not %s", v.t, t)
		}
		t = v.t
		for _, f := range t.fields {
			slot := v.lv.base + f.off
			fns = append(fns, func(s *pktState) uint64 { return s.slots[slot] })
		}
	}
	dg := c.digestOf(t, e.P)
	idx := dg.idx
	return func(s *pktState) flow {
		recv(s)
		d := s.dev
		if !d.digestQs[idx].push(s, fns) {
			d.stats.DigestDrops++
		}
		return flowNext
	}
}

// digestOf returns the digest instance of type t, declaring it on first use.
func (c *compiler) digestOf(t *ptype, at frontend.Pos) *digestC {
	p := c.prog
	for _, dg := range p.digests {
		if dg.t == t {
			return dg
		}
	}
	dg := &digestC{name: t.name, t: t, idx: len(p.digests), anns: t.anns, p: at}
	for _, f := range t.fields {
		switch f.t.kind {
		case kBit, kBool:
		default:
			c.fail(at, "digest type %s: field %s must be bit<W> or bool, found %s", t.name, f.name, f.t)
		}
		dg.fields = append(dg.fields, pfieldW{name: f.name, w: widthOf(f.t)})
	}
	p.digests = append(p.digests, dg)
	return dg
}

// digestInfo adds the digests and their struct types to a P4Info.
func (p *Program) digestInfo(info *configv1.P4Info, pre func(id uint32, name string, anns []string) *configv1.Preamble) {
	for _, dg := range p.digests {
		info.Digests = append(info.Digests, &configv1.Digest{Preamble: pre(dg.id, dg.name, nil),
			TypeSpec: &configv1.P4DataTypeSpec{TypeSpec: &configv1.P4DataTypeSpec_Struct{Struct: &configv1.P4NamedType{Name: dg.name}}}})
		var names []string
		var widths []int
		for _, f := range dg.fields {
			names, widths = append(names, f.name), append(widths, f.w)
		}
		addStructType(info, dg.name, names, widths)
	}
}

// addStructType adds a struct of bit<W> members to a P4Info's type_info.
func addStructType(info *configv1.P4Info, name string, members []string, widths []int) {
	if info.TypeInfo == nil {
		info.TypeInfo = &configv1.P4TypeInfo{}
	}
	if info.TypeInfo.Structs == nil {
		info.TypeInfo.Structs = map[string]*configv1.P4StructTypeSpec{}
	}
	st := &configv1.P4StructTypeSpec{}
	for i, m := range members {
		st.Members = append(st.Members, &configv1.P4StructTypeSpec_Member{Name: m, TypeSpec: bitSpec(widths[i])})
	}
	info.TypeInfo.Structs[name] = st
}

// bitSpec is the P4Info type of a bit<w>.
func bitSpec(w int) *configv1.P4DataTypeSpec {
	return &configv1.P4DataTypeSpec{TypeSpec: &configv1.P4DataTypeSpec_Bitstring{Bitstring: &configv1.P4BitstringLikeTypeSpec{
		TypeSpec: &configv1.P4BitstringLikeTypeSpec_Bit{Bit: &configv1.P4BitTypeSpec{Bitwidth: int32(w)}}}}}
}

// DigestData encodes one digest record as P4Runtime's P4Data: a struct of
// bitstrings, in canonical form.
func DigestData(vals []uint64) *p4v1.P4Data {
	st := &p4v1.P4StructLike{}
	for _, v := range vals {
		st.Members = append(st.Members, &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: encodeBits(v)}})
	}
	return &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: st}}
}

// TakeDigests removes every queued digest record and calls fn with its
// digest's P4Info ID and values (valid only during the call), in the order
// the packets made them. fn runs with the Device's lock held: it must not
// call back into the Device.
func (d *Device) TakeDigests(fn func(digestID uint32, vals []uint64)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, dg := range d.prog.digests {
		q := &d.digestQs[i]
		for ; q.n > 0; q.n-- {
			at := q.head * q.nf
			fn(dg.id, q.vals[at:at+q.nf])
			q.head = (q.head + 1) % q.recordsCap
		}
		q.head = 0
	}
}
