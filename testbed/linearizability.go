package testbed

// Linearizability runs: Clover on a rack with the real switch program in the
// loop, every operation recorded and checked with porcupine against a
// register per key. Decisions (neither paper specifies such a test):
//   - Values are unique (client<<32 | sequence) and written at both ends of
//     the value, so a get names the put it saw and a torn read is an error.
//   - A put that fails, with clover.ErrUncertain or any other error, may
//     have taken effect: it stays in the history with no return (it may
//     linearize at any time after its call). A failed get is left out. Both
//     failures other than ErrUncertain count as operation errors.
//   - Keys are checked separately (a register per key is P-compositional),
//     so a run reports how many keys are not linearizable; a check that
//     runs out of time is reported apart and is never a pass.
//   - Slot reuse is proven by counting: nodes are linked only into slots
//     the metadata server carved, so more linked nodes than carved slots
//     means some slot held two of them in turn.
//   - A switch reset writes zero to every register the P4Info declares
//     (MODIFY with the index unset) and resets the config table's default
//     entry (RestoreConfig: steering off, as on a restarted switch), and
//     then has the controller take charge again as it does when a switch
//     comes back; other tables and the counters are left as they are.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed/kvmodel"
)

// LinOptions describe one linearizability run: Clover on a fresh software
// rack (the Go target executing p4/swordbox.p4 under the real controller),
// Threads client threads issuing puts of unique values (PutPercent, default
// 50) and gets for Duration, every operation recorded in a history that porcupine checks
// against a per-key register.
type LinOptions struct {
	// Steering is the switch's mode: SteerOff, SteerWrite or SteerReadWrite.
	Steering string
	// Keys is the number of keys created before the run (1..Keys); all are
	// tracked by the switch when steering is on.
	Keys int
	// HotKeys, when > 0, restricts the operations to keys 1..HotKeys
	// (uniformly); otherwise they are uniform over all Keys.
	HotKeys int
	// Threads client threads on ClientHosts client hosts.
	Threads, ClientHosts int
	// ValueSize is Clover's object size (at least 16: the put's value is
	// written at both ends so that a torn read is detected).
	ValueSize int
	// Duration of the operation phase.
	Duration time.Duration
	// PutPercent is the share of puts, 1..99 (0: 50). Every put that no
	// get observes multiplies the orders porcupine must consider; on few
	// hot keys fewer puts keep the check within its time limit.
	PutPercent int
	// OpTimeout bounds one operation (default 20s): an operation that does
	// not complete in it is an error.
	OpTimeout time.Duration
	// HostFaults and MemoryFaults are injected on the host links and on the
	// memory node's link.
	HostFaults, MemoryFaults netio.Faults
	// Chunks, ReadTimeout (T_r) and EpochPeriod (T_e) size Clover's region
	// and GC; zero takes CloverConfig's defaults.
	Chunks                   int
	ReadTimeout, EpochPeriod time.Duration
	// UntilReuse, when > 0, extends the operation phase past Duration, by
	// at most UntilReuse, until more nodes have been linked (the keys'
	// first nodes and the completed puts) than the metadata server has
	// carved slots: only then has a slot certainly been reclaimed and
	// handed out again. Operations stop as soon as that holds.
	UntilReuse time.Duration
	// ResetAt, when > 0, resets the switch at that point of the operation
	// phase: every register of the program (enumerated from the P4Info) is
	// written to zero and the config table's default entry restored to the
	// program's through P4Runtime, as after a switch restart, and the
	// controller then takes charge again as it does when a switch comes
	// back (its configuration and tables are reconciled).
	ResetAt time.Duration
	// CheckTimeout bounds porcupine's check of one key (default 30s; keys
	// are checked on GOMAXPROCS goroutines); a key whose check times out is
	// counted in CheckTimeouts, never as linearizable. With puts of
	// unknown outcome that no get saw left out (withoutUnseenUnknownPuts),
	// the slowest key of TestLinRack's 29 runs took 0.8s here; with them
	// in, a hot key with a few took minutes.
	CheckTimeout time.Duration
	// Seed of the operation mix (0 is a valid seed).
	Seed uint64
	// VisualizeDir, when set, receives porcupine's HTML visualization of up
	// to 8 non-linearizable keys, named <Label>-<Steering>-key<k>.html.
	VisualizeDir, Label string
	// SwitchArch is the switch program's architecture: ArchV1Model ("",
	// the default) or ArchTNA (switcharch.go).
	SwitchArch string
	// Chain turns on chained write steering (rack.Config.Chain).
	Chain bool
	// Logf receives the rack's notable events (nil: silent).
	Logf func(format string, args ...any)
}

