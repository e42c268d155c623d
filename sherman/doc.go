// Package sherman is Sherman (Wang et al., SIGMOD'22): a B-link tree on
// disaggregated memory whose compute-node threads reach memory nodes only by
// one-sided RDMA verbs, with write locks in the memory nodes' NIC device
// memory.
//
// It owns the page layout (layout.go), the lock hashing (CityHash64,
// cityhash.go), the memory node's directory (memnode.go: MALLOC and
// NEW_ROOT over two-sided SEND/RECV), the compute node's shared state
// (host.go: the hierarchical lock table and the level-1 index cache), the
// client thread (client.go) and the invariant checker (check.go). It
// programs against roce/verbs only, so it runs unchanged on the software
// RNIC or an RDMA NIC, with or without the middlebox in the path. It does
// not assemble racks or run benchmarks (testbed does), and knows nothing of
// the middlebox.
//
// # Using it
//
//	dir, _ := sherman.NewMemoryNode(sherman.MemoryNodeConfig{Node: 0, Data: dataMR, Locks: dmMR}, dev, cq)
//	dir.AddClient(rpcQP)                 // per client thread, the memory side of its RPC QP
//	go dir.Serve(ctx)
//	host := sherman.NewHost(sherman.HostConfig{ID: 1, MemoryNodes: 1, HierarchicalLocks: true})
//	c, _ := sherman.NewClient(ctx, sherman.ClientConfig{Host: host, Thread: 0, Device: cnDev, CQ: cq,
//		MemoryNodes: []sherman.MemoryNodeConn{{QP: qp, RPC: rpcQP, Remote: dir.Remote()}}})
//	c.Insert(ctx, k, v); v, ok, _ := c.Search(ctx, k); c.Delete(ctx, k)
//
// A Client is one compute-node thread (not safe for concurrent use; the
// only consumer of its CQ). Threads of one compute node share a Host.
// Threads take time and waits from their device's clock (verbs.Clock): the
// verb timeout, retry pauses, and the wait for a host-local lock (a clock
// event), never package time or channels (TestNoWallClock checks the
// source), so they run unchanged in a virtual-time rack.
//
// # What follows the authors' code (thustorage/Sherman)
//
// The rTX paper's digest (shared/notes/rtx-lolkv-sherman.md, part C) has
// the sources; the points here are the ones this package implements.
//
//   - Global address: node in the low 16 bits, offset in the high 48 (the
//     bit-field union on x86); 0 is null. Chunk 0 of every node is reserved;
//     the root pointer lives on node 0 at half the chunk size.
//   - Pages of 1 KiB: 8 unused bytes (CRC / embedded lock), front version,
//     35-byte header (leftmost, sibling, level, last index, lowest and
//     highest fence), records, rear version. Internal pages hold 61 sorted
//     {key, child} entries; leaves 54 unsorted 18-byte entries {4-bit
//     front version, key, value, 4-bit rear version}. A page is consistent
//     when its front and rear versions agree, an entry when its versions
//     agree and its value is not 0. A leaf has a null leftmost pointer.
//   - Locks: 256 KiB of device memory per node, 32,768 words; a page's lock
//     is word CityHash64(address) mod 32,768 on the page's node. Acquire is
//     CMP_SWAP(0 -> (host << 32) + thread + 1), retried without backoff;
//     release is an 8-byte WRITE of 0, chained after the write-back in one
//     doorbell on the same QP (write_page_and_unlock) so RC order makes it
//     visible only after the data. Without a split only the changed
//     18-byte leaf entry is written back.
//   - Hierarchical locks: a ticket lock per (node, lock word) on the host;
//     a releaser with local waiters hands the remote lock over (no WRITE of
//     0, the page written alone) unless it has been handed over 8 times.
//   - Search: the level-1 index cache names the leaf (one 1 KiB READ);
//     else READ the root pointer and pages top-down, moving right on
//     k >= highest; pages re-read until consistent. A cached leaf that does
//     not cover the key is stale: the entry is dropped and the search starts
//     from the root.
//   - Insert/update/delete: lock the leaf, READ it, change the entry (bump
//     its versions) and write it back with the release. A full leaf is
//     sorted and split in half: the sibling is written first, then the page
//     with the release, then the split key goes to the parent from the
//     path (or by a descent from the root when the leaf came from the
//     cache); internal pages split the same way. A split root gets a new
//     root: WRITE it, CAS the root pointer, then NEW_ROOT to every
//     directory. Delete sets the value to 0.
//   - Allocation: each thread carves pages out of a chunk it got with a
//     MALLOC to a directory, round robin over the nodes.
//
// # Decisions where code and papers are silent or do not fit
//
//   - The index cache is always on (Sherman enables it from root level 3)
//     and unbounded; the root pointer is read on every operation that
//     misses it (clients are not co-located with a directory, so NEW_ROOT
//     does not reach them; directories record it, Root).
//   - A lost root CAS (another thread installed a newer root first; the
//     authors' code asserts) inserts the split key by a descent from the
//     new root; a descent that finds the root lower than the level it must
//     insert into waits for the root to grow.
//   - Every release and write-back waits for its completion (Sherman posts
//     some unsignalled and goes on): an operation returns only once its
//     effects are visible, which linearizability tests need.
//   - A CAS that returns the thread's own tag, a page of the wrong level
//     under a lock, or a descent longer than 10,000 pages is reported as
//     ErrCorrupt rather than asserted; 10^6 failed CAS on an unchanged
//     holder is ErrDeadlock, as in the authors' code.
//   - Chunks default to 1 MiB (Sherman: 32 MiB); range queries, the CRC
//     and coroutines are not implemented (threads are goroutines).
//   - AddUnderLock and WithLock run the lock protocol on any word (the
//     authors' lock_bench); the tests use them for mutual exclusion and
//     the release-ordering hazard.
package sherman
