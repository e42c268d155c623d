// Package roce owns the RoCEv2 wire format (IPv4 only): zero-copy views with
// typed accessors over the Ethernet, IPv4, UDP, BTH and extension headers;
// the opcode table; Parse, which locates every header of a frame without
// allocating, and FixedLayout, its fast path's layout check; Build, which
// fills a caller's buffer from a plain Fields struct; the ICRC and its error
// algebra (icrc_error.go); the in-place rewrites the data path needs
// (address, key, QP, PSN and MSN updates, CMP_SWAP/FETCH_ADD to RDMA WRITE,
// also without parsing, ACK to ATOMIC ACK); and gopacket layers registered
// on UDP port 4791.
//
// It also owns RC's vocabulary, so that the RNIC, the middlebox and the
// tools share one convention: the PSN type and its modular arithmetic, AETH
// syndromes and NAK codes, and the RNR NAK timer encoding (rc.go).
//
// It does not own transport semantics (PSN windows, retransmission, ACK
// coalescing: roce/rnic), verbs (roce/verbs) or frame I/O (netio). It imports
// nothing of ours.
//
// Decisions where the specifications leave room:
//
//   - Only IPv4 RoCEv2 (UDP destination port 4791) is parsed and built,
//     untagged or with one IEEE 802.1Q tag (PFC deployments often tag RoCE
//     traffic); stacked tags (QinQ) are reported as not RoCEv2. IPv4 options
//     are accepted by Parse and covered by the ICRC, but Build emits a
//     20-byte header. Fragmented IPv4 is rejected.
//   - Opcode names are the transport followed by the IBA operation, shortened
//     the way RDMA tools print them: RC_SEND_ONLY_IMM, RC_WRITE_FIRST,
//     RC_READ_RESPONSE_LAST, RC_ACK, RC_ATOMIC_ACK, RC_CMP_SWAP,
//     RC_FETCH_ADD, RC_SEND_LAST_INV, UD_SEND_ONLY, CNP; unknown opcodes
//     print as OPCODE_0xNN and do not parse.
//   - Parse uses the IPv4 total length to find the end of the packet; any
//     Ethernet trailer (minimum-frame padding) is ignored and reported in
//     Packet.Trailer. Rewrites that change the length drop the trailer.
//   - Build writes the RoCEv2 frame exactly, without padding it to the
//     60-byte Ethernet minimum (a bare ACK is 62 bytes, a SEND with an empty
//     payload 58): padding is the link's business, and Parse ignores it.
//   - Build always writes UDP checksum 0 (allowed for RoCEv2 over IPv4), and
//     rewrites clear a non-zero UDP checksum, because they would invalidate it.
//   - The pad bytes (BTH PadCnt) are written as zeros. Build requires the
//     payload plus pad to be a multiple of 4 bytes, as the IBA does; Parse
//     only requires PadCnt not to exceed the payload.
//   - Opcodes that carry no payload (READ request, ACK, ATOMIC ACK, atomics)
//     are malformed if bytes follow their extension headers.
//   - CNP (0x81) carries 16 reserved bytes after the BTH; they are exposed as
//     the payload.
//   - CMP_SWAP/FETCH_ADD to WRITE stores the 8-byte value in little-endian
//     order, the order in which atomics operate on host memory (see
//     roce/verbs), so that the WRITE leaves memory exactly as the atomic
//     would have. ACK to ATOMIC ACK only accepts a positive ACK: an ATOMIC
//     ACK always acknowledges, so turning a NAK into one would hide an error.
//   - Rewrites asked not to fix the ICRC move the old ICRC bytes to the new
//     end of the packet unchanged, which is what a switch that does not
//     recompute the ICRC (Tofino) emits.
//   - gopacket: an extension header cannot tell alone whether another one
//     follows it, so extension layers are linked to the BTH layer decoded
//     before them (see LayerSet); gopacket.NewPacket links them itself.
package roce