// LinResult is what a run measured.
type LinResult struct {
	// Operations recorded: completed puts and gets, and puts whose outcome
	// is unknown (clover.ErrUncertain; they may take effect at any time
	// after their call).
	Ops, Puts, Gets, Uncertain int
	// Errors are operations that failed otherwise (their count; FirstErrors
	// holds up to 5 of them). A failed put is kept in the history as one of
	// unknown outcome; a failed get is left out.
	Errors      int
	FirstErrors []error
	// KeysTouched is the number of keys the history holds; NonLinearizable
	// lists those porcupine found not linearizable and CheckTimeouts those
	// whose check did not finish in CheckTimeout.
	KeysTouched     int
	NonLinearizable []uint64
	CheckTimeouts   []uint64
	// Witnessed lists the keys whose porcupine check timed out and that
	// kvmodel.Witness proved linearizable against the links the memory
	// node executed; WitnessErrs holds, for the keys it could not prove
	// (left in CheckTimeouts), up to 5 of its findings.
	Witnessed   []uint64
	WitnessErrs []error
	// SlowestCheck is the key whose check took longest.
	SlowestCheck KeyCheck
	// Elapsed is the operation phase's wall time (the last operation
	// included).
	Elapsed time.Duration
	// Stats are the switch's SwordboxIngress.stats cells accumulated over
	// the operation phase (by index, docs/swordbox-p4.md), counting the
	// cells lost to a reset up to the moment before it.
	Stats map[int64]uint64
	// Clients are the Clover clients' summed counters; MS the metadata
	// server's at the end.
	Clients clover.Metrics
	MS      clover.MSStats
	// NodeSlots is the number of version-node slots the region holds.
	NodeSlots int
	// Retransmits and Duplicates are the RNICs' requests retransmitted and
	// duplicate requests received (memory node and hosts, summed).
	Retransmits, Duplicates uint64
	// Reset reports the switch reset, when ResetAt was set.
	Reset *LinReset
	// Visualized are the visualization files written (VisualizeDir), and
	// VisualizeErr why the others were not.
	Visualized   []string
	VisualizeErr error
}

// LinReset is what the switch reset did.
type LinReset struct {
	At time.Duration // into the operation phase
	// Registers written (every register of the P4Info).
	Registers int
	// Nonzero register cells just before the reset and just after it
	// (before the controller took charge again).
	NonzeroBefore, NonzeroAfter int
	// ModeBefore and ModeAfter are the config table's steering mode just
	// before the reset and just after it (the program's default, 0, once
	// the default entry is restored).
	ModeBefore, ModeAfter uint64
	// Stats are SwordboxIngress.stats just before the reset (absolute);
	// After is what they counted from then to the end of the run.
	Stats, After map[int64]uint64
	// Err is the reset's or the controller's error, if any.
	Err error
}

// Indices of SwordboxIngress.stats (docs/swordbox-p4.md).
const (
	StatCASSteered   = 3
	StatReadsSteered = 5
	StatCASChained   = 16
)

