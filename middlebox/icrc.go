package middlebox

import (
	"encoding/binary"
	"hash/crc32"
	"math/bits"

	"github.com/swordbox/swordbox/roce"
)

// Incremental ICRC updates.
//
// The ICRC is CRC-32 (IEEE, reflected) with initial value and final XOR of
// all ones, which makes it affine: for two messages A and B of equal length,
// ICRC(A) xor ICRC(B) = raw(A xor B), where raw is the bare CRC register
// with initial value 0 and no final XOR, a linear function. When a rewrite
// changes only the bytes of one span [a, b) of an n-byte message, the new
// ICRC is the old one xor raw(D[a:b]) advanced over the n-b zero bytes that
// follow, with D = old xor new (the masked ICRC fields count as equal).
// Advancing over z zero bytes is a linear map M^z; it is applied with one
// set of four 256-entry tables per power of two in z, so updating the ICRC
// of a rewritten request costs a few dozen table lookups whatever the
// payload's length, where recomputing it would read the whole packet.
//
// An incremental update also keeps a corrupted frame corrupted: a frame
// whose ICRC was wrong before the rewrite is still wrong after it, so the
// receiver drops it as it would have without the middlebox. CMP_SWAP to
// WRITE changes the length; it has its own incremental update (convICRC
// below). Frames the engine consumes (server ACKs, which drive what the
// clients are told) are verified in full.

var (
	crcTab   [spanTabs][256]uint32 // crcTab[j][b]: raw CRC of byte b then j zero bytes
	zeroTabs [16][4][256]uint32    // zeroTabs[k]: advance over 2^k zero bytes
)

// spanTabs is the longest span raw16 takes: the raw CRC is linear, so it is
// the xor of each byte's contribution, crcTab[bytes after it][b], with no
// serial dependence from byte to byte (and leading zero bytes contribute
// nothing).
const spanTabs = 16

func init() {
	crcTab[0] = *crc32.IEEETable
	for i := 0; i < 256; i++ {
		c := crcTab[0][i]
		for j := 1; j < spanTabs; j++ {
			c = crcTab[0][c&0xff] ^ c>>8
			crcTab[j][i] = c
		}
	}
	// Columns of M^(2^k): images of each register bit.
	var col [32]uint32
	for i := range col {
		s := uint32(1) << i
		col[i] = crcTab[0][s&0xff] ^ s>>8 // one zero byte
	}
	for k := 0; k < len(zeroTabs); k++ {
		for j := 0; j < 4; j++ {
			for v := 0; v < 256; v++ {
				var r uint32
				for b := 0; b < 8; b++ {
					if v&(1<<b) != 0 {
						r ^= col[8*j+b]
					}
				}
				zeroTabs[k][j][v] = r
			}
		}
		var next [32]uint32
		for i := range col {
			next[i] = applyCols(&col, col[i])
		}
		col = next
	}
}

func applyCols(col *[32]uint32, s uint32) uint32 {
	var r uint32
	for i := 0; s != 0; i, s = i+1, s>>1 {
		if s&1 != 0 {
			r ^= col[i]
		}
	}
	return r
}

// rawCRC returns the bare CRC-32 register after p, from register s.
func rawCRC(s uint32, p []byte) uint32 {
	for len(p) >= 8 {
		s ^= binary.LittleEndian.Uint32(p)
		s = crcTab[0][p[7]] ^ crcTab[1][p[6]] ^ crcTab[2][p[5]] ^ crcTab[3][p[4]] ^
			crcTab[4][s>>24] ^ crcTab[5][s>>16&0xff] ^ crcTab[6][s>>8&0xff] ^ crcTab[7][s&0xff]
		p = p[8:]
	}
	for _, v := range p {
		s = crcTab[0][byte(s)^v] ^ s>>8
	}
	return s
}

// raw16 is rawCRC(0, b[:]) with 16 independent lookups.
func raw16(b *[16]byte) uint32 {
	t := &crcTab
	return t[15][b[0]] ^ t[14][b[1]] ^ t[13][b[2]] ^ t[12][b[3]] ^
		t[11][b[4]] ^ t[10][b[5]] ^ t[9][b[6]] ^ t[8][b[7]] ^
		t[7][b[8]] ^ t[6][b[9]] ^ t[5][b[10]] ^ t[4][b[11]] ^
		t[3][b[12]] ^ t[2][b[13]] ^ t[1][b[14]] ^ t[0][b[15]]
}

