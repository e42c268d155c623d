package target

import (
	"fmt"
	"github.com/swordbox/swordbox/p4/target/frontend"
	"math/big"
	"runtime/debug"
	"strings"
	"sync"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// Program is a compiled, type-checked P4_16 v1model program: the pipeline
// as closures over packet slots, plus the descriptions of its tables,
// actions and externs (its P4Info). A Program is immutable and can back any
// number of Devices.
type Program struct {
	file   string
	nslots int

	hdrT, metaT         *ptype
	hdrBase, metaBase   int
	smBase              int
	smIngressPort       int
	smEgressSpec        int
	smEgressPort        int
	smPacketLength      int
	smIngressTS         int
	smEgressTS          int
	smParserError       int
	smInstanceType      int
	smMcastGrp          int
	smEgressRid         int
	smPriority          int
	smSize              int // slots of standard_metadata
	smChecksumError     int
	parser              *parserC
	verify, ingress     *controlC
	egress, compute     *controlC
	deparser            *controlC
	tables              []*tableC
	actions             []*actionC // actions in the P4Info (referenced by a table)
	allActions          []*actionC
	registers           []*externC
	counters            []*externC
	directCounters      []*externC
	meters              []*externC
	digests             []*digestC
	profiles            []*externC // action profiles and selectors
	directMeters        []*externC
	packetIn, packetOut *ptype // @controller_header types (nil when absent)
	info                *configv1.P4Info
	errCodes            map[string]uint64
	outSlack            int // bytes the output may need beyond the input frame
	tsSlots             [2]int
	hdrBases            []int            // base slot of each header of hdr (tna: of both pipelines' headers), in order
	hdrSizes            []int            // slots of each header of hdrBases
	hdrAllBytes         int              // bytes of all headers of hdrBases
	tna                 *tnaProg         // the TNA pipeline (nil: v1model)
	fieldLists          map[uint64][]int // @field_list index -> metadata slots it preserves
	placeIn             *placementInput  // tna: the placement check's input (placement.go)
	placeOnce           sync.Once        // computes placement from placeIn on first use
	placement           []string         // tna: the placement check's problems
}

// pktState is the per-packet working state: the slots every compiled
// closure reads and writes, the parser cursor, and the output buffer.
// States are pooled by the Device; nothing in them is allocated per packet.
type pktState struct {
	slots                 []uint64
	dev                   *Device
	pkt                   []byte
	off                   int
	out                   []byte
	exited                bool
	keyBuf                []byte
	dataBuf               []byte
	hoff1                 []int32 // per header of hdr: 1 + offset where it was extracted (0: not extracted)
	dirty                 []bool  // per header of hdr: a field was written since extraction
	ts                    uint64  // timestamp of this packet (lazy: tsSet)
	tsSet                 bool
	clone                 cloneReq // the last clone call of the current control
	saves                 []*snap  // saved states for replication (allocated on first use)
	pending               uint8    // pendClone, pendResub, pendRecirc
	resubKeep, recircKeep []int    // field lists of resubmit and recirculate
	depth                 int      // times this packet was resubmitted or recirculated
	pre                   int      // tna: bytes of intrinsic metadata in front of the frame in pkt
	inBuf, egBuf          []byte   // tna: the ingress and egress parsers' input (metadata + frame)
	dcell                 *uint64  // tna: the DirectRegister cell of the entry whose action runs (nil: a miss)
	dcellOf               *externC // tna: the DirectRegister of that table
}

// flow is what a compiled statement tells its enclosing block.
type flow uint8

const (
	flowNext   flow = iota
	flowReturn      // return or exit (exit also sets pktState.exited)
	flowReject      // parser: go to reject
)

type stmtFn func(*pktState) flow
type exprFn func(*pktState) uint64

// compiler holds the state of one compilation.
type compiler struct {
	file     string
	global   *scope
	prog     *Program
	nslots   int
	errT     *ptype
	mkT      *ptype
	ctlName  string // enclosing control/parser, for P4Info names
	inParser bool
	inAction *actionC
	locals   *scope
	ids      map[uint32]string
	smT      *ptype
	cells    int // register and counter cells so far

	blocks    map[string]frontend.Decl // parsers and controls by name
	subs      map[*frontend.InstDecl]*subInst
	subStack  []frontend.Decl      // the sub-parsers and sub-controls being compiled, outermost first
	watch     map[int]int          // slot -> slot set to 1 whenever the first is written (tna's ucast_egress_port)
	tnaT      *tnaTypes            // tna.p4's intrinsic metadata types (tna programs)
	tnaRole   string               // the tna block being compiled ("ingress parser", ...)
	codecs    map[int]*headerCodec // header codecs of the headers struct, by base slot
	mentioned map[int]bool         // header field slots the program reads or writes
	emitBytes int                  // bytes all emit calls together can write

	eff   *effNode          // the effect sequence being recorded (nil: none), for the placement check
	objs  map[any]*stateObj // stateful objects and tables of the placement check
	sites []*effNode        // access sites of the placement check, by number
	// The effect of the last table apply recorded, and its table (an if on
	// t.apply().hit pairs the actions with the branches).
	lastApply   *effNode
	lastApplied *tableC
}

func (c *compiler) fail(at frontend.Pos, format string, args ...any) {
	panic(&frontend.SrcError{File: c.file, P: at, Msg: fmt.Sprintf(format, args...)})
}

// CompileOptions are the options of a compile: the front end's (include
// path, defines, how files are read) and the checks to apply.
type CompileOptions struct {
	// IncludeDirs are searched in order for #include "file" when the file
	// is not found beside the file that includes it (as p4c's -I).
	IncludeDirs []string
	// Defines are object-like macros defined before the program (as
	// p4c's -D NAME=VALUE).
	Defines map[string]string
	// ReadFile reads the program and its included files; nil means the
	// file system (regular files of at most 16 MiB).
	ReadFile func(path string) ([]byte, error)
	// TofinoPlacement refuses a tna program whose stateful objects no
	// Tofino stage order can hold (placement.go: an object accessed twice
	// on one path, objects accessed in opposite orders on two paths), with
	// a *PlacementError listing every problem at file:line:col. Off by default; Program.TofinoPlacement
	// reports the same problems for a program compiled without it. A
	// v1model program is refused with it.
	TofinoPlacement bool
}

// Compile parses, type-checks and compiles a P4_16 program written for
// v1model or tna. It refuses, with "file:line:col: reason", every program
// that uses something this target does not implement. #include "file" is
// looked up beside filename.
func Compile(filename string, src []byte) (prog *Program, err error) {
	return CompileWith(filename, src, CompileOptions{})
}

// CompileFile reads and compiles the program at path.
func CompileFile(path string, o CompileOptions) (*Program, error) {
	read := o.ReadFile
	if read == nil {
		read = frontend.ReadSource
	}
	src, err := read(path)
	if err != nil {
		return nil, err
	}
	return CompileWith(path, src, o)
}

// CompileWith is Compile with options (include path, defines).
func CompileWith(filename string, src []byte, o CompileOptions) (prog *Program, err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(*frontend.SrcError); ok {
				prog, err = nil, e
				return
			}
			prog, err = nil, fmt.Errorf("%s: internal error: %v\n%s", filename, r, debug.Stack())
		}
	}()
	fo := frontend.Options{IncludeDirs: o.IncludeDirs, Defines: o.Defines, ReadFile: o.ReadFile}
	ast, err := frontend.ParseProgram(filename, src, &fo)
	if err != nil {
		return nil, err
	}
	c := &compiler{file: filename, global: newScope(nil), prog: &Program{file: filename}, ids: map[uint32]string{},
		codecs: map[int]*headerCodec{}, mentioned: map[int]bool{}, blocks: map[string]frontend.Decl{}, watch: map[int]int{}}
	c.declareBuiltins()
	blocks := c.blocks
	pipes := map[string]*frontend.InstDecl{}
	var mainInst *frontend.InstDecl
	for _, d := range ast.Decls {
		switch d := d.(type) {
		case *frontend.HeaderDecl:
			c.declareHeader(d)
		case *frontend.StructDecl:
			c.declareStruct(d)
		case *frontend.TypedefDecl:
			c.define(d.P, d.Name, &symbol{kind: sType, t: c.resolveType(c.global, d.T)})
		case *frontend.ConstDecl:
			c.declareConst(c.global, d)
		case *frontend.EnumDecl:
			c.declareEnum(d)
		case *frontend.ErrorDecl:
			t := c.errT
			if d.Kind == "match_kind" {
				t = c.mkT
			}
			for _, m := range d.Members {
				for _, old := range t.members {
					if old == m {
						c.fail(d.P, "%s.%s declared twice", t, m)
					}
				}
				t.members = append(t.members, m)
			}
		case *frontend.ActionDecl:
			c.ctlName = ""
			a := c.declareAction(c.global, d)
			c.define(d.P, d.Name, &symbol{kind: sAction, act: a})
		case *frontend.ParserDecl:
			c.define(d.P, d.Name, &symbol{kind: sType, t: voidT})
			blocks[d.Name] = d
		case *frontend.ControlDecl:
			c.define(d.P, d.Name, &symbol{kind: sType, t: voidT})
			blocks[d.Name] = d
		case *frontend.InstDecl:
			if d.Name == "main" {
				mainInst = d
				continue
			}
			if ast.Tna && d.T.Kind == "name" && d.T.Name == "Pipeline" {
				if pipes[d.Name] != nil {
					c.fail(d.P, "%s is declared twice", d.Name)
				}
				pipes[d.Name] = d
				continue
			}
			c.fail(d.P, "top-level instantiation of %s is not supported (declare externs inside a control)", d.T.Name)
		default:
			c.fail(d.DeclPos(), "unsupported declaration")
		}
	}
	if mainInst == nil {
		if ast.Tna {
			c.fail(frontend.Pos{Line: 1, Col: 1}, "no package instantiation named main (expected Switch(pipe) main;)")
		}
		c.fail(frontend.Pos{Line: 1, Col: 1}, "no package instantiation named main (expected V1Switch(...) main;)")
	}
	if ast.Tna {
		c.assembleTNA(mainInst, pipes)
		t := c.prog.tna
		c.prog.placeIn = &placementInput{file: filename, gresses: []string{t.ingress.name, t.egress.name},
			trees: []*effNode{t.ingress.eff, t.egress.eff}, sites: c.sites, nobj: len(c.objs)}
	} else {
		if o.TofinoPlacement {
			c.fail(mainInst.P, "the Tofino placement check (CompileOptions.TofinoPlacement) applies to tna programs; this is a v1model program")
		}
		c.assemble(mainInst, blocks)
	}
	c.finishCodecs()
	c.prog.nslots = c.nslots
	// The deparser has no loops: the sum over its emit calls bounds what
	// it writes (a header may be emitted more than once).
	c.prog.outSlack = max(c.prog.hdrBytes(), c.emitBytes) + 8
	c.prog.info = c.buildP4Info()
	if o.TofinoPlacement {
		if err := c.prog.TofinoPlacement(); err != nil {
			return nil, err
		}
	}
	return c.prog, nil
}

