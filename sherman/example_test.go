package sherman_test

import (
	"context"
	"fmt"

	"github.com/swordbox/swordbox/sherman"
	"github.com/swordbox/swordbox/testbed"
)

// A page's lock is a word of its memory node's device memory, chosen by
// CityHash64 of the page's global address.
func ExampleLockIndex() {
	page := sherman.Addr(0, 1<<20) // node 0, first page of chunk 1
	fmt.Println(page, sherman.LockIndex(page) < sherman.NumLocks)
	// Output: 0:0x100000 true
}

// One client thread on a software rack: insert, update, search, delete.
func ExampleClient() {
	ctx := context.Background()
	r, err := testbed.NewShermanRack(ctx, testbed.ShermanConfig{Mode: testbed.ShermanPlain, Threads: 1, ClientHosts: 1, MemorySize: 4 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	c := r.Clients[0]
	_ = c.Insert(ctx, 42, 1)
	_ = c.Insert(ctx, 42, 2)
	v, ok, _ := c.Search(ctx, 42)
	fmt.Println(v, ok)
	_ = c.Delete(ctx, 42)
	_, ok, _ = c.Search(ctx, 42)
	fmt.Println(ok)
	// Output:
	// 2 true
	// false
}