// String is the one-line summary a test logs.
func (r *LinResult) String() string {
	s := fmt.Sprintf("ops %d (puts %d gets %d uncertain %d) in %v; keys %d, non-linearizable %d, check timeouts %d (slowest: key %d, %d ops, %v), proven by the witness instead %d; errors %d",
		r.Ops, r.Puts, r.Gets, r.Uncertain, r.Elapsed.Round(time.Millisecond), r.KeysTouched, len(r.NonLinearizable), len(r.CheckTimeouts),
		r.SlowestCheck.Key, r.SlowestCheck.Ops, r.SlowestCheck.Took.Round(time.Millisecond), len(r.Witnessed), r.Errors)
	if len(r.FirstErrors) > 0 {
		s += fmt.Sprintf(" (first: %v)", r.FirstErrors[0])
	}
	idx := make([]int64, 0, len(r.Stats))
	for i := range r.Stats {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	s += "; switch:"
	for _, i := range idx {
		name := fmt.Sprintf("stats[%d]", i)
		if i >= 0 && i < int64(len(SwitchStats)) {
			name = SwitchStats[i]
		}
		s += fmt.Sprintf(" %s=%d", name, r.Stats[i])
	}
	m := r.Clients
	s += fmt.Sprintf("; clients: CAS %d failed %d steered-ok %d reads-steered %d non-tail %d stale %d recoveries %d read-timeouts %d retire-unknown %d alloc-waits %d",
		m.CAS, m.CASFailures, m.CASSteered, m.ReadsSteered, m.SteeredNonTail, m.StaleCursors, m.Recoveries, m.ReadTimeouts, m.RetireUnknown, m.AllocWaits)
	s += fmt.Sprintf("; RNICs: retransmits %d duplicates %d", r.Retransmits, r.Duplicates)
	s += fmt.Sprintf("; MS: slots %d carved %d free %d retired %d deferred %d forced %d wrapped %d retires %d unknown-pred %d",
		r.NodeSlots, r.MS.Carved, r.MS.Free, r.MS.Retired, r.MS.Deferred, r.MS.ForcedReclaims, r.MS.Wrapped, r.MS.Retires, r.MS.UnknownPredecessor)
	if r.Reset != nil {
		s += fmt.Sprintf("; reset at %v: %d registers, nonzero cells %d -> %d, config mode %d -> %d, steered after it: %d CAS %d READs, err %v",
			r.Reset.At.Round(time.Millisecond), r.Reset.Registers, r.Reset.NonzeroBefore, r.Reset.NonzeroAfter, r.Reset.ModeBefore, r.Reset.ModeAfter,
			r.Reset.After[StatCASSteered], r.Reset.After[StatReadsSteered], r.Reset.Err)
	}
	return s
}

// linInput and linOutput are porcupine's view of one operation.
type linInput struct {
	put   bool
	key   uint64
	value uint64
}

type linOutput struct {
	value   uint64
	unknown bool
}

// registerModel is one key's register: puts set it, gets return it. The
// initial value is 0 (keys are created with zero values).
var registerModel = kvmodel.Register(func(input, output any) kvmodel.Op {
	in := input.(linInput)
	op := kvmodel.Op{Key: in.key, Put: in.put, Value: in.value}
	if out, ok := output.(linOutput); ok && !in.put {
		op.Value = out.value
	}
	return op
})

// neverReturned is the return time of an operation whose outcome is
// unknown: it may take effect at any time after its call.
const neverReturned = int64(1) << 62

// withoutUnseenUnknownPuts drops, from one key's operations, the puts
// whose outcome is unknown and whose value no get returned. Such a put may
// or may not have taken effect; a history is linearizable with it if and
// only if it is without it (had it taken effect, nothing saw it: it can be
// placed last, where it changes no answer). Kept, it stays pending to the
// end and porcupine must try it at every point of the key's history: a
// few of them on a hot key's 700 operations took minutes.
func withoutUnseenUnknownPuts(ops []porcupine.Operation) []porcupine.Operation {
	seen := map[uint64]bool{}
	for _, op := range ops {
		if in := op.Input.(linInput); !in.put {
			seen[op.Output.(linOutput).value] = true
		}
	}
	out := ops[:0:0]
	for _, op := range ops {
		in := op.Input.(linInput)
		if in.put && op.Output.(linOutput).unknown && !seen[in.value] {
			continue
		}
		out = append(out, op)
	}
	return out
}

// checkRegisterHistory checks each key's operations separately against
// the register model, on workers goroutines (at least one), and returns
// the number of keys, the keys found not linearizable and the keys whose
// check did not finish in timeout, both sorted.
func checkRegisterHistory(hist []porcupine.Operation, timeout time.Duration, workers int) (keys int, bad, timedOut []uint64, slowest KeyCheck) {
	by := map[uint64][]porcupine.Operation{}
	for _, op := range hist {
		k := op.Input.(linInput).key
		by[k] = append(by[k], op)
	}
	ks := make([]uint64, 0, len(by))
	for k, ops := range by {
		ks = append(ks, k)
		by[k] = withoutUnseenUnknownPuts(ops)
	}
	slices.Sort(ks)
	results := make([]porcupine.CheckResult, len(ks))
	took := make([]time.Duration, len(ks))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < max(workers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				results[i] = porcupine.CheckOperationsTimeout(registerModel, by[ks[i]], timeout)
				took[i] = time.Since(t0)
			}
		}()
	}
	for i := range ks {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, k := range ks {
		if took[i] > slowest.Took {
			slowest = KeyCheck{Key: k, Ops: len(by[k]), Took: took[i]}
		}
		switch results[i] {
		case porcupine.Ok:
		case porcupine.Illegal:
			bad = append(bad, k)
		default:
			timedOut = append(timedOut, k)
		}
	}
	return len(ks), bad, timedOut, slowest
}

