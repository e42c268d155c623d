package netio_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/netio"
)

// A link between two components, with 1% loss and some reordering from A
// to B. Buffers are allocated once and reused for every burst.
func ExampleNewLink() {
	a, b, err := netio.NewLink("client", "server", netio.LinkConfig{
		Capacity: 256,
		AtoB:     netio.Faults{Drop: 0.01, Reorder: 0.05, ReorderDepth: 2, Seed: 1},
	})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()

	frame := make([]byte, 64)
	for i := range 100 {
		frame[14] = byte(i)
		a.Send([][]byte{frame})
	}
	a.SetFaults(netio.Faults{}) // release what is still held back

	bufs := make([][]byte, 32)
	for i := range bufs {
		bufs[i] = make([]byte, netio.MaxFrameSize)
	}
	got := 0
	for got < int(a.Stats().FramesOut) {
		n, _ := b.Recv(bufs)
		got += n
	}
	s := a.Stats()
	fmt.Println(s.FramesIn, s.FramesOut+s.Dropped, got)
	// Output: 100 100 99
}

// Recording what a port sends and receives for Wireshark.
func ExampleNewTap() {
	a, b := netio.Pipe()
	var capture bytes.Buffer // or netio.NewTapFile(a, "a.pcap")
	tap, err := netio.NewTap(a, &capture)
	if err != nil {
		panic(err)
	}
	tap.Send([][]byte{make([]byte, 60)})
	b.Recv([][]byte{make([]byte, netio.MaxFrameSize)})
	tap.Close()
	b.Close()
	fmt.Println(tap.Frames(), capture.Len()) // 24-byte header, 16-byte record header, 60 bytes
	// Output: 1 100
}

// Faults on a port that has no injector of its own, such as AF_PACKET.
func ExampleNewFaultPort() {
	a, b := netio.Pipe()
	lossy, err := netio.NewFaultPort(a, netio.Faults{Delay: time.Millisecond, Seed: 7})
	if err != nil {
		panic(err)
	}
	defer lossy.Close()
	start := time.Now()
	lossy.Send([][]byte{make([]byte, 60)})
	b.Recv([][]byte{make([]byte, netio.MaxFrameSize)})
	fmt.Println(time.Since(start) >= time.Millisecond, lossy.Stats().Delayed)
	// Output: true 1
}