// raw8 is rawCRC(0, b[:]) with 8 independent lookups.
func raw8(b *[8]byte) uint32 {
	t := &crcTab
	return t[7][b[0]] ^ t[6][b[1]] ^ t[5][b[2]] ^ t[4][b[3]] ^
		t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
}

// raw24 is the raw CRC of the 3 big-endian bytes of v (a PSN or MSN).
func raw24(v uint32) uint32 {
	return crcTab[2][v>>16&0xff] ^ crcTab[1][v>>8&0xff] ^ crcTab[0][v&0xff]
}

// zeroAdvance advances register s over z zero bytes.
// Only the set bits of z cost a table application.
func zeroAdvance(s uint32, z int) uint32 {
	for u := uint(z); u != 0 && s != 0; u &= u - 1 {
		s = applyTab(&zeroTabs[bits.TrailingZeros(u)], s)
	}
	return s
}

// spanMax is the longest span icrcSpan snapshots.
const spanMax = 48

// icrcSpan remembers the bytes of one span of a frame before a rewrite.
type icrcSpan struct {
	a, b int // frame offsets
	old  [spanMax]byte
}

func (s *icrcSpan) save(f []byte, a, b int) {
	s.a, s.b = a, b
	copy(s.old[:b-a], f[a:b])
}

// update fixes the ICRC of frame f (ICRC at icrcOff, IPv4 header of ihl
// bytes at l3) after the bytes of the saved span changed. masked lists
// frame offsets inside the span that the ICRC treats as all ones.
func (s *icrcSpan) update(f []byte, l3, icrcOff int, masked []int) {
	var d [spanMax]byte
	n := s.b - s.a
	for i := 0; i < n; i++ {
		d[i] = s.old[i] ^ f[s.a+i]
	}
	for _, m := range masked {
		if m >= s.a && m < s.b {
			d[m-s.a] = 0
		}
	}
	delta := zeroAdvance(rawCRC(0, d[:n]), icrcOff-s.b)
	old := binary.LittleEndian.Uint32(f[icrcOff:])
	binary.LittleEndian.PutUint32(f[icrcOff:], old^delta)
}

// Per-connection ICRC deltas. Every field a remapping rewrites (IPv4
// addresses, UDP source port, destination QP) is part of the connection
// key, so the part of the ICRC delta they cause is a constant of the pair
// (client connection, outgoing connection): it is computed once and cached
// in the client connection, leaving only the PSN to fold in per frame (the
// general path's requests; the fast path and READ responses compute the
// ICRC instead, see putICRC). Offsets are relative to a 20-byte IPv4
// header.
const (
	kSpanStart = roce.IPv4SrcOff                             // first byte of the delta span (L3 relative)
	kSpanEnd   = roce.IPv4MinLen + roce.UDPLen + roce.BTHLen // end of the BTH
	kQPOff     = roce.IPv4MinLen + roce.UDPLen + roce.BTHDestQPOff
	kPortOff   = roce.IPv4MinLen + roce.UDPSrcPortOff
)

func put24(b []byte, v uint32) {
	_ = b[2] // one bounds check
	b[0], b[1], b[2] = byte(v>>16), byte(v>>8), byte(v)
}

// reqDelta returns the raw CRC of the span [IPv4 source, end of BTH) of
// (request as the client sent it) xor (as it leaves on connection oi),
// PSN bytes excluded.
func (e *Engine) reqDelta(ci, oi int32) uint32 {
	c := &e.conns[ci]
	if c.reqKFor == oi+1 {
		return c.reqK
	}
	o := &e.conns[oi]
	var d [kSpanEnd - kSpanStart]byte
	for i := 0; i < 4; i++ {
		d[i] = c.cliIP[i] ^ o.cliIP[i]
		d[4+i] = c.srvIP[i] ^ o.srvIP[i]
	}
	binaryPut16(d[kPortOff-kSpanStart:], c.cliPort^o.cliPort)
	put24(d[kQPOff-kSpanStart:], c.srvQP^o.srvQP)
	c.reqK, c.reqKFor = rawCRC(0, d[:]), oi+1
	return c.reqK
}

