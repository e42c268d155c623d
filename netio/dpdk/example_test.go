//go:build dpdk

package dpdk_test

import (
	"fmt"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/netio/dpdk"
)

// A loopback ring port driven both ways: the copying netio.Port, and the
// zero-copy burst API that rewrites frames in place. (Needs root; not run
// as a test.)
func Example() {
	if err := dpdk.Init(dpdk.VirtualArgs("example", "net_ring0")); err != nil {
		panic(err)
	}
	pool, err := dpdk.NewMempool("example", 1023, 0, 0)
	if err != nil {
		panic(err)
	}
	port, err := dpdk.OpenPort("net_ring0", dpdk.PortConfig{Pool: pool})
	if err != nil {
		panic(err)
	}
	defer port.Close()

	var p netio.Port = port // copying: the caller's buffers
	p.Send([][]byte{make([]byte, 86)})

	ms := dpdk.AllocMbufSlice(32) // zero-copy: frames stay in DPDK memory
	defer dpdk.FreeMbufSlice(ms)
	n := port.RxBurst(0, ms)
	for _, m := range ms[:n] {
		m.Data()[0] = 0x02 // rewrite in place
		m.Trim(4)          // shrink, as CAS to WRITE does
	}
	sent := port.TxBurst(0, ms[:n])
	dpdk.FreeBulk(ms[sent:n])

	bufs := [][]byte{make([]byte, netio.MaxFrameSize)}
	p.Recv(bufs)
	fmt.Println(len(bufs[0]))
}
