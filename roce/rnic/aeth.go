package rnic

import "time"

// AETH syndromes (IBA 9.7.5.2.3): bits 6..5 select ACK (00), RNR NAK (01) or
// NAK (11); bits 4..0 carry the credit count, the RNR timer or the NAK code.
const (
	synACK          = 0x00
	synRNR          = 0x20
	synNAK          = 0x60
	synKindMask     = 0x60
	synValueMask    = 0x1f
	creditsInvalid  = 0x1f // "invalid credit count": no end-to-end flow control
	nakSeqErr       = 0x00
	nakInvalidReq   = 0x01
	nakRemoteAccess = 0x02
	nakRemoteOp     = 0x03
)

// rnrTimerTable is the IBA RNR NAK timer field encoding (Table 45), in
// microseconds, indexed by code. Code 0 is the longest delay.
var rnrTimerTable = [32]int64{
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
}

// rnrCode returns the smallest timer code whose delay is at least d.
func rnrCode(d time.Duration) uint8 {
	us := d.Microseconds()
	for c := 1; c < 32; c++ {
		if rnrTimerTable[c] >= us {
			return uint8(c)
		}
	}
	return 0
}

// rnrDelay decodes a timer code into a duration.
func rnrDelay(code uint8) time.Duration {
	return time.Duration(rnrTimerTable[code&0x1f]) * time.Microsecond
}
