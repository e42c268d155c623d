package rnic_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Two RNICs on an in-memory link: a memory node exposing one region through
// an Acceptor, and a client that connects a QP (in process, without TCP),
// writes a word and adds to it with FETCH_ADD.
func Example() {
	a, b := netio.Pipe()
	client, _ := rnic.New(a, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 1}, IP: [4]byte{10, 0, 0, 1}})
	node, _ := rnic.New(b, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 2}, IP: [4]byte{10, 0, 0, 2}})
	defer client.Close()
	defer node.Close()

	mem, _ := node.Register(make([]byte, 4096), verbs.AccessAll)
	dialer := &rnic.LocalDialer{Dev: client, Nodes: map[string]*rnic.Acceptor{
		"node0": {Dev: node, Regions: []verbs.RemoteRegion{mem.Remote()}},
	}}
	cq := client.NewCQ(16)
	conn, err := dialer.Dial(context.Background(), "node0", verbs.QPConfig{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		fmt.Println(err)
		return
	}
	remote := conn.Remote[0]
	local, _ := client.Register(make([]byte, 16), verbs.AccessAll)
	binary.LittleEndian.PutUint64(local.Bytes(), 40)
	err = conn.QP.PostSend([]verbs.SendWR{ // one doorbell, two requests
		{ID: 1, Op: verbs.OpWrite, SG: []verbs.SGE{{Addr: local.Addr(), Length: 8, LKey: local.LKey()}}, RemoteAddr: remote.Addr, RKey: remote.RKey},
		{ID: 2, Op: verbs.OpFetchAdd, SG: []verbs.SGE{{Addr: local.Addr() + 8, Length: 8, LKey: local.LKey()}}, RemoteAddr: remote.Addr, RKey: remote.RKey, SwapAdd: 2, Flags: verbs.Signaled},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wcs := make([]verbs.WC, 4)
	n, _ := cq.Wait(ctx, wcs)
	fmt.Println(n, wcs[0].Op, wcs[0].Status, wcs[0].Orig, binary.LittleEndian.Uint64(mem.Bytes()))
	// Output: 1 FETCH_ADD SUCCESS 40 42
}

// A device's clock is the only source of time and waits for the code that
// runs on it: a CQ wait bounded in the clock's time, a pause, and a
// wake-up between two goroutines. On a software RNIC it is the wall clock.
func ExampleDevice_Clock() {
	a, _ := netio.Pipe()
	dev, _ := rnic.New(a, rnic.Config{MAC: [6]byte{2, 0, 0, 0, 0, 1}, IP: [4]byte{10, 0, 0, 1}})
	defer dev.Close()
	var clk verbs.Clock = dev.Clock()

	cq, _ := dev.CreateCQ(16)
	ctx, cancel := clk.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	var wcs [4]verbs.WC
	_, err := cq.Wait(ctx, wcs[:]) // nothing completes
	fmt.Println(err)

	t0 := clk.Now()
	_ = clk.Sleep(context.Background(), time.Millisecond)
	fmt.Println(clk.Now()-t0 >= time.Millisecond)

	ev := clk.NewEvent()
	go ev.Set()
	fmt.Println(ev.Wait(context.Background()))
	// Output:
	// context deadline exceeded
	// true
	// <nil>
}
