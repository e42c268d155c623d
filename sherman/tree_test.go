package sherman_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed"
)

func newRack(t *testing.T, cfg testbed.ShermanConfig) *testbed.ShermanRack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := testbed.NewShermanRack(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// checkRack checks the tree's invariants and the lock words, and compares
// the tree's contents with want (when not nil).
func checkRack(t *testing.T, r *testbed.ShermanRack, want map[uint64]uint64) sherman.TreeStats {
	t.Helper()
	kv, st, err := r.Check()
	if err != nil {
		t.Fatalf("invariants: %v", err)
	}
	if want != nil {
		if len(kv) != len(want) {
			t.Errorf("tree holds %d keys, want %d", len(kv), len(want))
		}
		for k, v := range want {
			if kv[k] != v {
				t.Errorf("key %d: tree holds %d, want %d", k, kv[k], v)
				break
			}
		}
	}
	return st
}

// TestSplitStorm inserts keys in ascending order from one thread (every
// split on the rightmost leaf, root growth to three levels), then reads and
// deletes some, and checks the tree after each phase.
func TestSplitStorm(t *testing.T) {
	for _, mode := range testbed.ShermanModes {
		t.Run(mode, func(t *testing.T) {
			r := newRack(t, testbed.ShermanConfig{Mode: mode, Threads: 1, ClientHosts: 1, MemorySize: 16 << 20})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := r.Clients[0]
			// Sequential splits leave leaves half full (27 keys) and level-1
			// pages half full (31 children): 2,500 keys need 93 leaves, so
			// level 1 splits and the root grows twice.
			n := 2500
			want := map[uint64]uint64{}
			for k := 1; k <= n; k++ {
				if err := c.Insert(ctx, uint64(k), uint64(k)*10); err != nil {
					t.Fatalf("insert %d: %v", k, err)
				}
				want[uint64(k)] = uint64(k) * 10
			}
			st := checkRack(t, r, want)
			if st.Height < 3 {
				t.Errorf("%d sequential inserts: height %d, want at least 3 (leaf and internal splits, root growth twice)", n, st.Height)
			}
			for k := 1; k <= n; k += 7 {
				v, ok, err := c.Search(ctx, uint64(k))
				if err != nil || !ok || v != uint64(k)*10 {
					t.Fatalf("search %d: %d %v %v", k, v, ok, err)
				}
			}
			for k := 3; k <= n; k += 3 {
				if err := c.Delete(ctx, uint64(k)); err != nil {
					t.Fatal(err)
				}
				delete(want, uint64(k))
			}
			if _, ok, err := c.Search(ctx, 3); err != nil || ok {
				t.Errorf("search of a deleted key: found %v, %v", ok, err)
			}
			checkRack(t, r, want)
			m := c.Metrics()
			if m.LeafSplits == 0 || m.InternalSplits == 0 || m.NewRoots < 2 || m.Mallocs == 0 {
				t.Errorf("metrics %+v: want leaf and internal splits, two new roots, mallocs", m)
			}
			if root, level := r.Dirs[0].Root(); level != st.RootLevel || root != st.Root {
				t.Errorf("directory's NEW_ROOT record %v level %d, tree root %v level %d", root, level, st.Root, st.RootLevel)
			}
		})
	}
}

// eachThread runs fn on every client thread of r at once and fails the test
// with the first error.
func eachThread(t *testing.T, r *testbed.ShermanRack, fn func(i int, c *sherman.Client) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(r.Clients))
	for i, c := range r.Clients {
		wg.Add(1)
		go func(i int, c *sherman.Client) {
			defer wg.Done()
			if err := fn(i, c); err != nil {
				errs <- fmt.Errorf("thread %d: %w", i, err)
			}
		}(i, c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
