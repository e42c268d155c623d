package roce

import "hash/crc32"

// ICRC error algebra. The ICRC is CRC-32 (IEEE, reflected) with initial
// value and final XOR of all ones over the packet with its variant fields
// masked, which makes it affine: for two messages A and B of equal length,
// ICRC(A) xor ICRC(B) = raw(A xor B), raw being the bare CRC register from
// zero, a linear function. A corrupted byte thus shows as an error in the
// register that the bytes after it only advance (adv_n: the register's
// advance over n zero bytes), and a rewrite that keeps the corruption can
// carry the error into the new ICRC instead of laundering it.

// ICRCErrorShorter4 returns the ICRC error (stored xor computed) that a
// packet received with error err carries after a rewrite that ends it 4
// bytes shorter than it was after the corrupted byte, such as CMP_SWAP or
// FETCH_ADD to WRITE_ONLY (AtomicToWrite): the atomic is M = P | T, T its
// 16 bytes of swap (or add) and compare; the WRITE is M' = P' | L | V, P'
// the same prefix with the header changes, L the RETH's DMA length and V
// the 8-byte value (12 bytes). An error e in the register after P shows as
// adv16(e) after M and as adv12(e) after M', so the error to carry is
// adv4^-1(err). adv4 is invertible: a nonzero error (wherever the
// corruption was, T included) stays nonzero, and zero stays zero.
func ICRCErrorShorter4(err uint32) uint32 {
	if err == 0 {
		return 0
	}
	return inv4Tab[0][err&0xff] ^ inv4Tab[1][err>>8&0xff] ^ inv4Tab[2][err>>16&0xff] ^ inv4Tab[3][err>>24]
}

// inv4Tab holds the byte-column tables of adv4^-1 (ICRCErrorShorter4).
var inv4Tab = advance4Inverse()

// advance4Inverse computes the columns of adv4 (four zero bytes: the
// register shifts a byte out and folds it back through the CRC table, four
// times), then, by Gauss-Jordan elimination over GF(2), its inverse's, as
// one table per input byte.
func advance4Inverse() (tab [4][256]uint32) {
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
			tab[j][v] = r
		}
	}
	return tab
}
