package netio

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"math"
	"strings"
	"testing"
	"time"
)

// rocev2CAS is the worked example of platform.md: an 86-byte RoCEv2
// CMP_SWAP frame whose ICRC was checked with scapy and Wireshark.
var rocev2CAS = mustHex("020000000002020000000001080045000048000140004011" +
	"26a20a0000010a000002c35012b700340000" +
	"1340ffff000000118000000500007f00000010000000123400000000deadbeef0000000000000000" +
	"dce072ec")

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// icrcOK recomputes the ICRC of an IPv4 RoCEv2 frame with the recipe of
// platform.md (written here independently of the roce package, which netio
// must not import) and compares it with the trailing four bytes.
func icrcOK(frame []byte) bool {
	ip := frame[ethHeaderLen : len(frame)-4]
	m := append([]byte(nil), ip...)
	m[1] = 0xff                             // TOS
	m[8] = 0xff                             // TTL
	m[10], m[11] = 0xff, 0xff               // IPv4 checksum
	m[20+6], m[20+7] = 0xff, 0xff           // UDP checksum
	m[20+udpHeaderLen+bthMaskedByte] = 0xff // BTH FECN/BECN/reserved
	crc := crc32.ChecksumIEEE(append(bytes.Repeat([]byte{0xff}, 8), m...))
	return binary.LittleEndian.Uint32(frame[len(frame)-4:]) == crc
}

// ipv4ChecksumOK verifies the IPv4 header checksum.
func ipv4ChecksumOK(frame []byte) bool {
	h := frame[ethHeaderLen : ethHeaderLen+20]
	var sum uint32
	for i := 0; i < len(h); i += 2 {
		sum += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return sum == 0xffff
}

func TestICRCOracleAcceptsWorkedExample(t *testing.T) {
	if !icrcOK(rocev2CAS) || !ipv4ChecksumOK(rocev2CAS) {
		t.Fatal("the platform.md worked example does not check out; the test oracle is wrong")
	}
}

// TestCorruptionBreaksICRCEverywhere tries every bit the corrupter can
// choose: each one must leave the IPv4/UDP headers intact and break the
// ICRC.
func TestCorruptionBreaksICRCEverywhere(t *testing.T) {
	payload := udpPayloadOffset(rocev2CAS)
	if payload != ethHeaderLen+20+udpHeaderLen {
		t.Fatalf("UDP payload offset %d", payload)
	}
	span := uint64(len(rocev2CAS) - payload)
	for pos := range span {
		for bit := range uint64(8) {
			f := bytes.Clone(rocev2CAS)
			corruptFrame(f, bit<<32|pos)
			diff := 0
			for i := range f {
				if f[i] != rocev2CAS[i] {
					diff++
					if i < payload {
						t.Fatalf("pos %d bit %d: header byte %d changed", pos, bit, i)
					}
				}
			}
			if diff != 1 {
				t.Fatalf("pos %d bit %d: %d bytes changed, want 1", pos, bit, diff)
			}
			if icrcOK(f) {
				t.Fatalf("pos %d bit %d: ICRC still valid after corruption", pos, bit)
			}
			if !ipv4ChecksumOK(f) {
				t.Fatalf("pos %d bit %d: IPv4 checksum broken", pos, bit)
			}
		}
	}
}

func TestUDPPayloadOffset(t *testing.T) {
	vlan := append(append(bytes.Clone(rocev2CAS[:12]), 0x81, 0x00, 0x00, 0x05), rocev2CAS[12:]...)
	ipv6 := make([]byte, 14+40+8+20)
	ipv6[12], ipv6[13] = 0x86, 0xdd
	ipv6[14+ipv6NextOffset] = ipProtoUDP
	tcp := bytes.Clone(rocev2CAS)
	tcp[14+ipv4ProtoOffset] = 6
	tests := []struct {
		name  string
		frame []byte
		want  int
	}{
		{"ipv4 udp", rocev2CAS, 42},
		{"vlan ipv4 udp", vlan, 46},
		{"ipv6 udp", ipv6, 62},
		{"tcp", tcp, -1},
		{"short", rocev2CAS[:20], -1},
		{"empty", nil, -1},
		{"truncated udp", rocev2CAS[:38], -1},
	}
	for _, tc := range tests {
		if got := udpPayloadOffset(tc.frame); got != tc.want {
			t.Errorf("%s: offset %d, want %d", tc.name, got, tc.want)
		}
	}
}

func FuzzCorruptFrame(f *testing.F) {
	f.Add(rocev2CAS, uint64(0))
	f.Add([]byte{}, uint64(5))
	f.Add(rocev2CAS[:30], uint64(1<<40|7))
	f.Fuzz(func(t *testing.T, frame []byte, r uint64) {
		orig := bytes.Clone(frame)
		corruptFrame(frame, r)
		diff := 0
		for i := range frame {
			if frame[i] != orig[i] {
				diff++
			}
		}
		if len(frame) > 0 && diff != 1 {
			t.Fatalf("%d bytes changed, want 1", diff)
		}
	})
}

// sendRecvAll sends n numbered frames from a to b, one burst of 8 at a time,
// then receives until nothing more arrives within quiet, and returns the
// sequence numbers in arrival order.
func sendRecvAll(t *testing.T, a, b *LinkPort, n int, quiet time.Duration) []uint64 {
	t.Helper()
	var burst [][]byte
	for i := range n {
		burst = append(burst, numbered(uint64(i)))
		if len(burst) == 8 || i == n-1 {
			if _, err := a.Send(burst); err != nil {
				t.Fatal(err)
			}
			burst = burst[:0]
		}
	}
	return drain(t, b, quiet)
}

func drain(t *testing.T, b *LinkPort, quiet time.Duration) []uint64 {
	t.Helper()
	var got []uint64
	bufs := newBufs(16)
	last := time.Now()
	for time.Since(last) < quiet {
		k, err := b.TryRecv(bufs)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		for _, f := range bufs[:k] {
			got = append(got, seqOf(f))
		}
		last = time.Now()
	}
	return got
}

func faultyLink(t *testing.T, f Faults) (*LinkPort, *LinkPort) {
	t.Helper()
	a, b, err := NewLink("a", "b", LinkConfig{Capacity: 1 << 16, AtoB: f})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// within reports whether the observed count is within 5 standard
// deviations of n*p (binomial), so a correct injector fails with
// probability below 1e-6 and a wrong rate does not pass.
func within(count uint64, n int, p float64) bool {
	mean := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(count)-mean) <= 5*sd
}

func TestFaultRates(t *testing.T) {
	const n = 20000
	tests := []struct {
		name  string
		f     Faults
		count func(Stats) uint64
		p     float64
	}{
		{"drop", Faults{Drop: 0.1, Seed: 1}, func(s Stats) uint64 { return s.Dropped }, 0.1},
		{"duplicate", Faults{Duplicate: 0.05, Seed: 2}, func(s Stats) uint64 { return s.Duplicated }, 0.05},
		{"corrupt", Faults{Corrupt: 0.02, Seed: 3}, func(s Stats) uint64 { return s.Corrupted }, 0.02},
		{"reorder", Faults{Reorder: 0.1, ReorderDepth: 4, Seed: 4}, func(s Stats) uint64 { return s.Reordered }, 0.1},
		{"delay", Faults{Delay: time.Millisecond, DelayProb: 0.3, Seed: 5}, func(s Stats) uint64 { return s.Delayed }, 0.3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := faultyLink(t, tc.f)
			got := sendRecvAll(t, a, b, n, 20*time.Millisecond)
			s := a.Stats()
			if c := tc.count(s); !within(c, n, tc.p) {
				t.Fatalf("%s count %d of %d, want about %.0f", tc.name, c, n, n*tc.p)
			}
			want := uint64(n) - s.Dropped + s.Duplicated
			if !conserved(s) || s.Held != 0 || s.FramesIn != n || s.FramesOut != want || uint64(len(got)) != want || s.Overflow != 0 {
				t.Fatalf("received %d, stats %v; want %d out", len(got), s, want)
			}
		})
	}
}

