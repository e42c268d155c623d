package testbed

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/netio"
)

// Linearizability on the real rack: the Go target executing
// p4/swordbox.p4 under the real controller, Clover clients on RNICs over
// in-memory links, 240 client threads on 7 client hosts (64 threads for
// one second under -short), every steering mode, checked per key with
// porcupine. A run fails on any non-linearizable key, any check that did
// not finish unless kvmodel.Witness proves that key against the links the
// memory node executed (LinResult.Witnessed), any operation error, and when it did not exercise what it
// claims (nothing steered in a steering mode, no fault, no slot reuse, no
// reset).

var (
	linDuration = flag.Duration("lin.duration", 0, "operation phase of each linearizability run (default 2.5s, 1s under -short)")
	linThreads  = flag.Int("lin.threads", 0, "client threads of each linearizability run (default 240, 64 under -short)")
	linCheck    = flag.Duration("lin.check-timeout", 0, "porcupine's time limit per key (default 30s)")
	linViz      = flag.String("lin.viz", "", "directory for porcupine's visualizations of non-linearizable keys")
)

// linModes are the steering settings every variant runs: the three modes
// with confirmed-tail write steering, and the two steering modes again with
// chained write steering (rack.Config.Chain), named mode+chainSuffix.
var linModes = []string{SteerOff, SteerWrite, SteerReadWrite, SteerWrite + chainSuffix, SteerReadWrite + chainSuffix}

const chainSuffix = "+chain"

// withMode sets o's steering and chain setting from a linModes name.
func withMode(o LinOptions, mode string) LinOptions {
	o.Steering, o.Chain = strings.TrimSuffix(mode, chainSuffix), strings.HasSuffix(mode, chainSuffix)
	return o
}

// hotPutPercent is the share of puts on 64 hot keys: 240 threads on them
// overlap so many unobserved puts at 50% that porcupine's check of one
// linearizable key ran past a minute on a loaded machine; at 30% every key
// checks in seconds, with still about 20 puts in flight per key per
// millisecond-scale window.
const hotPutPercent = 30

// hot configures o for 64 hot keys: fewer puts (hotPutPercent), and at
// most 1.5 s of operations unless -lin.duration says otherwise, since
// porcupine's time per key grows faster than its operations (a key of
// 885 operations, 2.5 s under read-write steering, did not finish in 30 s).
func hot(o LinOptions, mode string, seed uint64) LinOptions {
	o = withMode(o, mode)
	o.Keys, o.HotKeys, o.Seed, o.PutPercent = 64, 64, seed, hotPutPercent
	if *linDuration == 0 && o.Duration > 1500*time.Millisecond {
		o.Duration = 1500 * time.Millisecond
	}
	return o
}

// linBase is the common configuration: the paper's design point, or a
// short run under -short; -lin.duration and -lin.threads override.
func linBase(t *testing.T) LinOptions {
	o := LinOptions{Threads: 240, ClientHosts: 7, ValueSize: 128, Duration: 2500 * time.Millisecond}
	if testing.Short() {
		o.Threads, o.Duration = 64, time.Second
	}
	if *linDuration > 0 {
		o.Duration = *linDuration
	}
	if *linThreads > 0 {
		o.Threads = *linThreads
	}
	o.CheckTimeout = *linCheck
	o.VisualizeDir, o.Label = *linViz, strings.SplitN(t.Name(), "/", 2)[0]
	return o
}