func (c *compiler) define(at frontend.Pos, name string, s *symbol) {
	c.defineIn(c.global, at, name, s)
}

func (c *compiler) defineIn(sc *scope, at frontend.Pos, name string, s *symbol) {
	if _, ok := sc.m[name]; ok {
		c.fail(at, "%s is declared twice", name)
	}
	sc.m[name] = s
}

func (c *compiler) alloc(n int) int {
	b := c.nslots
	c.nslots += n
	if c.nslots > 1<<20 {
		c.fail(frontend.Pos{Line: 1, Col: 1}, "program state too large")
	}
	return b
}

// Built-in declarations of core.p4 and v1model.p4.
func (c *compiler) declareBuiltins() {
	c.errT = &ptype{kind: kError, name: "error", size: 1, members: []string{
		"NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument"}}
	c.mkT = &ptype{kind: kMatchKind, name: "match_kind", members: []string{"exact", "ternary", "lpm", "range", "optional", "selector"}}
	c.global.m["error"] = &symbol{kind: sType, t: c.errT}
	enum := func(name string, members ...string) {
		c.global.m[name] = &symbol{kind: sType, t: &ptype{kind: kEnum, name: name, size: 1, members: members}}
	}
	enum("HashAlgorithm", "crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity", "csum16", "xor16")
	enum("CounterType", "packets", "bytes", "packets_and_bytes")
	enum("MeterType", "packets", "bytes")
	enum("CloneType", "I2E", "E2E")
	sm := &ptype{kind: kStruct, name: "standard_metadata_t"}
	add := func(name string, t *ptype) {
		sm.fields = append(sm.fields, &pfield{name: name, t: t, off: sm.size})
		sm.size += t.size
	}
	add("ingress_port", bitT(9))
	add("egress_spec", bitT(9))
	add("egress_port", bitT(9))
	add("instance_type", bitT(32))
	add("packet_length", bitT(32))
	add("enq_timestamp", bitT(32))
	add("enq_qdepth", bitT(19))
	add("deq_timedelta", bitT(32))
	add("deq_qdepth", bitT(19))
	add("ingress_global_timestamp", bitT(48))
	add("egress_global_timestamp", bitT(48))
	add("mcast_grp", bitT(16))
	add("egress_rid", bitT(16))
	add("checksum_error", bitT(1))
	add("parser_error", c.errT)
	add("priority", bitT(3))
	c.smT = sm
	c.global.m["standard_metadata_t"] = &symbol{kind: sType, t: sm}
	c.global.m["packet_in"] = &symbol{kind: sType, t: &ptype{kind: kVoid, name: "packet_in"}}
	c.global.m["packet_out"] = &symbol{kind: sType, t: &ptype{kind: kVoid, name: "packet_out"}}
	for _, n := range []string{"register", "counter", "direct_counter", "meter", "direct_meter", "V1Switch"} {
		c.global.m[n] = &symbol{kind: sType, t: &ptype{kind: kVoid, name: n}}
	}
	// NoAction, as core.p4 declares it.
	c.ctlName = ""
	na := c.declareAction(c.global, &frontend.ActionDecl{P: frontend.Pos{}, Name: "NoAction", Body: &frontend.BlockStmt{},
		Anns: []frontend.Annotation{{Name: "noWarn", Body: `"unused"`}}})
	c.global.m["NoAction"] = &symbol{kind: sAction, act: na}
}

