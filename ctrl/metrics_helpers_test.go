package ctrl

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func testRepairs(c *Controller) float64 {
	var m dto.Metric
	_ = c.Metrics.RepairsSent.Write(&m)
	return m.GetCounter().GetValue()
}

func testCounterSum(t testing.TB, v *prometheus.CounterVec) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	v.Collect(ch)
	close(ch)
	sum := 0.0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		sum += d.GetCounter().GetValue()
	}
	return sum
}
