package swarm_test

import (
	"context"
	"fmt"

	"github.com/swordbox/swordbox/swarm"
	"github.com/swordbox/swordbox/testbed"
)

// A key written by one client is read by another, each operation in one
// round trip to the three replicas.
func Example() {
	ctx := context.Background()
	r, err := testbed.NewSwarmRack(ctx, testbed.SwarmConfig{Nodes: 3, Threads: 2, Keys: 16, ValueSize: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	a, b := r.Clients[0], r.Clients[1]
	if err := a.Put(ctx, 42, []byte("sixteen bytes!!!")); err != nil {
		fmt.Println(err)
		return
	}
	a.Drain(ctx) // let the background verify and in-place copies land
	v, err := b.Get(ctx, 42, nil)
	fmt.Printf("%s %v\n", v, err)
	_, err = b.Get(ctx, 7, nil)
	fmt.Println(err == swarm.ErrNotFound)
	m := b.Metrics()
	fmt.Println("round trips of the first get:", m.GetRTT[0] == 1)
	// Output:
	// sixteen bytes!!! <nil>
	// true
	// round trips of the first get: true
}
