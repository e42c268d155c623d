package sherman_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed"
)

var lossy = netio.Faults{Drop: 0.01, Duplicate: 0.01, Reorder: 0.01, ReorderDepth: 3, ReorderHold: 200 * time.Microsecond, Seed: 5}

// Two words in the memory node's reserved first chunk, on pages whose
// locks differ.
var lockPages = []sherman.GlobalAddress{sherman.Addr(0, 4096), sherman.Addr(0, 8192)}

func TestLockPagesDistinct(t *testing.T) {
	if sherman.LockIndex(lockPages[0]) == sherman.LockIndex(lockPages[1]) {
		t.Fatal("the test pages share a lock word")
	}
}

// TestMutualExclusion: threads on three hosts take the locks of two pages
// in turn and check, inside the critical section, that nobody else is in
// it; in every mode, with 1% loss, duplication and reordering on every
// link.
func TestMutualExclusion(t *testing.T) {
	iters := 60
	if testing.Short() {
		iters = 25
	}
	for _, mode := range testbed.ShermanModes {
		t.Run(mode, func(t *testing.T) {
			r := newRack(t, testbed.ShermanConfig{Mode: mode, Threads: 12, ClientHosts: 3, MemorySize: 4 << 20, Faults: lossy, RNICTimeout: 10 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var inside [2]atomic.Int32
			var entries, overlaps atomic.Int64
			eachThread(t, r, func(i int, c *sherman.Client) error {
				for n := 0; n < iters; n++ {
					p := (i + n) % 2
					err := c.WithLock(ctx, lockPages[p], func() error {
						if inside[p].Add(1) != 1 {
							overlaps.Add(1)
						}
						entries.Add(1)
						time.Sleep(20 * time.Microsecond)
						inside[p].Add(-1)
						return nil
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
			if o := overlaps.Load(); o != 0 {
				t.Errorf("%d of %d critical sections overlapped another", o, entries.Load())
			}
			if _, _, err := r.Check(); err != nil {
				t.Error(err)
			}
			m := r.Metrics()
			t.Logf("%d critical sections; CAS %d, failed %d, hand-overs %d", entries.Load(), m.CAS, m.CASFailures, m.HandOvers)
			if m.CASFailures == 0 && m.HandOvers == 0 {
				t.Error("no contention: the test did not exercise the lock")
			}
		})
	}
}

// addStorm runs iters AddUnderLock per thread on one word and returns the
// final value read after all stopped, and how many returned values repeat.
func addStorm(t *testing.T, r *testbed.ShermanRack, iters int) (uint64, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a := lockPages[0]
	var mu sync.Mutex
	seen := map[uint64]int{}
	eachThread(t, r, func(i int, c *sherman.Client) error {
		for n := 0; n < iters; n++ {
			v, err := c.AddUnderLock(ctx, a, 0, 1)
			if err != nil {
				return err
			}
			mu.Lock()
			seen[v]++
			mu.Unlock()
		}
		return nil
	})
	dups := 0
	for _, n := range seen {
		dups += n - 1
	}
	var final uint64
	err := r.Clients[0].WithLock(ctx, a, func() error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	final = leUint64(r.Data[0].Bytes()[a.Offset():])
	return final, dups
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// TestReleaseOrdering is the ordering hazard: a release must not become
// visible before the data WRITE posted before it in the same doorbell.
// Threads on three hosts increment one word under its lock (READ, add,
// WRITE and release chained), with 1% loss, duplication and reordering on
// every link; any release that overtook its data shows as a lost update.
// Through the middlebox with CAS to WRITE the release travels on the
// shared connection and the data on the client's own: the engine's
// barrier holds the release until the data is acknowledged (parked counts
// it; drop.barrier when it could not be parked).
func TestReleaseOrdering(t *testing.T) {
	iters := 40
	if testing.Short() {
		iters = 20
	}
	for _, mode := range testbed.ShermanModes {
		t.Run(mode, func(t *testing.T) {
			r := newRack(t, testbed.ShermanConfig{Mode: mode, Threads: 12, ClientHosts: 3, MemorySize: 4 << 20, Faults: lossy, RNICTimeout: 10 * time.Millisecond})
			final, dups := addStorm(t, r, iters)
			want := uint64(len(r.Clients) * iters)
			if final != want || dups != 0 {
				t.Errorf("final %d, want %d; %d values returned twice: releases overtook their data", final, want, dups)
			}
			c := r.Mbox.Counters()
			t.Logf("middlebox: parked %d, barrier drops %d, CAS to WRITE %d, answered at sending %d (resent %d), remapped %d",
				c.Parked, c.Drops[middlebox.DropBarrier], c.CASToWrite, c.CASAnsweredAtSend, c.AtSendResent, c.Remapped)
			if mode == testbed.ShermanCASToWrite && c.Parked+c.Drops[middlebox.DropBarrier] == 0 {
				t.Error("CAS to WRITE: no release was held behind its data (parked and drop.barrier 0): the hazard was not exercised")
			}
			if (mode == testbed.ShermanCASToWrite || mode == testbed.ShermanCASToWriteNode) && c.CASAnsweredAtSend == 0 {
				t.Error("CAS to WRITE: no lock CMP_SWAP answered at sending: the answer-at-send rule was not exercised")
			}
		})
	}
}

// TestReleaseOrderingDetects is the negative control: releasing the lock
// before writing the data loses updates, which the storm above would see.
func TestReleaseOrderingDetects(t *testing.T) {
	r := newRack(t, testbed.ShermanConfig{Mode: testbed.ShermanPlain, Threads: 8, ClientHosts: 2, MemorySize: 4 << 20})
	for _, c := range r.Clients {
		sherman.SetReleaseFirst(c, true)
	}
	final, dups := addStorm(t, r, 40)
	want := uint64(len(r.Clients) * 40)
	t.Logf("release first: final %d of %d, %d values returned twice", final, want, dups)
	if final == want && dups == 0 {
		t.Error("releasing before the data lost no update: the ordering test could not see the hazard")
	}
}
