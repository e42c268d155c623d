// Package clover is Clover (SepDS in its paper, pDPM-Sep in its authors'
// code): a key-value store on passive disaggregated memory in which every
// key is an append-only chain of immutable version nodes in memory-node
// memory, linked by CAS on the tail's header word, with a metadata server
// (MS) off the data path.
//
// It owns the memory-node layout (layout.go; the contract with the switch is
// docs/clover-layout.md), the metadata server (MetaCore, the deterministic
// core; MetadataServer, its shell over verbs) and the client. It programs
// only against roce/verbs, so it runs unchanged on the software RNIC or on an
// RDMA NIC, and with or without a steering switch in the path. It does not
// assemble racks, run benchmarks or know about the switch (testbed does).
//
// # Using it
//
//	region, _ := clover.SetupMemoryNode(mnDevice, 0, layout)    // each memory node
//	ms, _ := clover.NewMetadataServer(clover.MSConfig{Regions: layouts}, msDevice, msCQ)
//	ms.AddClient(msSideQP)                                       // per client, before or while serving
//	go ms.Serve(ctx)
//	c, _ := clover.NewClient(clover.ClientConfig{ValueSize: 128, Device: cnDevice, CQ: cq,
//		MS: qpToMS, MemoryNodes: []clover.MemoryNodeConn{{QP: qpToMN0, Region: clover.Remote(region)}}})
//	c.Create(ctx, key, value); c.Put(ctx, key, value); c.Get(ctx, key, buf); c.Delete(ctx, key)
//	c.Flush(ctx)                                                 // when the client goes idle
//	m := c.Metrics()                                             // ops, CAS, retries, verbs, bytes, chases
//
// A Client is one compute-node thread: not safe for concurrent use, and the
// only consumer of its CQ, on which both its memory-node queue pairs and its
// MS queue pair complete (send and receive). The MS's queue pairs complete on
// the MS's CQ. The memory nodes run nothing: their RNIC serves one-sided
// verbs on the region SetupMemoryNode registered. Every client and the MS
// must use the same T_r (ClientConfig.ReadTimeout, MSConfig.ReadTimeout).
//
// Time: the client and the MS take every instant and every wait from their
// device's clock (verbs.Clock), never from package time, and block only in
// CQ.Wait and that clock's waits (TestNoWallClock checks the source), so
// they run unchanged in wall-clock time and in a virtual-time rack. The MS's
// Serve is one goroutine: its CQ wait is bounded by its next tick.
//
// # What follows the paper and the authors' code
//
//   - Node: 8-byte header word (next LH, next version, entry version,
//     transaction bits, B_w, per mitsume_parameter.h), then the key, then the
//     value; slots padded to slab classes; the MS hands out slots in batches
//     (ALLOC, 32 per batch), never touches memory-node memory, and reclaims
//     retired slots after T_r (ToGCList), bumping their 8-bit GC version;
//     slots whose version wraps wait in an OverflowList for epochs, and the
//     MS pushes an epoch message every T_e (its only unsolicited message).
//   - get: READ the node at the cursor; NULL next means the tail (1 round
//     trip); otherwise chase next pointers, checking each slot's version and
//     key; on a mismatch (the slot was reclaimed) fall back to the shortcut,
//     then to the MS.
//   - put: WRITE the node (header NULL, own version), READ its last byte
//     (persistence; we read the cursor's header instead, see Steering), CAS
//     the tail's header from {NULL, 0, v_t} to {N, v_n, v_t}: three round
//     trips; on failure follow the returned next pointer
//     with header reads and CAS again, never rewriting the node. Then the
//     shortcut WRITE (posted, not waited for) and a retire of the old tail,
//     batched (16 per RETIRE, as the authors' code).
//   - The MS is reached with two-sided SEND/RECV on one RC queue pair per
//     client (msg.go documents the formats; every message is a view over
//     []byte with named offsets).
//
// # Decisions where the papers are silent
//
//   - A node carries its own logical handle after the key (a 24-byte
//     prefix before the value; the authors' node has header and key), so a
//     READ that comes back from another slot than the one asked for says
//     which (see Steering).
//   - Logical handles: 8 bits of memory node, 24 bits of offset in 64-byte
//     units (1 GiB per node, 255 nodes); unit 0 is the region header, so LH 0
//     is NULL. LH 0xFFFFFFFF is the delete mark (below).
//   - Slab classes: 64-byte steps to 256 B, then powers of two and midpoints
//     to 16 KiB (a 128-byte value's 144-byte node takes 192 bytes).
//   - Versions run 1..255 (0 never names a live node, so zeroed memory never
//     passes for one), and a fresh slot's first version is a hash of its
//     handle rather than 1: see steering below.
//   - Delete: a CAS that swaps the tail's next pointer to the delete mark
//     (every chase ends there, a concurrent put's CAS fails on it), then
//     DELETE to the MS, which drops the key and reclaims the tail and the
//     shortcut after T_r. The header bits keep their meaning; only an LH value
//     is reserved. A reader or a writer who meets the mark asks the MS whether the
//     key was created again.
//   - Create: WRITE the first node into a slot from the client's batch, then
//     CREATE to the MS, which registers the key with a shortcut on the same
//     memory node (the authors' "open"); a losing creator's slot is retired.
//   - Placement: all versions of a key live on its home memory node (chosen
//     by hashing the key at create), because a steering switch never moves a
//     request across memory nodes. Clover's cross-node load balancing of
//     versions is not implemented.
//   - Shortcut: read lazily (on a stale cursor, or after MaxChase hops), not
//     in parallel with every get, so a warm get is exactly one READ; written
//     after every put. A get MaxChase hops behind goes on from the shortcut
//     once, with node READs to the tail however far: on a hot key the tail
//     moves while a get walks, and a recovery that walks headers and then
//     READs the value finds the tail moved again by that last READ (at 240
//     threads, 50 % writes, zipf 0.99 in virtual time, steering off, read
//     p99 59-73 us that way, 35-39 us this way).
//   - Read timeout: a READ that completes more than T_r after it was posted
//     is discarded and reissued (the bytes may span two lives of the slot).
//   - Epochs: a cursor not confirmed live in the current or the previous
//     epoch is dropped, and a wrapped slot waits EpochWaits (3) epochs, one
//     more than the two a cursor may idle, for the push in flight. T_e
//     defaults to 5 s: a cursor idle for two epochs is lost, so T_e must
//     exceed the interval between two uses of a key that should stay cached.
//   - The MS's latest pointer advances only along the (old, new) links that
//     retires report, from where it is: it never regresses and never points
//     at a retired slot. Retires arrive in any order (batched per client),
//     so a node can be retired while the pointer still leads to it; the MS
//     reclaims a retired slot only after T_r and once the pointer has moved
//     past it (or, if a predecessor's retire never comes, after two epochs),
//     so a walk from the MS's pointer never meets a reused slot. Clients hand
//     in retires within T_r/4 of queueing them (each operation checks) and
//     before they fall back to the MS; an idle client must call Flush.
//   - Full memory: an ALLOC answered "no space" is retried every T_r/4 (up
//     to 64 times) after handing in the client's own retires.
//   - Replication (R > 1, B_w) is not implemented: B_w is always 0.
//
// # Steering (SwordBox section 4.4.2): one client for both worlds
//
// A steering switch may redirect a node READ, or a put's CAS, aimed at a
// stale tail X to its cached tail T of the same key, rewriting a CAS's
// compare and swap entry-version bits to T's. A completion carries no
// address, so the client judges results by what they contain. It leans on
// two facts:
//
//   - A slot seen as a key's tail at time t cannot be reused before t + T_r:
//     it is retired only after a successor is linked, and the MS holds
//     retired slots for T_r. A cursor so seen less than T_r ago is "fresh".
//   - The switch's contract (docs/swordbox-p4.md): it steers a READ or a
//     CAS to a tail whose own linking CAS it saw succeed or, in chain mode,
//     to the node of the key's last forwarded linking CAS, confirmed or
//     not; only within tail_ttl <= T_r/2 of forwarding the CAS that linked
//     the target (so it cannot have been reclaimed when a request steered
//     there lands, if the request spends under T_r/2 in flight); and it
//     vouches (bit 63, which no header word in memory has) for a READ
//     response whose node is its confirmed tail, and for the ATOMIC ACK of
//     a link it saw succeed after its confirmed tail (the word names that
//     predecessor: docs/clover-layout.md, "Vouched links").
//
// Put: WRITE the node N; READ the cursor X's header (this READ, on the same
// queue pair, also persists N, in place of Clover's READ of N's last byte);
// walk to the tail if X moved; CAS. X is thus fresh when the CAS executes,
// and the result decides:
//
//   - A vouch word: a switch chained the CAS and saw N linked after the
//     node it names, a node of the chain. Success, and that node is the
//     predecessor to retire; no proof.
//   - Original value == compare: success on X (or on a steered T that
//     happens to carry X's version, which the switch allows only for a
//     confirmed T; N is linked either way).
//   - A tail word of another version: the CAS acted on a node T a switch
//     steered it to (or, from a slow CAS, X may have been reused). N is now
//     linked after T, but T itself may not be in the chain yet: in chain
//     mode T may be a node whose own linking CAS is lost and being
//     retransmitted, or failed and about to be retried by its client. So
//     the client proves the success: header READs from X (which no switch
//     steers: they are not node-sized) look for the node whose next is N,
//     and while the chain ends short of it, wait (2 µs doubling to 1 ms)
//     and walk on from the tail reached, for up to a second (about what an
//     RC requester takes to give up on the late CAS). Found: success, and
//     the node found is the predecessor to retire (the walk is GC traffic:
//     Metrics.GCVerbs; ProofWaits counts the pauses). Every hop is checked;
//     a reclaimed slot on the way (a walk that fell more than T_r behind
//     the chain's growth, on a loaded machine) starts the walk again from
//     the key's shortcut, written only after a proven link, at most four
//     times. A reclaimed slot after that, or no N within the second, leaves
//     the put ErrUncertain: N is never linked again, since it may still
//     appear (and if it came before the shortcut, it is linked, but its
//     predecessor is not known: RetireUnknown).
//   - A word of X's version with a next pointer: X moved; walk on from its
//     successor and CAS again.
//   - A word of another version with a next pointer: the switch steered
//     the CAS to a node that had a successor it did not learn. In chain
//     mode that node may not be in the chain yet (its own link in flight,
//     or failed), nor its successors, so the cursor never moves there: a
//     cursor is always a node of the chain, which is what makes a proof
//     from it a proof. CAS again from X, still fresh (the switch has ended
//     that chain or forgotten that tail; X's own successor comes back if
//     X moved). Anything else (not a header word): walk again from X.
//
// Why a vouch and a proof rather than trust: a CAS chained onto a node whose
// own link is lost or failed still succeeds, on a node hanging outside the
// chain. The switch vouches only once the predecessor is confirmed, which
// chaining makes the common case (all concurrent puts of a key link in one
// round trip, and their ACKs come back in order); the rest are proven.
//
// Where the switch steers this client's READs and vouches for its links
// (Client.chaining: read and write steering in chain mode), a put skips
// the walk to the tail: it CASes the node its persistence READ reached
// (a node-sized READ the switch steers; vouched, it is a node of the
// chain, safe to CAS for T_r/4 more) or its fresh cursor, replacing a
// cursor older than T_r/2 by the MS's latest pointer; the switch chains
// the CAS onto the key's chain end. After an unsteered failure it CASes
// on at the successor the failure returned (up to 4096 times) instead of
// walking: on a hot key a walk ends only in a lull, while a CAS is an
// offer the switch can chain.
//
// Get: a node READ returns a node whose own handle (docs/clover-layout.md)
// says which slot it came from. The node asked for: as without a switch.
// Another slot's node of the key, from a READ back within T_r/2 (a slower
// one is read again: T's slot is safe only that long), steered by a switch:
// without the vouch bit it may be a chain's end not yet (or never) linked,
// so it is ignored and the READ sent again, and after three such READs the
// get walks MaxChase hops with header READs before asking again. With the
// vouch, T is a node of the chain: if T's next is NULL it is the tail, its
// value is returned and the cursor moves to T. If T has a successor (the
// switch's tail lags), the get READs on from the successor (the switch
// steers that READ to the chain's end); steered back to T, it walks
// MaxChase hops unsteered first. A lagging switch thus costs a few READs,
// never a loop. Where gets of a key were steered, a put's persistence READ
// of its cursor, and a recovery's first READ from the shortcut, are
// node-sized too, so that the switch steers them to the tail: one READ
// instead of a walk.
//
// Why versions start hashed: with every slot starting at version 1, a
// steered CAS lands on a T with X's version almost always, is taken for an
// unsteered one, and X is retired as the predecessor instead of T. With
// spread versions that coincidence has probability about 1/255 per steered
// link; its cost is a double retire (ignored by the MS) and a leaked T.
//
// Metrics.WireBytes estimates RoCEv2 bytes per verb (request and one
// response or ACK, IPv4, no VLAN); racks that can count link bytes should.
package clover
