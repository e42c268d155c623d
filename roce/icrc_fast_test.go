package roce

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// icrcRecipe is the ICRC by the plain recipe (platform.md): copy the IPv4
// header .. end of payload, set TOS, TTL, IPv4 checksum, UDP checksum and BTH
// byte 4 to all ones, and take the CRC-32 (IEEE) of 8 bytes of 0xFF followed
// by that. l3 runs from the IPv4 header to (not including) the ICRC.
func icrcRecipe(l3 []byte) uint32 {
	ihl := int(l3[0]&0x0f) * 4
	m := append(bytes.Repeat([]byte{0xff}, 8), l3...)
	masked := m[8:]
	masked[1] = 0xff                          // TOS
	masked[8] = 0xff                          // TTL
	masked[10], masked[11] = 0xff, 0xff       // IPv4 header checksum
	masked[ihl+6], masked[ihl+7] = 0xff, 0xff // UDP checksum
	masked[ihl+8+4] = 0xff                    // BTH FECN, BECN, reserved
	return crc32.ChecksumIEEE(m)
}

// randomL3 returns n random bytes whose first byte announces an IHL of ihl
// bytes (the only header field the ICRC code reads).
func randomL3(r *rand.Rand, n, ihl int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0x40 | byte(ihl/4)
	return b
}

// TestICRCShortMatchesRecipe checks the copying path (icrcShort), the
// in-place path (icrcInPlace) and the exported ICRCOf against the recipe for
// every span length from the shortest possible (IPv4+UDP+BTH) to well past
// icrcFastMax, every IHL, random contents.
func TestICRCShortMatchesRecipe(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for ihl := IPv4MinLen; ihl <= IPv4MaxLen; ihl += 4 {
		for n := ihl + UDPLen + BTHLen; n <= icrcFastMax+80; n++ {
			for trial := 0; trial < 3; trial++ {
				l3 := randomL3(r, n, ihl)
				want := icrcRecipe(l3)
				got, err := ICRCOf(l3)
				if err != nil || got != want {
					t.Fatalf("ihl %d n %d: ICRCOf %08x, %v; recipe %08x", ihl, n, got, err, want)
				}
				if g := icrcInPlace(l3, ihl); g != want {
					t.Fatalf("ihl %d n %d: icrcInPlace %08x, recipe %08x", ihl, n, g, want)
				}
				if n <= icrcFastMax {
					if g := icrcShort(l3, ihl); g != want {
						t.Fatalf("ihl %d n %d: icrcShort %08x, recipe %08x", ihl, n, g, want)
					}
				}
			}
		}
	}
}

// TestICRCShortMasksOnly checks that the masked fields, and only they, do
// not affect the ICRC: flipping any bit elsewhere changes it.
func TestICRCShortMasksOnly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, ihl := range []int{20, 24, 60} {
		for _, n := range []int{ihl + 24, ihl + 48, 100, 200, icrcFastMax} {
			if n < ihl+UDPLen+BTHLen {
				continue
			}
			l3 := randomL3(r, n, ihl)
			base, _ := ICRCOf(l3)
			masked := map[int]bool{1: true, 8: true, 10: true, 11: true, ihl + 6: true, ihl + 7: true, ihl + 12: true}
			for i := 1; i < n; i++ { // byte 0 holds the IHL
				for bit := 0; bit < 8; bit++ {
					l3[i] ^= 1 << bit
					got, _ := ICRCOf(l3)
					l3[i] ^= 1 << bit
					if (got == base) != masked[i] {
						t.Fatalf("ihl %d n %d: flipping byte %d bit %d: ICRC %08x, unflipped %08x (masked %v)", ihl, n, i, bit, got, base, masked[i])
					}
				}
			}
		}
	}
}

