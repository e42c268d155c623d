package swarm_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/swordbox/swordbox/testbed/kvmodel"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed"
)

// kvInput and kvOutput are porcupine's view of one operation on a
// register per key (initial value 0: never written).
type kvInput struct {
	put   bool
	key   uint64
	value uint64
}

type kvOutput struct {
	value uint64
}

var kvModel = kvmodel.Register(func(input, output any) kvmodel.Op {
	in := input.(kvInput)
	op := kvmodel.Op{Key: in.key, Put: in.put, Value: in.value}
	if out, ok := output.(kvOutput); ok && !in.put {
		op.Value = out.value
	}
	return op
})

// history runs ops operations per client on keys keys (50% puts with
// unique values client<<32|sequence, stamped at both ends of the value so a
// torn read shows), then one read of every key by every client, and
// returns the history. during, if set, runs once a third of the operations
// are done (to crash a memory node mid-run).
func history(t *testing.T, r *testbed.SwarmRack, keys, ops int, seed uint64, during func(), cutoff *atomic.Int64) []porcupine.Operation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	vs := r.Layout.ValueSize
	start := time.Now()
	var mu sync.Mutex
	var hist []porcupine.Operation
	var wg sync.WaitGroup
	errs := make(chan error, len(r.Clients))
	var done atomic.Int64
	var once sync.Once
	total := int64(ops * len(r.Clients))
	for i, c := range r.Clients {
		wg.Add(1)
		go func(i int, c *swarm.Client) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			buf := make([]byte, vs)
			local := make([]porcupine.Operation, 0, ops+keys)
			do := func(s int, in kvInput) error {
				call := time.Since(start).Nanoseconds()
				var out kvOutput
				var err error
				if in.put {
					binary.LittleEndian.PutUint64(buf, in.value)
					binary.LittleEndian.PutUint64(buf[vs-8:], in.value)
					err = c.Put(ctx, in.key, buf)
				} else {
					var got []byte
					got, err = c.Get(ctx, in.key, buf)
					if errors.Is(err, swarm.ErrNotFound) {
						err = nil
					} else if err == nil {
						out.value = binary.LittleEndian.Uint64(got)
						if tail := binary.LittleEndian.Uint64(got[vs-8:]); tail != out.value {
							return fmt.Errorf("client %d: torn value %#x / %#x", i, out.value, tail)
						}
					}
				}
				if err != nil {
					if cutoff != nil && errors.Is(err, swarm.ErrNoMajority) {
						// The client lost its connections to a majority: a
						// put may or may not have taken effect.
						cutoff.Add(1)
						if in.put {
							local = append(local, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: 1 << 62})
						}
						return errCutOff
					}
					if in.put { // it may have taken effect
						local = append(local, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: 1 << 62})
						mu.Lock()
						hist = append(hist, local...)
						mu.Unlock()
						local = nil
					}
					return fmt.Errorf("client %d op %d: %w (node errors: %v; %v; %v)", i, s, err, c.NodeError(0), c.NodeError(1), c.NodeError(2))
				}
				local = append(local, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: time.Since(start).Nanoseconds()})
				if during != nil && done.Add(1) == total/3 {
					once.Do(during)
				}
				return nil
			}
			// stopped ends the client's history: a client cut off from a
			// majority keeps what it completed, any other error fails.
			stopped := func(err error) {
				if err != errCutOff {
					errs <- err
					return
				}
				mu.Lock()
				hist = append(hist, local...)
				mu.Unlock()
			}
			for s := 0; s < ops; s++ {
				in := kvInput{key: uint64(1 + rng.IntN(keys)), put: rng.IntN(2) == 0}
				if in.put {
					in.value = uint64(i+1)<<32 | uint64(s+1)
				}
				if err := do(s, in); err != nil {
					stopped(err)
					return
				}
			}
			for k := 1; k <= keys; k++ {
				if err := do(ops+k, kvInput{key: uint64(k)}); err != nil {
					stopped(err)
					return
				}
			}
			mu.Lock()
			hist = append(hist, local...)
			mu.Unlock()
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return hist
}

