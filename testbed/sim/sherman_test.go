package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed"
)

// shermanRun runs Sherman, unchanged, on a virtual-time rack: one memory
// node (data in host memory, locks in NIC device memory, its directory
// thread a goroutine under the scheduler), 2 client hosts, 8 client
// threads inserting distinct keys for 1 ms of virtual time. The tree
// left in memory must hold every insert that completed, and every lock
// must be free. It returns the inserts and the simulation's event count.
func shermanRun(t *testing.T, seed uint64) (int, uint64) {
	const hosts, threads = 2, 8
	r, err := NewRack(context.Background(), Config{Seed: seed, Hosts: hosts, MemorySize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := NewSched(r.Sim)
	mem := r.Memory[0]
	locks, err := mem.Device().AllocDM(sherman.LockRegionSize, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	dirCQ := s.NewCQ(mem, 4096)
	dir, err := sherman.NewMemoryNode(sherman.MemoryNodeConfig{Node: 0, Data: r.MemoryMR[0], Locks: locks}, s.Device(mem), dirCQ)
	if err != nil {
		t.Fatal(err)
	}
	cns := []*sherman.Host{sherman.NewHost(sherman.HostConfig{ID: 1, MemoryNodes: 1}), sherman.NewHost(sherman.HostConfig{ID: 2, MemoryNodes: 1})}
	type thread struct {
		h   int
		cq  *CQ
		mns []sherman.MemoryNodeConn
	}
	var ths []thread
	for th := 0; th < threads; th++ {
		h := th % hosts
		cq := s.NewCQ(r.Hosts[h], 1024)
		dq, _, err := r.Connect(r.Hosts[h], cq.Q, mem, nil, 256)
		if err != nil {
			t.Fatal(err)
		}
		rq, rs, err := r.Connect(r.Hosts[h], cq.Q, mem, dirCQ.Q, 256)
		if err != nil {
			t.Fatal(err)
		}
		if err := dir.AddClient(rs); err != nil {
			t.Fatal(err)
		}
		ths = append(ths, thread{h, cq, []sherman.MemoryNodeConn{{QP: dq, RPC: rq, Remote: dir.Remote()}}})
	}
	s.Go("directory", dir.Serve)
	end := int64(time.Millisecond)
	inserted := map[uint64]uint64{}
	for th, p := range ths {
		s.Go(fmt.Sprintf("sherman%d", th), func(ctx context.Context) error {
			c, err := sherman.NewClient(ctx, sherman.ClientConfig{Host: cns[p.h], Thread: uint16(th / hosts), Device: s.Device(r.Hosts[p.h]),
				CQ: p.cq, MemoryNodes: p.mns})
			if err != nil {
				return err
			}
			for i := uint64(0); r.Sim.Now() < end; i++ {
				k := uint64(th+1) + threads*i
				if err := c.Insert(ctx, k, 3*k); err != nil {
					return err
				}
				inserted[k] = 3 * k
			}
			return nil
		})
	}
	s.Run(end + int64(10*time.Millisecond))
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Procs()[1:] {
		if p.Err != nil {
			t.Fatalf("%s: %v", p.name, p.Err)
		}
	}
	kv, _, err := sherman.CheckTree([][]byte{r.MemoryMR[0].Bytes()}, sherman.DefaultChunkSize)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range inserted {
		if kv[k] != v {
			t.Fatalf("key %d: tree holds %d, inserted %d", k, kv[k], v)
		}
	}
	if err := sherman.CheckLocksFree(locks.Bytes()); err != nil {
		t.Fatal(err)
	}
	return len(inserted), r.Sim.Events()
}

// TestShermanInVirtualTime: Sherman's clients and directory thread run
// unchanged under the scheduler; the tree is whole, and one seed gives the
// same run twice.
func TestShermanInVirtualTime(t *testing.T) {
	twice(t, "inserts", 100, 5, shermanRun)
}

// TestShermanCellManyThreads runs a cell with more threads than the
// memory node had chunks to spare for a small key space (256): every
// thread's allocator holds a chunk, so the node's data region must grow
// with the threads (--sweep takes up to 1024), not only with the key space.
func TestShermanCellManyThreads(t *testing.T) {
	spec := testbed.ShermanCellSpec{Mode: testbed.ShermanPlain, ReadRatio: 50, Dist: testbed.DistUniform,
		KeySpace: 1024, WarmRatio: 0.8, Threads: 320, ClientHosts: 7, MemoryNodes: 1,
		Duration: 200 * time.Microsecond, Seed: 1}
	cell, err := RunShermanCell(context.Background(), spec)
	if err != nil {
		t.Fatalf("%d threads: %v", spec.Threads, err)
	}
	if cell.Ops == 0 {
		t.Fatalf("%d threads: no operation completed in %s", spec.Threads, spec.Duration)
	}
}

// TestShermanWindowCountsStarvedOperations: an operation is counted when
// it completes inside the measured window, with its whole latency, so
// plain Sherman's operations that starved on a hot lock through the
// window's start reach its tail (counting only operations that also
// started inside it kept every latency below the window's length).
func TestShermanWindowCountsStarvedOperations(t *testing.T) {
	if testing.Short() {
		t.Skip("a 128-thread contended cell: seconds")
	}
	spec := testbed.ShermanCellSpec{Mode: testbed.ShermanPlain, ReadRatio: 50, Dist: testbed.DistZipf, Zipf: 0.99,
		KeySpace: 4096, WarmRatio: 0.8, Threads: 128, ClientHosts: 7, MemoryNodes: 1,
		Warmup: 2 * time.Millisecond, Duration: 300 * time.Microsecond, Seed: 1}
	cell, err := RunShermanCell(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if window := float64(spec.Duration.Microseconds()); cell.Ops == 0 || cell.P999us <= window {
		t.Fatalf("%d operations, p99.9 %.1f us: want operations longer than the %s window among them", cell.Ops, cell.P999us, spec.Duration)
	}
}