// TestICRCShortFrames checks ComputeICRC, ICRCOK and SetICRC on built frames
// (IPv4 options and VLAN tags included) of every payload length across the
// fast-path bound, against the frame-level recipe.
func TestICRCShortFrames(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, vlan := range []bool{false, true} {
		for _, opts := range []int{0, 4, 12, 40} {
			for n := 0; n <= icrcFastMax; n++ {
				f := baseFields(OpRCSendOnly)
				f.VLAN, f.VLANTCI = vlan, 5<<13|42
				f.Payload = make([]byte, n)
				for i := range f.Payload {
					f.Payload[i] = byte(r.Uint32())
				}
				f.PadCnt = uint8((4 - n%4) % 4)
				f.TOS, f.TTL = byte(r.Uint32()), byte(r.Uint32())
				frame := build(t, &f, 0)
				if opts > 0 {
					l3 := EthernetLen
					if vlan {
						l3 += VLANTagLen
					}
					frame = withOptionsAt(frame, l3, opts)
				}
				p, err := Parse(frame)
				if err != nil {
					t.Fatalf("vlan %v opts %d n %d: %v", vlan, opts, n, err)
				}
				want := refICRC(frame)
				if got := p.ComputeICRC(); got != want {
					t.Fatalf("vlan %v opts %d n %d: ComputeICRC %08x, recipe %08x", vlan, opts, n, got, want)
				}
				binary.LittleEndian.PutUint32(p.ICRC, ^want)
				if p.ICRCOK() {
					t.Fatalf("vlan %v opts %d n %d: ICRCOK with a wrong ICRC", vlan, opts, n)
				}
				p.SetICRC()
				if p.StoredICRC() != want || !p.ICRCOK() {
					t.Fatalf("vlan %v opts %d n %d: after SetICRC stored %08x, want %08x", vlan, opts, n, p.StoredICRC(), want)
				}
			}
		}
	}
}

// withOptionsAt inserts n bytes of IPv4 options (NOPs) after the 20-byte
// IPv4 header starting at l3, fixing IHL, total length and checksum.
func withOptionsAt(frame []byte, l3, n int) []byte {
	out := append([]byte(nil), frame[:l3+IPv4MinLen]...)
	out = append(out, bytes.Repeat([]byte{1}, n)...)
	out = append(out, frame[l3+IPv4MinLen:]...)
	ip := IPv4(out[l3:])
	ip.SetVersionIHL(uint8(5 + n/4))
	ip.SetTotalLen(ip.TotalLen() + uint16(n))
	ip.UpdateChecksum()
	return out
}

// TestICRCShortZeroK checks the precomputed table against its definition:
// icrcZeroK[n] is the raw register after 8 bytes of 0xFF and n zero bytes.
func TestICRCShortZeroK(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 63, 64, 200, icrcFastMax} {
		m := append(bytes.Repeat([]byte{0xff}, 8), make([]byte, n)...)
		if got, want := icrcZeroK[n], ^crc32.ChecksumIEEE(m); got != want {
			t.Fatalf("icrcZeroK[%d] = %08x, want %08x", n, got, want)
		}
	}
}

func TestICRCShortNoAllocs(t *testing.T) {
	for _, tc := range []struct{ payload, opts int }{{0, 0}, {28, 0}, {36, 4}, {160, 0}, {icrcFastMax - 40, 0}, {icrcFastMax, 0}} {
		f := baseFields(OpRCSendOnly)
		f.Payload = make([]byte, tc.payload)
		frame := build(t, &f, 0)
		if tc.opts > 0 {
			frame = withOptionsAt(frame, EthernetLen, tc.opts)
		}
		p, err := Parse(frame)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { p.SetICRC() }); n != 0 {
			t.Errorf("payload %d opts %d: SetICRC allocates %v times", tc.payload, tc.opts, n)
		}
	}
}