func (c *compiler) declareHeader(d *frontend.HeaderDecl) {
	if d.Union {
		c.fail(d.P, "header_union is not supported")
	}
	t := &ptype{kind: kHeader, name: d.Name, size: 1, anns: d.Anns}
	for _, f := range d.Fields {
		ft := c.resolveType(c.global, f.T)
		switch {
		case ft.kind == kBit, ft.kind == kWide:
		case ft.kind == kEnum && ft.width > 0:
		default:
			c.fail(f.P, "header field %s.%s: type %s is not supported in headers", d.Name, f.Name, ft)
		}
		if t.field(f.Name) != nil {
			c.fail(f.P, "field %s declared twice", f.Name)
		}
		t.fields = append(t.fields, &pfield{name: f.Name, t: ft, off: t.size, bitOff: t.bits, anns: f.Anns})
		t.size += ft.size
		t.bits += ft.width
	}
	if t.bits%8 != 0 {
		c.fail(d.P, "header %s is %d bits long, not a whole number of bytes", d.Name, t.bits)
	}
	c.define(d.P, d.Name, &symbol{kind: sType, t: t})
}

func (c *compiler) declareStruct(d *frontend.StructDecl) {
	t := &ptype{kind: kStruct, name: d.Name, anns: d.Anns}
	for _, f := range d.Fields {
		ft := c.resolveType(c.global, f.T)
		switch ft.kind {
		case kBit, kBool, kEnum, kError, kHeader, kStruct, kWide:
		default:
			c.fail(f.P, "struct field %s.%s: type %s is not supported", d.Name, f.Name, ft)
		}
		if t.field(f.Name) != nil {
			c.fail(f.P, "field %s declared twice", f.Name)
		}
		t.fields = append(t.fields, &pfield{name: f.Name, t: ft, off: t.size, anns: f.Anns})
		t.size += ft.size
	}
	c.define(d.P, d.Name, &symbol{kind: sType, t: t})
}

