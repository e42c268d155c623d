package ycsb_test

import (
	"fmt"
	"strings"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

// Example generates workload A for two clients: each gets its own
// deterministic stream, and values come from the stream.
func Example() {
	w, err := ycsb.New(ycsb.Config{Workload: ycsb.WorkloadA, RecordCount: 1000, OperationCount: 6, ValueSize: 16, Clients: 2, Seed: 42})
	if err != nil {
		panic(err)
	}
	fmt.Println("load key 0 as", ycsb.KeyName(w.RecordKey(0)))
	for c := 0; c < 2; c++ {
		s := w.Stream(c)
		v := make([]byte, 16)
		var op ycsb.Op
		n := 0
		for s.Next(&op) {
			if op.Type == ycsb.OpUpdate {
				s.FillValue(v)
			}
			n++
		}
		fmt.Printf("client %d: %d operations\n", c, n)
	}
	// Output:
	// load key 0 as user6284781860667377211
	// client 0: 3 operations
	// client 1: 3 operations
}

// ExampleTraceSource replays operations from a YCSB basic-binding log.
func ExampleTraceSource() {
	log := `"recordcount"="1000"
READ usertable user6284781860667377211 [ field0 ]
UPDATE usertable user8517097267634966620 [ field0=abcd ]
`
	src := ycsb.NewTraceSource(strings.NewReader(log))
	var op ycsb.Op
	for src.Next(&op) {
		fmt.Println(op.Type, op.Key, op.ValueLen)
	}
	fmt.Println("error:", src.Err())
	// Output:
	// READ 6284781860667377211 0
	// UPDATE 8517097267634966620 4
	// error: <nil>
}
