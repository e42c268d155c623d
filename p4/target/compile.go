package target

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

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

	blocks    map[string]decl // parsers and controls by name
	subs      map[*instDecl]*subInst
	subStack  []decl               // the sub-parsers and sub-controls being compiled, outermost first
	watch     map[int]int          // slot -> slot set to 1 whenever the first is written (tna's ucast_egress_port)
	tnaT      *tnaTypes            // tna.p4's intrinsic metadata types (tna programs)
	tnaRole   string               // the tna block being compiled ("ingress parser", ...)
	codecs    map[int]*headerCodec // header codecs of the headers struct, by base slot
	mentioned map[int]bool         // header field slots the program reads or writes
	emitBytes int                  // bytes all emit calls together can write
}

func (c *compiler) fail(at pos, format string, args ...any) {
	panic(&srcError{file: c.file, p: at, msg: fmt.Sprintf(format, args...)})
}

// CompileOptions are the front end's options.
type CompileOptions struct {
	// IncludeDirs are searched in order for #include "file" when the file
	// is not found beside the file that includes it (as p4c's -I).
	IncludeDirs []string
	// Defines are object-like macros defined before the program (as
	// p4c's -D NAME=VALUE).
	Defines map[string]string
	// ReadFile reads an included file; nil means the file system (regular
	// files of at most 16 MiB).
	ReadFile func(path string) ([]byte, error)
}

// readSource reads a program or an included file: a regular file of at
// most maxSourceBytes (not a device, a FIFO or a directory).
func readSource(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSourceBytes {
		return nil, fmt.Errorf("%s is longer than %d bytes", path, maxSourceBytes)
	}
	return b, nil
}

// find locates an included file: beside the including file from, then in
// IncludeDirs in order.
func (o *CompileOptions) find(name, from string) (string, []byte, error) {
	read := o.ReadFile
	if read == nil {
		read = readSource
	}
	var cands []string
	if filepath.IsAbs(name) {
		cands = []string{name}
	} else {
		cands = append(cands, filepath.Join(filepath.Dir(from), name))
		for _, d := range o.IncludeDirs {
			cands = append(cands, filepath.Join(d, name))
		}
	}
	for _, c := range cands {
		b, err := read(c)
		if err == nil {
			return c, b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", nil, err
		}
	}
	return "", nil, fmt.Errorf("file not found (looked in %s)", strings.Join(cands, ", "))
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
		read = readSource
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
			if e, ok := r.(*srcError); ok {
				prog, err = nil, e
				return
			}
			prog, err = nil, fmt.Errorf("%s: internal error: %v\n%s", filename, r, debug.Stack())
		}
	}()
	ast, err := parseProgram(filename, src, &o)
	if err != nil {
		return nil, err
	}
	c := &compiler{file: filename, global: newScope(nil), prog: &Program{file: filename}, ids: map[uint32]string{},
		codecs: map[int]*headerCodec{}, mentioned: map[int]bool{}, blocks: map[string]decl{}, watch: map[int]int{}}
	c.declareBuiltins()
	blocks := c.blocks
	pipes := map[string]*instDecl{}
	var mainInst *instDecl
	for _, d := range ast.decls {
		switch d := d.(type) {
		case *headerDecl:
			c.declareHeader(d)
		case *structDecl:
			c.declareStruct(d)
		case *typedefDecl:
			c.define(d.p, d.name, &symbol{kind: sType, t: c.resolveType(c.global, d.t)})
		case *constDecl:
			c.declareConst(c.global, d)
		case *enumDecl:
			c.declareEnum(d)
		case *errorDecl:
			t := c.errT
			if d.kind == "match_kind" {
				t = c.mkT
			}
			for _, m := range d.members {
				for _, old := range t.members {
					if old == m {
						c.fail(d.p, "%s.%s declared twice", t, m)
					}
				}
				t.members = append(t.members, m)
			}
		case *actionDecl:
			c.ctlName = ""
			a := c.declareAction(c.global, d)
			c.define(d.p, d.name, &symbol{kind: sAction, act: a})
		case *parserDecl:
			c.define(d.p, d.name, &symbol{kind: sType, t: voidT})
			blocks[d.name] = d
		case *controlDecl:
			c.define(d.p, d.name, &symbol{kind: sType, t: voidT})
			blocks[d.name] = d
		case *instDecl:
			if d.name == "main" {
				mainInst = d
				continue
			}
			if ast.tna && d.t.kind == "name" && d.t.name == "Pipeline" {
				if pipes[d.name] != nil {
					c.fail(d.p, "%s is declared twice", d.name)
				}
				pipes[d.name] = d
				continue
			}
			c.fail(d.p, "top-level instantiation of %s is not supported (declare externs inside a control)", d.t.name)
		default:
			c.fail(d.declPos(), "unsupported declaration")
		}
	}
	if mainInst == nil {
		if ast.tna {
			c.fail(pos{line: 1, col: 1}, "no package instantiation named main (expected Switch(pipe) main;)")
		}
		c.fail(pos{line: 1, col: 1}, "no package instantiation named main (expected V1Switch(...) main;)")
	}
	if ast.tna {
		c.assembleTNA(mainInst, pipes)
	} else {
		c.assemble(mainInst, blocks)
	}
	c.finishCodecs()
	c.prog.nslots = c.nslots
	// The deparser has no loops: the sum over its emit calls bounds what
	// it writes (a header may be emitted more than once).
	c.prog.outSlack = max(c.prog.hdrBytes(), c.emitBytes) + 8
	c.prog.info = c.buildP4Info()
	return c.prog, nil
}

