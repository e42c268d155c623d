package kvmodel

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestWitness(t *testing.T) {
	o := func(call, ret int64, put bool, v uint64) porcupine.Operation {
		return porcupine.Operation{Input: in{key: 1, value: v, put: put}, Call: call, Return: ret}
	}
	unknown := func(call int64, v uint64) porcupine.Operation {
		return porcupine.Operation{Input: in{key: 1, value: v, put: true, unknown: true}, Call: call, Return: 1 << 62}
	}
	c := func(at int64, prev, v uint64) Commit { return Commit{Key: 1, At: at, Prev: prev, Value: v} }
	for _, tc := range []struct {
		name    string
		h       []porcupine.Operation
		commits []Commit
		want    string // "" = the witness holds
	}{
		{"no puts, gets of 0", []porcupine.Operation{o(0, 5, false, 0)}, nil, ""},
		{"put then get", []porcupine.Operation{o(0, 10, true, 7), o(11, 20, false, 7)}, []Commit{c(5, 0, 7)}, ""},
		{"get concurrent with the put sees the old value",
			[]porcupine.Operation{o(0, 10, true, 7), o(2, 4, false, 0)}, []Commit{c(5, 0, 7)}, ""},
		{"get concurrent with the put sees the new value",
			[]porcupine.Operation{o(0, 10, true, 7), o(6, 12, false, 7)}, []Commit{c(5, 0, 7)}, ""},
		{"stale get after the put returned",
			[]porcupine.Operation{o(0, 10, true, 7), o(11, 20, false, 0)}, []Commit{c(5, 0, 7)}, "returned 0x0"},
		{"get reads the future",
			[]porcupine.Operation{o(0, 4, false, 7), o(5, 10, true, 7)}, []Commit{c(6, 0, 7)}, "returned 0x7"},
		{"get of a value never committed", []porcupine.Operation{o(0, 4, false, 9)}, nil, "never committed"},
		{"acknowledged put never committed", []porcupine.Operation{o(0, 4, true, 9)}, nil, "committed never"},
		{"commit outside the put's interval", []porcupine.Operation{o(0, 4, true, 9)}, []Commit{c(6, 0, 9)}, "committed at 6"},
		{"fork: a link onto a value that was not the key's",
			[]porcupine.Operation{o(0, 10, true, 7), o(0, 10, true, 8)}, []Commit{c(5, 0, 7), c(6, 0, 8)}, "which the chain had passed"},
		{"a gap between two puts: the get sees the first",
			[]porcupine.Operation{o(0, 3, true, 7), o(8, 12, true, 8), o(4, 9, false, 7)}, []Commit{c(2, 0, 7), c(10, 7, 8)}, ""},
		{"overwritten before the get began",
			[]porcupine.Operation{o(0, 3, true, 7), o(4, 6, true, 8), o(7, 9, false, 7)}, []Commit{c(2, 0, 7), c(5, 7, 8)}, "the key's over [2, 5]"},
		{"a link after a record in flight commits when the chain reaches it",
			[]porcupine.Operation{o(0, 10, true, 7), o(0, 10, true, 8), o(6, 9, false, 7), o(6, 11, false, 8)},
			[]Commit{c(5, 7, 8), c(7, 0, 7)}, ""},
		{"a get of a record linked after one not yet in the chain",
			[]porcupine.Operation{o(0, 10, true, 7), o(0, 10, true, 8), o(5, 6, false, 8)},
			[]Commit{c(5, 7, 8), c(7, 0, 7)}, "returned 0x8"},
		{"a put acknowledged before the chain reached it",
			[]porcupine.Operation{o(0, 10, true, 7), o(0, 6, true, 8)},
			[]Commit{c(5, 7, 8), c(7, 0, 7)}, "put 0x8 over [0, 6] committed at 7"},
		{"a link after a record that never joins the chain",
			[]porcupine.Operation{o(0, 6, true, 8)}, []Commit{c(5, 7, 8)}, "committed never"},
		{"two links after one record not yet in the chain",
			[]porcupine.Operation{o(0, 10, true, 7), o(0, 10, true, 8), o(0, 10, true, 9)},
			[]Commit{c(4, 7, 8), c(5, 7, 9), c(6, 0, 7)}, "which 0x8 was linked after"},
		{"a put of unknown outcome never committed", []porcupine.Operation{unknown(0, 7)}, nil, ""},
		{"a put of unknown outcome committed after its call",
			[]porcupine.Operation{unknown(0, 7), o(50, 60, false, 7)}, []Commit{c(40, 0, 7)}, ""},
		{"a put of unknown outcome committed before its call",
			[]porcupine.Operation{unknown(50, 7)}, []Commit{c(40, 0, 7)}, "called at 50 committed at 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Witness(tc.h, func(i, _ any) Op { x := i.(in); return Op{Key: x.key, Put: x.put, Value: x.value, Unknown: x.unknown} }, tc.commits)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("witness broken: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
			// Where the witness holds, porcupine agrees.
			if tc.want == "" && !porcupine.CheckOperations(Register(func(i, _ any) Op { x := i.(in); return Op{Key: x.key, Put: x.put, Value: x.value, Unknown: x.unknown} }), tc.h) {
				t.Fatal("the witness holds but porcupine finds the history not linearizable")
			}
		})
	}
}
