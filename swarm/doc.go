// Package swarm is SWARM-KV (SOSP'24, "SWARM: Replicating Shared
// Disaggregated-Memory Data in No Time"): a key-value store whose every key
// is a Safe-Guess register replicated on N = 2f+1 memory nodes, each
// replica an In-n-Out max register, reached with one-sided verbs only.
//
// It owns the memory-node layout (layout.go), the client (client.go: verbs,
// completions, local buffers, the clock; protocol.go: the reliable max
// register, the timestamp lock, Safe-Guess, In-n-Out, KV operations), and
// the index and membership services (index.go). It programs only against
// roce/verbs, so it runs on the software RNIC or an RDMA NIC, with or
// without the middlebox in the path. It does not assemble racks or run
// benchmarks (testbed: SwarmRack, RunSwarmCell). The memory nodes run
// nothing: their RNIC serves a zeroed region of Layout.RegionSize bytes.
//
// # Using it
//
//	l := swarm.Layout{Keys: 1024, Writers: 8, ValueSize: 64, LogBuffers: 2048}
//	mr, _ := memDevice.Register(make([]byte, l.RegionSize()), verbs.AccessAll) // each memory node
//	idx, mem := swarm.NewIndex(l.Keys), swarm.NewMembership(3, l.Writers)
//	id, _ := mem.Join()
//	c, _ := swarm.NewClient(swarm.Config{ID: id, Layout: l, Device: dev, CQ: cq, Index: idx, Membership: mem,
//		Nodes: []swarm.NodeConn{{QP: qp0, Region: mr0}, {QP: qp1, Region: mr1}, {QP: qp2, Region: mr2}}})
//	c.Put(ctx, key, value); c.Get(ctx, key, buf); c.Update(ctx, key, value)
//
// A Client is one application thread (one operation at a time, as the
// paper's proofs assume), the only consumer of its CQ, on which its queue
// pairs to every memory node complete. Its timestamps and waits come from
// its device's clock (verbs.Clock), never from package time
// (TestNoWallClock checks the source), so it runs unchanged in a
// virtual-time rack.
//
// # What follows the paper (digest: ../shared/notes/swarm.md)
//
//   - Reliable max register (§2.3, App. A): per key and node a lower bound
//     c[i] of the node's maximum; a write MAXes every node not known to
//     hold the value and waits for a majority (no round trip if one is
//     known to); a read takes the maximum of the first majority to answer
//     and writes it back, waiting, when fewer than a majority is known to
//     hold it.
//   - Timestamp lock (§3.3, App. B): one 8-byte word per writer per key on
//     every node holding (write ID, mode); TryLock runs each node's CAS
//     loop in parallel (each failed CAS shows a larger word), waits for a
//     majority to leave its loop, and fails on a larger timestamp or the
//     same one in the other mode. It never unlocks.
//   - Safe-Guess (§3, App. C): a write guesses a timestamp, writes
//     (ts, GUESSED, v) and reads the register in the same round trip (the
//     READ behind the CAS on each queue pair); if nothing larger showed,
//     it returns and verifies in the background; otherwise
//     TryLock(ts, WRITE) decides: won, it rewrites with a timestamp above
//     the maximum, already VERIFIED; lost, a reader locked it and it is
//     linearized. A read returns a VERIFIED maximum at once; a GUESSED one
//     seen in two sequential reads is locked in READ mode, returned and
//     verified in the background; a newer tuple of a writer already seen
//     returns the older one's value.
//   - In-n-Out (§4): per key and node, one READ fetches the metadata array
//     (one word per writer, so CAS-MAX never contends: the paper's
//     recommendation) and the in-place copy; a write posts the entry into
//     its out-of-place buffer and the CAS-MAX in one doorbell (RC order
//     makes the buffer visible first); a read uses the in-place copy when
//     its hash checks and it names the maximum's write, and otherwise reads
//     the out-of-place buffer (one more round trip). CAS-MAX expects the
//     value the previous CAS on the writer's word swapped in; a stale
//     expectation costs one more CAS.
//   - Common case: a get is one round trip (one READ per replica), an
//     update one round trip (WRITE, CAS, READ per replica), as in the
//     paper's Table 2 (TestRoundTripsPerOp counts it).
//   - Memory-node failure: no reconfiguration; operations continue on any
//     majority.
//
// # Decisions where the paper is silent or the authors' code differs
//
//   - Every round goes to all N replicas and completes on the first
//     majority (the authors' code contacts a majority and the lazy replica
//     only when a node is marked dead). A crashed memory node then costs no
//     wait and needs no failure detector; the price is N-f-1 extra verbs
//     per round. A node with MaxOutstanding verbs unanswered is skipped
//     until it drains; a round brings it in as soon as it has room.
//   - The in-place copy is written at every replica in the background (the
//     code writes it only at a primary chosen by key hash), so any replica
//     of the first majority can serve a one-round-trip get, also after a
//     crash.
//   - Metadata word: 40-bit timestamp in ticks of Config.Tick (100 ns: 30
//     hours), 8-bit writer id, 15-bit buffer index, VERIFIED flag (the code:
//     32/24/7/1 with 466 ns ticks). A writer's timestamps strictly increase,
//     so the buffer index never decides an order.
//   - Hash: FNV-1a 64 over the write's ID (timestamp, writer, buffer: not
//     the flag) and the value (the code: XXH3-128 over buffer id, key and
//     value). Out-of-place buffers carry the same header, so a reader
//     recognizes a reused or torn buffer and reads again.
//   - Clock: local clock plus an offset that only grows; seeing a larger
//     timestamp pushes the clock to it plus one round trip (an average of
//     this client's measured round trips), like the code's hybrid clock.
//   - The writer's read in the first round is not written back: it only
//     decides between the fast and the slow path (the digest's "weak
//     read"; the paper's proofs do not cover it, porcupine checks it).
//   - The "seen earlier" check of a read starts from the tuple this client
//     read last on the key (as the code does); the "newer tuple of the same
//     writer" rule uses only tuples seen within the read.
//   - Buffer recycling (§4.5 leaves it to a membership protocol; the code
//     never recycles): a writer's buffers of a key are superseded once its
//     later write of that key is at a majority, and reused Grace (200 ms)
//     later. A read that started more than Grace/2 ago restarts instead of
//     writing back, so no write-back lands in a reused buffer as long as a
//     verb takes less than Grace/2 (the bounded-delay assumption the paper
//     also makes for recycling). A writer holds at most one buffer per key
//     it wrote last, so LogBuffers must exceed the keys it writes.
//   - Index: an in-process service shared by a deployment's clients (the
//     paper treats it as a reliable black box); clients cache slots and
//     count misses. Put inserts a missing key; Update fails on one; a
//     concurrent insert of one key ends with one slot. Delete is not
//     implemented (nor is it in the authors' code).
//   - Failure detection: a queue pair that completes work in error (the
//     RNIC's retry limit) takes its node away for that client only;
//     Config.ReportCrashes also tells the membership service, which then
//     takes it away from every client. A client that loses a majority gets
//     ErrNoMajority.
//   - A Safe-Guess read gives up after MaxReadIters iterations (default
//     2·Writers+3, above the paper's 2n+1 bound) with ErrReadBound.
package swarm
