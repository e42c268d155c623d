//go:build dpdk

package middlebox

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio/dpdk"
)

// RunDPDK between net_ring0 (client side) and net_ring1 (server side),
// both loopbacks: non-RoCE frames pass to the other side, come back as that
// side's input, and so bounce between the two rings for as long as the
// loop runs. When it stops, every frame is in one of the rings exactly
// once, unchanged (what was queued at the end was flushed), and both sides
// received and sent.
func TestRunDPDKConservesFrames(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("DPDK without hugepages needs root here")
	}
	eal := dpdk.VirtualArgs(fmt.Sprintf("swordbox-mbox-%d", os.Getpid()), "net_ring0", "net_ring1")
	if err := dpdk.Init(eal); err != nil {
		t.Fatal(err)
	}
	s, err := NewSharded(testConfig(true, true), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, burst := range []int{-1, maxDPDKBurst + 1} {
		if err := RunDPDK(context.Background(), s, DPDKConfig{EAL: eal, ClientPort: "net_ring0", ServerPort: "net_ring1", Burst: burst}); err == nil {
			t.Fatalf("burst %d accepted", burst)
		}
	}
	pool, err := dpdk.NewMempool(fmt.Sprintf("runtest%d-%d", os.Getpid(), poolSeq.Add(1)), 1023, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Free()
	const n = 300
	want := map[string]bool{}
	ms := make([]*dpdk.Mbuf, 1024)
	if err := pool.AllocBulk(ms[:n]); err != nil {
		t.Fatal(err)
	}
	for i, mb := range ms[:n] {
		f := make([]byte, 60+i%40)
		copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5}) // not IPv4: passed through
		binary.BigEndian.PutUint32(f[14:], uint32(i))
		want[string(f)] = true
		if err := mb.SetData(f); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := dpdk.OpenPort("net_ring0", dpdk.PortConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	if k := cp.TxBurst(0, ms[:n]); k != n {
		t.Fatalf("inject: %d of %d", k, n)
	}
	cp.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunDPDK(ctx, s, DPDKConfig{EAL: eal, ClientPort: "net_ring0", ServerPort: "net_ring1", Burst: 7})
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, name := range []string{"net_ring0", "net_ring1"} {
		p, err := dpdk.OpenPort(name, dpdk.PortConfig{Pool: pool})
		if err != nil {
			t.Fatal(err)
		}
		for k := p.RxBurst(0, ms); k > 0; k = p.RxBurst(0, ms) {
			for _, mb := range ms[:k] {
				if !want[string(mb.Data())] {
					t.Errorf("%s: unexpected or duplicate frame %x", name, mb.Data())
				}
				delete(want, string(mb.Data()))
				got++
			}
			dpdk.FreeBulk(ms[:k])
		}
		p.Close()
	}
	c := s.Counters()
	if got != n || len(want) != 0 || c.TotalDrops() != 0 || c.RxClient <= n || c.RxServer <= n {
		t.Fatalf("%d of %d frames back, %d missing; %s", got, n, len(want), c.String())
	}
	if a := pool.Available(); a != 1023 {
		t.Fatalf("%d of 1023 mbufs back in the test's pool", a)
	}
	t.Logf("%s", c.String())
}
