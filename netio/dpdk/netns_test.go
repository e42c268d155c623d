//go:build dpdk && linux

package dpdk

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/netio/internal/nstest"
)

var afSeq int

// TestAFPacketVdevInNamespace runs a DPDK net_af_packet port on one end of
// a veth pair in namespace A and a kernel AF_PACKET netio port on the other
// end in namespace B, and moves frames both ways.
func TestAFPacketVdevInNamespace(t *testing.T) {
	needEAL(t)
	a, b := nstest.Pair(t)
	afSeq++
	name := fmt.Sprintf("net_af_packet%d", afSeq)
	// Probe, start, stop and remove on a thread inside namespace A: the PMD
	// opens its socket there and changes interface flags by name.
	pool := newPool(t, 2047)
	var dp *EthPort
	err := a.Do(func() error {
		if err := Probe(name + ",iface=" + a.Iface); err != nil {
			return err
		}
		var err error
		if dp, err = OpenPort(name, PortConfig{Pool: pool}); err != nil {
			Remove(name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := a.Do(func() error {
			if err := dp.Close(); err != nil {
				return err
			}
			return Remove(name)
		})
		if err != nil {
			t.Errorf("close and remove %s: %v", name, err)
		}
	})
	var kp *netio.AFPacketPort
	if err := b.Do(func() (err error) {
		kp, err = netio.NewAFPacketPort(netio.AFPacketConfig{Interface: b.Iface})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kp.Close() })

	const n = 300
	sizes := []int{60, 128, 512, 1500}
	mk := func(from byte, i int) []byte {
		f := frame(i, sizes[i%len(sizes)])
		f[18] = from
		return f
	}
	for _, dir := range []struct {
		name     string
		from, to netio.Port
		tag      byte
	}{{"dpdk to kernel", dp, kp, 'D'}, {"kernel to dpdk", kp, dp, 'K'}} {
		t.Run(dir.name, func(t *testing.T) {
			stop := time.AfterFunc(10*time.Second, func() { dir.to.Close() })
			defer stop.Stop()
			bufs := newBufs(32)
			for i := 0; i < n; i += 10 {
				var burst [][]byte
				for j := i; j < i+10; j++ {
					burst = append(burst, mk(dir.tag, j))
				}
				if k, err := dir.from.Send(burst); k != 10 || err != nil {
					t.Fatalf("Send = %d, %v", k, err)
				}
				// Receive each burst before sending the next.
				for next := i; next < i+10; {
					k, err := dir.to.Recv(bufs)
					if err != nil {
						t.Fatalf("Recv after %d frames: %v", next, err)
					}
					for _, f := range bufs[:k] {
						if len(f) < 19 || binary.BigEndian.Uint16(f[12:]) != 0x88b5 || f[18] != dir.tag {
							continue // not ours, or our own frame looped back
						}
						if !bytes.Equal(f, mk(dir.tag, next)) {
							t.Fatalf("frame %d differs (len %d)", next, len(f))
						}
						next++
					}
				}
			}
		})
	}
	st, err := dp.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.TxPackets != n || st.TxDropped != 0 || st.RxPackets < n {
		t.Fatalf("dpdk port stats %+v", st)
	}
}