// runLin runs o in mode and fails t on anything short of a linearizable,
// error-free run that steered what its mode steers.
func runLin(t *testing.T, variant string, o LinOptions) *LinResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunLinearizability(ctx, o)
	if err != nil {
		t.Fatalf("%s/%s chain=%v: %v", variant, o.Steering, o.Chain, err)
	}
	t.Logf("%s/%s chain=%v, %d threads on %d hosts, %d keys (hot %d): %v", variant, o.Steering, o.Chain, o.Threads, o.ClientHosts, o.Keys, o.HotKeys, res)
	if res.Ops == 0 {
		t.Errorf("no operation completed")
	}
	if n := len(res.NonLinearizable); n > 0 {
		t.Errorf("%d of %d keys NOT linearizable: %v", n, res.KeysTouched, firstKeys(res.NonLinearizable))
		if len(res.Visualized) > 0 {
			t.Logf("visualized: %v", res.Visualized)
		}
		if res.VisualizeErr != nil {
			t.Logf("visualization: %v", res.VisualizeErr)
		}
	}
	if n := len(res.CheckTimeouts); n > 0 {
		t.Errorf("porcupine did not finish on %d of %d keys, nor could the witness prove them: %v (witness: %v)", n, res.KeysTouched, firstKeys(res.CheckTimeouts), res.WitnessErrs)
	}
	if res.Errors > 0 {
		t.Errorf("%d operations failed; first: %v", res.Errors, res.FirstErrors)
	}
	cas, reads := res.Stats[StatCASSteered], res.Stats[StatReadsSteered]
	switch o.Steering {
	case SteerOff:
		if cas+reads != 0 {
			t.Errorf("steering off, yet the switch steered %d CAS and %d READs", cas, reads)
		}
	case SteerWrite:
		if cas == 0 {
			t.Errorf("write steering: the switch steered no CAS")
		}
		if reads != 0 {
			t.Errorf("write steering: the switch steered %d READs", reads)
		}
	case SteerReadWrite:
		if cas == 0 || reads == 0 {
			t.Errorf("read-write steering: the switch steered %d CAS and %d READs; want both > 0", cas, reads)
		}
	}
	if o.Chain && res.Stats[StatCASChained] == 0 {
		t.Errorf("chained write steering: the switch chained no CAS")
	}
	if !o.Chain && res.Stats[StatCASChained] != 0 {
		t.Errorf("chain mode off, yet the switch chained %d CAS", res.Stats[StatCASChained])
	}
	return res
}

func firstKeys(ks []uint64) []uint64 {
	if len(ks) > 16 {
		return ks[:16]
	}
	return ks
}

// TestLinRackUniform: 1024 keys, uniform, all tracked.
func TestLinRackUniform(t *testing.T) {
	for _, mode := range linModes {
		t.Run(mode, func(t *testing.T) {
			o := linBase(t)
			o = withMode(o, mode)
			o.Keys, o.Seed = 1024, 1
			res := runLin(t, "uniform", o)
			if min := o.Keys / 2; res.KeysTouched < min {
				t.Errorf("only %d keys touched, want at least %d", res.KeysTouched, min)
			}
		})
	}
}

// TestLinRackHot: 64 hot keys, uniform over them, all tracked.
func TestLinRackHot(t *testing.T) {
	for _, mode := range linModes {
		t.Run(mode, func(t *testing.T) {
			o := linBase(t)
			o = hot(o, mode, 2)
			res := runLin(t, "hot", o)
			if res.Clients.CASFailures == 0 && o.Steering == SteerOff {
				t.Errorf("no CAS failed on 64 hot keys: the run did not contend")
			}
		})
	}
}

// TestLinRackHotFaulty: 64 hot keys with 1% drop, 1% duplication and
// reordering on every link (hosts and memory node).
func TestLinRackHotFaulty(t *testing.T) {
	for _, mode := range linModes {
		t.Run(mode, func(t *testing.T) {
			o := linBase(t)
			o = hot(o, mode, 3)
			f := netio.Faults{Drop: 0.01, Duplicate: 0.01, Reorder: 0.02, ReorderDepth: 3, ReorderHold: 200 * time.Microsecond, Seed: 11}
			o.HostFaults = f
			f.Seed = 1011
			o.MemoryFaults = f
			res := runLin(t, "hot+faults", o)
			if res.Retransmits == 0 || res.Duplicates == 0 {
				t.Errorf("faulty links, yet the RNICs retransmitted %d requests and received %d duplicates", res.Retransmits, res.Duplicates)
			}
		})
	}
}

// TestLinRackSlotReuse: 256 keys, uniform, all tracked, in a region small
// enough that version node slots are retired, reclaimed after T_r and
// handed out again during the run. (256 rather than 64 keys: the run goes
// on until reuse, and the longer operations under slot pressure make 64
// keys' histories so concurrent that porcupine needs minutes per key.)
func TestLinRackSlotReuse(t *testing.T) {
	for _, mode := range linModes {
		t.Run(mode, func(t *testing.T) {
			o := linBase(t)
			o = withMode(o, mode)
			o.Keys, o.Seed = 256, 4
			// Every client holds up to one ALLOC batch of free slots: the
			// region has room for those and the keys' tails, rounded up to
			// whole chunks, so reclaimed slots are handed out again as soon
			// as the clients come back for more. The run goes on, by at
			// most 10s, until that has certainly happened. A short T_e
			// makes deferred reclaims (2 T_e) and wrapped versions
			// (EpochWaits epochs) come back within the run too.
			per, err := nodeSlots(o.ValueSize, 1)
			if err != nil {
				t.Fatal(err)
			}
			o.Chunks = (clover.MaxBatch*o.Threads + o.Keys + per - 1) / per
			o.ReadTimeout = 50 * time.Millisecond
			o.EpochPeriod = time.Second
			o.UntilReuse = 10 * time.Second
			res := runLin(t, "reuse", o)
			// Nodes are linked only into slots the MS carved, one live node
			// per slot: more nodes linked (the keys' first nodes and every
			// completed put) than slots carved means slots were reclaimed
			// and handed out again during the run.
			if linked := res.Puts + o.Keys; linked <= res.MS.Carved {
				t.Errorf("%d nodes linked into %d carved slots: no slot was reused", linked, res.MS.Carved)
			}
		})
	}
}

