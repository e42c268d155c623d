package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// parseIntoRef is the reference for the differential tests: the
// field-by-field parse that was all of ParseInto before the fast path
// (commit 08ac20b) and is now its slow path, unchanged. ParseInto, fast
// path included, must leave the same Packet and return the same error
// (message and kind) on every frame.
func parseIntoRef(p *Packet, frame []byte) error { return parseSlow(p, frame) }

// viewsOf lists the slice fields of a Packet by name (identity matters:
// the same bytes of the same frame, with the same capacity).
func viewsOf(p *Packet) []struct {
	name string
	s    []byte
} {
	return []struct {
		name string
		s    []byte
	}{
		{"Frame", p.Frame}, {"Eth", p.Eth}, {"IP", p.IP}, {"UDP", p.UDP}, {"BTH", p.BTH},
		{"DETH", p.DETH}, {"RETH", p.RETH}, {"AtomicETH", p.AtomicETH}, {"AETH", p.AETH},
		{"AtomicAckETH", p.AtomicAckETH}, {"ImmDt", p.ImmDt}, {"IETH", p.IETH},
		{"Payload", p.Payload}, {"Pad", p.Pad}, {"ICRC", p.ICRC}, {"Trailer", p.Trailer},
	}
}

// packetDiff describes how got differs from want: slice fields must alias
// the same bytes (pointer, length, capacity, nil-ness), the rest be equal.
func packetDiff(got, want *Packet) string {
	var d []string
	gv, wv := viewsOf(got), viewsOf(want)
	for i := range gv {
		g, w := gv[i].s, wv[i].s
		if (g == nil) != (w == nil) || len(g) != len(w) || cap(g) != cap(w) || unsafe.SliceData(g) != unsafe.SliceData(w) {
			d = append(d, fmt.Sprintf("%s: got %p len %d cap %d nil %v, want %p len %d cap %d nil %v",
				gv[i].name, unsafe.SliceData(g), len(g), cap(g), g == nil, unsafe.SliceData(w), len(w), cap(w), w == nil))
		}
	}
	gi := [...]int{int(got.Opcode), got.L3Off, got.L4Off, got.BTHOff, got.ExtOff, got.PayloadOff, got.ICRCOff, got.End}
	wi := [...]int{int(want.Opcode), want.L3Off, want.L4Off, want.BTHOff, want.ExtOff, want.PayloadOff, want.ICRCOff, want.End}
	for i, n := range []string{"Opcode", "L3Off", "L4Off", "BTHOff", "ExtOff", "PayloadOff", "ICRCOff", "End"} {
		if gi[i] != wi[i] {
			d = append(d, fmt.Sprintf("%s: got %d, want %d", n, gi[i], wi[i]))
		}
	}
	return strings.Join(d, "; ")
}

// TestPacketDiffSeesEveryField keeps packetDiff honest: the Packet has the
// fields packetDiff compares, and a change to any of them is reported.
func TestPacketDiffSeesEveryField(t *testing.T) {
	if n := reflect.TypeFor[Packet]().NumField(); n != 16+8 {
		t.Fatalf("Packet has %d fields, packetDiff compares 24: update viewsOf/packetDiff", n)
	}
	frame := mustHex(t, workedExampleHex)
	var want Packet
	if err := parseIntoRef(&want, frame); err != nil {
		t.Fatal(err)
	}
	v := reflect.ValueOf(&want).Elem()
	for i := range v.NumField() {
		got := want
		f := reflect.ValueOf(&got).Elem().Field(i)
		switch f.Kind() {
		case reflect.Slice:
			if f.IsNil() {
				f.SetBytes(frame[:0])
			} else {
				f.SetBytes(f.Bytes()[:f.Len():f.Len()])
				if f.Cap() == v.Field(i).Cap() {
					f.SetBytes(nil)
				}
			}
		case reflect.Int:
			f.SetInt(f.Int() + 1)
		case reflect.Uint8:
			f.SetUint(f.Uint() + 1)
		default:
			t.Fatalf("field %s: unexpected kind %v", v.Type().Field(i).Name, f.Kind())
		}
		if packetDiff(&got, &want) == "" {
			t.Errorf("packetDiff misses a change of %s", v.Type().Field(i).Name)
		}
	}
}

// stalePacket returns a Packet whose every field holds a value no parse
// produces, so that a field ParseInto forgets to assign shows up.
func stalePacket() Packet {
	junk := make([]byte, 64)
	p := Packet{Opcode: 0xff, L3Off: -1, L4Off: -1, BTHOff: -1, ExtOff: -1, PayloadOff: -1, ICRCOff: -1, End: -1}
	v := reflect.ValueOf(&p).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Slice {
			f.SetBytes(junk[i : i+1])
		}
	}
	return p
}

