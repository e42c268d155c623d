package swarm_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed"
)

func newRack(t testing.TB, cfg testbed.SwarmConfig) *testbed.SwarmRack {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := testbed.NewSwarmRack(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func val(x uint64, n int) []byte {
	b := make([]byte, n)
	binary.LittleEndian.PutUint64(b, x)
	return b
}

func TestPutGet(t *testing.T) {
	for _, mode := range []string{"direct", "middlebox", "cas-to-write"} {
		t.Run(mode, func(t *testing.T) {
			r := newRack(t, testbed.SwarmConfig{Threads: 2, Keys: 16, Middlebox: mode != "direct", CASToWrite: mode == "cas-to-write"})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, b := r.Clients[0], r.Clients[1]
			if _, err := a.Get(ctx, 7, nil); err != swarm.ErrNotFound {
				t.Fatalf("get of a missing key: %v", err)
			}
			if err := a.Update(ctx, 7, val(1, 64)); err != swarm.ErrNotFound {
				t.Fatalf("update of a missing key: %v", err)
			}
			for i := uint64(1); i <= 20; i++ {
				c := a
				if i%2 == 0 {
					c = b
				}
				if err := c.Put(ctx, 7, val(i, 64)); err != nil {
					t.Fatal(err)
				}
				for _, rd := range r.Clients {
					got, err := rd.Get(ctx, 7, nil)
					if err != nil {
						t.Fatal(err)
					}
					if x := binary.LittleEndian.Uint64(got); x != i {
						t.Fatalf("after put %d: client %d got %d", i, rd.ID(), x)
					}
				}
			}
			t.Logf("%+v", r.Metrics())
		})
	}
}

// TestNewClientRefuses: configurations a client cannot run with are
// refused, never defaulted.
func TestNewClientRefuses(t *testing.T) {
	r := newRack(t, testbed.SwarmConfig{Threads: 2, Keys: 4})
	good := swarm.Config{ID: 1, Layout: r.Layout, Device: r.Hosts[0], CQ: r.Hosts[0].NewCQ(16), Index: r.Index}
	for _, m := range r.MemMRs {
		qp, err := r.Hosts[0].NewQP(verbs.QPConfig{SendCQ: good.CQ, RecvCQ: good.CQ})
		if err != nil {
			t.Fatal(err)
		}
		good.Nodes = append(good.Nodes, swarm.NodeConn{QP: qp, Region: m.Remote()})
	}
	if _, err := swarm.NewClient(good); err != nil {
		t.Fatalf("a good configuration: %v", err)
	}
	for name, mod := range map[string]func(*swarm.Config){
		"even replicas":   func(c *swarm.Config) { c.Nodes = c.Nodes[:2] },
		"writer id 0":     func(c *swarm.Config) { c.ID = 0 },
		"writer id > max": func(c *swarm.Config) { c.ID = c.Layout.Writers + 1 },
		"no index":        func(c *swarm.Config) { c.Index = nil },
		"negative grace":  func(c *swarm.Config) { c.Grace = -1 },
		"negative tick":   func(c *swarm.Config) { c.Tick = -1 },
		"tiny window":     func(c *swarm.Config) { c.MaxOutstanding = 3 },
		"small region": func(c *swarm.Config) {
			c.Nodes = append([]swarm.NodeConn(nil), c.Nodes...)
			c.Nodes[0].Region.Len = 64
		},
		"bad layout": func(c *swarm.Config) { c.Layout.ValueSize = 1 },
	} {
		c := good
		mod(&c)
		if _, err := swarm.NewClient(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