// KeyCheck is porcupine's check of one key: the key, its operations and
// the time the check took.
type KeyCheck struct {
	Key  uint64
	Ops  int
	Took time.Duration
}

// RunLinearizability builds a Clover rack for o, creates the keys, runs the
// operation phase and checks the history. It returns an error only when
// the run could not be carried out (rack, key creation); what the run
// found is in the result.
func RunLinearizability(ctx context.Context, o LinOptions) (*LinResult, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.OpTimeout == 0 {
		o.OpTimeout = 20 * time.Second
	}
	if o.CheckTimeout == 0 {
		o.CheckTimeout = 30 * time.Second
	}
	var tracked []uint64
	if o.Steering != SteerOff {
		for k := 1; k <= o.Keys; k++ {
			tracked = append(tracked, uint64(k))
		}
	}
	// The links the memory node executes, timed on the history's clock
	// once the operations start: the witness for keys porcupine cannot
	// finish (witnessTimedOut).
	var links struct {
		sync.Mutex
		start   time.Time
		commits []kvmodel.Commit
	}
	onAtomic := func(a rnic.ExecutedAtomic) {
		c, ok := CloverCommit(a)
		if !ok {
			return
		}
		links.Lock()
		defer links.Unlock()
		if !links.start.IsZero() {
			c.At = time.Since(links.start).Nanoseconds()
			links.commits = append(links.commits, c)
		}
	}
	cr, err := NewCloverRack(ctx, CloverConfig{
		Rack: Config{Steering: o.Steering, TrackedKeys: tracked, HostFaults: o.HostFaults, MemoryFaults: o.MemoryFaults,
			ObjectSize: o.ValueSize, SwitchArch: o.SwitchArch, Chain: o.Chain, Logf: o.Logf, MemoryOnAtomic: onAtomic},
		ClientHosts: o.ClientHosts, Threads: o.Threads, ValueSize: o.ValueSize, Keys: o.Keys,
		Chunks: o.Chunks, ReadTimeout: o.ReadTimeout, EpochPeriod: o.EpochPeriod,
	})
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	res := &LinResult{}
	if res.NodeSlots, err = nodeSlots(o.ValueSize, cr.cfg.Chunks); err != nil {
		return nil, err
	}
	if err := createKeys(ctx, cr, o.Keys, o.ValueSize); err != nil {
		return nil, err
	}
	s0, err := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	if err != nil {
		return nil, fmt.Errorf("testbed: read switch stats: %w", err)
	}
	res.Stats = map[int64]uint64{}

	start := time.Now()
	links.Lock()
	links.start = start
	links.Unlock()
	var resetDone chan struct{}
	if o.ResetAt > 0 {
		resetDone = make(chan struct{})
		go func() {
			defer close(resetDone)
			select {
			case <-time.After(o.ResetAt):
			case <-ctx.Done():
				res.Reset = &LinReset{Err: ctx.Err()}
				return
			}
			res.Reset = resetSwitch(ctx, cr, time.Since(start))
		}()
	}
	hist := runOps(ctx, cr, o, start, res)
	res.Elapsed = time.Since(start)
	if resetDone != nil {
		<-resetDone
	}
	s1, err := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	if err != nil {
		return nil, fmt.Errorf("testbed: read switch stats: %w", err)
	}
	for i, v := range s1 {
		res.Stats[i] = v - s0[i]
	}
	if res.Reset != nil && res.Reset.Stats != nil {
		res.Reset.After = map[int64]uint64{}
		for i, v := range s1 {
			res.Reset.After[i] = v - res.Reset.Stats[i]
		}
	}
	res.Clients = cr.Metrics()
	res.MS = cr.MS.Stats()
	for _, d := range append([]*rnic.Device{cr.Memory}, cr.Hosts...) {
		st := d.Stats()
		res.Retransmits += st.Retransmits
		res.Duplicates += st.Duplicates
	}
	res.Ops = len(hist)
	res.KeysTouched, res.NonLinearizable, res.CheckTimeouts, res.SlowestCheck = checkRegisterHistory(hist, o.CheckTimeout, runtime.GOMAXPROCS(0))
	links.Lock()
	commits := links.commits
	links.commits = nil
	links.Unlock()
	res.CheckTimeouts, res.Witnessed, res.WitnessErrs = witnessTimedOut(hist, commits, res.CheckTimeouts)
	if o.VisualizeDir != "" && len(res.NonLinearizable) > 0 {
		label := o.Label
		if label == "" {
			label = "lin"
		}
		if res.VisualizeErr = os.MkdirAll(o.VisualizeDir, 0o755); res.VisualizeErr == nil {
			res.Visualized, res.VisualizeErr = visualizeKeys(hist, res.NonLinearizable[:min(8, len(res.NonLinearizable))], o.CheckTimeout,
				filepath.Join(o.VisualizeDir, label+"-"+o.Steering))
		}
	}
	return res, nil
}

