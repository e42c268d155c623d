package target

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"github.com/swordbox/swordbox/netio"
)

// chanPort is a minimal netio.Port for tests: Recv reads what the test
// injects, Send records what the device transmits.
type chanPort struct {
	name   string
	in     chan []byte
	out    chan []byte
	closed chan struct{}
	once   sync.Once
}

func newChanPort(name string) *chanPort {
	return &chanPort{name: name, in: make(chan []byte, 16), out: make(chan []byte, 16), closed: make(chan struct{})}
}

func (p *chanPort) Name() string { return p.name }

func (p *chanPort) Recv(bufs [][]byte) (int, error) {
	select {
	case f := <-p.in:
		bufs[0] = bufs[0][:copy(bufs[0][:cap(bufs[0])], f)]
		return 1, nil
	case <-p.closed:
		return 0, netio.ErrClosed
	}
}

func (p *chanPort) Send(frames [][]byte) (int, error) {
	for _, f := range frames {
		select {
		case p.out <- append([]byte(nil), f...):
		case <-p.closed:
			return 0, netio.ErrClosed
		}
	}
	return len(frames), nil
}

func (p *chanPort) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func TestRunMovesFramesBetweenPorts(t *testing.T) {
	p := mustCompileFile(t, "../testdata/basic_router.p4")
	cpu := make(chan []byte, 1)
	d := NewDevice(p, Options{CPUPort: 7, PacketIn: func(f []byte) { cpu <- append([]byte(nil), f...) }})
	tid, fwd := tableID(t, p, "MyIngress.ipv4_lpm"), actionID(t, p, "MyIngress.ipv4_forward")
	for _, r := range []struct {
		prefix byte
		port   byte
	}{{10, 2}, {11, 7}} {
		if err := d.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tid,
			Match: []*p4v1.FieldMatch{lpm(1, []byte{r.prefix, 0, 0, 0}, 8)}, Action: act(fwd, macNH2, []byte{r.port})}); err != nil {
			t.Fatal(err)
		}
	}
	p1, p2 := newChanPort("p1"), newChanPort("p2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, map[uint32]netio.Port{1: p1, 2: p2}) }()

	p1.in <- ipv4Frame(t, "10.1.1.1", 64)
	select {
	case f := <-p2.out:
		if len(f) != len(ipv4Frame(t, "10.1.1.1", 64)) || f[14+8] != 63 {
			t.Fatalf("forwarded frame % x", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came out of port 2")
	}
	p2.in <- ipv4Frame(t, "11.1.1.1", 64)
	select {
	case f := <-cpu:
		if f[14+8] != 63 {
			t.Fatalf("PacketIn frame % x", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing reached the CPU port")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
