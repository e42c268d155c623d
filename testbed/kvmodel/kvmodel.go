// Package kvmodel is porcupine's model of a key-value store whose keys are
// independent registers: a put sets a key's value, a get returns it, and
// every key starts at 0 (the tests create their keys with zero values).
// Histories are partitioned by key, so porcupine checks each key on its own.
//
// It owns the model only. Each test keeps its own operation types and tells
// Register how to read them; the memory systems' tests (clover, swarm) and
// testbed's linearizability runs record the histories. It imports nothing of
// ours, so any package's tests may use it.
package kvmodel

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// Op is one operation as Register reads it from a history entry.
type Op struct {
	Key   uint64
	Put   bool
	Value uint64 // the value put, or the value a get returned
	// Unknown marks a put whose outcome its client does not know: it may
	// take effect at any time after its call, or never (Witness only).
	Unknown bool
}

// Register returns the model. op reads an operation from its porcupine
// input and output (output is nil when only the input is known).
func Register(op func(input, output any) Op) porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			return PartitionByKey(h, func(input any) uint64 { return op(input, nil).Key })
		},
		Init: func() any { return uint64(0) },
		Step: func(state, input, output any) (bool, any) {
			o := op(input, output)
			if o.Put {
				return true, o.Value
			}
			return o.Value == state.(uint64), state
		},
		DescribeOperation: func(input, output any) string {
			o := op(input, output)
			if o.Put {
				return fmt.Sprintf("put(%d, %#x)", o.Key, o.Value)
			}
			return fmt.Sprintf("get(%d) -> %#x", o.Key, o.Value)
		},
	}
}

// PartitionByKey splits a history by key, keys in order of first
// appearance.
func PartitionByKey(h []porcupine.Operation, key func(input any) uint64) [][]porcupine.Operation {
	by := map[uint64][]porcupine.Operation{}
	var keys []uint64
	for _, op := range h {
		k := key(op.Input)
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], op)
	}
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		out = append(out, by[k])
	}
	return out
}