// checkSameParse parses frame with ParseInto (into a stale Packet, and into
// a zero one) and with parseIntoRef (into a zero Packet) and reports any
// difference in the Packet or in the error (message, kind, and identity of
// the preallocated not-RoCE errors).
func checkSameParse(t testing.TB, name string, frame []byte) {
	t.Helper()
	got, want := stalePacket(), Packet{}
	gerr := ParseInto(&got, frame)
	werr := parseIntoRef(&want, frame)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Fatalf("%s: error %v, reference %v (frame %x)", name, gerr, werr, frame)
	case gerr != nil && gerr.Error() != werr.Error():
		t.Fatalf("%s: error %q, reference %q (frame %x)", name, gerr, werr, frame)
	case gerr != nil && errors.Is(gerr, ErrNotRoCE) != errors.Is(werr, ErrNotRoCE):
		t.Fatalf("%s: errors.Is(ErrNotRoCE) %v, reference %v", name, errors.Is(gerr, ErrNotRoCE), errors.Is(werr, ErrNotRoCE))
	case gerr != nil && errors.Is(werr, ErrNotRoCE) && gerr != werr:
		t.Fatalf("%s: not-RoCE error %p is not the preallocated %p", name, gerr, werr)
	}
	if d := packetDiff(&got, &want); d != "" {
		t.Fatalf("%s: Packet differs from the reference (err %v): %s (frame %x)", name, werr, d, frame)
	}
	// And into a zero Packet (nothing to clear, so what is set must be).
	var zero Packet
	if err := ParseInto(&zero, frame); (err == nil) != (werr == nil) {
		t.Fatalf("%s: into a zero Packet: error %v, reference %v", name, err, werr)
	}
	if d := packetDiff(&zero, &want); d != "" {
		t.Fatalf("%s: into a zero Packet: differs from the reference: %s (frame %x)", name, d, frame)
	}
}

// diffCorpus is every frame the other tests of the package build: the
// worked example, the samples and oracle frames (every opcode, rewrites,
// IPv4 options), TestParseErrors's malformed frames, VLAN-tagged and
// trailer-padded frames.
func diffCorpus(t testing.TB) map[string][]byte {
	out := map[string][]byte{}
	good := mustHex(t, workedExampleHex)
	out["worked example"] = good
	for _, f := range oracleFrames(t) {
		out[f.name] = f.frame
	}
	mod := func(name string, f func(b []byte) []byte) {
		out[name] = f(append([]byte(nil), good...))
	}
	out["empty"] = nil
	out["short ip"] = good[:30]
	out["total long"] = good[:80]
	mod("ethertype", func(b []byte) []byte { b[12] = 0x86; b[13] = 0xdd; return b })
	mod("vlan short", func(b []byte) []byte { b[12] = 0x81; b[13] = 0; return b[:16] })
	mod("vlan inner type", func(b []byte) []byte { b[12] = 0x81; b[13] = 0; return b })
	mod("version", func(b []byte) []byte { b[14] = 0x65; return b })
	mod("ihl", func(b []byte) []byte { b[14] = 0x44; return b })
	mod("proto", func(b []byte) []byte { b[23] = 6; return b })
	mod("frag", func(b []byte) []byte { b[21] = 8; return b })
	mod("mf", func(b []byte) []byte { b[20] |= 0x20; return b })
	mod("port", func(b []byte) []byte { b[36] = 0; return b })
	mod("total short", func(b []byte) []byte { b[17] = 20; return b })
	mod("udp len", func(b []byte) []byte { b[39] = 0x30; return b })
	mod("opcode", func(b []byte) []byte { b[42] = 0x15; return b })
	mod("atomiceth", func(b []byte) []byte { b[17] = 60; b[39] = 40; return b[:74] })
	mod("payload on cas", func(b []byte) []byte { b[42] = byte(OpRCReadRequest); return b })
	mod("bth", func(b []byte) []byte { b[17] = 40; b[39] = 20; return b[:54] })
	mod("padcnt", func(b []byte) []byte {
		b[42] = byte(OpRCSendOnly)
		b[43] |= 0x30
		b[17] = 44
		b[39] = 24
		return b[:58]
	})
	for _, s := range samples() {
		f := s.f
		f.VLAN, f.VLANTCI = true, 3<<13|100
		out[s.name+" / vlan"] = build(t, &f, 0)
		fr := build(t, &s.f, 6)
		out[s.name+" / trailer"] = append(fr, 1, 2, 3, 4, 5, 6)
		out[s.name+" / ipv4 options"] = withIPOptions(build(t, &s.f, 0), 4)
	}
	for _, k := range middleboxFrames(t) {
		out["middlebox "+k.name] = k.frame
	}
	return out
}