// visualizeKeys writes porcupine's visualization of each key's history to
// prefix-key<k>.html and returns the files written.
func visualizeKeys(hist []porcupine.Operation, keys []uint64, timeout time.Duration, prefix string) ([]string, error) {
	var files []string
	for _, k := range keys {
		var ops []porcupine.Operation
		for _, op := range hist {
			if op.Input.(linInput).key == k {
				ops = append(ops, op)
			}
		}
		_, info := porcupine.CheckOperationsVerbose(registerModel, ops, timeout)
		path := fmt.Sprintf("%s-key%d.html", prefix, k)
		if err := porcupine.VisualizePath(registerModel, info, path); err != nil {
			return files, fmt.Errorf("testbed: visualize key %d: %w", k, err)
		}
		files = append(files, path)
	}
	return files, nil
}

func (o *LinOptions) validate() error {
	switch o.Steering {
	case SteerOff, SteerWrite, SteerReadWrite:
	default:
		return fmt.Errorf("testbed: linearizability: steering %q: want %s, %s or %s", o.Steering, SteerOff, SteerWrite, SteerReadWrite)
	}
	if o.Keys < 1 || o.Keys > 1<<20 {
		return fmt.Errorf("testbed: linearizability: keys %d: want 1..%d", o.Keys, 1<<20)
	}
	if o.HotKeys < 0 || o.HotKeys > o.Keys {
		return fmt.Errorf("testbed: linearizability: hot keys %d: want 0..keys (%d)", o.HotKeys, o.Keys)
	}
	if o.Threads < 1 || o.Threads > 4096 {
		return fmt.Errorf("testbed: linearizability: threads %d: want 1..4096", o.Threads)
	}
	if o.ClientHosts < 1 || o.ClientHosts > 249 {
		return fmt.Errorf("testbed: linearizability: client hosts %d: want 1..249", o.ClientHosts)
	}
	if o.ValueSize < 16 {
		return fmt.Errorf("testbed: linearizability: value size %d: want at least 16", o.ValueSize)
	}
	if o.Duration <= 0 {
		return fmt.Errorf("testbed: linearizability: duration %v: want > 0", o.Duration)
	}
	if o.SwitchArch != "" {
		if err := CheckSwitchArch(o.SwitchArch); err != nil {
			return fmt.Errorf("testbed: linearizability: %w", err)
		}
	}
	if o.PutPercent < 0 || o.PutPercent > 99 {
		return fmt.Errorf("testbed: linearizability: put percent %d: want 1..99, or 0 for 50", o.PutPercent)
	}
	if o.UntilReuse < 0 {
		return fmt.Errorf("testbed: linearizability: until reuse %v: want 0 (no extension) or more", o.UntilReuse)
	}
	if o.ResetAt < 0 || (o.ResetAt > 0 && o.ResetAt >= o.Duration) {
		return fmt.Errorf("testbed: linearizability: reset at %v: want 0 (none) or inside the duration %v", o.ResetAt, o.Duration)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"op timeout", o.OpTimeout}, {"check timeout", o.CheckTimeout}, {"read timeout", o.ReadTimeout}, {"epoch period", o.EpochPeriod}} {
		if d.v < 0 {
			return fmt.Errorf("testbed: linearizability: %s %v: want 0 (default) or more", d.name, d.v)
		}
	}
	if o.Chunks < 0 || o.Chunks > 4096 {
		return fmt.Errorf("testbed: linearizability: chunks %d: want 0 (default) to 4096", o.Chunks)
	}
	return nil
}