func binaryPut16(b []byte, v uint16) { b[0], b[1] = byte(v>>8), byte(v) }

// fastICRC updates the ICRC (at icrcOff) of the request in f whose
// 20-byte IPv4 header is at l3 and whose only changes since it was
// received are the per-connection fields behind k and the PSN (oldPSN to
// newPSN).
func fastICRC(f []byte, l3, icrcOff int, k, oldPSN, newPSN uint32) {
	x := k ^ raw24(oldPSN^newPSN) // PSN: the last 3 bytes of the span
	old := binary.LittleEndian.Uint32(f[icrcOff:])
	binary.LittleEndian.PutUint32(f[icrcOff:], old^zeroAdvance(x, icrcOff-(l3+kSpanEnd)))
}

// Rewrites on the fast path and in readResp compute the new ICRC in full
// with the carry-less-multiply route of roce.ICRC20 (no tables), and carry
// the received frame's error into it: with err the received ICRC xor the
// one the received bytes should carry (icrcErrAt, taken before the
// rewrite), the new ICRC is the one the new bytes should carry xor err.
// For a rewrite that keeps the length that is exactly what the incremental
// update (fastICRC) writes, since the CRC is linear; for CMP_SWAP to WRITE,
// four bytes shorter, the register algebra below (convICRC) carries err as
// adv4^-1(err) (convErr). So an intact frame leaves with a correct ICRC,
// a corrupted one (only with SkipICRCCheck: verification drops it) leaves
// corrupted, and the bytes are the same as the general path's incremental
// updates, while the tables those use (tens of KB, against a 32 KB L1
// cache the frames need too) stay out of the common case.

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

// convErr is the error a CMP_SWAP or FETCH_ADD received with ICRC error
// err carries as the WRITE it becomes.
func convErr(err uint32) uint32 {
	if err == 0 {
		return 0
	}
	return invAdvance4(err)
}

// fastOK reports whether p has the layout fastICRC assumes.
func fastOK(p *roce.Packet) bool {
	return p.BTHOff == p.L3Off+roce.IPv4MinLen+roce.UDPLen
}

// CMP_SWAP/FETCH_ADD to WRITE_ONLY, incrementally. The rewrite changes the
// length (AtomicETH, 28 bytes, becomes RETH, 16, and 8 bytes of payload),
// so the same-length rule above does not apply directly; the register
// algebra still does. With a 20-byte IPv4 header the ICRC covers, after the
// 0xFF prefix, M = H | X | T (old) and M' = H' | X | L | P (new): H the
// 40 bytes of masked IPv4, UDP and BT headers, X the VA and rkey (12 bytes,
// unchanged), T swap/add and compare (16), L the RETH's DMA length (4),
// P the stored value (8). With R the register after a message, adv_n the
// advance over n zero bytes and raw the bare CRC:
//
//	R(M)  = adv16(R(H|X)) ^ raw(T)
//	R(M') = adv12(R(H'|X)) ^ raw(L|P),  R(H'|X) = R(H|X) ^ adv12(raw(H^H'))
//	R(M') = adv4^-1(R(M) ^ raw(T)) ^ adv24(raw(H^H')) ^ raw(L|P)
//
// raw(H^H') is the connection pair's constant (reqDelta), the PSN's share,
// and the conversion's own constant (IPv4 total length 72 to 68, UDP length
// 52 to 48, the opcode): a few dozen table lookups instead of reading the
// 64-byte packet again, and, like the other incremental updates, a frame
// that arrived corrupted stays corrupted.

const (
	convInLen  = hdrLen20 + roce.AtomicETHLen // L3 bytes of an atomic request (without ICRC)
	convOutLen = hdrLen20 + roce.RETHLen + 8  // of the WRITE_ONLY it becomes
	hdrLen20   = roce.IPv4MinLen + roce.UDPLen + roce.BTHLen
)

