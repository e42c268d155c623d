package sherman_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed"
)

// Porcupine's view of the tree as a key-value map: put, delete, get; state
// 0 is "absent" (0 is Sherman's null value).
type kvOp uint8

const (
	opGet kvOp = iota
	opPut
	opDel
)

type kvIn struct {
	op    kvOp
	key   uint64
	value uint64
}

type kvOut struct {
	value uint64
	found bool
}

var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[uint64][]porcupine.Operation{}
		var keys []uint64
		for _, op := range h {
			k := op.Input.(kvIn).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(kvIn), output.(kvOut)
		switch in.op {
		case opPut:
			return true, in.value
		case opDel:
			return true, uint64(0)
		}
		s := state.(uint64)
		return out.found == (s != 0) && out.value == s, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvIn), output.(kvOut)
		switch in.op {
		case opPut:
			return fmt.Sprintf("put(%d, %#x)", in.key, in.value)
		case opDel:
			return fmt.Sprintf("del(%d)", in.key)
		}
		return fmt.Sprintf("get(%d) -> %#x %v", in.key, out.value, out.found)
	},
}

// runHot runs ops operations per thread: puts, deletes and gets on hotKeys
// keys, and with probability freshP an insert of a key of the thread's
// own (these split leaves and internal pages under the hot keys' feet). It
// returns the history of hot-key operations, with a final get of every hot
// key after all threads stopped, and the fresh keys written.
func runHot(t *testing.T, r *testbed.ShermanRack, hotKeys, ops int, freshP float64, seed uint64) ([]porcupine.Operation, map[uint64]uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	var hist []porcupine.Operation
	fresh := map[uint64]uint64{}
	eachThread(t, r, func(i int, c *sherman.Client) error {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		local := make([]porcupine.Operation, 0, ops)
		mine := map[uint64]uint64{}
		for s := 0; s < ops; s++ {
			val := uint64(i+1)<<32 | uint64(s+1)
			if rng.Float64() < freshP {
				k := uint64(1_000_000) + uint64(rng.Uint32())<<8 | uint64(i)
				if err := c.Insert(ctx, k, val); err != nil {
					return fmt.Errorf("insert %d: %w", k, err)
				}
				mine[k] = val
				continue
			}
			in := kvIn{key: uint64(1 + rng.IntN(hotKeys))}
			var out kvOut
			var err error
			call := time.Since(start).Nanoseconds()
			switch x := rng.IntN(10); {
			case x < 4:
				in.op, in.value = opPut, val
				err = c.Insert(ctx, in.key, val)
			case x < 5:
				in.op = opDel
				err = c.Delete(ctx, in.key)
			default:
				in.op = opGet
				out.value, out.found, err = c.Search(ctx, in.key)
			}
			ret := time.Since(start).Nanoseconds()
			if err != nil {
				return fmt.Errorf("op %d: %w", s, err)
			}
			local = append(local, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: ret})
		}
		mu.Lock()
		hist = append(hist, local...)
		for k, v := range mine {
			fresh[k] = v
		}
		mu.Unlock()
		return nil
	})
	// The final state, read after every operation returned.
	c := r.Clients[0]
	for k := 1; k <= hotKeys; k++ {
		call := time.Since(start).Nanoseconds()
		v, ok, err := c.Search(ctx, uint64(k))
		if err != nil {
			t.Fatal(err)
		}
		hist = append(hist, porcupine.Operation{ClientId: len(r.Clients), Input: kvIn{op: opGet, key: uint64(k)}, Call: call,
			Output: kvOut{value: v, found: ok}, Return: time.Since(start).Nanoseconds()})
	}
	for k, v := range fresh {
		got, ok, err := c.Search(ctx, k)
		if err != nil || !ok || got != v {
			t.Fatalf("fresh key %d: search %#x %v %v, want %#x", k, got, ok, err, v)
		}
	}
	return hist, fresh
}