// TestLinRackSwitchReset: 64 hot keys; halfway through the run every
// register of the switch's program is zeroed and the config table's
// default entry restored to the program's (a switch restart loses its soft
// state and its configuration) and the controller takes charge again.
// With steering off the program keeps no state: only the configuration
// is reset.
func TestLinRackSwitchReset(t *testing.T) {
	for _, mode := range linModes {
		t.Run(mode, func(t *testing.T) {
			o := linBase(t)
			o = hot(o, mode, 5)
			o.ResetAt = o.Duration / 2
			res := runLin(t, "reset", o)
			r := res.Reset
			switch {
			case r == nil:
				t.Fatalf("the reset did not run")
			case r.Err != nil:
				t.Errorf("reset: %v", r.Err)
			case r.Registers == 0 || (mode != SteerOff && r.NonzeroBefore == 0):
				t.Errorf("reset: %d registers, %d nonzero cells before it: nothing to reset", r.Registers, r.NonzeroBefore)
			case r.ModeAfter != 0:
				t.Errorf("reset: config mode %d after it, want the program's default 0", r.ModeAfter)
			case mode != SteerOff && r.ModeBefore == 0:
				t.Errorf("reset: config mode 0 before it with steering %s", mode)
			case r.NonzeroAfter*10 > r.NonzeroBefore:
				t.Errorf("reset: %d nonzero register cells before, %d after: the registers were not zeroed", r.NonzeroBefore, r.NonzeroAfter)
			case mode != SteerOff && r.After[StatCASSteered] == 0:
				t.Errorf("reset: the switch steered no CAS after it: the run did not exercise steering on a reset switch")
			}
		})
	}
}

// TestCheckRegisterHistory: the per-key check finds exactly the keys whose
// history no register explains, and treats an unknown outcome as one that
// may take effect at any time after its call.
func TestCheckRegisterHistory(t *testing.T) {
	put := func(c int, key, v uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: linInput{put: true, key: key, value: v}, Call: call, Output: linOutput{}, Return: ret}
	}
	unknownPut := func(c int, key, v uint64, call int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: linInput{put: true, key: key, value: v}, Call: call, Output: linOutput{unknown: true}, Return: neverReturned}
	}
	get := func(c int, key, v uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: linInput{key: key}, Call: call, Output: linOutput{value: v}, Return: ret}
	}
	cases := []struct {
		name string
		hist []porcupine.Operation
		bad  []uint64
	}{
		{"sequential", []porcupine.Operation{put(1, 1, 7, 0, 10), get(2, 1, 7, 20, 30)}, nil},
		{"initial zero", []porcupine.Operation{get(1, 1, 0, 0, 10)}, nil},
		{"concurrent get sees either", []porcupine.Operation{put(1, 1, 7, 0, 10), put(2, 1, 8, 20, 40), get(3, 1, 7, 25, 30)}, nil},
		{"stale read", []porcupine.Operation{put(1, 1, 7, 0, 10), put(2, 1, 8, 20, 30), get(3, 1, 7, 40, 50)}, []uint64{1}},
		{"lost acknowledged put", []porcupine.Operation{put(1, 2, 7, 0, 10), get(3, 2, 0, 20, 30)}, []uint64{2}},
		{"value never written", []porcupine.Operation{put(1, 3, 7, 0, 10), get(2, 3, 9, 20, 30)}, []uint64{3}},
		{"read of an uncommitted put, then of the old value", []porcupine.Operation{
			put(1, 4, 7, 0, 10), put(2, 4, 8, 20, 100), get(3, 4, 8, 30, 40), get(3, 4, 7, 50, 60)}, []uint64{4}},
		{"unknown put seen late", []porcupine.Operation{unknownPut(1, 5, 7, 0), get(2, 5, 0, 10, 20), get(2, 5, 7, 1000, 1010)}, nil},
		{"unknown put never seen", []porcupine.Operation{unknownPut(1, 5, 7, 0), get(2, 5, 0, 1000, 1010)}, nil},
		{"keys apart", []porcupine.Operation{put(1, 6, 7, 0, 10), get(2, 7, 0, 20, 30), get(2, 6, 7, 40, 50)}, nil},
		{"one bad key of three", []porcupine.Operation{
			put(1, 8, 1, 0, 10), get(2, 8, 1, 20, 30),
			put(1, 9, 2, 0, 10), put(1, 9, 3, 20, 30), get(2, 9, 2, 40, 50),
			get(2, 10, 0, 0, 10)}, []uint64{9}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, bad, timedOut, _ := checkRegisterHistory(c.hist, 5*time.Second, 2)
			if len(timedOut) != 0 {
				t.Fatalf("check timed out on %v", timedOut)
			}
			if !slices.Equal(bad, c.bad) {
				t.Errorf("non-linearizable keys %v, want %v", bad, c.bad)
			}
		})
	}
}