func TestParseDifferentialCorpus(t *testing.T) {
	for name, frame := range diffCorpus(t) {
		checkSameParse(t, name, frame)
		// The same frame in a larger buffer: capacities must agree too.
		big := append(make([]byte, 0, len(frame)+16), frame...)
		checkSameParse(t, name+" (spare capacity)", big)
	}
}

// mutate returns a copy of frame changed the way malformed or unusual
// traffic differs from the common frame: truncation, a VLAN tag, IPv4
// options, another opcode or PadCnt, wrong lengths, random header bytes,
// trailing bytes.
func mutate(rng *rand.Rand, frame []byte) []byte {
	b := append(make([]byte, 0, len(frame)+64), frame...)
	for range 1 + rng.IntN(3) {
		switch rng.IntN(10) {
		case 0: // truncate
			b = b[:rng.IntN(len(b)+1)]
		case 1: // VLAN tag
			if len(b) >= 12 {
				b = append(b[:12:12], append([]byte{0x81, 0x00, byte(rng.IntN(256)), byte(rng.IntN(256))}, b[12:]...)...)
			}
		case 2: // IPv4 options
			if len(b) >= 34 && b[12] == 0x08 && b[13] == 0x00 && b[14] == 0x45 {
				b = withIPOptions(b, 4*(1+rng.IntN(10)))
			}
		case 3: // any opcode
			if len(b) > 42 {
				b[42] = byte(rng.IntN(256))
			}
		case 4: // PadCnt
			if len(b) > 43 {
				b[43] = b[43]&^0x30 | byte(rng.IntN(4))<<4
			}
		case 5: // IPv4 total length
			if len(b) > 17 {
				binary.BigEndian.PutUint16(b[16:], uint16(int(binary.BigEndian.Uint16(b[16:]))+rng.IntN(41)-20))
			}
		case 6: // UDP length
			if len(b) > 39 {
				binary.BigEndian.PutUint16(b[38:], uint16(int(binary.BigEndian.Uint16(b[38:]))+rng.IntN(41)-20))
			}
		case 7: // a random byte of the headers
			if len(b) > 0 {
				b[rng.IntN(min(len(b), 60))] = byte(rng.IntN(256))
			}
		case 8: // a random bit of the headers
			if len(b) > 0 {
				b[rng.IntN(min(len(b), 60))] ^= 1 << rng.IntN(8)
			}
		case 9: // trailing bytes
			b = append(b, make([]byte, rng.IntN(8))...)
		}
	}
	return b
}

func TestParseDifferentialMutations(t *testing.T) {
	corpus := diffCorpus(t)
	names := make([]string, 0, len(corpus))
	for n := range corpus {
		names = append(names, n)
	}
	slices.Sort(names) // map order is random; the seed must fix the run
	rng := rand.New(rand.NewPCG(1, 2))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for i := range n {
		name := names[rng.IntN(len(names))]
		checkSameParse(t, fmt.Sprintf("mutation %d of %q", i, name), mutate(rng, corpus[name]))
	}
	// Every opcode at every PadCnt on every frame of the corpus.
	for _, name := range names {
		fr := corpus[name]
		if len(fr) <= 43 {
			continue
		}
		for op := range 256 {
			for pad := range 4 {
				b := append([]byte(nil), fr...)
				b[42] = byte(op)
				b[43] = b[43]&^0x30 | byte(pad)<<4
				checkSameParse(t, fmt.Sprintf("%q as opcode 0x%02x pad %d", name, op, pad), b)
			}
		}
	}
}

// FuzzParseDifferential checks ParseInto against the reference on
// arbitrary frames.
func FuzzParseDifferential(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSameParse(t, "fuzz", data)
	})
}

