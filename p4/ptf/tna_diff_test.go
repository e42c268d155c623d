package ptf

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/target"
)

// The differential tests of the Tofino program p4/tna/swordbox.p4 against
// the v1model program p4/swordbox.p4: both run on the Go target (the TNA
// and the v1model architecture), programmed with the same entries through
// the same P4Info names, and must forward the same frames and hold the same
// registers and counters.
//
//   - TestTNADifferentialPTF runs every packet test of this package with a
//     twin: a second switch, on the TNA program, that receives every
//     P4Runtime write, frame and PacketOut the test sends (IDs translated by
//     name), and whose frames out, PacketIns and P4Runtime reads must equal
//     the v1model switch's.
//   - TestTNADifferentialClock and TestTNADifferentialRackTrace drive two
//     bare Devices on one controlled clock: the TTL boundary, random
//     Clover traffic with retransmissions, duplicates, failures and control
//     plane changes, and a trace recorded at the switch of a software rack
//     (testdata/rack-trace.pcapng, see tna_trace_test.go).
//
// What may differ, and only that: the timestamps (tail_ts, cas_out_ts)
// count microseconds on v1model and nanoseconds on TNA (the same instant
// times 1000 on one clock; on two switches' clocks only whether they are
// set is compared), and some registers are wider on TNA (a Tofino has no
// 48-bit cell); their values must still be equal.

const (
	tnaProgramPath = "../tna/swordbox.p4"
	tnaP4InfoPath  = "../tna/swordbox.p4info.txtpb"
)

// TestTNAP4InfoUpToDate fails when p4/tna/swordbox.p4info.txtpb is not
// the P4Info the target derives from p4/tna/swordbox.p4 (-update
// rewrites it, as `swordbox p4info p4/tna/swordbox.p4` does).
func TestTNAP4InfoUpToDate(t *testing.T) {
	_, info := loadTNA(t)
	checkP4InfoFile(t, tnaP4InfoPath, info)
}

// loadTNA compiles p4/tna/swordbox.p4.
func loadTNA(t testing.TB) ([]byte, *configv1.P4Info) {
	t.Helper()
	src, err := os.ReadFile(tnaProgramPath)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := target.Compile("tna/swordbox.p4", src)
	if err != nil {
		t.Fatalf("compile tna/swordbox.p4: %v", err)
	}
	return src, prog.P4Info()
}

// tsRegisters hold switch timestamps: microseconds on v1model,
// nanoseconds on TNA.
var tsRegisters = map[string]bool{"tail_ts": true, "cas_out_ts": true, "spec_ts": true}

// sameName reports whether the TNA program's P4Info name tna names the
// v1model program's object v1: the same name, or a dotted extension of it
// (bf-p4c prefixes names with the pipe), which is how the controller
// resolves names (ctrl/p4rtc, "unique dotted suffix").
func sameName(v1, tna string) bool {
	return tna == v1 || strings.HasSuffix(tna, "."+v1)
}

// translator maps the v1model program's P4Info IDs onto the TNA
// program's, by name, and describes entities with the v1model names so
// that the two programs' answers can be compared.
type translator struct {
	v1, tna *configv1.P4Info
	ids     map[uint32]uint32    // v1model ID -> TNA ID (tables, actions, registers, counters, direct counters)
	fields  map[[2]uint32]uint32 // (v1model table, field) -> TNA field
	params  map[[2]uint32]uint32 // (v1model action, param) -> TNA param
	name    map[uint32]string    // v1model or TNA ID -> the v1model name
	fieldNm map[[2]uint32]string // (either program's table ID, field ID) -> field name
	paramNm map[[2]uint32]string
	parts   map[uint32][]uint32 // TNA counter ID -> the IDs of its parts
}

