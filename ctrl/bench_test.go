package ctrl

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/roce/verbs"
)

// BenchmarkRepairLatency measures CAS repair on the real loop (Run, real
// timers): per operation, a client's CAS is dropped between the switch and
// the memory node, the client never retransmits (timeout of an hour), and
// the time until the client's completion arrives (the memory node applied
// the controller's retransmission and its ATOMIC ACK made it back) is the
// op's time. ns/op is therefore the repair latency, for each poll period
// and threshold; "periods/op" expresses it in poll periods.
func BenchmarkRepairLatency(b *testing.B) {
	for _, pt := range []struct{ period, threshold time.Duration }{
		{time.Millisecond, time.Millisecond},
		{5 * time.Millisecond, 5 * time.Millisecond},
		{5 * time.Millisecond, 20 * time.Millisecond},
	} {
		b.Run(fmt.Sprintf("period=%s/threshold=%s", pt.period, pt.threshold), func(b *testing.B) {
			r := newRig(b, time.Hour)
			rk := r.rackConfig(func(c *rack.Config) { c.RepairPeriod, c.RepairThreshold = pt.period, pt.threshold })
			c := r.controller(rk, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go c.Run(ctx)
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			defer wcancel()
			if err := c.Client.WaitRole(wctx, p4rtc.Primary); err != nil {
				b.Fatal(err)
			}
			eventually(b, 10*time.Second, "the controller takes charge", c.InCharge)
			const off = 2048
			r.setMemWord(off, 0)
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r.tap.armCAS(1)
				r.cas(uint64(i+1), off, uint64(i), uint64(i+1))
				wc := r.waitWC(uint64(i+1), 10*time.Second)
				if wc.Status != verbs.StatusSuccess || wc.Orig != uint64(i) {
					b.Fatalf("op %d: %+v", i, wc)
				}
				<-r.tap.dropped
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(elapsed)/float64(b.N)/float64(pt.period), "periods/op")
			if got := testRepairs(c); got < float64(b.N) {
				b.Fatalf("%v repairs for %d lost CAS", got, b.N)
			}
		})
	}
}

// BenchmarkReadOutstanding is the cost of one repair poll with nothing
// outstanding: a wildcard read of the 1024 cas_out_valid cells over gRPC
// from the Go target. It bounds how short a repair period can usefully be.
func BenchmarkReadOutstanding(b *testing.B) {
	r := newRig(b, time.Hour)
	c := r.controller(r.rackConfig(nil), nil)
	r.primary(c)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.ReadOutstanding(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
