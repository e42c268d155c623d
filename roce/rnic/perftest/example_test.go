package perftest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic/perftest"
)

// Run a READ bandwidth test with 4 QPs of depth 16 against an in-process
// memory node over a link that drops 1% of frames.
func ExampleRun() {
	r, err := perftest.Run(context.Background(), perftest.Config{
		Test: "read_bw", QPs: 4, Depth: 16, Size: 64, Duration: 200 * time.Millisecond,
		Faults: netio.Faults{Drop: 0.01, Seed: 1}, RegionSize: 1 << 20,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Test, r.Ops > 0, r.Errors)
	// Output: read_bw true 0
}
