package sim

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed/kvmodel"
)

// swarmRun runs SWARM-KV, unchanged, on a virtual-time rack: 3 memory
// nodes (its replicas) behind the switch, 2 client hosts, 8 client
// goroutines under the scheduler, each putting and getting 64 keys for
// 500 us of virtual time. The history, timed in virtual time, must be
// linearizable (porcupine, per-key registers of testbed/kvmodel). It
// returns the operations done and the simulation's event count.
func swarmRun(t *testing.T, seed uint64) (int, uint64) {
	const nodes, hosts, threads, keys, size = 3, 2, 8, 64, 64
	layout := swarm.Layout{Keys: keys, Writers: threads, ValueSize: size, LogBuffers: keys + 64}
	if err := layout.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := NewRack(context.Background(), Config{Seed: seed, MemoryNodes: nodes, Hosts: hosts, MemorySize: layout.RegionSize()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := NewSched(r.Sim)
	index, members := swarm.NewIndex(keys), swarm.NewMembership(nodes, threads)
	var clients []*swarm.Client
	for th := 0; th < threads; th++ {
		h := r.Hosts[th%hosts]
		cq := s.NewCQ(h, 1024)
		var conns []swarm.NodeConn
		for m := 0; m < nodes; m++ {
			q, _, err := r.Connect(h, cq.Q, r.Memory[m], nil, 256)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, swarm.NodeConn{QP: q, Region: r.MemoryMR[m].Remote()})
		}
		id, err := members.Join()
		if err != nil {
			t.Fatal(err)
		}
		c, err := swarm.NewClient(swarm.Config{ID: id, Layout: layout, Device: s.Device(h), Nodes: conns, CQ: cq, Index: index, Membership: members})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	ops := 0
	end := int64(500 * time.Microsecond)
	rng := r.Sim.Rand()
	var hist []porcupine.Operation
	for th, c := range clients {
		s.Go(fmt.Sprintf("swarm%d", th), func(ctx context.Context) error {
			val, buf := make([]byte, size), make([]byte, size)
			for seq := uint64(1); r.Sim.Now() < end; seq++ {
				key := uint64(rng.IntN(keys))
				call := r.Sim.Now()
				var o kvmodel.Op
				if rng.IntN(2) == 0 {
					v := uint64(th+1)<<32 | seq
					binary.LittleEndian.PutUint64(val, v)
					if err := c.Put(ctx, key, val); err != nil {
						return err
					}
					o = kvmodel.Op{Key: key, Put: true, Value: v}
				} else {
					got, err := c.Get(ctx, key, buf)
					switch {
					case errors.Is(err, swarm.ErrNotFound):
						o = kvmodel.Op{Key: key}
					case err != nil:
						return err
					default:
						o = kvmodel.Op{Key: key, Value: binary.LittleEndian.Uint64(got)}
					}
				}
				hist = append(hist, porcupine.Operation{ClientId: th, Input: o, Output: o, Call: call, Return: r.Sim.Now()})
				ops++
			}
			return nil
		})
	}
	s.Run(end + int64(10*time.Millisecond))
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Procs() {
		if p.Err != nil {
			t.Fatalf("%s: %v", p.name, p.Err)
		}
	}
	model := kvmodel.Register(func(input, _ any) kvmodel.Op { return input.(kvmodel.Op) })
	if res := porcupine.CheckOperations(model, hist); !res {
		t.Fatalf("seed %d: SWARM-KV history of %d operations is not linearizable", seed, len(hist))
	}
	return ops, r.Sim.Events()
}

// TestSwarmInVirtualTime: SWARM-KV's clients run unchanged under the
// scheduler, their history is linearizable, and one seed gives the same
// run twice.
func TestSwarmInVirtualTime(t *testing.T) {
	twice(t, "operations", 200, 3, swarmRun)
}