// nodeSlots is the number of version-node slots chunks of Clover's region
// hold for values of valueSize bytes.
func nodeSlots(valueSize, chunks int) (int, error) {
	slot, err := cloverSlot(valueSize)
	if err != nil {
		return 0, err
	}
	return chunks * (clover.DefaultChunkSize / slot), nil
}

// createKeys creates keys 1..n with zero values, spread over the clients.
func createKeys(ctx context.Context, cr *CloverRack, n, valueSize int) error {
	errs := make([]error, len(cr.Clients))
	var wg sync.WaitGroup
	for i, c := range cr.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			zero := make([]byte, valueSize)
			for k := i + 1; k <= n; k += len(cr.Clients) {
				if err := c.Create(ctx, uint64(k), zero); err != nil {
					errs[i] = fmt.Errorf("testbed: create key %d: %w", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runOps runs every client thread until o.Duration has passed and returns
// the history. Errors are counted in res.
func runOps(ctx context.Context, cr *CloverRack, o LinOptions, start time.Time, res *LinResult) []porcupine.Operation {
	putPct := o.PutPercent
	if putPct == 0 {
		putPct = 50
	}
	span := o.Keys
	if o.HotKeys > 0 {
		span = o.HotKeys
	}
	var stop atomic.Bool
	var livePuts atomic.Int64
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		t := time.NewTimer(o.Duration)
		defer t.Stop()
		select {
		case <-t.C:
		case <-stopped:
			return
		}
		deadline := start.Add(o.Duration + o.UntilReuse)
		for o.UntilReuse > 0 && time.Now().Before(deadline) && livePuts.Load()+int64(o.Keys) <= int64(cr.MS.Stats().Carved) {
			select {
			case <-time.After(20 * time.Millisecond):
			case <-stopped:
				return
			}
		}
		stop.Store(true)
	}()
	var mu sync.Mutex
	var hist []porcupine.Operation
	addErr := func(err error) {
		mu.Lock()
		res.Errors++
		if len(res.FirstErrors) < 5 {
			res.FirstErrors = append(res.FirstErrors, err)
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i, c := range cr.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(o.Seed, uint64(i)))
			vs := o.ValueSize
			buf := make([]byte, vs)
			var local []porcupine.Operation
			var puts, gets, uncertain int
			for s := 1; !stop.Load() && ctx.Err() == nil; s++ {
				in := linInput{key: uint64(1 + rng.IntN(span)), put: rng.IntN(100) < putPct}
				octx, cancel := context.WithTimeout(ctx, o.OpTimeout)
				call := time.Since(start).Nanoseconds()
				var out linOutput
				var err error
				if in.put {
					in.value = uint64(i+1)<<32 | uint64(s)
					clear(buf)
					binary.LittleEndian.PutUint64(buf, in.value)
					binary.LittleEndian.PutUint64(buf[vs-8:], in.value)
					err = c.Put(octx, in.key, buf)
				} else {
					err = c.Get(octx, in.key, buf)
					out.value = binary.LittleEndian.Uint64(buf)
					if tail := binary.LittleEndian.Uint64(buf[vs-8:]); err == nil && tail != out.value {
						err = fmt.Errorf("client %d: get(%d): torn value %#x / %#x", i, in.key, out.value, tail)
					}
				}
				cancel()
				ret := time.Since(start).Nanoseconds()
				switch {
				case err == nil && in.put:
					puts++
					livePuts.Add(1)
				case err == nil:
					gets++
				case errors.Is(err, clover.ErrUncertain):
					uncertain++
					out.unknown, ret = true, neverReturned
				default:
					addErr(fmt.Errorf("client %d op %d: %s key %d: %w", i, s, map[bool]string{false: "get", true: "put"}[in.put], in.key, err))
					if !in.put {
						continue
					}
					out.unknown, ret = true, neverReturned
				}
				local = append(local, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: ret})
			}
			fctx, cancel := context.WithTimeout(ctx, o.OpTimeout)
			if err := c.Flush(fctx); err != nil {
				addErr(fmt.Errorf("client %d: flush: %w", i, err))
			}
			cancel()
			mu.Lock()
			hist = append(hist, local...)
			res.Puts += puts
			res.Gets += gets
			res.Uncertain += uncertain
			mu.Unlock()
		}()
	}
	wg.Wait()
	return hist
}

// resetSwitch writes zero to every cell of every register of the switch's
// program (one wildcard MODIFY per register, enumerated from the P4Info),
// restores the config table's default entry to the program's (steering
// off), reads both back, and has the controller take charge again, as
// after a switch restart.
func resetSwitch(ctx context.Context, cr *CloverRack, at time.Duration) *LinReset {
	r := &LinReset{At: at}
	s := cr.Ctrl.Schema
	names := s.Registers()
	r.Registers = len(names)
	var err error
	if r.Stats, err = cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil); err != nil {
		r.Err = fmt.Errorf("testbed: read switch stats: %w", err)
		return r
	}
	if r.NonzeroBefore, err = NonzeroRegisterCells(ctx, cr.Ctrl.Client, s); err != nil {
		r.Err = err
		return r
	}
	if r.ModeBefore, r.Err = configMode(ctx, cr.Ctrl.Client, s); r.Err != nil {
		return r
	}
	if r.Err = ZeroRegisters(ctx, cr.Ctrl.Client, s); r.Err != nil {
		return r
	}
	if r.Err = RestoreConfig(ctx, cr.Ctrl.Client, s); r.Err != nil {
		return r
	}
	if r.NonzeroAfter, r.Err = NonzeroRegisterCells(ctx, cr.Ctrl.Client, s); r.Err != nil {
		return r
	}
	if r.ModeAfter, r.Err = configMode(ctx, cr.Ctrl.Client, s); r.Err != nil {
		return r
	}
	if err := cr.Ctrl.TakeCharge(ctx); err != nil {
		r.Err = fmt.Errorf("testbed: controller taking charge after the reset: %w", err)
	}
	return r
}