func FuzzICRCFast(f *testing.F) {
	f.Add(uint8(5), bytes.Repeat([]byte{0xab}, 56))
	f.Add(uint8(6), bytes.Repeat([]byte{0x00}, 100))
	f.Add(uint8(15), bytes.Repeat([]byte{0x5a}, 300))
	f.Fuzz(func(t *testing.T, ihlWords uint8, l3 []byte) {
		if len(l3) == 0 {
			return
		}
		ihl := int(5+ihlWords%11) * 4
		l3[0] = 0x40 | byte(ihl/4)
		got, err := ICRCOf(l3)
		if len(l3) < ihl+UDPLen+BTHLen {
			if err == nil {
				t.Fatalf("ICRCOf accepted %d bytes with IHL %d", len(l3), ihl)
			}
			return
		}
		want := icrcRecipe(l3)
		if err != nil || got != want {
			t.Fatalf("n %d ihl %d: ICRCOf %08x, %v; recipe %08x", len(l3), ihl, got, err, want)
		}
		if len(l3) <= icrcFastMax {
			if g := icrcShort(l3, ihl); g != want {
				t.Fatalf("n %d ihl %d: icrcShort %08x, recipe %08x", len(l3), ihl, g, want)
			}
		}
		if g := icrcInPlace(l3, ihl); g != want {
			t.Fatalf("n %d ihl %d: icrcInPlace %08x, recipe %08x", len(l3), ihl, g, want)
		}
	})
}

// icrcAsmVariants returns the carry-less-multiply variants (icrcLevel
// values) this machine can run. Where it has none (no PCLMULQDQ, or not
// amd64) the tests of the assembly skip, saying so.
func icrcAsmVariants(t testing.TB) []uint8 {
	if !useICRCAsm {
		t.Skip("no carry-less-multiply ICRC on this machine (not amd64, or no PCLMULQDQ/SSSE3)")
	}
	var v []uint8
	for l := uint8(icrcLevelSSE); l <= icrcMaxLevel; l++ {
		v = append(v, l)
	}
	if icrcMaxLevel < icrcLevelAVX512 {
		t.Logf("CPU without every variant: checking %s only", fmt.Sprint(v))
	}
	return v
}

// withICRCVariant runs f with icrcLevel set to level, then restores it.
func withICRCVariant(level uint8, f func()) {
	old := icrcLevel
	icrcLevel = level
	defer func() { icrcLevel = old }()
	f()
}

func variantName(level uint8) string {
	return [...]string{"sse", "avx2", "avx512"}[level]
}

// icrcAsmMaxTest is the longest span the assembly tests use: past
// icrcFastMax, so that the dispatch to the in-place path is covered too.
const icrcAsmMaxTest = 300

// randomMasked20 fills l3 (a span with a 20-byte IPv4 header) with random
// bytes, then gives the masked fields random values again (they are already
// random; this documents that the masks, not the values, matter).
func randomMasked20(r *rand.Rand, l3 []byte) {
	for i := range l3 {
		l3[i] = byte(r.Uint32())
	}
	l3[0] = 0x45
	for _, off := range []int{IPv4TOSOff, IPv4TTLOff, IPv4ChecksumOff, IPv4ChecksumOff + 1,
		IPv4MinLen + UDPChecksumOff, IPv4MinLen + UDPChecksumOff + 1, IPv4MinLen + UDPLen + BTHFBOff} {
		l3[off] = byte(r.Uint32())
	}
}

// checkAsm20 compares, for a span with a 20-byte IPv4 header, the assembly
// (when the span is within its range), ICRCOf and icrcShort with the recipe.
func checkAsm20(t *testing.T, what string, l3 []byte) {
	t.Helper()
	want := icrcRecipe(l3)
	n := len(l3)
	if n >= icrcFastMin && n <= icrcFastMax {
		if got := icrcAsm20(l3); got != want {
			t.Fatalf("%s: n %d: icrcAsm20 %08x, recipe %08x", what, n, got, want)
		}
		if got := icrcShort(l3, IPv4MinLen); got != want {
			t.Fatalf("%s: n %d: icrcShort %08x, recipe %08x", what, n, got, want)
		}
	}
	if got, err := ICRCOf(l3); err != nil || got != want {
		t.Fatalf("%s: n %d: ICRCOf %08x, %v; recipe %08x", what, n, got, err, want)
	}
}

