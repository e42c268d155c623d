package netio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio/internal/nstest"
)

// testEtherType marks the test's frames (IEEE 802 local experimental 1), so
// that anything else the kernel might put on the wire is ignored.
const testEtherType = 0x88b5

func testFrame(seq uint64, size int) []byte {
	f := make([]byte, size)
	copy(f[0:6], []byte{0x02, 0, 0, 0, 0, 0x02})
	copy(f[6:12], []byte{0x02, 0, 0, 0, 0, 0x01})
	binary.BigEndian.PutUint16(f[12:], testEtherType)
	binary.BigEndian.PutUint64(f[14:], seq)
	for i := 22; i < size; i++ {
		f[i] = byte(seq) + byte(i)
	}
	return f
}

func openAF(t *testing.T, e nstest.End) *AFPacketPort {
	t.Helper()
	var p *AFPacketPort
	err := e.Do(func() (err error) {
		p, err = NewAFPacketPort(AFPacketConfig{Interface: e.Iface})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// recvTest receives frames of the test's EtherType until want have arrived
// or the deadline passes, checking contents and order.
func recvTest(t *testing.T, p Port, first uint64, want int, size int) {
	t.Helper()
	bufs := newBufs(32)
	next := first
	deadline := time.AfterFunc(5*time.Second, func() { p.Close() })
	defer deadline.Stop()
	for next < first+uint64(want) {
		n, err := p.Recv(bufs)
		if err != nil {
			t.Fatalf("%s: Recv after %d of %d frames: %v", p.Name(), next-first, want, err)
		}
		for _, f := range bufs[:n] {
			if len(f) < 22 || binary.BigEndian.Uint16(f[12:]) != testEtherType {
				continue
			}
			if got := binary.BigEndian.Uint64(f[14:]); got != next {
				t.Fatalf("%s: frame %d arrived, want %d", p.Name(), got, next)
			}
			exp := testFrame(next, size)
			if string(f) != string(exp) {
				t.Fatalf("%s: frame %d: content differs (len %d, want %d)", p.Name(), next, len(f), len(exp))
			}
			next++
		}
	}
}

func TestAFPacketAcrossNamespaces(t *testing.T) {
	a, b := nstest.Pair(t)
	pa, pb := openAF(t, a), openAF(t, b)
	const bursts, burst = 50, 32
	for _, dir := range []struct {
		name     string
		from, to *AFPacketPort
		size     int
	}{{"a to b", pa, pb, 128}, {"b to a", pb, pa, 1500}, {"a to b jumbo", pa, pb, MaxFrameSize}} {
		t.Run(dir.name, func(t *testing.T) {
			for i := range bursts {
				frames := make([][]byte, burst)
				for j := range frames {
					frames[j] = testFrame(uint64(i*burst+j), dir.size)
				}
				if n, err := dir.from.Send(frames); n != burst || err != nil {
					t.Fatalf("Send = %d, %v", n, err)
				}
				// Receive each burst before the next: the socket's queue
				// is finite and this test is about moving frames, not loss.
				recvTest(t, dir.to, uint64(i*burst), burst, dir.size)
			}
		})
	}
	sa, sb := pa.Stats(), pb.Stats()
	if sa.TxFrames != 2*bursts*burst || sb.TxFrames != bursts*burst || sa.KernelDrops != 0 || sb.KernelDrops != 0 {
		t.Fatalf("stats a %+v, b %+v", sa, sb)
	}
	if sa.RxFrames < bursts*burst || sb.RxFrames < 2*bursts*burst {
		t.Fatalf("stats a %+v, b %+v", sa, sb)
	}
}

func TestAFPacketTruncatesAndCloseUnblocks(t *testing.T) {
	a, b := nstest.Pair(t)
	pa, pb := openAF(t, a), openAF(t, b)
	if _, err := pa.Send([][]byte{testFrame(1, 600)}); err != nil {
		t.Fatal(err)
	}
	bufs := [][]byte{make([]byte, 0, 100)}
	deadline := time.AfterFunc(5*time.Second, func() { pb.Close() })
	for {
		n, err := pb.Recv(bufs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 && binary.BigEndian.Uint16(bufs[0][12:]) == testEtherType {
			break
		}
	}
	deadline.Stop()
	if len(bufs[0]) != 100 || pb.Stats().Truncated != 1 {
		t.Fatalf("len %d, stats %+v", len(bufs[0]), pb.Stats())
	}
	errc := make(chan error, 1)
	go func() {
		for {
			if _, err := pb.Recv(newBufs(1)); err != nil {
				errc <- err
				return
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	pb.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Recv after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv still blocked after Close")
	}
	if _, err := pa.Send([][]byte{make([]byte, 4)}); err == nil {
		t.Fatal("a 4-byte frame was accepted")
	}
}

func TestAFPacketUnknownInterface(t *testing.T) {
	if _, err := NewAFPacketPort(AFPacketConfig{Interface: "no-such-if0"}); err == nil {
		t.Fatal("opened a port on a missing interface")
	}
	if os.Geteuid() != 0 {
		if _, err := NewAFPacketPort(AFPacketConfig{Interface: "lo"}); err == nil {
			t.Fatal("opened AF_PACKET without privilege")
		}
	}
}

// BenchmarkAFPacketVeth sends bursts of 32 64-byte frames from one
// namespace to another over a veth and receives them (root only); ns/op
// and allocs/op are per frame, both ends included.
func BenchmarkAFPacketVeth(b *testing.B) {
	na, nb := nstest.Pair(b)
	var pa, pb *AFPacketPort
	for _, x := range []struct {
		e nstest.End
		p **AFPacketPort
	}{{na, &pa}, {nb, &pb}} {
		err := x.e.Do(func() (err error) {
			*x.p, err = NewAFPacketPort(AFPacketConfig{Interface: x.e.Iface})
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		defer (*x.p).Close()
	}
	const burst = 32
	frames := make([][]byte, burst)
	for i := range frames {
		frames[i] = testFrame(uint64(i), 64)
	}
	bufs := newBufs(burst)
	b.ReportAllocs()
	b.SetBytes(64)
	b.ResetTimer()
	for done := 0; done < b.N; done += burst {
		if _, err := pa.Send(frames); err != nil {
			b.Fatal(err)
		}
		for got := 0; got < burst; {
			n, err := pb.Recv(bufs)
			if err != nil {
				b.Fatal(err)
			}
			got += n
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mpps")
}

// TestAFPacketNeverReturnsOutgoingFrames has a second socket on A's
// interface (as the kernel stack or another process would be) send frames
// out of A; then B answers. The first test frame port A receives must be
// B's: frames leaving A's interface never come back up, whether the kernel
// filters them (PACKET_IGNORE_OUTGOING) or Recv does (PACKET_OUTGOING, for
// kernels without the option). Linux never shows a packet socket its own
// transmissions, so A itself sending would prove nothing.
func TestAFPacketNeverReturnsOutgoingFrames(t *testing.T) {
	for _, userOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("userFilterOnly=%v", userOnly), func(t *testing.T) {
			a, b := nstest.Pair(t)
			var pa *AFPacketPort
			err := a.Do(func() (err error) {
				pa, err = NewAFPacketPort(AFPacketConfig{Interface: a.Iface, userFilterOnly: userOnly})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer pa.Close()
			other, pb := openAF(t, a), openAF(t, b)
			out := [][]byte{testFrame(1000, 100), testFrame(1001, 100), testFrame(1002, 100)}
			if _, err := other.Send(out); err != nil {
				t.Fatal(err)
			}
			recvTest(t, pb, 1000, 3, 100) // they left A and reached B
			if _, err := pb.Send([][]byte{testFrame(2000, 100)}); err != nil {
				t.Fatal(err)
			}
			recvTest(t, pa, 2000, 1, 100) // fails if frame 1000 comes first
			st := pa.Stats()
			if userOnly && st.SkippedOutgoing != 3 {
				t.Fatalf("Recv skipped %d outgoing frames, want 3 (stats %+v)", st.SkippedOutgoing, st)
			}
			if !userOnly && st.SkippedOutgoing != 0 {
				t.Fatalf("kernel filter off? Recv skipped %d", st.SkippedOutgoing)
			}
		})
	}
}
