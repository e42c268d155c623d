package mbbench

import "golang.org/x/sys/unix"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds (the caller locks its goroutine to the thread). Benchmarks
// report Mpps per core of CPU time besides wall time, because this machine's
// two cores are shared and wall time counts other processes' turns.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
