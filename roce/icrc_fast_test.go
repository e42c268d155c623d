package roce

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"testing"
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