var errCutOff = errors.New("client cut off from a majority")

func checkLinearizable(t *testing.T, hist []porcupine.Operation) {
	t.Helper()
	res, _ := porcupine.CheckOperationsVerbose(kvModel, hist, 60*time.Second)
	switch res {
	case porcupine.Ok:
		t.Logf("porcupine: %d operations linearizable", len(hist))
	case porcupine.Illegal:
		t.Fatalf("porcupine: history of %d operations is NOT linearizable", len(hist))
	default:
		t.Fatalf("porcupine: check timed out (%v)", res)
	}
}

var lossy = netio.Faults{Drop: 0.01, Duplicate: 0.01, Reorder: 0.01, ReorderDepth: 3, ReorderHold: 200 * time.Microsecond, Seed: 11}

// skewed gives client t a clock t*20µs behind: late clocks guess stale
// timestamps and take Safe-Guess's slow path.
func skewed(t int) func() time.Duration {
	base := time.Now()
	return func() time.Duration { return time.Since(base) + time.Hour - time.Duration(t)*20*time.Microsecond }
}

// TestLinearizable: many clients on few keys, in every mode of the path
// (direct, multiplexed by the middlebox, and with CAS turned into WRITE),
// on clean links and with 1% loss, duplication and reordering on every
// link, clocks skewed so that slow paths run.
func TestLinearizable(t *testing.T) {
	type mode struct {
		name           string
		mbox, casWrite bool
	}
	modes := []mode{{"direct", false, false}, {"middlebox", true, false}, {"cas-to-write", true, true}}
	for _, m := range modes {
		for _, faulty := range []bool{false, true} {
			name := m.name
			if faulty {
				name += "/lossy"
			}
			t.Run(name, func(t *testing.T) {
				ops := 120
				if testing.Short() {
					ops = 40
				}
				cfg := testbed.SwarmConfig{Threads: 12, ClientHosts: 3, Keys: 8, Middlebox: m.mbox, CASToWrite: m.casWrite, Now: skewed}
				if faulty {
					cfg.Faults = lossy
				}
				r := newRack(t, cfg)
				var cut *atomic.Int64
				if m.mbox && faulty {
					// Known middlebox issue (docs/swarm.md): under loss, some
					// client queue pairs through it fail with RETRY_EXC_ERR.
					// The history of what completed is still checked.
					cut = new(atomic.Int64)
				}
				hist := history(t, r, 3, ops, 1, nil, cut)
				checkLinearizable(t, hist)
				if cut != nil {
					t.Logf("clients cut off from a majority by failed queue pairs: %d of %d", cut.Load(), len(r.Clients))
				}
				s := r.Metrics()
				t.Logf("gets %d puts %d: fast %d slow %d rewrites %d guessed seen %d read locks %d/%d fails, write-backs %d, out-of-place %d, restarts %d",
					s.Gets, s.Puts, s.FastWrites, s.SlowWrites, s.Rewrites, s.GuessedSeen, s.ReadLocks, s.ReadLockFails, s.WriteBacks, s.OutOfPlace, s.ReadRestarts)
				if s.SlowWrites == 0 || s.GuessedSeen == 0 {
					t.Errorf("no slow-path write or no GUESSED tuple read: the history did not exercise Safe-Guess")
				}
				if r.Mbox != nil {
					c := r.Mbox.Counters()
					t.Logf("middlebox: remapped %d, CAS to WRITE %d", c.Remapped, c.CASToWrite)
					if c.Remapped == 0 || (m.casWrite && c.CASToWrite == 0) {
						t.Errorf("the middlebox did not multiplex or convert anything")
					}
				}
			})
		}
	}
}

