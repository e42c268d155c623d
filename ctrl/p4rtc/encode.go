package p4rtc

import (
	"encoding/binary"
	"fmt"
	"math/big"
	"net/netip"
)

// Uint returns v as big-endian bytes without leading zero bytes (at least
// one byte): the canonical P4Runtime bytestring of an unsigned value.
func Uint(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	i := 0
	for i < 7 && b[i] == 0 {
		i++
	}
	return append([]byte(nil), b[i:]...)
}

// Canonical checks that the big-endian value b fits in width bits and
// returns it in canonical form (leading zero bytes stripped, at least one
// byte), as P4Runtime 1.5 requires of every bytestring a client sends.
func Canonical(b []byte, width int) ([]byte, error) {
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	c := b[i:]
	if len(c) == 0 {
		c = []byte{0}
	}
	if width > 0 {
		n := new(big.Int).SetBytes(c)
		if n.BitLen() > width {
			return nil, fmt.Errorf("value 0x%x does not fit in %d bits", c, width)
		}
	}
	return append([]byte(nil), c...), nil
}

// ToUint decodes a P4Runtime bytestring (any length up to 8 significant
// bytes) as an unsigned integer.
func ToUint(b []byte) (uint64, error) {
	i := 0
	for i < len(b) && b[i] == 0 {
		i++
	}
	if len(b)-i > 8 {
		return 0, fmt.Errorf("bytestring 0x%x wider than 64 bits", b)
	}
	var v uint64
	for _, c := range b[i:] {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// MAC encodes a 6-byte Ethernet address.
func MAC(hw [6]byte) []byte { return append([]byte(nil), hw[:]...) }

// IPv4 encodes an IPv4 address (4 bytes, big-endian).
func IPv4(a netip.Addr) []byte {
	b := a.As4()
	return b[:]
}
