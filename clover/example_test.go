package clover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Example assembles the smallest Clover rack on the software RNIC: one
// server device that is both memory node 0 and the metadata server, one
// client device, joined by an in-memory link; then creates, updates and
// reads a key.
func Example() {
	a, b := netio.Pipe()
	cli, _ := rnic.New(a, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 1}, IP: [4]byte{10, 0, 0, 1}})
	srv, _ := rnic.New(b, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 2}, IP: [4]byte{10, 0, 0, 2}})
	defer cli.Close()
	defer srv.Close()

	// Memory node 0: shortcuts and eight 1 MiB chunks of slots.
	layout := clover.RegionLayout{Shortcuts: 1024, Chunks: 8, ChunkSize: clover.DefaultChunkSize}
	region, err := clover.SetupMemoryNode(srv, 0, layout)
	if err != nil {
		panic(err)
	}

	// The metadata server, serving each client on its own RC queue pair.
	msCQ := srv.NewCQ(256)
	ms, err := clover.NewMetadataServer(clover.MSConfig{Regions: []clover.RegionLayout{layout}}, srv, msCQ)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ms.Serve(ctx)

	// One client: a QP to the memory node, a QP to the MS, one CQ.
	cq := cli.NewCQ(256)
	toMN, _ := cli.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
	mnSide, _ := srv.NewQP(verbs.QPConfig{SendCQ: srv.NewCQ(16), RecvCQ: srv.NewCQ(16)}) // one-sided only: never completes
	toMS, _ := cli.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
	msSide, _ := srv.NewQP(verbs.QPConfig{SendCQ: msCQ, RecvCQ: msCQ})
	if err := rnic.Connect(toMN, mnSide, 1, 2); err != nil {
		panic(err)
	}
	if err := rnic.Connect(toMS, msSide, 3, 4); err != nil {
		panic(err)
	}
	if err := ms.AddClient(msSide); err != nil {
		panic(err)
	}
	c, err := clover.NewClient(clover.ClientConfig{
		ValueSize:   8,
		Device:      cli,
		CQ:          cq,
		MS:          toMS,
		MemoryNodes: []clover.MemoryNodeConn{{QP: toMN, Region: clover.Remote(region)}},
	})
	if err != nil {
		panic(err)
	}

	opCtx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if err := c.Create(opCtx, 42, []byte("version1")); err != nil {
		panic(err)
	}
	if err := c.Put(opCtx, 42, []byte("version2")); err != nil {
		panic(err)
	}
	v := make([]byte, 8)
	if err := c.Get(opCtx, 42, v); err != nil {
		panic(err)
	}
	m := c.Metrics()
	fmt.Printf("%s: %d create, %d put, %d get, %d CAS failed\n", v, m.Creates, m.Puts, m.Gets, m.CASFailures)
	// Output: version2: 1 create, 1 put, 1 get, 0 CAS failed
}

// ExampleMetaCore drives the metadata server's deterministic core directly:
// no RDMA, time passed in.
func ExampleMetaCore() {
	layout := clover.RegionLayout{Shortcuts: 16, Chunks: 1, ChunkSize: 1 << 14}
	m, _ := clover.NewMetaCore(clover.MSConfig{Regions: []clover.RegionLayout{layout}, ReadTimeout: 10 * time.Millisecond})
	class, _ := clover.ClassFor(clover.NodeSize(128))
	slots, _ := m.Alloc(class, 0, 2, nil) // a client's batch
	first, second := slots[0], slots[1]
	m.Create(7, first, uint8(class)) // after the client WROTE the first version
	// The client linked second after first and retires first.
	m.Retire(clover.RetireEntry{Key: 7, Old: first, New: second}, 0)
	ki, _ := m.Lookup(7)
	fmt.Println("latest is second:", ki.Latest == second)
	m.Tick(5 * time.Millisecond)
	fmt.Println("retired, before T_r:", m.Stats().Retired)
	m.Tick(10 * time.Millisecond)
	s := m.Stats()
	fmt.Println("after T_r: retired", s.Retired, "allocated", s.Allocated)
	// Output:
	// latest is second: true
	// retired, before T_r: 1
	// after T_r: retired 0 allocated 1
}
