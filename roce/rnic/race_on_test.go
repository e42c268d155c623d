//go:build race

package rnic

// raceEnabled stretches timeouts: the race detector slows the loops by an
// order of magnitude, and a retransmission timer shorter than the queueing
// delay would retransmit needlessly.
const raceEnabled = true