// TestLinOptionsRefused: every out-of-range option is refused with its
// name, before a rack is built.
func TestLinOptionsRefused(t *testing.T) {
	ok := LinOptions{Steering: SteerWrite, Keys: 64, Threads: 8, ClientHosts: 2, ValueSize: 64, Duration: time.Second}
	cases := []struct {
		name string
		mod  func(o *LinOptions)
		want string
	}{
		{"steering", func(o *LinOptions) { o.Steering = "read" }, "steering"},
		{"keys", func(o *LinOptions) { o.Keys = 0 }, "keys"},
		{"hot keys", func(o *LinOptions) { o.HotKeys = 65 }, "hot keys"},
		{"threads", func(o *LinOptions) { o.Threads = 0 }, "threads"},
		{"client hosts", func(o *LinOptions) { o.ClientHosts = 250 }, "client hosts"},
		{"value size", func(o *LinOptions) { o.ValueSize = 8 }, "value size"},
		{"duration", func(o *LinOptions) { o.Duration = 0 }, "duration"},
		{"reset at", func(o *LinOptions) { o.ResetAt = 2 * time.Second }, "reset at"},
		{"chunks", func(o *LinOptions) { o.Chunks = -1 }, "chunks"},
		{"until reuse", func(o *LinOptions) { o.UntilReuse = -1 }, "until reuse"},
		{"check timeout", func(o *LinOptions) { o.CheckTimeout = -1 }, "check timeout"},
	}
	if err := ok.validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.mod(&o)
			_, err := RunLinearizability(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

// A short linearizability run with steering off: 8 client threads on 2
// hosts, 16 keys, 300ms of puts and gets, every key's history checked.
func ExampleRunLinearizability() {
	res, err := RunLinearizability(context.Background(), LinOptions{
		Steering: SteerOff, Keys: 16, Threads: 8, ClientHosts: 2, ValueSize: 64, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("keys touched %d, not linearizable %d, errors %d\n", res.KeysTouched, len(res.NonLinearizable), res.Errors)
	// Output: keys touched 16, not linearizable 0, errors 0
}

// TestWithoutUnseenUnknownPuts: of a key's operations, only the puts of
// unknown outcome whose value no get returned are dropped.
func TestWithoutUnseenUnknownPuts(t *testing.T) {
	op := func(put, unknown bool, v uint64) porcupine.Operation {
		out := linOutput{unknown: unknown}
		if !put {
			out.value = v
		}
		return porcupine.Operation{Input: linInput{put: put, key: 1, value: v}, Output: out}
	}
	ops := []porcupine.Operation{
		op(true, false, 1), // a put that returned
		op(true, true, 2),  // unknown, read below: kept
		op(true, true, 3),  // unknown, never read: dropped
		op(false, false, 2),
		op(true, false, 3+1),
	}
	got := withoutUnseenUnknownPuts(slices.Clone(ops))
	want := []porcupine.Operation{ops[0], ops[1], ops[3], ops[4]}
	if len(got) != len(want) {
		t.Fatalf("kept %d operations, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Input != want[i].Input || got[i].Output != want[i].Output {
			t.Errorf("operation %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