func (c *compiler) declareEnum(d *frontend.EnumDecl) {
	t := &ptype{kind: kEnum, name: d.Name, size: 1, members: d.Members}
	if d.Under != nil {
		u := c.resolveType(c.global, d.Under)
		if u.kind != kBit {
			c.fail(d.P, "enum %s: underlying type must be bit<W>", d.Name)
		}
		t.width = u.width
		for i, e := range d.Values {
			v := c.constValue(c.global, e, u)
			_ = i
			t.values = append(t.values, v)
		}
	}
	seen := map[string]bool{}
	for _, m := range d.Members {
		if seen[m] {
			c.fail(d.P, "enum %s: member %s declared twice", d.Name, m)
		}
		seen[m] = true
	}
	c.define(d.P, d.Name, &symbol{kind: sType, t: t})
}

func (c *compiler) declareConst(sc *scope, d *frontend.ConstDecl) {
	t := c.resolveType(sc, d.T)
	if !t.scalar() {
		c.fail(d.P, "constant %s: type %s is not supported", d.Name, t)
	}
	v := c.rvalue(sc, d.Val, t)
	if !v.isConst {
		c.fail(d.Val.ExprPos(), "initializer of constant %s is not a compile-time constant", d.Name)
	}
	c.defineIn(sc, d.P, d.Name, &symbol{kind: sConst, t: t, cval: v})
}

