package mbbench

import (
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/swordbox/swordbox/middlebox"
)

// BenchResult is one benchmark measurement: per core, the frames the
// engine took in and the time it spent on them.
type BenchResult struct {
	IO       string      `json:"io"`
	Cores    int         `json:"cores"`
	Mix      MixConfig   `json:"mix"`
	PerCore  []CoreStats `json:"per_core"`
	TotalMpp float64     `json:"total_mpps"`
	TotalCPU float64     `json:"total_mpps_cpu"`
	Wall     float64     `json:"wall_seconds"`
}

// CoreStats is what one core did.
type CoreStats struct {
	FramesIn  uint64  `json:"frames_in"`
	FramesOut uint64  `json:"frames_out"`
	Busy      float64 `json:"busy_seconds"` // wall time inside the engine (or the I/O loop)
	CPU       float64 `json:"cpu_seconds"`  // thread CPU time inside the engine (or the I/O loop)
	Mpps      float64 `json:"mpps"`         // FramesIn / Busy / 1e6
	MppsCPU   float64 `json:"mpps_cpu"`     // FramesIn / CPU / 1e6: per core of CPU time
	Drops     uint64  `json:"drops"`
	Counters  string  `json:"counters"`
}

// BenchEngine replays the recorded mix through the engine alone on cores
// goroutines, each locked to its own OS thread with its own engine and its
// own memory server (so shards never share state), for about dur. Only the
// time spent inside Engine.Process counts; generating the next batch of
// frames does not.
func BenchEngine(mix MixConfig, cores int, dur time.Duration) (BenchResult, error) {
	if cores < 1 {
		return BenchResult{}, fmt.Errorf("middlebox bench: %d cores", cores)
	}
	return runCores(BenchResult{IO: "engine", Cores: cores, Mix: mix}, func(k int, st *CoreStats) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		mc := mix
		mc.Server = byte(k + 1)
		mc.Seed = mix.Seed + uint64(k)
		m, err := NewMix(mc)
		if err != nil {
			return err
		}
		e, err := middlebox.New(m.EngineConfig())
		if err != nil {
			return err
		}
		const batch = 1 << 15
		tr, out := NewTrace(batch), middlebox.NewOut(1024, 1<<17)
		var busy time.Duration
		var cpu int64
		var in, outN uint64
		deadline := time.Now().Add(dur)
		for time.Now().Before(deadline) {
			m.Fill(tr, batch)
			t0, c0 := time.Now(), threadCPU()
			for i, f := range tr.Frames {
				if i%benchBurst == 0 { // one Out per burst, as in the I/O loops
					outN += uint64(out.Len())
					out.Reset()
				}
				e.Process(0, tr.Sides[i], f, out)
			}
			outN += uint64(out.Len())
			out.Reset()
			busy += time.Since(t0)
			cpu += threadCPU() - c0
			in += uint64(len(tr.Frames))
		}
		c := e.Counters()
		*st = CoreStats{FramesIn: in, FramesOut: outN, Busy: busy.Seconds(), CPU: float64(cpu) / 1e9,
			Mpps: float64(in) / busy.Seconds() / 1e6, MppsCPU: float64(in) / (float64(cpu) / 1e9) / 1e6,
			Drops: c.TotalDrops(), Counters: c.String()}
		return nil
	})
}

// benchBurst is the number of frames BenchEngine processes into one Out:
// the I/O loops' receive burst.
const benchBurst = 32

// runCores runs core(k, &res.PerCore[k]) for each of res.Cores cores
// concurrently, then fills in the wall time and the totals. The first error
// of a core is returned (with what was measured).
func runCores(res BenchResult, core func(k int, st *CoreStats) error) (BenchResult, error) {
	res.PerCore = make([]CoreStats, res.Cores)
	errs := make([]error, res.Cores)
	var wg sync.WaitGroup
	start := time.Now()
	for k := 0; k < res.Cores; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			errs[k] = core(k, &res.PerCore[k])
		}(k)
	}
	wg.Wait()
	res.Wall = time.Since(start).Seconds()
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	for _, c := range res.PerCore {
		res.TotalMpp += c.Mpps
		res.TotalCPU += c.MppsCPU
	}
	return res, nil
}