// newTranslator pairs every table, action, register, counter, direct
// counter and controller header of the v1model P4Info with the TNA
// P4Info's object of the same name and shape, and fails tb if one is
// missing or differs: the controller finds both programs' objects by these
// names.
func newTranslator(tb testing.TB, v1, tna *configv1.P4Info) *translator {
	tb.Helper()
	x := &translator{v1: v1, tna: tna, ids: map[uint32]uint32{}, fields: map[[2]uint32]uint32{}, params: map[[2]uint32]uint32{},
		name: map[uint32]string{}, fieldNm: map[[2]uint32]string{}, paramNm: map[[2]uint32]string{}, parts: map[uint32][]uint32{}}
	pair := func(kind, v1name string, v1id uint32, tnaPre []*configv1.Preamble) uint32 {
		tb.Helper()
		var found []*configv1.Preamble
		for _, p := range tnaPre {
			if sameName(v1name, p.GetName()) {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			tb.Fatalf("%s %s: %d objects of that name in the TNA program's P4Info, want 1", kind, v1name, len(found))
		}
		x.ids[v1id] = found[0].GetId()
		x.name[v1id], x.name[found[0].GetId()] = v1name, v1name
		return found[0].GetId()
	}
	var pre []*configv1.Preamble
	for _, a := range tna.GetActions() {
		pre = append(pre, a.GetPreamble())
	}
	for _, a := range v1.GetActions() {
		id := pair("action", a.GetPreamble().GetName(), a.GetPreamble().GetId(), pre)
		var ta *configv1.Action
		for _, b := range tna.GetActions() {
			if b.GetPreamble().GetId() == id {
				ta = b
			}
		}
		for _, p := range a.GetParams() {
			ok := false
			for _, q := range ta.GetParams() {
				if q.GetName() == p.GetName() && q.GetBitwidth() == p.GetBitwidth() {
					x.params[[2]uint32{a.GetPreamble().GetId(), p.GetId()}] = q.GetId()
					x.paramNm[[2]uint32{a.GetPreamble().GetId(), p.GetId()}] = p.GetName()
					x.paramNm[[2]uint32{id, q.GetId()}] = p.GetName()
					ok = true
				}
			}
			if !ok {
				tb.Fatalf("action %s: no parameter %s of %d bits in the TNA program", a.GetPreamble().GetName(), p.GetName(), p.GetBitwidth())
			}
		}
		if len(ta.GetParams()) != len(a.GetParams()) {
			tb.Fatalf("action %s: %d parameters in the TNA program, %d in the v1model one", a.GetPreamble().GetName(), len(ta.GetParams()), len(a.GetParams()))
		}
	}
	pre = pre[:0]
	for _, t := range tna.GetTables() {
		pre = append(pre, t.GetPreamble())
	}
	for _, t := range v1.GetTables() {
		id := pair("table", t.GetPreamble().GetName(), t.GetPreamble().GetId(), pre)
		var tt *configv1.Table
		for _, u := range tna.GetTables() {
			if u.GetPreamble().GetId() == id {
				tt = u
			}
		}
		if tt.GetSize() != t.GetSize() || len(tt.GetMatchFields()) != len(t.GetMatchFields()) || len(tt.GetActionRefs()) != len(t.GetActionRefs()) {
			tb.Fatalf("table %s: size %d, %d match fields, %d actions in the TNA program; %d, %d, %d in the v1model one", t.GetPreamble().GetName(),
				tt.GetSize(), len(tt.GetMatchFields()), len(tt.GetActionRefs()), t.GetSize(), len(t.GetMatchFields()), len(t.GetActionRefs()))
		}
		for i, f := range t.GetMatchFields() {
			g := tt.GetMatchFields()[i]
			if g.GetName() != f.GetName() || g.GetBitwidth() != f.GetBitwidth() || g.GetMatchType() != f.GetMatchType() {
				tb.Fatalf("table %s: match field %v in the TNA program, %v in the v1model one", t.GetPreamble().GetName(), g, f)
			}
			x.fields[[2]uint32{t.GetPreamble().GetId(), f.GetId()}] = g.GetId()
			x.fieldNm[[2]uint32{t.GetPreamble().GetId(), f.GetId()}] = f.GetName()
			x.fieldNm[[2]uint32{id, g.GetId()}] = f.GetName()
		}
		for i, a := range t.GetActionRefs() {
			if x.ids[a.GetId()] != tt.GetActionRefs()[i].GetId() {
				tb.Fatalf("table %s: action %d is %s in the v1model program, not in the TNA one", t.GetPreamble().GetName(), i, x.name[a.GetId()])
			}
		}
	}
	pre = pre[:0]
	for _, r := range tna.GetRegisters() {
		pre = append(pre, r.GetPreamble())
	}
	for _, r := range v1.GetRegisters() {
		id := pair("register", r.GetPreamble().GetName(), r.GetPreamble().GetId(), pre)
		for _, s := range tna.GetRegisters() {
			if s.GetPreamble().GetId() != id {
				continue
			}
			if s.GetSize() != r.GetSize() || s.GetTypeSpec().GetBitstring().GetBit().GetBitwidth() < r.GetTypeSpec().GetBitstring().GetBit().GetBitwidth() {
				tb.Fatalf("register %s: %d cells of %v in the TNA program, %d of %v in the v1model one (a TNA cell may be wider, not narrower)",
					r.GetPreamble().GetName(), s.GetSize(), s.GetTypeSpec(), r.GetSize(), r.GetTypeSpec())
			}
		}
	}
	pre = pre[:0]
	for _, c := range tna.GetCounters() {
		pre = append(pre, c.GetPreamble())
	}
	for _, c := range v1.GetCounters() {
		id := pair("counter", c.GetPreamble().GetName(), c.GetPreamble().GetId(), pre)
		for _, d := range tna.GetCounters() {
			if d.GetPreamble().GetId() == id && (d.GetSize() != c.GetSize() || d.GetSpec().GetUnit() != c.GetSpec().GetUnit()) {
				tb.Fatalf("counter %s: %d cells of %v in the TNA program, %d of %v in the v1model one", c.GetPreamble().GetName(), d.GetSize(), d.GetSpec(), c.GetSize(), c.GetSpec())
			}
		}
	}
	// The TNA program splits a counter N into N and parts N_part2, ... of
	// the same indexes (a Tofino counter counts once per packet); they
	// describe as N, and describe sums them.
	for _, c := range tna.GetCounters() {
		for _, v := range v1.GetCounters() {
			base := x.ids[v.GetPreamble().GetId()]
			for _, b := range tna.GetCounters() {
				if b.GetPreamble().GetId() == base && strings.HasPrefix(c.GetPreamble().GetName(), b.GetPreamble().GetName()+"_part") {
					if c.GetSize() != b.GetSize() || c.GetSpec().GetUnit() != b.GetSpec().GetUnit() {
						tb.Fatalf("counter %s: %d cells of %v, its base %s %d of %v", c.GetPreamble().GetName(), c.GetSize(), c.GetSpec(), b.GetPreamble().GetName(), b.GetSize(), b.GetSpec())
					}
					x.name[c.GetPreamble().GetId()] = v.GetPreamble().GetName()
					x.parts[base] = append(x.parts[base], c.GetPreamble().GetId())
				}
			}
		}
	}
	pre = pre[:0]
	for _, c := range tna.GetDirectCounters() {
		pre = append(pre, c.GetPreamble())
	}
	for _, c := range v1.GetDirectCounters() {
		id := pair("direct counter", c.GetPreamble().GetName(), c.GetPreamble().GetId(), pre)
		for _, d := range tna.GetDirectCounters() {
			if d.GetPreamble().GetId() == id && (d.GetSpec().GetUnit() != c.GetSpec().GetUnit() || x.ids[c.GetDirectTableId()] != d.GetDirectTableId()) {
				tb.Fatalf("direct counter %s: %v on table %d in the TNA program, %v on %d in the v1model one", c.GetPreamble().GetName(), d.GetSpec(), d.GetDirectTableId(), c.GetSpec(), c.GetDirectTableId())
			}
		}
	}
	// Controller headers: PacketIn and PacketOut metadata by ID and name.
	for _, m := range v1.GetControllerPacketMetadata() {
		var n *configv1.ControllerPacketMetadata
		for _, o := range tna.GetControllerPacketMetadata() {
			if o.GetPreamble().GetName() == m.GetPreamble().GetName() {
				n = o
			}
		}
		if n == nil || len(n.GetMetadata()) != len(m.GetMetadata()) {
			tb.Fatalf("controller header %s: %v in the TNA program, %v in the v1model one", m.GetPreamble().GetName(), n, m)
		}
		for i, f := range m.GetMetadata() {
			g := n.GetMetadata()[i]
			if g.GetId() != f.GetId() || g.GetName() != f.GetName() || g.GetBitwidth() != f.GetBitwidth() {
				tb.Fatalf("controller header %s: metadata %v in the TNA program, %v in the v1model one", m.GetPreamble().GetName(), g, f)
			}
		}
	}
	return x
}

// entity returns e (v1model IDs) with the TNA program's IDs.
func (x *translator) entity(tb testing.TB, e *p4v1.Entity) *p4v1.Entity {
	tb.Helper()
	e = proto.Clone(e).(*p4v1.Entity)
	id := func(v uint32) uint32 {
		tb.Helper()
		if v == 0 {
			return 0 // a wildcard
		}
		w, ok := x.ids[v]
		if !ok {
			tb.Fatalf("no TNA counterpart of P4Info ID %#x", v)
		}
		return w
	}
	table := func(te *p4v1.TableEntry) {
		if te == nil {
			return
		}
		for _, m := range te.Match {
			m.FieldId = x.fields[[2]uint32{te.TableId, m.FieldId}]
		}
		if a := te.GetAction().GetAction(); a != nil {
			for _, p := range a.Params {
				p.ParamId = x.params[[2]uint32{a.ActionId, p.ParamId}]
			}
			a.ActionId = id(a.ActionId)
		}
		te.TableId = id(te.TableId)
	}
	switch v := e.Entity.(type) {
	case *p4v1.Entity_TableEntry:
		table(v.TableEntry)
	case *p4v1.Entity_RegisterEntry:
		v.RegisterEntry.RegisterId = id(v.RegisterEntry.RegisterId)
	case *p4v1.Entity_CounterEntry:
		v.CounterEntry.CounterId = id(v.CounterEntry.CounterId)
	case *p4v1.Entity_DirectCounterEntry:
		table(v.DirectCounterEntry.TableEntry)
	default:
		tb.Fatalf("the differential test does not translate %T", e.Entity)
	}
	return e
}

// tsMode says how timestamps compare: on one clock (TNA's nanoseconds are
// the v1model's microseconds times 1000), or on two switches' clocks (only
// whether they are set).
type tsMode int

const (
	tsSameClock tsMode = iota
	tsTwoClocks
)

// describe returns one line per entity, in the v1model program's names,
// sorted; a TNA program's timestamps are described as the v1model
// program's would be. Register cells and counters at zero are left out
// (a cell zero on one side only still shows: as a line the other lacks).
func (x *translator) describe(es []*p4v1.Entity, tna bool, ts tsMode) []string {
	var out []string
	match := func(te *p4v1.TableEntry) string {
		var b strings.Builder
		fmt.Fprintf(&b, "%s", x.name[te.GetTableId()])
		for _, m := range te.GetMatch() {
			fmt.Fprintf(&b, " %s=%x", x.fieldNm[[2]uint32{te.GetTableId(), m.GetFieldId()}], m.GetExact().GetValue())
		}
		return b.String()
	}
	counters := map[string][2]int64{} // counter cells, parts summed
	var keys []string
	for _, e := range es {
		switch {
		case e.GetRegisterEntry() != nil:
			re := e.GetRegisterEntry()
			name := x.name[re.GetRegisterId()]
			v := dec(re.GetData().GetBitstring())
			if v == 0 {
				continue
			}
			val := fmt.Sprint(v)
			if tsRegisters[strings.TrimPrefix(name, prefix)] {
				switch {
				case ts == tsTwoClocks:
					val = fmt.Sprintf("set=%v", v != 0)
				case tna && v%1000 == 0:
					val = fmt.Sprint(v / 1000)
				case tna:
					val = fmt.Sprintf("%dns", v)
				}
			}
			out = append(out, fmt.Sprintf("register %s[%d] = %s", name, re.GetIndex().GetIndex(), val))
		case e.GetCounterEntry() != nil:
			ce := e.GetCounterEntry()
			k := fmt.Sprintf("%s[%d]", x.name[ce.GetCounterId()], ce.GetIndex().GetIndex())
			if _, ok := counters[k]; !ok {
				keys = append(keys, k)
			}
			counters[k] = [2]int64{counters[k][0] + ce.GetData().GetPacketCount(), counters[k][1] + ce.GetData().GetByteCount()}
		case e.GetDirectCounterEntry() != nil:
			d := e.GetDirectCounterEntry()
			out = append(out, fmt.Sprintf("direct counter of %s = %d packets %d bytes", match(d.GetTableEntry()),
				d.GetData().GetPacketCount(), d.GetData().GetByteCount()))
		case e.GetTableEntry() != nil:
			te := e.GetTableEntry()
			a := te.GetAction().GetAction()
			var ps []string
			for _, p := range a.GetParams() {
				ps = append(ps, fmt.Sprintf("%s=%x", x.paramNm[[2]uint32{a.GetActionId(), p.GetParamId()}], p.GetValue()))
			}
			out = append(out, fmt.Sprintf("entry %s default=%v -> %s(%s)", match(te), te.GetIsDefaultAction(), x.name[a.GetActionId()], strings.Join(ps, ", ")))
		default:
			out = append(out, fmt.Sprintf("%T", e.GetEntity()))
		}
	}
	for _, k := range keys {
		if c := counters[k]; c != [2]int64{} {
			out = append(out, fmt.Sprintf("counter %s = %d packets %d bytes", k, c[0], c[1]))
		}
	}
	slices.Sort(out)
	return out
}

// diffLines reports the first differences of two sorted descriptions.
func diffLines(v1, tna []string) string {
	var b strings.Builder
	in := func(s []string, x string) bool { _, ok := slices.BinarySearch(s, x); return ok }
	n := 0
	for _, l := range v1 {
		if !in(tna, l) && n < 8 {
			fmt.Fprintf(&b, "\n  v1model only: %s", l)
			n++
		}
	}
	for _, l := range tna {
		if !in(v1, l) && n < 16 {
			fmt.Fprintf(&b, "\n  tna only:     %s", l)
			n++
		}
	}
	return b.String()
}

// ---- the twin of a packet test's rig ----

// tnaDiff is set while TestTNADifferentialPTF runs the packet tests: every
// rig then gets a twin (newTwin).
var tnaDiff bool

// twin is the TNA switch beside a packet test's v1model switch.
type twin struct {
	t testing.TB
	r *rig
	x *translator
}

// tnaTB marks the messages of the twin's rig as the TNA program's.
type tnaTB struct{ testing.TB }

func (t tnaTB) Fatalf(format string, args ...any) {
	t.TB.Helper()
	t.TB.Fatalf("tna/swordbox.p4: "+format, args...)
}

func (t tnaTB) Errorf(format string, args ...any) {
	t.TB.Helper()
	t.TB.Errorf("tna/swordbox.p4: "+format, args...)
}

// newTwin returns the twin of a rig with the given host ports, running
// p4/tna/swordbox.p4 on in-memory ports of the same numbers, or nil when
// no differential test runs.
func newTwin(t testing.TB, readers bool, hosts map[uint32]netio.Port, info *configv1.P4Info) *twin {
	if !tnaDiff {
		return nil
	}
	t.Helper()
	sw, h := map[uint32]netio.Port{}, map[uint32]netio.Port{}
	for p := range hosts {
		sw[p], h[p] = netio.Pipe()
	}
	src, tinfo := loadTNA(t)
	return &twin{t: t, x: newTranslator(t, info, tinfo), r: startRig(tnaTB{t}, readers, sw, h, src, tinfo, nil)}
}

func (w *twin) write(ups []*p4v1.Update) {
	if w == nil {
		return
	}
	w.t.Helper()
	tu := make([]*p4v1.Update, len(ups))
	for i, u := range ups {
		tu[i] = &p4v1.Update{Type: u.Type, Entity: w.x.entity(w.t, u.Entity)}
	}
	w.r.write(tu...)
}

// read reads e from the twin and checks it says what the v1model switch
// said (v1).
func (w *twin) read(e *p4v1.Entity, v1 []*p4v1.Entity) {
	if w == nil {
		return
	}
	w.t.Helper()
	te := w.x.entity(w.t, e)
	got := w.r.read(te)
	// A counter split into parts reads as the sum of its parts (what
	// ctrl.ReadCounter does): read the parts too.
	if ce := te.GetCounterEntry(); ce != nil {
		for _, id := range w.x.parts[ce.GetCounterId()] {
			pe := proto.Clone(te).(*p4v1.Entity)
			pe.GetCounterEntry().CounterId = id
			got = append(got, w.r.read(pe)...)
		}
	}
	a, b := w.x.describe(v1, false, tsTwoClocks), w.x.describe(got, true, tsTwoClocks)
	if !slices.Equal(a, b) {
		w.t.Fatalf("a read of %v differs between the programs:%s", e, diffLines(a, b))
	}
}

func (w *twin) send(port uint32, frame []byte) {
	if w != nil {
		w.t.Helper()
		w.r.send(port, frame)
	}
}

// expect checks that the twin sends the frame v1 out of port too.
func (w *twin) expect(port uint32, v1 []byte) {
	if w == nil {
		return
	}
	w.t.Helper()
	if got := w.r.expect(port); !bytes.Equal(got, v1) {
		w.t.Fatalf("frame out of port %d differs:\nv1model %x\n    tna %x", port, v1, got)
	}
}

func (w *twin) expectQuiet() {
	if w != nil {
		w.t.Helper()
		w.r.expectQuiet()
	}
}

func (w *twin) packetOut(port uint32, frame []byte) {
	if w != nil {
		w.t.Helper()
		w.r.packetOut(port, frame)
	}
}

// packetIn checks, on the v1model rig's stream goroutine, that the twin
// gives the controller the same PacketIn.
func (w *twin) packetIn(p *p4v1.PacketIn) {
	if w == nil {
		return
	}
	select {
	case q := <-w.r.pktIn:
		if !proto.Equal(p, q) {
			w.t.Errorf("PacketIn differs:\nv1model %v\n    tna %v", p, q)
		}
	case <-time.After(recvTimeout):
		w.t.Errorf("the TNA program sent no PacketIn; the v1model one sent %v", p)
	}
}

// ptfCases are the packet tests run with a twin.
var ptfCases = []struct {
	name string
	f    func(*testing.T)
}{
	{"TestNodeWriteLearned", TestNodeWriteLearned},
	{"TestAddressMapCollisionReplaces", TestAddressMapCollisionReplaces},
	{"TestCASRecorded", TestCASRecorded},
	{"TestLinkSlotCollision", TestLinkSlotCollision},
	{"TestRetransmittedCASForwardedAsFirstCopy", TestRetransmittedCASForwardedAsFirstCopy},
	{"TestLinkingCASRecognition", TestLinkingCASRecognition},
	{"TestNoSteeringBeforeConfirmation", TestNoSteeringBeforeConfirmation},
	{"TestStaleCASSteered", TestStaleCASSteered},
	{"TestCASNotSteered", TestCASNotSteered},
	{"TestConfirmationAtTheACK", TestConfirmationAtTheACK},
	{"TestFailedCASDropsTheTailItWasAimedAt", TestFailedCASDropsTheTailItWasAimedAt},
	{"TestReorderedConfirmations", TestReorderedConfirmations},
	{"TestTailTTL", TestTailTTL},
	{"TestReadSteering", TestReadSteering},
	{"TestDeleteCASAndFetchAddNeverSteered", TestDeleteCASAndFetchAddNeverSteered},
	{"TestTailKeyGuardsAReassignedSlot", TestTailKeyGuardsAReassignedSlot},
	{"TestPacketOutNeverSteered", TestPacketOutNeverSteered},
	{"TestSteeringModes", TestSteeringModes},
	{"TestForwardingAndPacketIO", TestForwardingAndPacketIO},
	{"TestSamePSNOnTwoQPsConfirmsNothing", TestSamePSNOnTwoQPsConfirmsNothing},
	{"TestSteeredCASWithTshark", TestSteeredCASWithTshark},
	{"TestNodeWriteWithTshark", TestNodeWriteWithTshark},
	{"TestChainRules", TestChainRules},
}

// ptfElsewhere are the packet tests that do not run with a twin, and why.
var ptfElsewhere = map[string]string{
	"TestTailTTLBoundary": "runs the bare v1model Device on a controlled clock; TestTNADifferentialClock runs its scenario on both programs",
}

// TestTNADifferentialPTF runs the packet tests with a TNA twin.
func TestTNADifferentialPTF(t *testing.T) {
	tnaDiff = true
	defer func() { tnaDiff = false }()
	for _, c := range ptfCases {
		t.Run(c.name, c.f)
	}
}

// TestTNADifferentialCoversPTF fails when a packet test of
// swordbox_test.go, tshark_test.go or chain_test.go is neither run with a twin nor
// listed with the reason it is not.
func TestTNADifferentialCoversPTF(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range ptfCases {
		listed[c.name] = true
	}
	for _, file := range []string{"swordbox_test.go", "tshark_test.go", "chain_test.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") {
				continue
			}
			if !listed[fn.Name.Name] && ptfElsewhere[fn.Name.Name] == "" {
				t.Errorf("%s: packet test %s is not in ptfCases (tna_diff_test.go)", file, fn.Name.Name)
			}
		}
	}
}
