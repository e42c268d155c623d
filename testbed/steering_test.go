package testbed

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/swordbox/swordbox/clover"
)

// TestSteeringAcrossDeleteAndCreate runs, on the real rack in every mode, a
// key that is updated (so that the switch confirms and caches its tail),
// deleted and created again, while other clients hold cursors on its old
// chain. The switch may still cache a tail of the old chain (it stays fresh
// for tail_ttl); no client may take its delete mark for the key's, and
// every write after the new create must land on the new chain.
func TestSteeringAcrossDeleteAndCreate(t *testing.T) {
	const key = 77
	for _, mode := range []string{SteerOff, SteerWrite, SteerReadWrite} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// A long T_r keeps every cached tail fresh for the whole test.
			cr, err := NewCloverRack(ctx, CloverConfig{Rack: Config{Steering: mode, TrackedKeys: []uint64{key}},
				ClientHosts: 2, Threads: 3, Keys: 8, ValueSize: 32, ReadTimeout: 4 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer cr.Close()
			c0, c1, c2 := cr.Clients[0], cr.Clients[1], cr.Clients[2]
			val := func(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }
			get := func(c *clover.Client, want []byte, what string) {
				t.Helper()
				buf := make([]byte, 32)
				if err := c.Get(ctx, key, buf); err != nil {
					t.Fatalf("%s: get: %v", what, err)
				}
				if !bytes.Equal(buf, want) {
					t.Fatalf("%s: get returned %x, want %x", what, buf[0], want[0])
				}
			}
			put := func(c *clover.Client, v []byte, what string) {
				t.Helper()
				if err := c.Put(ctx, key, v); err != nil {
					t.Fatalf("%s: put: %v", what, err)
				}
			}
			if err := c0.Create(ctx, key, val(1)); err != nil {
				t.Fatal(err)
			}
			put(c0, val(2), "first put")
			put(c1, val(3), "second put")
			time.Sleep(5 * time.Millisecond) // the ATOMIC ACKs confirm the tail
			get(c2, val(3), "before the delete")
			get(c1, val(3), "before the delete")
			if err := c0.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 32)
			if err := c2.Get(ctx, key, buf); !errors.Is(err, clover.ErrNotFound) {
				t.Fatalf("get after the delete: %v, want ErrNotFound", err)
			}
			if err := c0.Create(ctx, key, val(4)); err != nil {
				t.Fatalf("create again: %v", err)
			}
			// c1 and c2 hold cursors on the old chain, whose tail carries
			// the delete mark and may still be the switch's cached tail.
			put(c1, val(5), "put on a cursor of the old chain")
			get(c2, val(5), "get on a cursor of the old chain")
			put(c2, val(6), "second put after the create")
			time.Sleep(5 * time.Millisecond)
			get(c0, val(6), "get by the creator")
			get(c1, val(6), "get by the first writer")
			s, err := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
			if err != nil {
				t.Fatal(err)
			}
			m := cr.Metrics()
			t.Logf("%s: switch tails confirmed %d, CAS steered %d, READs steered %d; clients: CAS steered ok %d, READs steered %d, non-tail %d, not found %d",
				mode, s[12], s[3], s[5], m.CASSteered, m.ReadsSteered, m.SteeredNonTail, m.NotFound)
			if mode != SteerOff && s[12] == 0 {
				t.Errorf("the switch confirmed no tail: the test did not exercise steering")
			}
		})
	}
}
