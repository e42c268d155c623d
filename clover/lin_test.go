package clover

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/testbed/kvmodel"
)

// TestRoundTripsPerOp asserts Clover's round-trip budget without contention
// from the client's counters and from the frames the hub forwarded: a get
// with a warm cursor is one READ (one request, one response); a put is
// WRITE, READ of the last byte, CAS (three round trips) plus the shortcut
// WRITE posted off the critical path.
func TestRoundTripsPerOp(t *testing.T) {
	r := newTestRack(t, rackConfig{clients: 1, valueSize: 128, layout: smallLayout()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := r.clients[0]
	c.cfg.RetireBatch = MaxBatch // no RETIRE inside the measured window
	if err := c.Create(ctx, 5, val(1, 128)); err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, 5, val(2, 128)); err != nil { // warms the slot bucket and the cursor
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 128)
	time.Sleep(20 * time.Millisecond) // let the last shortcut WRITE's ACK pass
	toMN, fromMN := r.hub.toFrames[1].Load(), r.hub.toFrames[10].Load()
	m0 := c.Metrics()
	const gets = 50
	for i := 0; i < gets; i++ {
		if err := c.Get(ctx, 5, out); err != nil {
			t.Fatal(err)
		}
	}
	m1 := c.Metrics()
	if rt, v := m1.RoundTrips-m0.RoundTrips, m1.Verbs-m0.Verbs; rt != gets || v != gets || m1.Reads-m0.Reads != gets {
		t.Errorf("%d warm gets: %d round trips, %d verbs", gets, rt, v)
	}
	if req, rsp := r.hub.toFrames[1].Load()-toMN, r.hub.toFrames[10].Load()-fromMN; req != gets || rsp != gets {
		t.Errorf("%d warm gets: %d frames to the memory node, %d back; want one READ request and one response each", gets, req, rsp)
	}
	const puts = 20
	toMN = r.hub.toFrames[1].Load()
	for i := 0; i < puts; i++ {
		if err := c.Put(ctx, 5, val(uint64(10+i), 128)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // the last shortcut WRITE is not waited for
	m2 := c.Metrics()
	if rt := m2.RoundTrips - m1.RoundTrips; rt != 3*puts {
		t.Errorf("%d puts: %d round trips, want 3 each", puts, rt)
	}
	if v := m2.Verbs - m1.Verbs; v != 4*puts || m2.Atomics-m1.Atomics != puts || m2.Writes-m1.Writes != 2*puts || m2.Reads-m1.Reads != puts {
		t.Errorf("%d puts: %d verbs (%d WRITE, %d READ, %d CAS), want WRITE, READ, CAS and the shortcut WRITE each",
			puts, v, m2.Writes-m1.Writes, m2.Reads-m1.Reads, m2.Atomics-m1.Atomics)
	}
	if req := r.hub.toFrames[1].Load() - toMN; req != 4*puts {
		t.Errorf("%d puts: %d request frames to the memory node, want 4 each", puts, req)
	}
	if m2.MSRequests != m0.MSRequests {
		t.Errorf("warm operations talked to the MS %d times", m2.MSRequests-m0.MSRequests)
	}
}

// kvInput and kvOutput are porcupine's view of one operation.
type kvInput struct {
	put   bool
	key   uint64
	value uint64
}

type kvOutput struct {
	value   uint64
	unknown bool // the operation failed with an uncertain outcome
}

var kvModel = kvmodel.Register(func(input, output any) kvmodel.Op {
	in := input.(kvInput)
	op := kvmodel.Op{Key: in.key, Put: in.put, Value: in.value}
	if out, ok := output.(kvOutput); ok && !in.put {
		op.Value = out.value
	}
	return op
})

// runHistory runs ops operations per client on keys hot keys (50% puts,
// unique values: client<<32 | sequence) and returns the history.
func runHistory(t *testing.T, r *testRack, keys, ops int, seed uint64) []porcupine.Operation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	vs := r.clients[0].ValueSize()
	for k := 0; k < keys; k++ {
		if err := r.clients[0].Create(ctx, uint64(k+1), make([]byte, vs)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	var mu sync.Mutex
	var hist []porcupine.Operation
	var wg sync.WaitGroup
	errs := make(chan error, len(r.clients))
	for i, c := range r.clients {
		wg.Add(1)
		go func(i int, c *Client) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			buf := make([]byte, vs)
			local := make([]porcupine.Operation, 0, ops)
			for s := 0; s < ops; s++ {
				key := uint64(1 + rng.IntN(keys))
				in := kvInput{key: key, put: rng.IntN(2) == 0}
				call := time.Since(start).Nanoseconds()
				var out kvOutput
				var err error
				if in.put {
					in.value = uint64(i+1)<<32 | uint64(s+1)
					binary.LittleEndian.PutUint64(buf, in.value)
					binary.LittleEndian.PutUint64(buf[vs-8:], in.value) // a torn read would mismatch
					err = c.Put(ctx, key, buf)
				} else {
					err = c.Get(ctx, key, buf)
					out.value = binary.LittleEndian.Uint64(buf)
					if err == nil && out.value != binary.LittleEndian.Uint64(buf[vs-8:]) {
						errs <- fmt.Errorf("client %d: torn value %x / %x", i, out.value, binary.LittleEndian.Uint64(buf[vs-8:]))
						return
					}
				}
				ret := time.Since(start).Nanoseconds()
				if errors.Is(err, ErrUncertain) {
					out.unknown, ret = true, 1<<62 // may have taken effect at any time after the call
				} else if err != nil {
					errs <- fmt.Errorf("client %d op %d: %w", i, s, err)
					return
				}
				local = append(local, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: ret})
			}
			if err := c.Flush(ctx); err != nil {
				errs <- err
				return
			}
			mu.Lock()
			hist = append(hist, local...)
			mu.Unlock()
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return hist
}

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

func sumMetrics(cs []*Client) Metrics {
	var s Metrics
	for _, c := range cs {
		s.Add(c.Metrics())
	}
	return s
}

// TestLinearizableHotKeysFaultyLinks: 32 clients, 50% puts on 4 hot keys,
// every compute-node link dropping, duplicating and reordering frames.
func TestLinearizableHotKeysFaultyLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("long: 32 clients with faulty links")
	}
	faults := netio.Faults{Drop: 0.01, Duplicate: 0.01, Reorder: 0.02, ReorderDepth: 3, ReorderHold: 200 * time.Microsecond, Seed: 7}
	r := newTestRack(t, rackConfig{clients: 32, valueSize: 64, layout: smallLayout(), faults: faults})
	hist := runHistory(t, r, 4, 60, 1)
	if send, recv := r.ms.Errors(); send+recv != 0 {
		t.Errorf("MS lost %d/%d sends/receives during the run", send, recv)
	}
	checkLinearizable(t, hist)
	m := sumMetrics(r.clients)
	t.Logf("metrics: puts %d gets %d CAS %d failures %d retries %d chase hops %d stale %d recoveries %d",
		m.Puts, m.Gets, m.CAS, m.CASFailures, m.Retries, m.ChaseHops, m.StaleCursors, m.Recoveries)
	if m.CASFailures == 0 {
		t.Errorf("no CAS failed with 32 clients on 4 keys: the test did not contend")
	}
	r.checkChains(t, []uint64{1, 2, 3, 4})
	var dropped, dup, reord uint64
	for _, d := range r.hub.all {
		s := d.Stats()
		dropped, dup, reord = dropped+s.Dropped, dup+s.Duplicated, reord+s.Reordered
	}
	t.Logf("faults injected on the hub side: dropped %d duplicated %d reordered %d", dropped, dup, reord)
}

// keyOfTwo builds a rack of two clients with 128-byte values; the first
// creates key, so it holds the key's cursor and the second does not.
func keyOfTwo(t *testing.T, key uint64) (context.Context, *Client, *Client) {
	t.Helper()
	r := newTestRack(t, rackConfig{clients: 2, valueSize: 128, layout: smallLayout()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	a, b := r.clients[0], r.clients[1]
	if err := a.Create(ctx, key, val(1, 128)); err != nil {
		t.Fatal(err)
	}
	return ctx, a, b
}

// TestGetFarBehindGoesOnFromShortcut: a get whose cursor is many nodes
// behind the tail walks MaxChase hops with node READs, then READs the
// shortcut once and walks on from there: the node the shortcut names is
// the tail here, so the get ends with that node's READ, without a header
// walk before it and without the MS.
func TestGetFarBehindGoesOnFromShortcut(t *testing.T) {
	ctx, a, b := keyOfTwo(t, 5)
	out := make([]byte, 128)
	if err := a.Get(ctx, 5, out); err != nil { // a's cursor: the first node
		t.Fatal(err)
	}
	const puts = 20
	for i := 0; i < puts; i++ {
		if err := b.Put(ctx, 5, val(uint64(100+i), 128)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond) // the last shortcut WRITE is not waited for
	m0 := a.Metrics()
	if err := a.Get(ctx, 5, out); err != nil {
		t.Fatal(err)
	}
	m1 := a.Metrics()
	if want := val(100+puts-1, 128); !bytes.Equal(out, want) {
		t.Fatalf("get after %d puts: value %x, want %x", puts, out[:8], want[:8])
	}
	// MaxChase node READs from the cursor, the shortcut, the tail.
	if want := uint64(a.cfg.MaxChase + 2); m1.Reads-m0.Reads != want || m1.RoundTrips-m0.RoundTrips != want {
		t.Errorf("get %d nodes behind: %d READs in %d round trips, want %d", puts, m1.Reads-m0.Reads, m1.RoundTrips-m0.RoundTrips, want)
	}
	if m1.Recoveries-m0.Recoveries != 1 || m1.RecoveryReads != m0.RecoveryReads || m1.MSRequests != m0.MSRequests {
		t.Errorf("get %d nodes behind: %d recoveries, %d recovery header READs, %d MS requests; want the shortcut once, no header walk, no MS",
			puts, m1.Recoveries-m0.Recoveries, m1.RecoveryReads-m0.RecoveryReads, m1.MSRequests-m0.MSRequests)
	}
}

// TestFirstTry: a get or put counts as first-try when its cursor was the
// tail (one node READ for a get; for a put, the persistence READ and one
// CAS); after another client's puts the cursor is stale and neither does.
func TestFirstTry(t *testing.T) {
	ctx, a, b := keyOfTwo(t, 5)
	out := make([]byte, 128)
	for _, tc := range []struct {
		name       string
		otherPuts  int // b's puts just before
		put        bool
		gets, puts uint64 // first-try counts it adds
	}{
		{"get at the tail", 0, false, 1, 0},
		{"put at the tail", 0, true, 0, 1},
		{"get behind", 2, false, 0, 0},
		{"put behind", 2, true, 0, 0},
		{"get at the tail again", 0, false, 1, 0},
	} {
		for i := 0; i < tc.otherPuts; i++ {
			if err := b.Put(ctx, 5, val(uint64(50+i), 128)); err != nil {
				t.Fatal(err)
			}
		}
		m0 := a.Metrics()
		var err error
		if tc.put {
			err = a.Put(ctx, 5, val(7, 128))
		} else {
			err = a.Get(ctx, 5, out)
		}
		if err != nil {
			t.Fatal(err)
		}
		m1 := a.Metrics()
		if g, p := m1.GetsFirstTry-m0.GetsFirstTry, m1.PutsFirstTry-m0.PutsFirstTry; g != tc.gets || p != tc.puts {
			t.Errorf("%s: first-try gets %d, puts %d; want %d, %d", tc.name, g, p, tc.gets, tc.puts)
		}
	}
	// A created the key (a cursor from the start); b looked it up once.
	if ma, mb := a.Metrics().CursorMisses, b.Metrics().CursorMisses; ma != 0 || mb != 1 {
		t.Errorf("cursor misses: creator %d, other client %d; want 0, 1", ma, mb)
	}
}

// TestProofGoesOnFromShortcut: a proof walk that meets a reclaimed slot
// (here: another key's node in it) starts again from the key's shortcut,
// after which every node is linked, and finds n's predecessor there;
// without a shortcut it ends stale, n's fate unknown.
func TestProofGoesOnFromShortcut(t *testing.T) {
	r := newTestRack(t, rackConfig{clients: 1, valueSize: 128, layout: smallLayout()})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := r.clients[0]
	c.cfg.RetireBatch = MaxBatch // nothing retired (nor reclaimed) meanwhile
	if err := c.Create(ctx, 5, val(1, 128)); err != nil {
		t.Fatal(err)
	}
	e, err := c.cursor(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	x := e.ptr
	var chain []Ptr // x -> a -> b -> n
	for i := 0; i < 3; i++ {
		if err := c.Put(ctx, 5, val(uint64(10+i), 128)); err != nil {
			t.Fatal(err)
		}
		chain = append(chain, e.ptr)
	}
	a, b, n := chain[0], chain[1], chain[2]
	if err := c.writeShortcut(e.shortcut, b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // the shortcut WRITE is not waited for
	if pred, err := c.proveLink(ctx, 5, x, n, e.shortcut); err != nil || pred != b {
		t.Fatalf("proof from x over a whole chain: predecessor %v, %v; want %v", pred, err, b)
	}
	Node(r.mem()[a.LH.Offset():]).SetKey(6) // a's slot now holds another key's node
	if _, err := c.proveLink(ctx, 5, x, n, 0); !errors.Is(err, errStale) {
		t.Fatalf("proof past a reclaimed slot without a shortcut: %v, want %v", err, errStale)
	}
	pred, err := c.proveLink(ctx, 5, x, n, e.shortcut)
	if err != nil || pred != b {
		t.Fatalf("proof past a reclaimed slot: predecessor %v, %v; want %v from the shortcut", pred, err, b)
	}
}