func (c *compiler) define(at pos, name string, s *symbol) {
	c.defineIn(c.global, at, name, s)
}

func (c *compiler) defineIn(sc *scope, at pos, name string, s *symbol) {
	if _, ok := sc.m[name]; ok {
		c.fail(at, "%s is declared twice", name)
	}
	sc.m[name] = s
}

func (c *compiler) alloc(n int) int {
	b := c.nslots
	c.nslots += n
	if c.nslots > 1<<20 {
		c.fail(pos{line: 1, col: 1}, "program state too large")
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
	na := c.declareAction(c.global, &actionDecl{p: pos{}, name: "NoAction", body: &blockStmt{},
		anns: []annotation{{name: "noWarn", body: `"unused"`}}})
	c.global.m["NoAction"] = &symbol{kind: sAction, act: na}
}

func (c *compiler) declareHeader(d *headerDecl) {
	if d.union {
		c.fail(d.p, "header_union is not supported")
	}
	t := &ptype{kind: kHeader, name: d.name, size: 1, anns: d.anns}
	for _, f := range d.fields {
		ft := c.resolveType(c.global, f.t)
		switch {
		case ft.kind == kBit, ft.kind == kWide:
		case ft.kind == kEnum && ft.width > 0:
		default:
			c.fail(f.p, "header field %s.%s: type %s is not supported in headers", d.name, f.name, ft)
		}
		if t.field(f.name) != nil {
			c.fail(f.p, "field %s declared twice", f.name)
		}
		t.fields = append(t.fields, &pfield{name: f.name, t: ft, off: t.size, bitOff: t.bits, anns: f.anns})
		t.size += ft.size
		t.bits += ft.width
	}
	if t.bits%8 != 0 {
		c.fail(d.p, "header %s is %d bits long, not a whole number of bytes", d.name, t.bits)
	}
	c.define(d.p, d.name, &symbol{kind: sType, t: t})
}

func (c *compiler) declareStruct(d *structDecl) {
	t := &ptype{kind: kStruct, name: d.name, anns: d.anns}
	for _, f := range d.fields {
		ft := c.resolveType(c.global, f.t)
		switch ft.kind {
		case kBit, kBool, kEnum, kError, kHeader, kStruct, kWide:
		default:
			c.fail(f.p, "struct field %s.%s: type %s is not supported", d.name, f.name, ft)
		}
		if t.field(f.name) != nil {
			c.fail(f.p, "field %s declared twice", f.name)
		}
		t.fields = append(t.fields, &pfield{name: f.name, t: ft, off: t.size, anns: f.anns})
		t.size += ft.size
	}
	c.define(d.p, d.name, &symbol{kind: sType, t: t})
}

func (c *compiler) declareEnum(d *enumDecl) {
	t := &ptype{kind: kEnum, name: d.name, size: 1, members: d.members}
	if d.under != nil {
		u := c.resolveType(c.global, d.under)
		if u.kind != kBit {
			c.fail(d.p, "enum %s: underlying type must be bit<W>", d.name)
		}
		t.width = u.width
		for i, e := range d.values {
			v := c.constValue(c.global, e, u)
			_ = i
			t.values = append(t.values, v)
		}
	}
	seen := map[string]bool{}
	for _, m := range d.members {
		if seen[m] {
			c.fail(d.p, "enum %s: member %s declared twice", d.name, m)
		}
		seen[m] = true
	}
	c.define(d.p, d.name, &symbol{kind: sType, t: t})
}

func (c *compiler) declareConst(sc *scope, d *constDecl) {
	t := c.resolveType(sc, d.t)
	if !t.scalar() {
		c.fail(d.p, "constant %s: type %s is not supported", d.name, t)
	}
	v := c.rvalue(sc, d.val, t)
	if !v.isConst {
		c.fail(d.val.exprPos(), "initializer of constant %s is not a compile-time constant", d.name)
	}
	c.defineIn(sc, d.p, d.name, &symbol{kind: sConst, t: t, cval: v})
}

// constValue evaluates a compile-time constant of type t.
func (c *compiler) constValue(sc *scope, e expr, t *ptype) uint64 {
	v := c.rvalue(sc, e, t)
	if !v.isConst {
		c.fail(e.exprPos(), "not a compile-time constant")
	}
	return v.k
}

// constInt evaluates a compile-time integer (widths, sizes, slice bounds).
func (c *compiler) constInt(sc *scope, e expr) int64 {
	v := c.expr(sc, e)
	switch {
	case v.isConst && v.t.kind == kInt:
		if !v.big.IsInt64() {
			c.fail(e.exprPos(), "constant out of range")
		}
		return v.big.Int64()
	case v.isConst && v.t.kind == kBit:
		return int64(v.k)
	}
	c.fail(e.exprPos(), "expected a compile-time integer")
	return 0
}

func (c *compiler) resolveType(sc *scope, tr *typeRef) *ptype {
	switch tr.kind {
	case "bit":
		w := c.constInt(sc, tr.width)
		if w > maxWidth && w <= maxWideWidth {
			return wideT(int(w))
		}
		if w < 1 || w > maxWidth {
			c.fail(tr.p, "bit<%d>: this target supports widths 1 to %d (and up to %d for header fields it does not compute with)", w, maxWidth, maxWideWidth)
		}
		return bitT(int(w))
	case "int":
		c.fail(tr.p, "signed int<W> types are not supported")
	case "varbit":
		c.fail(tr.p, "varbit is not supported")
	case "bool":
		return boolT
	case "error":
		return c.errT
	case "string":
		return stringT
	case "void":
		return voidT
	case "dontcare":
		c.fail(tr.p, "_ is only allowed as an extern's type argument")
	case "name":
		s := sc.lookup(tr.name)
		if s == nil || s.kind != sType {
			c.fail(tr.p, "unknown type %s", tr.name)
		}
		if len(tr.args) > 0 {
			c.fail(tr.p, "type arguments are only allowed on externs")
		}
		return s.t
	}
	c.fail(tr.p, "unsupported type")
	return nil
}

// fqName applies p4c's naming rules: a local name in a control becomes
// "Control.name"; @name("x") replaces the local name; @name(".x") is global.
func (c *compiler) fqName(local string, anns []annotation) string {
	for _, a := range anns {
		if a.name == "name" && len(a.args) == 1 && a.args[0].kind == tString {
			n := a.args[0].text
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
func (c *compiler) assemble(m *instDecl, blocks map[string]decl) {
	if m.t.kind != "name" || m.t.name != "V1Switch" {
		c.fail(m.p, "main must be a V1Switch(...) instantiation (only v1model is supported)")
	}
	if len(m.args) != 6 {
		c.fail(m.p, "V1Switch takes 6 blocks (parser, verifyChecksum, ingress, egress, computeChecksum, deparser), got %d", len(m.args))
	}
	names := make([]string, 6)
	for i, a := range m.args {
		call, ok := a.(*callExpr)
		if !ok {
			c.fail(a.exprPos(), "V1Switch argument must be an instantiation Block()")
		}
		id, ok := call.fn.(*identExpr)
		if !ok || len(call.args) != 0 {
			c.fail(a.exprPos(), "V1Switch argument must be an instantiation Block()")
		}
		if blocks[id.name] == nil {
			c.fail(a.exprPos(), "unknown parser or control %s", id.name)
		}
		names[i] = id.name
	}
	pd, ok := blocks[names[0]].(*parserDecl)
	if !ok {
		c.fail(m.args[0].exprPos(), "first V1Switch argument must be a parser")
	}
	if len(pd.params) != 4 {
		c.fail(pd.p, "v1model parser takes (packet_in, out H, inout M, inout standard_metadata_t)")
	}
	hdrT := c.resolveType(c.global, pd.params[1].t)
	metaT := c.resolveType(c.global, pd.params[2].t)
	if hdrT.kind != kStruct {
		c.fail(pd.params[1].p, "headers type %s must be a struct", hdrT)
	}
	if metaT.kind != kStruct {
		c.fail(pd.params[2].p, "metadata type %s must be a struct", metaT)
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
	c.registerHeaders(hdrT, p.hdrBase, pd.params[1].p, true)

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
	bind := func(params []param, at pos, what string, ws ...want) *scope {
		sc := newScope(c.global)
		if len(params) != len(ws) {
			c.fail(at, "v1model %s takes %d parameters, %s has %d", what, len(ws), what, len(params))
		}
		for i, w := range ws {
			pr := params[i]
			t := c.resolveType(c.global, pr.t)
			if t != w.t {
				c.fail(pr.p, "%s parameter %d: expected %s, found %s", what, i+1, w.t, t)
			}
			dir := pr.dir
			if what == "parser" && i == 1 {
				if dir != "out" {
					c.fail(pr.p, "parser headers parameter must be out")
				}
			} else if what == "deparser" && i == 1 {
				if dir != "in" {
					c.fail(pr.p, "deparser headers parameter must be in")
				}
			} else if dir != w.dir {
				c.fail(pr.p, "%s parameter %s must be %q", what, pr.name, w.dir)
			}
			switch w.t.name {
			case "packet_in":
				c.defineIn(sc, pr.p, pr.name, &symbol{kind: sPacketIn})
			case "packet_out":
				c.defineIn(sc, pr.p, pr.name, &symbol{kind: sPacketOut})
			default:
				c.defineIn(sc, pr.p, pr.name, &symbol{kind: sVar, t: t, base: bases[t], readonly: dir == "in"})
			}
		}
		return sc
	}
	ctl := func(i int, what string, ws ...want) *controlC {
		cd, ok := blocks[names[i]].(*controlDecl)
		if !ok {
			c.fail(m.args[i].exprPos(), "V1Switch argument %d must be a control (%s)", i+1, what)
		}
		sc := bind(cd.params, cd.p, what, ws...)
		return c.compileControl(cd, sc, what)
	}
	psc := bind(pd.params, pd.p, "parser", pin, want{"out", hdrT}, meta, sm)
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
func (c *compiler) registerHeaders(t *ptype, base int, at pos, ctl bool) {
	p := c.prog
	for _, f := range t.fields {
		if f.t.kind != kHeader {
			c.fail(at, "headers struct %s: member %s must be a header (nested structs and stacks are not supported)", t.name, f.name)
		}
		p.hdrBases = append(p.hdrBases, base+f.off)
		p.hdrSizes = append(p.hdrSizes, f.t.size)
		p.hdrAllBytes += f.t.bits / 8
		for _, a := range f.t.anns {
			if ctl && a.name == "controller_header" && len(a.args) == 1 && a.args[0].kind == tString {
				for _, cf := range f.t.fields {
					if cf.t.kind == kWide {
						c.fail(at, "controller header %s: field %s is %s (this target supports up to %d bits there)", f.t.name, cf.name, cf.t, maxWidth)
					}
				}
				switch a.args[0].text {
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