// TestICRCAsmMatchesRecipe checks the carry-less-multiply ICRC (each variant
// the CPU has) against the recipe for every span length from the shortest
// (IPv4+UDP+BTH) to past icrcFastMax, random contents and masked-field
// values, the span at every alignment and ending exactly at the end of its
// slice's capacity (with -race, checkptr also checks the reads' bounds).
func TestICRCAsmMatchesRecipe(t *testing.T) {
	for _, level := range icrcAsmVariants(t) {
		withICRCVariant(level, func() {
			r := rand.New(rand.NewPCG(11, 12))
			for n := icrcFastMin; n <= icrcAsmMaxTest; n++ {
				for align := range 16 {
					buf := make([]byte, align+n)
					l3 := buf[align:]
					for trial := 0; trial < 3; trial++ {
						randomMasked20(r, l3)
						checkAsm20(t, fmt.Sprintf("%s align %d", variantName(level), align), l3)
					}
				}
			}
		})
	}
}

// TestICRCAsmMaskedBytes checks, for every masked field, span length and
// variant, that all 256 values of each masked byte give the same ICRC, and
// that the byte after and before each one is not masked.
func TestICRCAsmMaskedBytes(t *testing.T) {
	masked := []int{IPv4TOSOff, IPv4TTLOff, IPv4ChecksumOff, IPv4ChecksumOff + 1,
		IPv4MinLen + UDPChecksumOff, IPv4MinLen + UDPChecksumOff + 1, IPv4MinLen + UDPLen + BTHFBOff}
	isMasked := map[int]bool{}
	for _, m := range masked {
		isMasked[m] = true
	}
	for _, level := range icrcAsmVariants(t) {
		withICRCVariant(level, func() {
			r := rand.New(rand.NewPCG(13, 14))
			for n := icrcFastMin; n <= icrcFastMax; n++ {
				l3 := make([]byte, n)
				randomMasked20(r, l3)
				base := icrcAsm20(l3)
				if want := icrcRecipe(l3); base != want {
					t.Fatalf("%s n %d: %08x, recipe %08x", variantName(level), n, base, want)
				}
				for off := 1; off < min(48, n); off++ {
					old := l3[off]
					for v := range 256 {
						l3[off] = byte(v)
						got := icrcAsm20(l3)
						if isMasked[off] && got != base || !isMasked[off] && byte(v) != old && got == base {
							t.Fatalf("%s n %d: byte %d = %#02x: ICRC %08x, with %#02x %08x (masked %v)",
								variantName(level), n, off, v, got, old, base, isMasked[off])
						}
					}
					l3[off] = old
				}
			}
		})
	}
}