// constValue evaluates a compile-time constant of type t.
func (c *compiler) constValue(sc *scope, e frontend.Expr, t *ptype) uint64 {
	v := c.rvalue(sc, e, t)
	if !v.isConst {
		c.fail(e.ExprPos(), "not a compile-time constant")
	}
	return v.k
}

// constInt evaluates a compile-time integer (widths, sizes, slice bounds).
func (c *compiler) constInt(sc *scope, e frontend.Expr) int64 {
	v := c.expr(sc, e)
	switch {
	case v.isConst && v.t.kind == kInt:
		if !v.big.IsInt64() {
			c.fail(e.ExprPos(), "constant out of range")
		}
		return v.big.Int64()
	case v.isConst && v.t.kind == kBit:
		return int64(v.k)
	}
	c.fail(e.ExprPos(), "expected a compile-time integer")
	return 0
}

func (c *compiler) resolveType(sc *scope, tr *frontend.TypeRef) *ptype {
	switch tr.Kind {
	case "bit":
		w := c.constInt(sc, tr.Width)
		if w > maxWidth && w <= maxWideWidth {
			return wideT(int(w))
		}
		if w < 1 || w > maxWidth {
			c.fail(tr.P, "bit<%d>: this target supports widths 1 to %d (and up to %d for header fields it does not compute with)", w, maxWidth, maxWideWidth)
		}
		return bitT(int(w))
	case "int":
		c.fail(tr.P, "signed int<W> types are not supported")
	case "varbit":
		c.fail(tr.P, "varbit is not supported")
	case "bool":
		return boolT
	case "error":
		return c.errT
	case "string":
		return stringT
	case "void":
		return voidT
	case "dontcare":
		c.fail(tr.P, "_ is only allowed as an extern's type argument")
	case "name":
		s := sc.lookup(tr.Name)
		if s == nil || s.kind != sType {
			c.fail(tr.P, "unknown type %s", tr.Name)
		}
		if len(tr.Args) > 0 {
			c.fail(tr.P, "type arguments are only allowed on externs")
		}
		return s.t
	}
	c.fail(tr.P, "unsupported type")
	return nil
}

