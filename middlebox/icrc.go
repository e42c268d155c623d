package middlebox

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/swordbox/swordbox/roce"
)

// ICRCs of rewritten frames.
//
// The ICRC is CRC-32 (IEEE, reflected) with initial value and final XOR of
// all ones over the packet with its variant fields masked, which makes it
// affine: for two messages A and B of equal length, ICRC(A) xor ICRC(B) =
// raw(A xor B), raw being the bare CRC register from zero, a linear
// function.
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
// meant. CMP_SWAP or FETCH_ADD to WRITE_ONLY is 4 bytes shorter (convErr).
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
// arrived with ICRC error err (icrcErrOf, convErr).
func finish(p *roce.Packet, err uint32) {
	p.IP.UpdateChecksum()
	p.SetICRC()
	if err != 0 {
		binary.LittleEndian.PutUint32(p.ICRC, p.StoredICRC()^err)
	}
}

// convErr is the error a CMP_SWAP or FETCH_ADD received with ICRC error
// err carries as the WRITE_ONLY it becomes. The atomic is M = P | T, T its
// 16 bytes of swap (or add) and compare; the WRITE is M' = P' | L | V, P'
// the same prefix with the header changes, L the RETH's DMA length and V
// the 8-byte value (12 bytes). An error e in the register after P (a
// corrupted byte of P) shows as adv16(e) after M and as adv12(e) after M',
// adv_n being the advance of the register over n zero bytes, so the error
// to carry is adv4^-1(err). adv4 is invertible: a nonzero error (wherever
// the corruption was, T included) stays nonzero.
func convErr(err uint32) uint32 {
	if err == 0 {
		return 0
	}
	return applyTab(&inv4Tab, err)
}

func put24(b []byte, v uint32) {
	_ = b[2] // one bounds check
	b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v)
}

// Lengths of a CMP_SWAP or FETCH_ADD with a 20-byte IPv4 header turned
// into a WRITE_ONLY (convWrite), without the ICRC.
const (
	convOutLen = hdrLen20 + roce.RETHLen + 8 // L3 bytes of the WRITE_ONLY
	hdrLen20   = roce.IPv4MinLen + roce.UDPLen + roce.BTHLen
)

// inv4Tab holds the byte-column tables of adv4^-1 (convErr).
var inv4Tab [4][256]uint32

func init() {
	// Columns of adv4 (four zero bytes: the register shifts a byte out and
	// folds it back through the CRC table, four times), then Gauss-Jordan
	// over GF(2) for the inverse's.
	var vec, inv [32]uint32
	for i := range vec {
		s := uint32(1) << i
		for k := 0; k < 4; k++ {
			s = crc32.IEEETable[s&0xff] ^ s>>8
		}
		vec[i], inv[i] = s, 1<<i
	}
	for b := 0; b < 32; b++ {
		r := b
		for vec[r]&(1<<b) == 0 {
			r++ // adv4 is invertible: a pivot exists
		}
		vec[b], vec[r] = vec[r], vec[b]
		inv[b], inv[r] = inv[r], inv[b]
		for i := range vec {
			if i != b && vec[i]&(1<<b) != 0 {
				vec[i] ^= vec[b]
				inv[i] ^= inv[b]
			}
		}
	}
	for j := 0; j < 4; j++ {
		for v := 0; v < 256; v++ {
			var r uint32
			for k := 0; k < 8; k++ {
				if v&(1<<k) != 0 {
					r ^= inv[8*j+k]
				}
			}
			inv4Tab[j][v] = r
		}
	}
}

// applyTab applies the linear map whose byte-column tables are t.
func applyTab(t *[4][256]uint32, s uint32) uint32 {
	return t[0][s&0xff] ^ t[1][s>>8&0xff] ^ t[2][s>>16&0xff] ^ t[3][s>>24]
}