var (
	inv4Tab   [4][256]uint32 // adv4^-1
	adv24Tab  [4][256]uint32 // adv24, one application instead of zeroAdvance's loop
	dmaLen8   uint32         // raw CRC of the DMA length 8 (its last byte) before the 8-byte value
	convConst [2]uint32      // adv24(raw(header change)) for CMP_SWAP (0) and FETCH_ADD (1), PSN and connection aside
)

func init() {
	// Columns of adv4, then Gauss-Jordan over GF(2) for the inverse's.
	var vec, inv [32]uint32
	for i := range vec {
		vec[i], inv[i] = zeroAdvance(1<<i, 4), 1<<i
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
			adv24Tab[j][v] = zeroAdvance(uint32(v)<<(8*j), convOutLen-hdrLen20)
		}
	}
	dmaLen8 = crcTab[8][8]
	for i, op := range []roce.Opcode{roce.OpRCCompareSwap, roce.OpRCFetchAdd} {
		var d [hdrLen20]byte
		binaryPut16(d[roce.IPv4TotalLenOff:], (convInLen+roce.ICRCLen)^(convOutLen+roce.ICRCLen))
		binaryPut16(d[roce.IPv4MinLen+roce.UDPLengthOff:], (convInLen+roce.ICRCLen-roce.IPv4MinLen)^(convOutLen+roce.ICRCLen-roce.IPv4MinLen))
		d[roce.IPv4MinLen+roce.UDPLen+roce.BTHOpcodeOff] = byte(op) ^ byte(roce.OpRCWriteOnly)
		convConst[i] = zeroAdvance(rawCRC(0, d[:]), convOutLen-hdrLen20)
	}
}

// applyTab applies the linear map whose byte-column tables are t.
func applyTab(t *[4][256]uint32, s uint32) uint32 {
	return t[0][s&0xff] ^ t[1][s>>8&0xff] ^ t[2][s>>16&0xff] ^ t[3][s>>24]
}

// advance24 is zeroAdvance(s, 24).
func advance24(s uint32) uint32 { return applyTab(&adv24Tab, s) }

// invAdvance4 is adv4^-1.
func invAdvance4(s uint32) uint32 { return applyTab(&inv4Tab, s) }

// convPre is what the incremental CMP_SWAP to WRITE update needs from the
// atomic before it is rewritten.
type convPre struct {
	ok  bool   // the layout is the one the update assumes
	fa  bool   // FETCH_ADD
	pre uint32 // adv4^-1(R(M) ^ raw(T))
}

// saveConv records p (a CMP_SWAP or FETCH_ADD about to become a WRITE) for
// convICRC.
func saveConv(cv *convPre, p *roce.Packet) {
	cv.ok = fastOK(p) && p.ICRCOff-p.L3Off == convInLen && p.BTH.PadCnt() == 0
	if cv.ok {
		cv.fa = p.Opcode == roce.OpRCFetchAdd
		cv.pre = convPreOf(p.Frame, p.L3Off, p.ICRCOff)
	}
}

// convPreOf returns convPre.pre of the atomic in f (20-byte IPv4 header at
// l3, ICRC at icrcOff, the layout saveConv accepts).
func convPreOf(f []byte, l3, icrcOff int) uint32 {
	t := l3 + hdrLen20 + 12 // swap/add and compare
	return invAdvance4(^binary.LittleEndian.Uint32(f[icrcOff:]) ^ raw16((*[16]byte)(f[t:t+16])))
}

// convICRC writes the ICRC (at icrcOff) of the WRITE_ONLY in f (20-byte
// IPv4 header at l3) that the atomic saved in cv became, whose header
// changes besides the conversion are the connection pair's (k, reqDelta)
// and the PSN's.
func convICRC(f []byte, l3, icrcOff int, cv *convPre, k, oldPSN, newPSN uint32) {
	c := convConst[0]
	if cv.fa {
		c = convConst[1]
	}
	h := advance24(k^raw24(oldPSN^newPSN)) ^ c
	v := l3 + hdrLen20 + roce.RETHLen // the stored value, after the DMA length 8
	r := cv.pre ^ h ^ dmaLen8 ^ raw8((*[8]byte)(f[v:v+8]))
	binary.LittleEndian.PutUint32(f[icrcOff:], ^r)
}