func TestFaultsAreReproducible(t *testing.T) {
	// An hour-long hold: held frames leave only after ReorderDepth later
	// frames or at the final flush, so arrival order cannot depend on timing.
	f := Faults{Drop: 0.05, Duplicate: 0.05, Reorder: 0.05, ReorderDepth: 3, ReorderHold: time.Hour, Corrupt: 0.05, Seed: 42}
	run := func(f Faults) ([]uint64, Stats) {
		a, b := faultyLink(t, f)
		for i := range 3000 {
			a.Send([][]byte{numbered(uint64(i))})
		}
		s := a.Stats()
		a.SetFaults(Faults{}) // flush
		return drain(t, b, 20*time.Millisecond), s
	}
	got1, s1 := run(f)
	got2, s2 := run(f)
	if s1 != s2 {
		t.Fatalf("same seed, different stats:\n%v\n%v", s1, s2)
	}
	if !equalU64(got1, got2) {
		t.Fatal("same seed, different arrival sequence")
	}
	f.Seed = 43
	got3, s3 := run(f)
	if s3 == s1 && equalU64(got1, got3) {
		t.Fatal("different seeds gave identical results")
	}
}

func equalU64(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReorderRespectsDepthAndLosesNothing(t *testing.T) {
	for _, depth := range []int{1, 3, 8} {
		a, b := faultyLink(t, Faults{Reorder: 0.2, ReorderDepth: depth, ReorderHold: time.Hour, Seed: int64(depth)})
		const n = 5000
		// One frame per Send, so a held frame can only be released by
		// later frames (the hold is an hour), never by timing.
		for i := range n {
			a.Send([][]byte{numbered(uint64(i))})
		}
		a.SetFaults(Faults{}) // flushes the frames still held
		got := drain(t, b, 10*time.Millisecond)
		if len(got) != n {
			t.Fatalf("depth %d: received %d of %d", depth, len(got), n)
		}
		late, maxLate := 0, 0
		for pos, seq := range got {
			overtaken := 0 // later frames that arrived before seq
			for _, s := range got[:pos] {
				if s > seq {
					overtaken++
				}
			}
			if overtaken > 0 {
				late++
			}
			// The final flush may release several at once; ignore the tail.
			if seq < n-uint64(4*depth) {
				maxLate = max(maxLate, overtaken)
			}
		}
		if late == 0 {
			t.Fatalf("depth %d: nothing was reordered", depth)
		}
		if maxLate > depth {
			t.Fatalf("depth %d: a frame arrived %d places late", depth, maxLate)
		}
		if maxLate != depth {
			t.Fatalf("depth %d: frames at most %d places late; depth never reached", depth, maxLate)
		}
	}
}

func TestDelayHoldsFramesAndRecvWaits(t *testing.T) {
	const delay = 30 * time.Millisecond
	a, b := faultyLink(t, Faults{Delay: delay})
	bufs := newBufs(4)
	start := time.Now()
	a.Send([][]byte{numbered(1), numbered(2)})
	if n, _ := b.TryRecv(bufs); n != 0 {
		t.Fatalf("delayed frame available at once")
	}
	got := 0
	for got < 2 {
		n, err := b.Recv(bufs) // must wake up by itself when the frames are due
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if el := time.Since(start); el < delay {
		t.Fatalf("frames arrived after %v, before the %v delay", el, delay)
	}
	if s := a.Stats(); s.Delayed != 2 || s.FramesOut != 2 {
		t.Fatalf("stats %v", s)
	}
}

func TestCorruptOnLinkBreaksICRC(t *testing.T) {
	a, b := faultyLink(t, Faults{Corrupt: 1, Seed: 9})
	for range 50 {
		a.Send([][]byte{rocev2CAS})
	}
	bufs := newBufs(64)
	n, _ := b.Recv(bufs)
	for n < 50 {
		k, _ := b.Recv(bufs[n:])
		n += k
	}
	for i, f := range bufs[:n] {
		if icrcOK(f) || !ipv4ChecksumOK(f) || len(f) != len(rocev2CAS) {
			t.Fatalf("frame %d: ICRC ok=%v, IPv4 checksum ok=%v", i, icrcOK(f), ipv4ChecksumOK(f))
		}
	}
	if s := a.Stats(); s.Corrupted != 50 {
		t.Fatalf("stats %v", s)
	}
}

func TestFaultyLinkSteadyStateDoesNotAllocate(t *testing.T) {
	a, b := faultyLink(t, Faults{Drop: 0.1, Duplicate: 0.1, Reorder: 0.1, Corrupt: 0.1, Seed: 1})
	frames := [][]byte{rocev2CAS, rocev2CAS, rocev2CAS, rocev2CAS}
	bufs := newBufs(64)
	round := func() {
		a.Send(frames)
		b.TryRecv(bufs)
	}
	for range 1000 {
		round()
	}
	if allocs := testing.AllocsPerRun(1000, round); allocs != 0 {
		t.Fatalf("%v allocations per burst, want 0", allocs)
	}
}

// conserved checks the Stats identity documented on Stats.
func conserved(s Stats) bool {
	return s.FramesIn-s.Dropped+s.Duplicated == s.FramesOut+s.Overflow+s.Held
}

// FuzzInjector drives a small link with fuzzed faults and frames: no
// panic, frames conserved at every step, nothing held after a flush.
func FuzzInjector(f *testing.F) {
	f.Add(uint8(10), uint8(10), uint8(10), uint8(10), uint8(10), uint8(3), int64(1), []byte("\x00\x05\x40"))
	f.Add(uint8(255), uint8(0), uint8(0), uint8(0), uint8(255), uint8(0), int64(2), rocev2CAS)
	f.Fuzz(func(t *testing.T, drop, dup, reorder, delay, corrupt, depth uint8, seed int64, script []byte) {
		p := func(v uint8) float64 { return float64(v) / 255 }
		fl := Faults{Drop: p(drop), Duplicate: p(dup), Reorder: p(reorder), ReorderDepth: int(depth % 8),
			ReorderHold: time.Hour, Delay: time.Hour, DelayProb: p(delay), Corrupt: p(corrupt), Seed: seed}
		if delay == 0 {
			fl.Delay = 0
		}
		a, b, err := NewLink("a", "b", LinkConfig{Capacity: 8, AtoB: fl})
		if err != nil {
			t.Fatal(err)
		}
		bufs := newBufs(4)
		for i, c := range script {
			switch c % 3 {
			case 0, 1: // send a frame of len c (the script itself as bytes)
				a.Send([][]byte{script[:min(len(script), int(c)+i)%(len(script)+1)]})
			case 2:
				b.TryRecv(bufs)
			}
			if s := a.Stats(); !conserved(s) {
				t.Fatalf("step %d: %v", i, s)
			}
		}
		a.SetFaults(Faults{})
		if s := a.Stats(); !conserved(s) || s.Held != 0 {
			t.Fatalf("after flush: %v", s)
		}
	})
}