// ZeroRegisters writes zero to every cell of every register the schema's
// P4Info declares, in one P4Runtime write (a MODIFY with the index unset
// per register).
func ZeroRegisters(ctx context.Context, c *p4rtc.Client, s *p4rtc.Schema) error {
	var ups []*p4.Update
	for _, name := range s.Registers() {
		reg, err := s.Register(name)
		if err != nil {
			return err
		}
		zero, err := p4rtc.Canonical(p4rtc.Uint(0), p4rtc.RegisterWidth(reg))
		if err != nil {
			return fmt.Errorf("testbed: register %s: %w", name, err)
		}
		ups = append(ups, p4rtc.Modify(&p4.Entity{Entity: &p4.Entity_RegisterEntry{RegisterEntry: &p4.RegisterEntry{
			RegisterId: reg.GetPreamble().GetId(),
			Data:       &p4.P4Data{Data: &p4.P4Data_Bitstring{Bitstring: zero}},
		}}}))
	}
	if err := c.Write(ctx, ups); err != nil {
		return fmt.Errorf("testbed: zero the switch's registers: %w", err)
	}
	return nil
}

// RestoreConfig restores the config table's default entry to the
// program's default action (a MODIFY of the default entry without action,
// P4Runtime's reset of a default entry): steering off, as on a restarted
// switch.
func RestoreConfig(ctx context.Context, c *p4rtc.Client, s *p4rtc.Schema) error {
	t, err := s.Table("SwordboxIngress.config")
	if err != nil {
		return err
	}
	if err := c.Write(ctx, []*p4.Update{p4rtc.Modify(p4rtc.TableEntity(&p4.TableEntry{TableId: t.GetPreamble().GetId(), IsDefaultAction: true}))}); err != nil {
		return fmt.Errorf("testbed: restore the config table's default entry: %w", err)
	}
	return nil
}