// fqName applies p4c's naming rules: a local name in a control becomes
// "Control.name"; @name("x") replaces the local name; @name(".x") is global.
func (c *compiler) fqName(local string, anns []frontend.Annotation) string {
	for _, a := range anns {
		if a.Name == "name" && len(a.Args) == 1 && a.Args[0].Kind == frontend.TString {
			n := a.Args[0].Text
			if strings.HasPrefix(n, ".") {
				return n[1:]
			}
			local = n
		}
	}
	if c.ctlName == "" {
		return local
	}
	return c.ctlName + "." + local
}

// assemble binds the six V1Switch blocks to the global instances of the
// headers, the user metadata and standard_metadata, and compiles them.
func (c *compiler) assemble(m *frontend.InstDecl, blocks map[string]frontend.Decl) {
	if m.T.Kind != "name" || m.T.Name != "V1Switch" {
		c.fail(m.P, "main must be a V1Switch(...) instantiation (only v1model is supported)")
	}
	if len(m.Args) != 6 {
		c.fail(m.P, "V1Switch takes 6 blocks (parser, verifyChecksum, ingress, egress, computeChecksum, deparser), got %d", len(m.Args))
	}
	names := make([]string, 6)
	for i, a := range m.Args {
		call, ok := a.(*frontend.CallExpr)
		if !ok {
			c.fail(a.ExprPos(), "V1Switch argument must be an instantiation Block()")
		}
		id, ok := call.Fn.(*frontend.IdentExpr)
		if !ok || len(call.Args) != 0 {
			c.fail(a.ExprPos(), "V1Switch argument must be an instantiation Block()")
		}
		if blocks[id.Name] == nil {
			c.fail(a.ExprPos(), "unknown parser or control %s", id.Name)
		}
		names[i] = id.Name
	}
	pd, ok := blocks[names[0]].(*frontend.ParserDecl)
	if !ok {
		c.fail(m.Args[0].ExprPos(), "first V1Switch argument must be a parser")
	}
	if len(pd.Params) != 4 {
		c.fail(pd.P, "v1model parser takes (packet_in, out H, inout M, inout standard_metadata_t)")
	}
	hdrT := c.resolveType(c.global, pd.Params[1].T)
	metaT := c.resolveType(c.global, pd.Params[2].T)
	if hdrT.kind != kStruct {
		c.fail(pd.Params[1].P, "headers type %s must be a struct", hdrT)
	}
	if metaT.kind != kStruct {
		c.fail(pd.Params[2].P, "metadata type %s must be a struct", metaT)
	}
	p := c.prog
	p.hdrT, p.metaT = hdrT, metaT
	p.hdrBase = c.alloc(hdrT.size)
	p.metaBase = c.alloc(metaT.size)
	p.smBase = c.alloc(c.smT.size)
	smSlot := func(n string) int { return p.smBase + c.smT.field(n).off }
	p.smIngressPort = smSlot("ingress_port")
	p.smEgressSpec = smSlot("egress_spec")
	p.smEgressPort = smSlot("egress_port")
	p.smPacketLength = smSlot("packet_length")
	p.smIngressTS = smSlot("ingress_global_timestamp")
	p.smEgressTS = smSlot("egress_global_timestamp")
	p.tsSlots = [2]int{p.smIngressTS, p.smEgressTS}
	p.smParserError = smSlot("parser_error")
	p.smInstanceType = smSlot("instance_type")
	p.smMcastGrp = smSlot("mcast_grp")
	p.smEgressRid = smSlot("egress_rid")
	p.smPriority = smSlot("priority")
	p.smSize = c.smT.size
	p.smChecksumError = smSlot("checksum_error")
	p.errCodes = map[string]uint64{}
	for i, m := range c.errT.members {
		p.errCodes[m] = uint64(i)
	}
	c.registerHeaders(hdrT, p.hdrBase, pd.Params[1].P, true)

	type want struct {
		dir string
		t   *ptype
	}
	hdr := want{"inout", hdrT}
	meta := want{"inout", metaT}
	sm := want{"inout", c.smT}
	pin := want{"", c.global.m["packet_in"].t}
	pout := want{"", c.global.m["packet_out"].t}
	bases := map[*ptype]int{hdrT: p.hdrBase, metaT: p.metaBase, c.smT: p.smBase}
	bind := func(params []frontend.Param, at frontend.Pos, what string, ws ...want) *scope {
		sc := newScope(c.global)
		if len(params) != len(ws) {
			c.fail(at, "v1model %s takes %d parameters, %s has %d", what, len(ws), what, len(params))
		}
		for i, w := range ws {
			pr := params[i]
			t := c.resolveType(c.global, pr.T)
			if t != w.t {
				c.fail(pr.P, "%s parameter %d: expected %s, found %s", what, i+1, w.t, t)
			}
			dir := pr.Dir
			if what == "parser" && i == 1 {
				if dir != "out" {
					c.fail(pr.P, "parser headers parameter must be out")
				}
			} else if what == "deparser" && i == 1 {
				if dir != "in" {
					c.fail(pr.P, "deparser headers parameter must be in")
				}
			} else if dir != w.dir {
				c.fail(pr.P, "%s parameter %s must be %q", what, pr.Name, w.dir)
			}
			switch w.t.name {
			case "packet_in":
				c.defineIn(sc, pr.P, pr.Name, &symbol{kind: sPacketIn})
			case "packet_out":
				c.defineIn(sc, pr.P, pr.Name, &symbol{kind: sPacketOut})
			default:
				c.defineIn(sc, pr.P, pr.Name, &symbol{kind: sVar, t: t, base: bases[t], readonly: dir == "in"})
			}
		}
		return sc
	}
	ctl := func(i int, what string, ws ...want) *controlC {
		cd, ok := blocks[names[i]].(*frontend.ControlDecl)
		if !ok {
			c.fail(m.Args[i].ExprPos(), "V1Switch argument %d must be a control (%s)", i+1, what)
		}
		sc := bind(cd.Params, cd.P, what, ws...)
		return c.compileControl(cd, sc, what)
	}
	psc := bind(pd.Params, pd.P, "parser", pin, want{"out", hdrT}, meta, sm)
	p.parser = c.compileParser(pd, psc)
	p.verify = ctl(1, "verifyChecksum", hdr, meta)
	p.ingress = ctl(2, "ingress", hdr, meta, sm)
	p.egress = ctl(3, "egress", hdr, meta, sm)
	p.compute = ctl(4, "computeChecksum", hdr, meta)
	p.deparser = ctl(5, "deparser", pout, want{"in", hdrT})
}

