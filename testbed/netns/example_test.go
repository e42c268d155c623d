package netns_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/netns"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// The memory node's Clover region for the default 1,024 keys: what
// `swordbox memnode --size` must hold.
func ExampleCloverLayout() {
	l := netns.CloverLayout(1024, 0)
	fmt.Println(l.Shortcuts, l.Chunks, l.Size())
	// Output: 2112 96 101711872
}

// One cell on a rack of namespaces (as root): YCSB A with write and read
// steering, 8 client threads on 2 client hosts. The namespaces and
// processes are gone when RunCell returns.
func ExampleRunCell() {
	spec := testbed.CellSpec{Scenario: testbed.ScenarioDefault, Mode: testbed.ModeWriteRead, Workload: ycsb.WorkloadA,
		Keys: 1024, ValueSize: 128, Zipf: 0.99, Tracked: -1, Threads: 8, ClientHosts: 2,
		Warmup: time.Second, Duration: 3 * time.Second, Seed: 1}
	cell, err := netns.RunCell(context.Background(), spec, netns.Options{Binary: "/usr/local/bin/swordbox"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.0f ops/s, %.0f bytes/op, %d CAS steered\n", cell.OpsPerSec, cell.BytesPerOp, cell.Steering["cas_steered"])
}

// The whole default suite (the same cells as the in-process rack), one rack
// of namespaces per cell.
func ExampleRunSuite() {
	run, err := netns.RunSuite(context.Background(), testbed.SuiteConfig{Workloads: []ycsb.Kind{ycsb.WorkloadA}, Duration: 3 * time.Second},
		netns.Options{}, func(i, n int, label string) { fmt.Printf("cell %d/%d %s\n", i+1, n, label) })
	if err != nil {
		fmt.Println(err)
	}
	_ = run
}
