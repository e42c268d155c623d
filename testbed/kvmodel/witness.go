package kvmodel

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Commit is a link as the memory executed it: at time At, the record
// holding Value was linked after the record holding Prev (for Clover, the
// linking CAS on Prev's node naming Value's node).
type Commit struct {
	Key         uint64
	At          int64
	Prev, Value uint64
}

// Witness checks a history against the links the memory executed: it tries
// one linearization, each put where its value became the key's and each
// get at a point of its interval where its value was the key's. The key's
// value is the end of the chain of links from its initial value 0. A link
// after a record not yet in the chain (a switch that chains links in
// flight makes them) commits nothing until the chain reaches its record;
// then every value of the attached run commits at that instant, in order.
// Links are taken in the order given (the memory's execution order) and
// values must be unique per key.
//
// A nil error proves the history linearizable, with no search. An error
// lists what breaks this witness (an acknowledged put not committed within
// its interval, a link after a record the chain had passed, a get whose
// value was not the key's at any point of its interval): a violation,
// unless another order of the puts than the memory's explains the history.
//
// It complements porcupine (Register): it needs the links, which only a
// rack that sees its memory records, and in exchange it is linear in the
// history, where porcupine's search can take minutes on hundreds of
// overlapping operations per key.
func Witness(h []porcupine.Operation, op func(input, output any) Op, commits []Commit) error {
	type span struct{ from, to int64 } // the value was the key's over [from, to]
	type kv struct{ key, value uint64 }
	spans := map[kv]*span{}
	tail := map[uint64]uint64{} // the key's value: its chain's end
	after := map[kv]uint64{}    // links after records not yet in the chain
	var bad []string
	commit := func(key, v uint64, at int64) {
		if s, ok := spans[kv{key, tail[key]}]; ok {
			s.to = at
		} else {
			spans[kv{key, 0}] = &span{math.MinInt64, at}
		}
		if _, dup := spans[kv{key, v}]; dup || v == 0 {
			bad = append(bad, fmt.Sprintf("key %d: at %d value %#x committed again", key, at, v))
		}
		spans[kv{key, v}] = &span{at, math.MaxInt64}
		tail[key] = v
	}
	for _, c := range commits {
		if c.Prev != tail[c.Key] {
			if _, in := spans[kv{c.Key, c.Prev}]; in || c.Prev == 0 {
				bad = append(bad, fmt.Sprintf("key %d: at %d a put linked %#x after %#x, which the chain had passed", c.Key, c.At, c.Value, c.Prev))
			} else if v, twice := after[kv{c.Key, c.Prev}]; twice {
				bad = append(bad, fmt.Sprintf("key %d: at %d a put linked %#x after %#x, which %#x was linked after", c.Key, c.At, c.Value, c.Prev, v))
			} else {
				after[kv{c.Key, c.Prev}] = c.Value
			}
			continue
		}
		for v, ok := c.Value, true; ok; v, ok = after[kv{c.Key, v}] {
			delete(after, kv{c.Key, tail[c.Key]})
			commit(c.Key, v, c.At)
		}
	}
	for _, o := range h {
		in := op(o.Input, o.Output)
		s, ok := spans[kv{in.Key, in.Value}]
		if !ok && in.Value == 0 && tail[in.Key] == 0 {
			s, ok = &span{math.MinInt64, math.MaxInt64}, true
		}
		switch {
		case in.Put && in.Unknown && ok && s.from < o.Call:
			bad = append(bad, fmt.Sprintf("key %d: put %#x of unknown outcome called at %d committed at %d", in.Key, in.Value, o.Call, s.from))
		case in.Put && in.Unknown:
		case in.Put && (!ok || s.from < o.Call || s.from > o.Return):
			at := "never"
			if ok {
				at = fmt.Sprintf("at %d", s.from)
			}
			bad = append(bad, fmt.Sprintf("key %d: put %#x over [%d, %d] committed %s", in.Key, in.Value, o.Call, o.Return, at))
		case in.Put:
		case !ok:
			bad = append(bad, fmt.Sprintf("key %d: get over [%d, %d] returned %#x, never committed", in.Key, o.Call, o.Return, in.Value))
		case s.from > o.Return || s.to < o.Call:
			bad = append(bad, fmt.Sprintf("key %d: get over [%d, %d] returned %#x, the key's over [%d, %d]", in.Key, o.Call, o.Return, in.Value, s.from, s.to))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	n := len(bad)
	if len(bad) > 10 {
		bad = bad[:10]
	}
	return fmt.Errorf("kvmodel: %d operations or commits break the witness: %s", n, strings.Join(bad, "; "))
}
