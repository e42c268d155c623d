package roce

import "time"

// PSN is a packet sequence number (IBA 9.7.1): 24 bits that wrap. Two PSNs
// are ordered only within half the space: p comes before q when q is at most
// 2^23 ahead of p.
type PSN uint32

// Add returns p advanced by n packets (n may be negative), modulo 2^24.
func (p PSN) Add(n int) PSN { return (p + PSN(n)) & MaxPSN }

// Sub returns p - q as a signed distance in [-2^23, 2^23).
func (p PSN) Sub(q PSN) int32 { return int32(uint32(p-q)<<8) >> 8 }

// Before reports p < q: q is 1 to 2^23 packets ahead of p.
func (p PSN) Before(q PSN) bool { return p.Sub(q) < 0 }

// NotAfter reports p <= q: q is 0 to 2^23 packets ahead of p.
func (p PSN) NotAfter(q PSN) bool { return p.Sub(q) <= 0 }

// rnrTimerMicros is the RNR NAK timer field's encoding (IBA 9.7.5.2.8,
// Table 45) in microseconds, indexed by code; code 0 is the longest delay.
var rnrTimerMicros = [32]int64{
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// RNRTimerCode returns the code of the shortest RNR NAK timer of at least d;
// a d beyond the longest timer gets code 0, the longest.
func RNRTimerCode(d time.Duration) uint8 {
	us := d.Microseconds()
	for c := 1; c < 32; c++ {
		if rnrTimerMicros[c] >= us {
			return uint8(c)
		}
	}
	return 0
}

// RNRTimerDelay decodes an RNR NAK timer code (its low 5 bits).
func RNRTimerDelay(code uint8) time.Duration {
	return time.Duration(rnrTimerMicros[code&0x1f]) * time.Microsecond
}

// MaxMSN is the largest message sequence number (the AETH's 24-bit MSN
// counts messages modulo 2^24, IBA 9.7.5.1.2).
const MaxMSN = 1<<24 - 1
