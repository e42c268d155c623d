package middlebox

import (
	"encoding/binary"

	"github.com/swordbox/swordbox/roce"
)

// ICRCs of rewritten frames.
//
// The ICRC is affine in the packet's bytes (roce/icrc_error.go), so the
// error a corrupted frame carries can be carried into a new ICRC.
//
// A frame the engine rewrites gets its new ICRC computed in full
// (roce.ICRC20 on the fast path: carry-less multiply, no tables;
// roce.Packet.SetICRC for other layouts), xor the error the received frame
// carried: err, its stored ICRC xor the one its bytes should carry, taken
// before the rewrite (zero for an intact frame; with verification on, the
// engine drops a frame whose err is not zero, so only SkipICRCCheck lets
// one through). For a rewrite that keeps the length, ICRC(new) xor err =
// stored xor ICRC(old) xor ICRC(new): the received ICRC updated by the
// rewrite's difference, which is what an incremental update would write.
// So a frame that arrived corrupted leaves corrupted, and the receiver
// drops it as it would have without the middlebox; a corruption in a byte
// the rewrite keeps shows exactly as it would have in the frame the sender
// meant. CMP_SWAP or FETCH_ADD to WRITE_ONLY is 4 bytes shorter (roce.ICRCErrorShorter4).
// Frames the engine consumes (server ACKs, which drive what the clients
// are told) are verified in full.
//
// Why compute rather than update incrementally: an incremental update
// takes fewer instructions, but its tables (tens of KB) compete with the
// frames for the 32 KB L1 cache; computing in full measures faster
// (docs/middlebox.md, "Measured").

// icrcErrAt returns the ICRC stored at icrcOff in f xor the ICRC of the
// packet whose 20-byte IPv4 header is at l3: zero when it is intact.
func icrcErrAt(f []byte, l3, icrcOff int) uint32 {
	return roce.ICRC20(f[l3:icrcOff]) ^ binary.LittleEndian.Uint32(f[icrcOff:icrcOff+roce.ICRCLen])
}

// putICRC writes at icrcOff the ICRC of the packet in f whose 20-byte IPv4
// header is at l3, xor err.
func putICRC(f []byte, l3, icrcOff int, err uint32) {
	binary.LittleEndian.PutUint32(f[icrcOff:], roce.ICRC20(f[l3:icrcOff])^err)
}

// icrcErrOf is icrcErrAt for a parsed packet of any layout.
func icrcErrOf(p *roce.Packet) uint32 { return p.StoredICRC() ^ p.ComputeICRC() }

// finish fixes the IPv4 checksum and the ICRC of a rewritten packet, which
// arrived with ICRC error err (icrcErrOf, roce.ICRCErrorShorter4).
func finish(p *roce.Packet, err uint32) {
	p.IP.UpdateChecksum()
	p.SetICRC()
	if err != 0 {
		binary.LittleEndian.PutUint32(p.ICRC, p.StoredICRC()^err)
	}
}

func put24(b []byte, v uint32) {
	_ = b[2] // one bounds check
	b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v)
}
