package sim

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

var figures = flag.Bool("sim.figures", false, "run the Figure 5 and 11-13 scenarios of docs/sim.md (minutes)")

func smallClover(seed uint64, steering string) CloverConfig {
	return CloverConfig{Rack: Config{Seed: seed}, Threads: 24, ClientHosts: 3, Steering: steering,
		Warmup: 100 * time.Microsecond, Duration: 300 * time.Microsecond, WriteFraction: 0.5}
}

// TestCloverDeterminism: Clover's metadata server and 24 client
// goroutines on the rack, steering off and read-write: one seed gives the
// same figures, counters and event count twice.
func TestCloverDeterminism(t *testing.T) {
	for _, st := range []string{"off", "read-write"} {
		t.Run(st, func(t *testing.T) {
			a, err := RunClover(context.Background(), smallClover(7, st))
			if err != nil {
				t.Fatal(err)
			}
			b, err := RunClover(context.Background(), smallClover(7, st))
			if err != nil {
				t.Fatal(err)
			}
			a.WallSeconds, b.WallSeconds = 0, 0
			sa, sb := fmt.Sprintf("%+v", a), fmt.Sprintf("%+v", b)
			if sa != sb {
				t.Fatalf("one seed, two results:\n%s\n%s", sa, sb)
			}
			if a.Ops < 500 || a.Errors > 0 || a.Clock != "virtual" {
				t.Fatalf("%d ops, %d errors (%s), clock %q", a.Ops, a.Errors, a.FirstErr, a.Clock)
			}
			if st != "off" && a.Switch["reads_steered"] == 0 {
				t.Fatalf("steering %s: no READ steered: %v", st, a.Switch)
			}
			t.Logf("%s: %.2f Mops, CAS success %.3f, %d events", st, a.Mops, a.CASSuccess, a.Events)
		})
	}
}

// TestCloverMemoryNodes: Clover over three memory nodes, steered: the
// run completes without errors and the switch steers READs.
func TestCloverMemoryNodes(t *testing.T) {
	c := smallClover(5, "read-write")
	c.MemoryNodes = 3
	r, err := RunClover(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops < 500 || r.Errors > 0 || r.Switch["reads_steered"] == 0 {
		t.Fatalf("%d ops, %d errors (%s), switch %v", r.Ops, r.Errors, r.FirstErr, r.Switch)
	}
}

func TestCloverConfigRefused(t *testing.T) {
	for _, c := range []CloverConfig{{Threads: -1}, {Threads: 5000}, {WriteFraction: 2}, {MSCPU: -1}, {Duration: -1}, {Tracked: -2, Steering: "write"}, {MemoryNodes: 17}} {
		if _, err := RunClover(context.Background(), c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestFigures5and11: the paper's Clover figures in virtual time, printed as
// the tables of docs/sim.md. Behind -sim.figures: it takes minutes.
func TestFigures5and11(t *testing.T) {
	if !*figures {
		t.Skip("run with -sim.figures")
	}
	run := func(c CloverConfig) CloverResult {
		c.Rack.Seed = 1
		c.Warmup, c.Duration = 2*time.Millisecond, 2*time.Millisecond
		r, err := RunClover(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var b strings.Builder
	firstTry := func(r CloverResult) float64 {
		return 100 * float64(r.Metrics.GetsFirstTry+r.Metrics.PutsFirstTry) / float64(r.Ops)
	}
	fmt.Fprintf(&b, "\nFigure 5 (50 %% writes, zipf 0.99, 1024 keys): CAS success, first-try operations\n| threads | off | read-write | off first-try | read-write first-try | off Mops | read-write Mops | wall s |\n|---|---|---|---|---|---|---|---|\n")
	for _, th := range []int{16, 60, 120, 240, 480, 1000} {
		off := run(CloverConfig{Threads: th, WriteFraction: 0.5})
		rw := run(CloverConfig{Threads: th, WriteFraction: 0.5, Steering: "read-write"})
		fmt.Fprintf(&b, "| %d | %.1f %% | %.1f %% | %.1f %% | %.1f %% | %.2f | %.2f | %.1f |\n", th, 100*off.CASSuccess, 100*rw.CASSuccess, firstTry(off), firstTry(rw), off.Mops, rw.Mops, off.WallSeconds+rw.WallSeconds)
	}
	fmt.Fprintf(&b, "\nFigures 11-13 (240 threads, zipf 0.99, 1024 keys, 128-byte values)\n| workload | mode | Mops | CAS success | bytes/op | p99 read us | p99 write us |\n|---|---|---|---|---|---|---|\n")
	for _, wl := range []struct {
		name string
		kind ycsb.Kind
		wf   float64
	}{{"C (read-only)", ycsb.WorkloadC, 0}, {"B (5 %)", "", 0.05}, {"A (50 %)", "", 0.5}, {"write-only", "", 1}} {
		for _, mode := range []string{"off", "write", "read-write"} {
			c := CloverConfig{Threads: 240, Steering: mode, WriteFraction: wl.wf}
			if wl.kind != "" {
				c.Workload = wl.kind
			}
			r := run(c)
			cs := "-"
			if !math.IsNaN(r.CASSuccess) {
				cs = fmt.Sprintf("%.1f %%", 100*r.CASSuccess)
			}
			fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %.0f | %.1f | %.1f |\n", wl.name, mode, r.Mops, cs, r.BytesPerOp, r.ReadP99us, r.WriteP99us)
		}
	}
	t.Log(b.String())
}

func ExampleRunClover() {
	// 240 Clover client threads on 7 hosts, YCSB A (50 % writes), the
	// switch steering reads and writes; 2 ms of virtual warm-up, 2 ms
	// measured. The same seed gives the same figures on every run.
	res, err := RunClover(context.Background(), CloverConfig{Rack: Config{Seed: 1}, Steering: "read-write",
		Warmup: 2 * time.Millisecond, Duration: 2 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s clock: %.2f Mops, CAS success %.1f %%, p99 read %.1f us\n", res.Clock, res.Mops, 100*res.CASSuccess, res.ReadP99us)
}
