package testbed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

// KV is what the harness drives: one client thread of a key-value store.
// Implementations are not safe for concurrent use; the harness gives every
// goroutine its own.
type KV interface {
	// Get reads key into buf and returns the value.
	Get(ctx context.Context, key uint64, buf []byte) ([]byte, error)
	// Put writes value under key.
	Put(ctx context.Context, key uint64, value []byte) error
}

// Load is the outcome of driving a set of KV clients with a workload.
type Load struct {
	Ops, Reads, Writes, Errors uint64
	Elapsed                    time.Duration
	// All, Read and Write are latency histograms in nanoseconds.
	All, Read, Write *hdrhistogram.Histogram
	// FirstErr is the first error a client saw (nil if none).
	FirstErr error
}

// Percentile returns the q-th percentile of h in microseconds, NaN when h
// recorded nothing.
func Percentile(h *hdrhistogram.Histogram, q float64) float64 {
	if h == nil || h.TotalCount() == 0 {
		return math.NaN()
	}
	return float64(h.ValueAtQuantile(q)) / 1e3
}

func newHist() *hdrhistogram.Histogram {
	// 100 ns .. 60 s with three significant digits.
	return hdrhistogram.New(100, int64(60*time.Second), 3)
}

// Drive runs the workload: client i executes w.Stream(i) on clients[i]
// until the stream ends or d has elapsed, recording per-operation latency.
// Errors are counted, not fatal, unless every client fails (then Drive
// returns the first error). A read-modify-write counts as one read and one
// write, as in YCSB.
func Drive(ctx context.Context, w *ycsb.Workload, clients []KV, valueSize int, d time.Duration) (*Load, error) {
	type result struct {
		ops, reads, writes, errs uint64
		all, rd, wr              *hdrhistogram.Histogram
		err                      error
	}
	res := make([]result, len(clients))
	var wg sync.WaitGroup
	var stop atomic.Bool
	start := time.Now()
	deadline := start.Add(d)
	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(10*time.Second))
	defer cancel()
	for i := range clients {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := &res[i]
			r.all, r.rd, r.wr = newHist(), newHist(), newHist()
			st := w.Stream(i)
			kv := clients[i]
			val := make([]byte, valueSize)
			buf := make([]byte, valueSize+64)
			var op ycsb.Op
			for !stop.Load() && st.Next(&op) {
				t0 := time.Now()
				if !t0.Before(deadline) {
					stop.Store(true)
					break
				}
				var err error
				switch op.Type {
				case ycsb.OpRead:
					_, err = kv.Get(ctx, op.Key, buf)
					r.rd.RecordValue(int64(time.Since(t0)))
					r.reads++
				case ycsb.OpUpdate, ycsb.OpInsert:
					st.FillValue(val[:op.ValueLen])
					err = kv.Put(ctx, op.Key, val[:op.ValueLen])
					r.wr.RecordValue(int64(time.Since(t0)))
					r.writes++
				case ycsb.OpReadModifyWrite:
					if _, err = kv.Get(ctx, op.Key, buf); err == nil {
						st.FillValue(val[:op.ValueLen])
						err = kv.Put(ctx, op.Key, val[:op.ValueLen])
					}
					r.reads++
					r.writes++
				default:
					err = fmt.Errorf("testbed: operation %v not supported by this store", op.Type)
				}
				r.all.RecordValue(int64(time.Since(t0)))
				r.ops++
				if err != nil {
					r.errs++
					if r.err == nil {
						r.err = err
					}
					if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
						return
					}
				}
			}
		}(i)
	}
	wg.Wait()
	l := &Load{Elapsed: time.Since(start), All: newHist(), Read: newHist(), Write: newHist()}
	failed := 0
	for i := range res {
		r := &res[i]
		l.Ops += r.ops
		l.Reads += r.reads
		l.Writes += r.writes
		l.Errors += r.errs
		l.All.Merge(r.all)
		l.Read.Merge(r.rd)
		l.Write.Merge(r.wr)
		if r.err != nil {
			if l.FirstErr == nil {
				l.FirstErr = r.err
			}
			if r.ops == r.errs {
				failed++
			}
		}
	}
	if failed == len(clients) && len(clients) > 0 {
		return l, fmt.Errorf("testbed: every client failed: %w", l.FirstErr)
	}
	if err := parent.Err(); err != nil && l.Elapsed < d {
		// Interrupted (SIGINT or SIGTERM in the bench): what ran is not
		// the measurement asked for, and must not pass for one.
		return l, fmt.Errorf("testbed: stopped after %s of %s: %w", l.Elapsed.Round(time.Millisecond), d, err)
	}
	return l, nil
}