// NonzeroRegisterCells reads every register the schema's P4Info declares
// and counts the cells that are not zero.
func NonzeroRegisterCells(ctx context.Context, c *p4rtc.Client, s *p4rtc.Schema) (int, error) {
	names := s.Registers()
	sort.Strings(names)
	n := 0
	for _, name := range names {
		q, err := s.RegisterRead(name, -1)
		if err != nil {
			return 0, err
		}
		ents, err := c.Read(ctx, q)
		if err != nil {
			return 0, fmt.Errorf("testbed: read register %s: %w", name, err)
		}
		for _, e := range ents {
			v, err := p4rtc.ToUint(e.GetRegisterEntry().GetData().GetBitstring())
			if err != nil {
				return 0, fmt.Errorf("testbed: register %s: %w", name, err)
			}
			if v != 0 {
				n++
			}
		}
	}
	return n, nil
}

// witnessTimedOut checks each key whose porcupine check timed out with
// kvmodel.Witness against the links the memory node executed. porcupine's
// search can run for minutes on a hot key with puts of unknown outcome,
// where the witness is linear: a key it proves is linearizable (it
// exhibits a linearization). Its clock is the history's, read right after
// the link executed (a few ns late; with a sharded responder two links can
// be recorded in the other order), so a key it cannot prove stays a
// timeout, not a violation.
func witnessTimedOut(hist []porcupine.Operation, commits []kvmodel.Commit, timedOut []uint64) (still, proven []uint64, errs []error) {
	op := func(input, output any) kvmodel.Op {
		in, out := input.(linInput), output.(linOutput)
		if in.put {
			return kvmodel.Op{Key: in.key, Put: true, Value: in.value, Unknown: out.unknown}
		}
		return kvmodel.Op{Key: in.key, Value: out.value}
	}
	for _, k := range timedOut {
		var h []porcupine.Operation
		for _, o := range hist {
			if o.Input.(linInput).key == k {
				h = append(h, o)
			}
		}
		var cs []kvmodel.Commit
		for _, c := range commits {
			if c.Key == k {
				cs = append(cs, c)
			}
		}
		if err := kvmodel.Witness(h, op, cs); err != nil {
			still = append(still, k)
			if len(errs) < 5 {
				errs = append(errs, fmt.Errorf("key %d: %w", k, err))
			}
			continue
		}
		proven = append(proven, k)
	}
	return still, proven, errs
}