// TestParseIntoNoStaleHeaders parses into one Packet in turn frames with
// different extension headers, and frames that fail: nothing of an earlier
// frame may remain.
func TestParseIntoNoStaleHeaders(t *testing.T) {
	cas := mustHex(t, workedExampleHex)
	ackF := baseFields(OpRCAcknowledge)
	ack := build(t, &ackF, 0)
	var p Packet
	if err := ParseInto(&p, cas); err != nil || p.AtomicETH == nil {
		t.Fatalf("CMP_SWAP: %v, AtomicETH %x", err, p.AtomicETH)
	}
	if err := ParseInto(&p, ack); err != nil {
		t.Fatal(err)
	}
	if p.AtomicETH != nil || p.AETH == nil || p.Opcode != OpRCAcknowledge {
		t.Errorf("ACK after CMP_SWAP: AtomicETH %x (want nil), AETH %x, opcode %v", p.AtomicETH, p.AETH, p.Opcode)
	}

	// Every ordered pair of oracle frames (every opcode, rewrites): B parsed
	// over A is B parsed into a zero Packet.
	frames := oracleFrames(t)
	for _, a := range frames {
		for _, b := range frames {
			var want Packet
			werr := parseIntoRef(&want, b.frame)
			if err := ParseInto(&p, a.frame); err != nil {
				t.Fatalf("%s: %v", a.name, err)
			}
			if err := ParseInto(&p, b.frame); (err == nil) != (werr == nil) {
				t.Fatalf("%s after %s: %v, reference %v", b.name, a.name, err, werr)
			}
			if d := packetDiff(&p, &want); d != "" {
				t.Fatalf("%s after %s: %s", b.name, a.name, d)
			}
		}
	}

	bad := append([]byte(nil), cas...)
	bad[39]++ // UDP length
	foreign := append([]byte(nil), cas...)
	foreign[36] = 0 // UDP port
	for _, tc := range []struct {
		name  string
		frame []byte
	}{{"malformed", bad}, {"foreign", foreign}, {"truncated", cas[:20]}} {
		if err := ParseInto(&p, cas); err != nil {
			t.Fatal(err)
		}
		if err := ParseInto(&p, tc.frame); err == nil {
			t.Fatalf("%s: parsed", tc.name)
		}
		if p.AtomicETH != nil || p.RETH != nil || p.Payload != nil || p.ICRC != nil {
			t.Errorf("%s after CMP_SWAP: AtomicETH %x RETH %x Payload %x ICRC %x survive", tc.name, p.AtomicETH, p.RETH, p.Payload, p.ICRC)
		}
	}
}

// TestExtLayouts checks the fast path's per-opcode table against opTable.
func TestExtLayouts(t *testing.T) {
	order := []struct {
		e   Ext
		n   int
		off func(*extLayout) uint8
	}{
		{ExtDETH, DETHLen, func(l *extLayout) uint8 { return l.deth }},
		{ExtRETH, RETHLen, func(l *extLayout) uint8 { return l.reth }},
		{ExtAtomicETH, AtomicETHLen, func(l *extLayout) uint8 { return l.atomic }},
		{ExtAETH, AETHLen, func(l *extLayout) uint8 { return l.aeth }},
		{ExtAtomicAckETH, AtomicAckETHLen, func(l *extLayout) uint8 { return l.atomicAck }},
		{ExtImmDt, ImmDtLen, func(l *extLayout) uint8 { return l.immDt }},
		{ExtIETH, IETHLen, func(l *extLayout) uint8 { return l.ieth }},
	}
	known := 0
	for i := range 256 {
		op := Opcode(i)
		l := &extLayouts[i]
		rare := op.Ext()&(ExtDETH|ExtAtomicAckETH|ExtImmDt|ExtIETH) != 0
		if l.known != op.Known() || l.payload != op.HasPayload() || int(l.extLen) != op.Ext().Len() || l.rare != rare {
			t.Errorf("%v: layout %+v, opcode known %v payload %v ext len %d", op, *l, op.Known(), op.HasPayload(), op.Ext().Len())
		}
		if l.known {
			known++
		}
		off := 0
		for _, h := range order {
			want := uint8(extAbsent)
			if op.Ext()&h.e != 0 {
				want = uint8(off)
				off += h.n
			}
			if got := h.off(l); got != want {
				t.Errorf("%v: ext %#x at %d, want %d", op, h.e, got, want)
			}
		}
	}
	if known != len(Opcodes()) || known == 0 {
		t.Errorf("%d known opcodes in the layout table, %d in opTable", known, len(Opcodes()))
	}
}

// TestParseIntoHeapNoAllocs: the middlebox's frames, parsed into a heap
// Packet, do not allocate (nor does a foreign frame).
func TestParseIntoHeapNoAllocs(t *testing.T) {
	frames := middleboxFrames(t)
	foreign := append([]byte(nil), frames[0].frame...)
	foreign[36] = 0
	frames = append(frames, struct {
		name  string
		frame []byte
	}{"foreign", foreign})
	for _, k := range frames {
		if a := testing.AllocsPerRun(100, func() { _ = ParseInto(benchPkt, k.frame) }); a != 0 {
			t.Errorf("%s: %v allocs/op", k.name, a)
		}
	}
}
