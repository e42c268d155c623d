package roce_test

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/swordbox/swordbox/roce"
)

// ICRC20 takes the bytes from the IPv4 header (20 bytes, no options) up to
// the ICRC. The frame is platform.md's worked example, a CMP_SWAP checked
// with scapy and Wireshark; its ICRC is the last 4 bytes, little-endian.
func ExampleICRC20() {
	frame, _ := hex.DecodeString("020000000002020000000001080045000048000140004011" +
		"26a20a0000010a000002c35012b700340000" +
		"1340ffff000000118000000500007f00000010000000123400000000deadbeef0000000000000000" +
		"dce072ec")
	l3 := frame[roce.EthernetLen : len(frame)-roce.ICRCLen]
	icrc := roce.ICRC20(l3)
	fmt.Printf("span %d bytes, ICRC %08x, matches the frame: %v\n",
		len(l3), icrc, icrc == binary.LittleEndian.Uint32(frame[len(frame)-roce.ICRCLen:]))
	// Output: span 68 bytes, ICRC ec72e0dc, matches the frame: true
}
