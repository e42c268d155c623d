package roce

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"testing"
)

// icrc20Routes runs f once for each route ICRC20 can take on this machine:
// every carry-less-multiply variant the CPU has, then the portable path
// (useICRCAsm false) with the assembly's tables poisoned, so that a route
// that reached the assembly anyway would give wrong ICRCs.
func icrc20Routes(t testing.TB, f func(route string)) {
	t.Helper()
	if useICRCAsm {
		for l := uint8(icrcLevelSSE); l <= icrcMaxLevel; l++ {
			withICRCVariant(l, func() { f(variantName(l)) })
		}
	} else {
		t.Logf("no carry-less-multiply ICRC on this machine: checking the portable route only")
	}
	withPortableICRC(func() { f("portable") })
}

// withPortableICRC runs f with useICRCAsm false and the assembly's tables
// zeroed (its constants, masks and windows), then restores both.
func withPortableICRC(f func()) {
	oldUse, oldTab := useICRCAsm, icrcClmulTab
	useICRCAsm = false
	icrcClmulTab = clmulTables{}
	defer func() { useICRCAsm, icrcClmulTab = oldUse, oldTab }()
	f()
}

// TestICRC20 checks ICRC20 against the recipe (hash/crc32 over the masked
// copy) and ICRCOf for every span length from 40 to 300 (across the
// assembly's range, 40..256, and past it), every alignment, each route, and
// spans that end at the end of their slice's capacity.
func TestICRC20(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	icrc20Routes(t, func(route string) {
		for n := icrcFastMin; n <= icrcAsmMaxTest; n++ {
			for align := range 16 {
				buf := make([]byte, align+n)
				l3 := buf[align:]
				randomMasked20(r, l3)
				want := icrcRecipe(l3)
				if got := ICRC20(l3); got != want {
					t.Fatalf("%s n %d align %d: ICRC20 %08x, recipe %08x", route, n, align, got, want)
				}
				if got, err := ICRCOf(l3); err != nil || got != want {
					t.Fatalf("%s n %d align %d: ICRCOf %08x, %v; recipe %08x", route, n, align, got, err, want)
				}
			}
		}
	})
}

// TestICRC20Frames checks ICRC20 on built frames against ComputeICRC and the
// frame-level recipe, for every frame kind of BenchmarkICRCMix and SEND
// payloads across the assembly's bounds.
func TestICRC20Frames(t *testing.T) {
	ps := icrcMixFrames(t, 64)
	for n := 0; n <= 280; n += 4 {
		f := baseFields(OpRCSendOnly)
		f.Payload = bytes.Repeat([]byte{byte(n)}, n)
		var p Packet
		if err := ParseInto(&p, build(t, &f, 0)); err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	icrc20Routes(t, func(route string) {
		for _, p := range ps {
			want := refICRC(p.Frame)
			if got := ICRC20(p.Frame[p.L3Off:p.ICRCOff]); got != want {
				t.Fatalf("%s %s span %d: ICRC20 %08x, recipe %08x", route, p.Opcode, p.ICRCOff-p.L3Off, got, want)
			}
			if got := p.ComputeICRC(); got != want {
				t.Fatalf("%s %s span %d: ComputeICRC %08x, recipe %08x", route, p.Opcode, p.ICRCOff-p.L3Off, got, want)
			}
		}
	})
}

// TestICRC20Short checks that ICRC20 panics, with a message, on spans that
// cannot hold IPv4, UDP and BTH, on every route.
func TestICRC20Short(t *testing.T) {
	icrc20Routes(t, func(route string) {
		for _, n := range []int{0, 1, 20, 39} {
			l3 := make([]byte, n)
			if n == 0 {
				l3 = nil
			}
			func() {
				defer func() {
					if msg := fmt.Sprint(recover()); !regexp.MustCompile(`ICRC20 of \d+ bytes`).MatchString(msg) {
						t.Errorf("%s n %d: recovered %q, want ICRC20's panic", route, n, msg)
					}
				}()
				v := ICRC20(l3)
				t.Errorf("%s n %d: ICRC20 returned %08x", route, n, v)
			}()
		}
	})
}

func TestICRC20NoAllocs(t *testing.T) {
	for _, n := range []int{40, 44, 68, 108, 128, 256, 300, 1100} {
		l3 := make([]byte, n)
		randomMasked20(rand.New(rand.NewPCG(33, uint64(n))), l3)
		if a := testing.AllocsPerRun(100, func() { icrcSink += ICRC20(l3) }); a != 0 {
			t.Errorf("n %d: ICRC20 allocates %v times", n, a)
		}
	}
}

// TestICRC20Inlines checks with the compiler's own report (-gcflags=-m)
// that ICRC20 can be inlined, so that callers reach the assembly without an
// intermediate Go call, and that ComputeICRC inlines it.
func TestICRC20Inlines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package: not with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	cmd := exec.Command(goTool, "build", "-gcflags=-m", "-o", os.DevNull, ".")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, re := range []string{`(?m)^\S*icrc\.go:\d+:\d+: can inline ICRC20$`, `(?m)^\S*icrc\.go:\d+:\d+: inlining call to ICRC20$`} {
		if !regexp.MustCompile(re).Match(out) {
			t.Errorf("go build -gcflags=-m: no line matching %s", re)
		}
	}
}

