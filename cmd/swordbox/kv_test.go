package main

import "testing"

func TestKeyValues(t *testing.T) {
	type inner struct{ P99 float64 }
	type stats struct {
		RxFrames, RxNotRoCE uint64
		ACKsSent            uint64
		TxBuildErrors       uint64
		Latency             inner
		hidden              int
	}
	got := keyValues(stats{RxFrames: 3, RxNotRoCE: 1, ACKsSent: 2, TxBuildErrors: 0, Latency: inner{1.5049}})
	want := "rx-frames=3 rx-not-roce=1 acks-sent=2 tx-build-errors=0 latency-p99=1.5"
	if got != want {
		t.Errorf("keyValues = %q, want %q", got, want)
	}
}
