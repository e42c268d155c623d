package testbed

import (
	"fmt"

	"github.com/swordbox/swordbox/clover"
)

// DefaultCloverChunks is the smallest slab area a Clover memory node gets
// on the racks: 96 chunks of clover.DefaultChunkSize (1 MiB).
const DefaultCloverChunks = 96

// CloverChunks sizes a Clover memory node's slab area, in chunks of
// clover.DefaultChunkSize, for keys keys of valueSize-byte values and
// threads client threads: every key's node twice over (the live one, and
// room for the versions retired and waiting out T_r), and two ALLOC batches
// per thread (the slots it holds, and the batch it fetches when they run
// out), never fewer than DefaultCloverChunks. It refuses a value too large
// for a slab class, or a region larger than a Clover LH can address.
func CloverChunks(keys, valueSize, threads int) (int, error) {
	if keys < 1 || valueSize < 1 || threads < 1 {
		return 0, fmt.Errorf("clover region: %d keys, %d-byte values, %d threads: each must be at least 1", keys, valueSize, threads)
	}
	slot, err := cloverSlot(valueSize)
	if err != nil {
		return 0, fmt.Errorf("clover region: %d-byte values: %w", valueSize, err)
	}
	need := slot * (2*keys + 2*threads*clover.MaxBatch)
	chunks := max(DefaultCloverChunks, (need+clover.DefaultChunkSize-1)/clover.DefaultChunkSize)
	layout := CloverLayout(keys, chunks)
	if layout.Size() > clover.MaxRegionSize {
		// Each key costs two slots and a shortcut word with its spare;
		// 2 MiB cover the rounding of the shortcut area and the chunks.
		most := max(0, (clover.MaxRegionSize-2*threads*clover.MaxBatch*slot-2<<20)/(2*slot+2*clover.ShortcutSize))
		return 0, fmt.Errorf("clover region: %d keys of %d-byte values (%d-byte slots) with %d threads need %d MiB on the memory node, more than the %d MiB a Clover LH addresses (at most about %d keys of that size)",
			keys, valueSize, slot, threads, layout.Size()>>20, clover.MaxRegionSize>>20, most)
	}
	return chunks, nil
}

// CloverLayout is a memory node's Clover region for keys keys and chunks
// slab chunks of clover.DefaultChunkSize: one shortcut per key with room for
// inserts (workload D) and the metadata server's reserved first index.
func CloverLayout(keys, chunks int) clover.RegionLayout {
	return clover.RegionLayout{Shortcuts: 2*keys + 64, Chunks: chunks, ChunkSize: clover.DefaultChunkSize}
}

// cloverSlot is the slab slot a Clover node of valueSize-byte values takes.
func cloverSlot(valueSize int) (int, error) {
	class, err := clover.ClassFor(clover.NodeSize(valueSize))
	if err != nil {
		return 0, err
	}
	return clover.SlabClasses[class], nil
}