// FuzzICRC20 compares ICRC20, on each route, with the recipe for spans of
// any length from 40 bytes on (the first byte is forced to IHL 5), copied to
// a slice of exactly their length; shorter inputs must panic.
func FuzzICRC20(f *testing.F) {
	for _, n := range []int{40, 44, 56, 64, 65, 68, 96, 97, 108, 128, 129, 256, 257, 300} {
		f.Add(bytes.Repeat([]byte{byte(n)}, n))
	}
	f.Add([]byte{0x45})
	f.Fuzz(func(t *testing.T, in []byte) {
		l3 := append([]byte(nil), in...)
		l3 = l3[:len(l3):len(l3)]
		if len(l3) > 0 {
			l3[0] = 0x45
		}
		if len(l3) < icrcFastMin {
			defer func() {
				if recover() == nil {
					t.Fatalf("n %d: ICRC20 did not panic", len(l3))
				}
			}()
			ICRC20(l3)
			return
		}
		want := icrcRecipe(l3)
		icrc20Routes(t, func(route string) {
			if got := ICRC20(l3); got != want {
				t.Fatalf("%s n %d: ICRC20 %08x, recipe %08x", route, len(l3), got, want)
			}
		})
	})
}

// BenchmarkICRC20Mix is BenchmarkICRCMix calling ICRC20 on the spans
// directly, as a caller that knows the layout does.
func BenchmarkICRC20Mix(b *testing.B) {
	ps := icrcMixFrames(b, 256)
	spans := make([][]byte, len(ps))
	for i, p := range ps {
		spans[i] = p.Frame[p.L3Off:p.ICRCOff]
	}
	b.ReportAllocs()
	var sink uint32
	i := 0
	for b.Loop() {
		sink += ICRC20(spans[i&255])
		i++
	}
	icrcMixSink = sink
}

// BenchmarkICRC20Spans times ICRC20 on the spans of BenchmarkICRCSpans'
// frames (ACK 44, READ request 56, CMP_SWAP 68, WRITE with 8 to 64 bytes 64
// to 120, READ response with 64 bytes 108), as the middlebox calls it.
func BenchmarkICRC20Spans(b *testing.B) {
	for _, c := range []struct {
		name string
		op   Opcode
		pay  int
	}{
		{"ack", OpRCAcknowledge, 0},
		{"read", OpRCReadRequest, 0},
		{"write", OpRCWriteOnly, 8},
		{"cas", OpRCCompareSwap, 0},
		{"write", OpRCWriteOnly, 32},
		{"write", OpRCWriteOnly, 48},
		{"readresp", OpRCReadResponseOnly, 64},
		{"write", OpRCWriteOnly, 64},
	} {
		f := baseFields(c.op)
		f.Payload = make([]byte, c.pay)
		var p Packet
		if err := ParseInto(&p, build(b, &f, 0)); err != nil {
			b.Fatal(err)
		}
		l3 := p.Frame[p.L3Off:p.ICRCOff]
		b.Run(fmt.Sprintf("%s=%d", c.name, len(l3)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(l3)))
			var sink uint32
			for b.Loop() {
				sink += ICRC20(l3)
			}
			icrcMixSink = sink
		})
	}
}
