// Package middlebox is SwordBox's full-featured data plane (paper sections
// 4.1-4.5, 5.2): it multiplexes many clients' RC connections onto one
// shared connection per memory server, replaces CMP_SWAP and FETCH_ADD on
// tracked words with WRITEs of their outcome, and splits the server's
// coalesced ACKs back into one answer per client.
//
// It owns the deterministic Engine (frames in, frames out; no goroutines,
// timers or I/O inside), its configuration and counters, and the thin I/O
// shells around it: Loop over netio ports (in-memory links, AF_PACKET) and
// the zero-copy DPDK loop (build tag dpdk: RunDPDK, and DPDKLoop for
// drivers that own their ports). It does not own the wire format (package
// roce), frame I/O (netio), the RNIC (roce/rnic), the switch's steering
// program (p4/), whose rules steer.go mirrors for racks without a P4
// switch, nor the benchmarks (package mbbench).
//
// # The engine
//
// Process(now, side, frame, out) parses the frame with roce.ParseInto,
// rewrites it in place when it is forwarded, and appends every frame to
// send, in order, to out. The common frames of the steady state (fast.go:
// the usual layout, an in-order single-packet request on a known
// connection, an ACK, ATOMIC ACK or READ response on a known outgoing
// connection) skip the parse and are handled at constant offsets by the
// same steps; the fast path takes a frame only when the general path would
// do exactly the same with it, which TestFastPathMatchesGeneral checks. A request from a client (client side) is looked
// up in the connection table by (client IP, server IP, UDP source port,
// destination QP); a response from a server by (server IP, client IP,
// destination QP). Connections are preloaded (Config.Conns) or learned
// from requests; a learned connection's response direction is bound by the
// first response whose PSN matches one of its outstanding requests.
//
// Per connection the engine keeps the client side (the next expected
// client PSN, the MSN told to the client, a FIFO of its outstanding
// operations) and the server side (the next outgoing PSN, the last PSN the
// server acknowledged, and a ring of map entries indexed by outgoing PSN
// mod N, N = RingSize for shared connections, ConnRingSize for the others).
// A READ of L bytes takes max(1, ceil(L/PMTU)) PSNs and entries.
//
// # RC correctness
//
// Clients and the server must never notice the middlebox. The rules that
// make it so, where the paper is silent:
//
//   - Every connection is translated, not only remapped ones: once a client
//     request has moved to another connection, the server's expected PSN
//     on the client's own connection no longer follows the client's PSNs,
//     so every forwarded request gets the next outgoing PSN of its outgoing
//     connection and every answer the client's own PSN. A connection that
//     never took part in remapping keeps identical PSNs (identity), and its
//     frames are forwarded unchanged.
//   - The engine is an in-order gate per client, like a responder: a
//     request ahead of the expected PSN (lost or reordered before the
//     middlebox) is dropped, and the client is told once with a NAK PSN
//     sequence error at the expected PSN — but only when none of its
//     operations are outstanding, because that NAK implicitly acknowledges
//     everything before it; otherwise the NAK waits until they complete.
//     Forwarding it would let the shared connection execute the client's
//     operations out of order.
//   - A client's outstanding operations all travel on one outgoing
//     connection. A request whose home (the shared connection for a remap
//     range, the client's own for SEND and multi-packet messages) differs
//     from the connection its outstanding operations are on waits in the
//     engine (parked: a copy of a single-packet request of up to parkBytes,
//     one per client; the client's expected PSN does not move) and is sent
//     when they complete (parkBehindBarrier, releaseParked); a request that
//     cannot be parked is refused (DropBarrier) and NAKed once they
//     complete. Non-range operations follow the outstanding ones. Otherwise
//     the server could apply a client's WRITE and a later unlock in either
//     order.
//   - Answers go to each client in its own PSN order, and never implicitly
//     acknowledge an operation that is not complete: a run of completed
//     WRITEs becomes one ACK with the last one's PSN, every atomic its own
//     ATOMIC ACK, a READ's response packets are forwarded only when the
//     READ is the client's oldest outstanding operation (a response
//     overtaking an earlier operation is dropped: DropRespBlocked), and a
//     coalesced server ACK past a READ or atomic whose response is missing
//     acknowledges nothing beyond it for that client.
//   - MSN: the MSN a client sees counts its own completed messages (a READ
//     completes with its last response packet); MSNs of connections learned
//     in mid-life start from the server's MSN at binding.
//   - Retransmissions (PSN behind the expected one) map to the outgoing
//     connection and PSN of the original and are sent exactly as the first
//     time (a CMP_SWAP sent as a WRITE is sent as the same WRITE). A
//     retransmission of an operation already acknowledged to the client is
//     answered by the engine itself from its map entry (ACK, or ATOMIC ACK
//     with the recorded value): a server answers a duplicate WRITE with a
//     cumulative ACK for its newest PSN, which on a shared connection may
//     belong to another client. One the server has acknowledged but that
//     waits for an earlier operation of its client is absorbed. A client
//     whose answer was lost backs off and may resend after its entry has
//     been reused (a shared ring turns over in about a hundred
//     milliseconds of lock traffic); the duplicate is still answered, as a
//     responder answers every duplicate (answerForgotten): a WRITE or SEND
//     with an ACK, an atomic from the client's last 16 answered atomics, a
//     READ by sending it to the server again (its response goes back as a
//     duplicate and acknowledges nothing).
//   - Server NAK PSN sequence error (a request was lost between middlebox
//     and server): everything before its PSN is acknowledged; then, with
//     NAKRecovery "replay" (default), the engine resends its own copies of
//     the requests from that PSN on, in order. With "broadcast" (the
//     paper, section 4.5) every client with operations outstanding on the
//     connection gets a NAK at its own oldest PSN. Broadcast does not
//     survive loss with many clients: RC requesters ignore a repeated NAK
//     for the PSN they are already recovering, their retransmissions reach
//     the server in whatever order their timers fire, the server discards
//     all but the one it expects, and each client burns one retry per
//     round until RETRY_EXC_ERR (seen in TestDifferentialDebug with
//     -mbox.diff-nak broadcast). Replay keeps a copy of every request on a
//     shared connection (in a byte ring of ReplayLogBytes, 64 KiB by
//     default so that it stays in the cache; a copy overwritten before it
//     is needed is left to its client's retransmission) and makes recovery
//     independent of the clients. A client retransmission of the server's oldest unacknowledged
//     request also triggers a replay of the rest (at most one per
//     ReplayHoldoff per connection).
//   - Other NAKs go to the owner of the PSN with its own PSN; fatal ones
//     complete the operation (the client's QP enters ERR as the IBA says).
//
// # CAS to WRITE
//
// Words in a server's CASToWrite ranges (which must lie inside its Remap
// ranges: the shared connection's order is what makes the cache right)
// are tracked. The engine applies every operation it sends on the shared
// connection to its cached value in transmission order (section 4.2). A
// CMP_SWAP or FETCH_ADD on a known word becomes a WRITE_ONLY of the
// outcome (8 bytes, little-endian as in host memory; the packet shrinks
// by 4 bytes), and its entry records the prior value; the WRITE's ACK
// becomes an ATOMIC ACK carrying it. An atomic on an unknown word passes
// through; the engine logs up to eight operations sent on the word since,
// and the ATOMIC ACK of any logged atomic teaches the current value by
// replaying the log from it — learning works while other operations on the
// word are in flight. WRITEs covering a word update it (partially covered
// bytes merge). An operation on a tracked word from a connection that is
// not yet bound (so it cannot be remapped) makes the word unknown, and
// no word of that server is learned while such a foreign operation is in
// flight. Seeded
// words (Config.Words, e.g. Sherman's locks, all 0) are known from the
// start.
//
// Three rules beyond the paper, per server (lockrules.go): with
// AnswerFailedCAS, a CMP_SWAP on a known word whose compare value differs
// from the word's value fails, and the engine answers it itself with an
// ATOMIC ACK carrying the value (answerFailedCAS), in the client's PSN and
// MSN order (only when nothing of the client is outstanding) and
// remembered for its duplicates; with WaitFailedCAS, such a CMP_SWAP waits
// in the engine, queued on its word, until an operation the engine sends
// changes the word, and is then evaluated again and sent (waitOnWord,
// wakeWaiters), or until its requester retransmits it, which is answered
// as failed; with AnswerAtSend, a CMP_SWAP sent as a WRITE on the shared
// connection is answered when it is sent, if its client has nothing else
// outstanding, and the engine keeps a copy of the WRITE and resends it
// itself until the server acknowledges it (answerAtSend). A word's value
// counts as known only while every operation on it travels on the shared
// connection and the engine saw its bytes; a fatal NAK on the shared
// connection ends local answers for that server.
//
// # ICRC
//
// Received ICRCs are verified unless SkipICRCCheck (a NIC that drops bad
// Ethernet FCS makes that redundant; the software rack's links can corrupt
// without an FCS). Every frame the engine rewrites gets its new ICRC
// computed in full (roce.ICRC20's carry-less multiply on the fast path,
// roce.Packet.SetICRC for other layouts), xor the error the received frame
// carried (icrc.go: icrcErrAt, icrcErrOf, putICRC, finish;
// roce.ICRCErrorShorter4 for CMP_SWAP to WRITE, which is 4 bytes shorter).
// An intact frame leaves with a correct ICRC; a corrupted one (only with
// SkipICRCCheck) leaves corrupted, with the very ICRC an incremental
// update would have written, so the server drops it. Steered frames,
// READ responses vouched for (steer.go) and retransmissions included.
// Generated answers come from per-client templates and get their ICRC
// computed.
//
// # Cores
//
// Sharded runs one engine per core and sends each frame to the engine of
// its memory server (the destination of a request, the source of a
// response), so all traffic of one server-side connection, and of every
// client remapped onto it, stays on one core (section 6.3). Over DPDK (dpdk.go,
// build tag dpdk) one engine drives one port pair from one locked OS thread,
// rewriting frames inside their mbufs; more cores take more port pairs.
//
// # Not here
//
// Idle connections are never expired. Multi-packet WRITE and SEND messages are not remapped (they stay
// on their own connection: another client's packet between their packets
// would break the server's message reassembly), nor are SENDs (they consume
// the receive queue of the connection they arrive on).
package middlebox