// TestICRCAsmGuardPages places spans at the start and at the end of a page
// whose neighbours are PROT_NONE: a read before the span's first byte or
// after its last faults (and the test binary dies with SIGSEGV).
func TestICRCAsmGuardPages(t *testing.T) {
	variants := icrcAsmVariants(t)
	ps := os.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 3*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[:ps], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	if err := syscall.Mprotect(mem[2*ps:], syscall.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	page := mem[ps : 2*ps : 2*ps]
	r := rand.New(rand.NewPCG(15, 16))
	for _, level := range variants {
		withICRCVariant(level, func() {
			for n := icrcFastMin; n <= icrcFastMax; n++ {
				for _, l3 := range [][]byte{page[:n:n], page[ps-n:]} {
					randomMasked20(r, l3)
					want := icrcRecipe(l3)
					if got := icrcAsm20(l3); got != want {
						t.Fatalf("%s n %d at page offset %d: %08x, recipe %08x", variantName(level), n,
							uintptr(unsafe.Pointer(&l3[0]))-uintptr(unsafe.Pointer(&page[0])), got, want)
					}
				}
			}
		})
	}
}

// TestICRCPortableFor20 checks the portable paths (no carry-less multiply)
// for IHL 20, which on a machine with it the other tests do not reach.
func TestICRCPortableFor20(t *testing.T) {
	old := useICRCAsm
	useICRCAsm = false
	defer func() { useICRCAsm = old }()
	r := rand.New(rand.NewPCG(17, 18))
	for n := icrcFastMin; n <= icrcAsmMaxTest; n++ {
		l3 := make([]byte, n)
		randomMasked20(r, l3)
		checkAsm20(t, "portable", l3)
	}
}

// TestICRCClmulTables checks the assembly's tables: the field offsets it
// uses, and each constant against an independent derivation. x^e mod P is
// the raw CRC register (hash/crc32's table loop) after a message whose only
// set bit is followed by e-32 more bits; mu by its definition (x^64 = mu*P +
// a remainder of degree < 32).
func TestICRCClmulTables(t *testing.T) {
	var tb clmulTables
	for _, c := range []struct {
		name     string
		got, off uintptr
	}{
		{"kr", unsafe.Offsetof(tb.kr), clmulOffK},
		{"red", unsafe.Offsetof(tb.red), clmulOffRed},
		{"shortT", unsafe.Offsetof(tb.shortT), clmulOffShortT},
		{"shortU", unsafe.Offsetof(tb.shortU), clmulOffShortU},
		{"zeroInv", unsafe.Offsetof(tb.zeroInv), clmulOffZeroInv},
		{"maskPad", unsafe.Offsetof(tb.maskPad), clmulOffMask - 64},
		{"mask", unsafe.Offsetof(tb.mask), clmulOffMask},
		{"zero", unsafe.Offsetof(tb.mask) + 64, clmulOffZero},
		{"shuf", unsafe.Offsetof(tb.shuf), clmulOffShuf},
	} {
		if c.got != c.off {
			t.Errorf("clmulTables.%s at %d, the assembly reads %d", c.name, c.got, c.off)
		}
	}
	tab := makeClmulTables()
	// xPowRefl returns x^e mod P as a reflected-32 value, from crc32.
	xPowRefl := func(e int) uint32 {
		if e < 32 {
			return 1 << (31 - e)
		}
		// One set bit, then e-32 bits: the message polynomial is x^(e-32).
		nb := (e - 32 + 8) / 8
		msg := make([]byte, nb)
		msg[0] = 1 << (8*nb - 1 - (e - 32))
		return ^crc32.Update(0xffffffff, crc32.IEEETable, msg)
	}
	for i, c := range tab.kr {
		d := len(tab.kr) - 1 - i
		for j, e := range []int{128*d + 95, 128*d + 31} {
			if want := uint64(xPowRefl(e)) << 32; c[j] != want {
				t.Errorf("kr[%d][%d] = %#x, want x^%d mod P = %#x", i, j, c[j], e, want)
			}
		}
	}
	for r := range tab.shortT {
		wantT, wantU := 0, r
		if r > 16 {
			wantT, wantU = r-16, 16
		}
		if int(tab.shortT[r]) != wantT || int(tab.shortU[r]) != wantU {
			t.Errorf("shortT, shortU[%d] = %d, %d, want %d, %d", r, tab.shortT[r], tab.shortU[r], wantT, wantU)
		}
	}
	for n, v := range tab.zeroInv {
		if v != ^icrcZeroK[n] {
			t.Errorf("zeroInv[%d] = %08x, want ^icrcZeroK = %08x", n, v, ^icrcZeroK[n])
		}
	}
	if tab.red[1] != 0xedb88320<<32 { // P - x^32, reflected
		t.Errorf("red[1] = %#x", tab.red[1])
	}
	// mu, back from reflected-64 to bit i = x^i, times P (carry-less) must
	// be x^95 plus a polynomial of degree < 32.
	mu := bits.Reverse64(tab.red[0])
	if mu>>63 != 1 {
		t.Fatalf("mu = %#x: not of degree 63", mu)
	}
	var lo, hi uint64
	for i := range 64 {
		if mu>>i&1 != 0 {
			lo ^= crcPoly << i
			if i > 0 {
				hi ^= crcPoly >> (64 - i)
			}
		}
	}
	if hi != 1<<31 || lo>>32 != 0 {
		t.Errorf("mu*P = %#x:%016x, want x^95 + (degree < 32)", hi, lo)
	}
	var mask [128]byte
	for _, off := range []int{1, 8, 10, 11, 26, 27, 32} { // TOS, TTL, IPv4 and UDP checksums, BTH byte 4
		mask[off] = 0xff
	}
	if tab.mask != mask || tab.maskPad != [64]byte{} {
		t.Errorf("mask = %x %x", tab.maskPad, tab.mask)
	}
	for i, v := range tab.shuf {
		if want := byte(0x80); i >= 16 && v != byte(i-16) || i < 16 && v != want {
			t.Errorf("shuf[%d] = %#x", i, v)
		}
	}
}

// FuzzICRCAsm compares the carry-less-multiply ICRC (each variant the CPU
// has) with the recipe on spans with a 20-byte IPv4 header, copied to a
// slice of exactly their length.
func FuzzICRCAsm(f *testing.F) {
	f.Add(bytes.Repeat([]byte{0xab}, 44))
	f.Add(bytes.Repeat([]byte{0x00}, 68))
	f.Add(bytes.Repeat([]byte{0xff}, 256))
	variants := icrcAsmVariants(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < icrcFastMin {
			return
		}
		l3 := append([]byte(nil), in[:min(len(in), icrcFastMax)]...)
		l3 = l3[:len(l3):len(l3)]
		l3[0] = 0x45
		want := icrcRecipe(l3)
		for _, level := range variants {
			withICRCVariant(level, func() {
				if got := icrcAsm20(l3); got != want {
					t.Fatalf("%s n %d: %08x, recipe %08x", variantName(level), len(l3), got, want)
				}
			})
		}
	})
}