// registerHeaders records the headers of the headers struct t at base (the
// deparser copies them from the packet unless modified); with ctl, its
// @controller_header headers are the PacketIn and PacketOut metadata.
func (c *compiler) registerHeaders(t *ptype, base int, at frontend.Pos, ctl bool) {
	p := c.prog
	for _, f := range t.fields {
		if f.t.kind != kHeader {
			c.fail(at, "headers struct %s: member %s must be a header (nested structs and stacks are not supported)", t.name, f.name)
		}
		p.hdrBases = append(p.hdrBases, base+f.off)
		p.hdrSizes = append(p.hdrSizes, f.t.size)
		p.hdrAllBytes += f.t.bits / 8
		for _, a := range f.t.anns {
			if ctl && a.Name == "controller_header" && len(a.Args) == 1 && a.Args[0].Kind == frontend.TString {
				for _, cf := range f.t.fields {
					if cf.t.kind == kWide {
						c.fail(at, "controller header %s: field %s is %s (this target supports up to %d bits there)", f.t.name, cf.name, cf.t, maxWidth)
					}
				}
				switch a.Args[0].Text {
				case "packet_in":
					p.packetIn = f.t
				case "packet_out":
					p.packetOut = f.t
				}
			}
		}
	}
}

// bigVal helpers.
func bigFrom(u uint64) *big.Int { return new(big.Int).SetUint64(u) }
