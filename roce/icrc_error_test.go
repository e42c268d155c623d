package roce

import (
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// ICRCErrorShorter4 is adv4^-1: after advancing an error over four zero
// bytes (the CRC register, byte by byte, with the standard library's
// table), it gives the error back; zero stays zero.
func TestICRCErrorShorter4InvertsAdvance4(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	if ICRCErrorShorter4(0) != 0 {
		t.Fatal("ICRCErrorShorter4(0) != 0")
	}
	for i := 0; i < 1000; i++ {
		e := rng.Uint32() | 1
		s := e
		for k := 0; k < 4; k++ {
			s = crc32.IEEETable[s&0xff] ^ s>>8
		}
		if got := ICRCErrorShorter4(s); got != e {
			t.Fatalf("ICRCErrorShorter4(adv4(%#x)) = %#x", e, got)
		}
	}
}