func checkLinearizable(t *testing.T, hist []porcupine.Operation) {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(kvModel, hist, 60*time.Second)
	switch res {
	case porcupine.Ok:
		t.Logf("porcupine: %d operations linearizable", len(hist))
	case porcupine.Illegal:
		_ = info
		t.Fatalf("porcupine: history of %d operations is NOT linearizable", len(hist))
	default:
		t.Fatalf("porcupine: check timed out (%v)", res)
	}
}

// TestLinearizableHotKeys: many threads on few keys, with concurrent fresh
// inserts that split the pages under them, in every mode, on clean links
// and with 1% loss, duplication and reordering on every link (client hosts,
// both sides of the middlebox, memory node). After each run: porcupine on
// the history, the tree's invariants, every lock free, every fresh key in
// place.
func TestLinearizableHotKeys(t *testing.T) {
	faults := netio.Faults{Drop: 0.01, Duplicate: 0.01, Reorder: 0.01, ReorderDepth: 3, ReorderHold: 200 * time.Microsecond, Seed: 11}
	threads, ops := 24, 120
	if testing.Short() {
		threads, ops = 12, 60
	}
	for _, mode := range testbed.ShermanModes {
		for _, faulty := range []bool{false, true} {
			name := mode
			if faulty {
				name += "/faults"
			}
			t.Run(name, func(t *testing.T) {
				cfg := testbed.ShermanConfig{Mode: mode, Threads: threads, ClientHosts: 3, MemorySize: 16 << 20, ChunkSize: 256 << 10, RNICTimeout: 10 * time.Millisecond}
				if faulty {
					cfg.Faults = faults
				}
				if *mboxTraceDir != "" {
					tr := &mboxTracer{start: time.Now()}
					cfg.MboxTap = tr.tap
					t.Cleanup(func() { tr.dump(t, *mboxTraceDir) })
				}
				r := newRack(t, cfg)
				if *mboxTraceDir != "" {
					t.Cleanup(func() {
						if t.Failed() {
							for i, h := range r.Hosts {
								t.Logf("host %d: %+v", i, h.Stats())
							}
							for i, m := range r.Memory {
								t.Logf("memory %d: %+v", i, m.Stats())
							}
						}
					})
				}
				hist, fresh := runHot(t, r, 4, ops, 0.3, 3)
				checkLinearizable(t, hist)
				kv, st, err := r.Check()
				if err != nil {
					t.Fatalf("invariants: %v", err)
				}
				for k, v := range fresh {
					if kv[k] != v {
						t.Fatalf("fresh key %d: tree holds %#x, want %#x", k, kv[k], v)
					}
				}
				m := r.Metrics()
				t.Logf("tree height %d, %d leaves; CAS %d failed %d hand-overs %d leaf splits %d internal %d new roots %d root-CAS failures %d cache stale %d",
					st.Height, st.Leaves, m.CAS, m.CASFailures, m.HandOvers, m.LeafSplits, m.InternalSplits, m.NewRoots, m.RootCASFailures, m.CacheStale)
				if m.LeafSplits == 0 {
					t.Errorf("no leaf split during the run")
				}
				if mode == testbed.ShermanHierarchical && m.HandOvers == 0 {
					t.Errorf("hierarchical locks: no hand-over with %d threads on 4 keys", threads)
				}
				c := r.Mbox.Counters()
				converts := mode == testbed.ShermanCASToWrite || mode == testbed.ShermanCASToWriteNode
				if converts && (c.CASToWrite == 0 || c.Remapped == 0) {
					t.Errorf("middlebox: %d CAS to WRITE, %d remapped: the lock traffic did not go through the shared connection", c.CASToWrite, c.Remapped)
				}
				if converts && c.CASAnsweredAtSend == 0 {
					t.Errorf("middlebox: no CMP_SWAP answered at sending: the answer-at-send rule was not exercised")
				}
				if !converts && (c.CASToWrite != 0 || c.Remapped != 0) {
					t.Errorf("middlebox in %s mode converted %d CAS, remapped %d", mode, c.CASToWrite, c.Remapped)
				}
				t.Logf("middlebox: %v", c.Map())
			})
		}
	}
}