// TestLinearizableMemoryNodeCrash crashes a memory node a third into the
// run: operations continue on the remaining majority, and the history,
// ending with a read of every key by every client, stays linearizable (no
// acknowledged write is lost).
func TestLinearizableMemoryNodeCrash(t *testing.T) {
	for _, m := range []struct {
		name string
		mbox bool
		fl   netio.Faults
	}{{"direct", false, netio.Faults{}}, {"direct/lossy", false, lossy}, {"middlebox", true, netio.Faults{}}} {
		t.Run(m.name, func(t *testing.T) {
			r := newRack(t, testbed.SwarmConfig{Threads: 12, ClientHosts: 3, Keys: 8, Middlebox: m.mbox, Faults: m.fl, Now: skewed, RNICTimeout: 5 * time.Millisecond})
			var crashedAt atomic.Int64
			start := time.Now()
			hist := history(t, r, 3, 120, 2, func() {
				if err := r.CrashNode(1); err != nil {
					t.Error(err)
				}
				crashedAt.Store(time.Since(start).Nanoseconds())
			}, nil)
			if crashedAt.Load() == 0 {
				t.Fatal("the node was not crashed")
			}
			checkLinearizable(t, hist)
			// The history's clock started a little after ours: ops called
			// after the crash by its measure started after the crash.
			after := 0
			for _, op := range hist {
				if op.Call > crashedAt.Load() {
					after++
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			noticed := 0
			for _, c := range r.Clients {
				if err := c.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				if c.Metrics().NodeFailures > 0 {
					noticed++
					if err := c.NodeError(1); err == nil {
						t.Errorf("client %d: a node other than the crashed one failed: %v %v", c.ID(), c.NodeError(0), c.NodeError(2))
					}
				}
			}
			s := r.Metrics()
			t.Logf("gets %d puts %d; %d operations completed after the crash; %d of %d clients saw node 1 fail once their verbs to it timed out",
				s.Gets, s.Puts, after, noticed, len(r.Clients))
			if after < len(r.Clients)*120/2 {
				t.Errorf("only %d operations completed after the crash", after)
			}
			if noticed == 0 {
				t.Errorf("no client's queue pair to the crashed node failed")
			}
		})
	}
}

// TestLinearizableBufferRecycling: with 3 keys, 5 out-of-place buffers
// per writer and a 5ms grace, writers reuse their buffers all the time;
// readers that meet a reused buffer read again. The history stays
// linearizable and no value is torn.
func TestLinearizableBufferRecycling(t *testing.T) {
	r := newRack(t, testbed.SwarmConfig{Threads: 8, ClientHosts: 2, Keys: 3, LogBuffers: 5, Grace: 5 * time.Millisecond, Now: skewed})
	hist := history(t, r, 3, 150, 3, nil, nil)
	checkLinearizable(t, hist)
	s := r.Metrics()
	t.Logf("puts %d, buffers reused %d, reads restarted %d, out-of-place reads %d", s.Puts, s.BufferReuses, s.ReadRestarts, s.OutOfPlace)
	if s.BufferReuses == 0 {
		t.Errorf("no buffer was reused: the test does not exercise recycling")
	}
}

// TestLinearizableFiveReplicasTwoCrashes: N = 5 tolerates f = 2: two
// memory nodes crash a third into the run, operations continue on the
// remaining three, and the history (ending with a read of every key by
// every client) is linearizable.
func TestLinearizableFiveReplicasTwoCrashes(t *testing.T) {
	r := newRack(t, testbed.SwarmConfig{Nodes: 5, Threads: 10, ClientHosts: 2, Keys: 8, Now: skewed, RNICTimeout: 5 * time.Millisecond})
	crashed := false
	hist := history(t, r, 3, 100, 4, func() {
		for _, i := range []int{1, 3} {
			if err := r.CrashNode(i); err != nil {
				t.Error(err)
			}
		}
		crashed = true
	}, nil)
	if !crashed {
		t.Fatal("no node was crashed")
	}
	checkLinearizable(t, hist)
	s := r.Metrics()
	t.Logf("gets %d puts %d: slow writes %d, GUESSED seen %d", s.Gets, s.Puts, s.SlowWrites, s.GuessedSeen)
}