var icrcSink uint32

// BenchmarkICRCSpans times ComputeICRC (the middlebox's check) by L3..ICRC
// span and frame kind: ACK 44, READ request 56, CMP_SWAP 68, READ response
// with 64 bytes 108, WRITE with 64 bytes 120, SEND 124, 200 and 256. It uses only
// the exported API and the build helpers, so that it can be copied into an
// older tree for before/after comparisons.
func BenchmarkICRCSpans(b *testing.B) {
	for _, c := range []struct {
		name string
		op   Opcode
		pay  int
		span int
	}{
		{"ack", OpRCAcknowledge, 0, 44},
		{"read", OpRCReadRequest, 0, 56},
		{"cas", OpRCCompareSwap, 0, 68},
		{"readresp", OpRCReadResponseOnly, 64, 108},
		{"write", OpRCWriteOnly, 64, 120},
		{"send", OpRCSendOnly, 84, 124},
		{"send", OpRCSendOnly, 160, 200},
		{"send", OpRCSendOnly, 216, 256},
	} {
		f := baseFields(c.op)
		f.Payload = make([]byte, c.pay)
		frame := build(b, &f, 0)
		var p Packet
		if err := ParseInto(&p, frame); err != nil {
			b.Fatal(err)
		}
		if got := p.ICRCOff - p.L3Off; got != c.span {
			b.Fatalf("%s: span %d, want %d", c.name, got, c.span)
		}
		b.Run(fmt.Sprintf("%s=%d", c.name, c.span), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(c.span))
			for b.Loop() {
				icrcSink += p.ComputeICRC()
			}
		})
	}
}

// BenchmarkICRCAsmVariants times each carry-less-multiply variant the CPU
// has on its own (icrcAsm20, no packet), by span length.
func BenchmarkICRCAsmVariants(b *testing.B) {
	for _, level := range icrcAsmVariants(b) {
		for _, n := range []int{44, 56, 68, 108, 124, 200, 256} {
			l3 := make([]byte, n)
			randomMasked20(rand.New(rand.NewPCG(1, uint64(n))), l3)
			b.Run(fmt.Sprintf("%s/span=%d", variantName(level), n), func(b *testing.B) {
				withICRCVariant(level, func() {
					b.ReportAllocs()
					b.SetBytes(int64(n))
					for b.Loop() {
						icrcSink += icrcAsm20(l3)
					}
				})
			})
		}
	}
}
