//go:build race

package perftest

// raceEnabled: the race detector's instrumentation allocates (and makes
// sync.Pool drop items on purpose), so allocation counts mean nothing.
const raceEnabled = true
