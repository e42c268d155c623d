package swarm_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"pgregory.net/rapid"

	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed"
)

type regOp struct {
	client     int
	write      bool
	ts         uint64
	w          swarm.Word // written, or read
	call, ret  int64
	afterCrash bool
}

// TestMaxRegisterProperties checks the reliable max register (paper §2.3)
// on the real clients and rack: rapid draws, per client, a sequence of
// reads and writes of random timestamps, and whether and when one memory
// node (f = 1 of 3) crashes; the clients run concurrently. Validity: a
// read returns 0 or a word some write wrote. Write-read monotonicity: a
// read returns at least every write that completed before it began.
// Read-read monotonicity: a read returns at least every read that
// completed before it began.
func TestMaxRegisterProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clients := rapid.IntRange(2, 5).Draw(rt, "clients")
		crashAt := rapid.IntRange(-1, 30).Draw(rt, "crashAt") // -1: no crash
		plans := make([][]regOp, clients)
		for c := range plans {
			n := rapid.IntRange(1, 12).Draw(rt, "ops")
			for k := 0; k < n; k++ {
				op := regOp{client: c, write: rapid.Bool().Draw(rt, "write")}
				if op.write {
					op.ts = rapid.Uint64Range(1, 1000).Draw(rt, "ts")
				}
				plans[c] = append(plans[c], op)
			}
		}
		r, err := testbed.NewSwarmRack(context.Background(), testbed.SwarmConfig{Threads: clients, ClientHosts: 2, Keys: 2, RNICTimeout: 5 * time.Millisecond})
		if err != nil {
			rt.Fatal(err)
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		var mu sync.Mutex
		var done []regOp
		var once sync.Once
		count := 0
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for c := range plans {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				cl := r.Clients[c]
				for _, op := range plans[c] {
					op.call = time.Since(start).Nanoseconds()
					var err error
					if op.write {
						op.w, err = cl.RegisterWrite(ctx, 1, op.ts)
					} else {
						op.w, err = cl.RegisterRead(ctx, 1)
					}
					if err != nil {
						errs <- err
						return
					}
					op.ret = time.Since(start).Nanoseconds()
					mu.Lock()
					done = append(done, op)
					count++
					crash := count == crashAt
					mu.Unlock()
					if crash {
						once.Do(func() { r.CrashNode(crashAt % 3) })
					}
				}
			}(c)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			rt.Fatal(err)
		}
		written := map[swarm.Word]regOp{}
		for _, op := range done {
			if op.write {
				written[op.w] = op
			}
		}
		for _, rd := range done {
			if rd.write {
				continue
			}
			if rd.w != 0 {
				wop, ok := written[rd.w]
				if !ok {
					rt.Fatalf("validity: read returned %v, which no write wrote", rd.w)
				}
				if wop.call > rd.ret {
					rt.Fatalf("validity: read returned %v before its write began", rd.w)
				}
			}
			for _, o := range done {
				if o.ret < rd.call && o.w > rd.w {
					kind := "read-read"
					if o.write {
						kind = "write-read"
					}
					rt.Fatalf("%s monotonicity: %v completed before a read that returned %v", kind, o.w, rd.w)
				}
			}
		}
	})
}

// TestTimestampLockExclusion: TryLock(ts, READ) and TryLock(ts, WRITE) on
// one writer's lock never both succeed (true exclusion), whatever the
// interleaving (both run at once over lossy links, rapid picks the
// timestamps and which side starts first); and a lone locker with no
// higher timestamp used succeeds (true safety).
func TestTimestampLockExclusion(t *testing.T) {
	r := newRack(t, testbed.SwarmConfig{Threads: 3, Keys: 256, Faults: lossy, RNICTimeout: 5 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := uint64(0)
	both, none := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		key++
		ts := rapid.Uint64Range(1, 1<<20).Draw(rt, "ts")
		id := swarm.MakeWord(ts, 1, 0, false)
		lone, err := r.Clients[2].TryLock(ctx, key+1000, 1, id, swarm.LockWrite)
		if err != nil {
			rt.Fatal(err)
		}
		if !lone {
			rt.Fatalf("a lone TryLock(%v, WRITE) failed", id)
		}
		var res [2]bool
		var errs [2]error
		var wg sync.WaitGroup
		first := rapid.IntRange(0, 1).Draw(rt, "first")
		lag := time.Duration(rapid.IntRange(0, 50).Draw(rt, "lag")) * time.Microsecond
		for k := 0; k < 2; k++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				if k != first {
					time.Sleep(lag)
				}
				mode := swarm.LockWrite
				if k == 1 {
					mode = swarm.LockRead
				}
				res[k], errs[k] = r.Clients[k].TryLock(ctx, key, 1, id, mode)
			}(k)
		}
		wg.Wait()
		for _, e := range errs {
			if e != nil {
				rt.Fatal(e)
			}
		}
		if res[0] && res[1] {
			rt.Fatalf("TryLock(%v) succeeded in both READ and WRITE mode", id)
		}
		if res[0] || res[1] {
			both++
		} else {
			none++
		}
	})
	t.Logf("one side won %d times, neither %d times", both, none)
}

// TestWaitFreeCrashedWriter: a writer crashes right after its guessed
// tuple reached one replica (a minority) or two (a majority), and never
// verifies it. The other clients' reads and writes all complete (no
// operation waits on the crashed client), and the history, with the
// crashed write pending forever, is linearizable.
func TestWaitFreeCrashedWriter(t *testing.T) {
	for _, nodes := range [][]int{{0}, {1, 2}} {
		r := newRack(t, testbed.SwarmConfig{Threads: 6, Keys: 4})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		var hist []porcupine.Operation
		crashed := r.Clients[5]
		v := val(0xdead, 64)
		call := time.Since(start).Nanoseconds()
		if _, err := crashed.WriteGuessedThenCrash(ctx, 1, v, nodes); err != nil {
			t.Fatal(err)
		}
		hist = append(hist, porcupine.Operation{ClientId: 5, Input: kvInput{put: true, key: 1, value: 0xdead}, Call: call, Output: kvOutput{}, Return: 1 << 62})
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < 5; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				c := r.Clients[i]
				for s := 0; s < 30; s++ {
					in := kvInput{key: 1, put: (s+i)%3 == 0}
					call := time.Since(start).Nanoseconds()
					var out kvOutput
					var err error
					if in.put {
						in.value = uint64(i+1)<<32 | uint64(s+1)
						err = c.Put(ctx, 1, val(in.value, 64))
					} else {
						var got []byte
						got, err = c.Get(ctx, 1, nil)
						if errors.Is(err, swarm.ErrNotFound) {
							err = nil
						} else if err == nil {
							out.value = binary.LittleEndian.Uint64(got)
						}
					}
					if err != nil {
						t.Errorf("client %d: %v", i, err)
						return
					}
					mu.Lock()
					hist = append(hist, porcupine.Operation{ClientId: i, Input: in, Call: call, Output: out, Return: time.Since(start).Nanoseconds()})
					mu.Unlock()
				}
			}(i)
		}
		wg.Wait()
		checkLinearizable(t, hist)
		s := r.Metrics()
		t.Logf("crashed writer's tuple on nodes %v: guessed seen %d, read locks %d, read iterations beyond the first %d", nodes, s.GuessedSeen, s.ReadLocks, s.ReadIters)
		if s.GuessedSeen == 0 {
			t.Errorf("no read met the crashed writer's GUESSED tuple")
		}
	}
}
