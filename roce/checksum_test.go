package roce

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TestIPv4ChecksumOracle checks ComputeChecksum against gopacket's IPv4
// serializer (headers without options) and against RFC 1071's sum of
// big-endian 16-bit words (headers with up to 40 bytes of options), on
// random and all-ones headers.
func TestIPv4ChecksumOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1071))
	for trial := range 2000 {
		ihl := 5
		if trial%2 == 1 {
			ihl = 5 + rng.IntN(11)
		}
		ip := make(IPv4, 4*ihl)
		for i := range ip {
			ip[i] = byte(rng.Uint32())
			if trial%4 == 2 {
				ip[i] = 0xff // all-ones words: every carry fold
			}
		}
		ip[0] = 0x40 | byte(ihl)
		got := ip.ComputeChecksum()
		var sum uint32
		for i := 0; i < len(ip); i += 2 {
			if i != IPv4ChecksumOff {
				sum += uint32(binary.BigEndian.Uint16(ip[i:]))
			}
		}
		for sum > 0xffff {
			sum = sum&0xffff + sum>>16
		}
		if want := ^uint16(sum); got != want {
			t.Fatalf("header % x: ComputeChecksum %#04x, RFC 1071 sum %#04x", ip, got, want)
		}
		if ihl != 5 {
			continue
		}
		l := layers.IPv4{Version: 4, IHL: 5, TOS: ip[1], Length: binary.BigEndian.Uint16(ip[2:]),
			Id: binary.BigEndian.Uint16(ip[4:]), Flags: layers.IPv4Flag(ip[6] >> 5),
			FragOffset: binary.BigEndian.Uint16(ip[6:]) & 0x1fff, TTL: ip[8], Protocol: layers.IPProtocol(ip[9]),
			SrcIP: append([]byte(nil), ip[12:16]...), DstIP: append([]byte(nil), ip[16:20]...)}
		buf := gopacket.NewSerializeBuffer()
		if err := l.SerializeTo(buf, gopacket.SerializeOptions{ComputeChecksums: true}); err != nil {
			t.Fatal(err)
		}
		if want := binary.BigEndian.Uint16(buf.Bytes()[IPv4ChecksumOff:]); got != want {
			t.Fatalf("header % x: ComputeChecksum %#04x, gopacket %#04x", ip, got, want)
		}
	}
}
