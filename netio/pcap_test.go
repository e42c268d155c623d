package netio

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// tapRun taps end a of a pipe, sends want[0] and want[2] from a and
// want[1] from b, receives on a, and returns the capture file.
func tapRun(t *testing.T) (string, [][]byte) {
	t.Helper()
	a, b := Pipe()
	path := filepath.Join(t.TempDir(), "a.pcap")
	tap, err := NewTapFile(a, path)
	if err != nil {
		t.Fatal(err)
	}
	cas2 := bytes.Clone(rocev2CAS)
	want := [][]byte{rocev2CAS, numbered(7), cas2}
	if _, err := tap.Send(want[:1]); err != nil {
		t.Fatal(err)
	}
	b.Send(want[1:2])
	bufs := newBufs(2)
	if n, err := tap.Recv(bufs); n != 1 || err != nil {
		t.Fatalf("Recv = %d, %v", n, err)
	}
	tap.Send(want[2:])
	if tap.Frames() != 3 {
		t.Fatalf("tap recorded %d frames", tap.Frames())
	}
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tap.Recv(bufs); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after Close = %v", err)
	}
	return path, want
}

func TestTapRecordsSentAndReceivedFrames(t *testing.T) {
	path, want := tapRun(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet || r.Resolution() != gopacket.TimestampResolutionNanosecond {
		t.Fatalf("link type %v, resolution %v", r.LinkType(), r.Resolution())
	}
	var prev int64
	for i, w := range want {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(data, w) || ci.Length != len(w) {
			t.Fatalf("record %d differs", i)
		}
		if ts := ci.Timestamp.UnixNano(); ts < prev {
			t.Fatalf("record %d: timestamp goes back", i)
		} else {
			prev = ts
		}
	}
	if _, _, err := r.ReadPacketData(); err == nil {
		t.Fatal("more records than frames")
	}
}

// TestTapCaptureDecodesInTshark checks the capture with an oracle we did
// not write: tshark must see the RoCEv2 CMP_SWAP of the worked example.
func TestTapCaptureDecodesInTshark(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install tshark)")
	}
	path, _ := tapRun(t)
	out, err := exec.Command(tshark, "-r", path, "-T", "fields", "-E", "separator=,",
		"-e", "frame.number", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.destqp",
		"-e", "infiniband.bth.psn", "-e", "infiniband.atomiceth.swapdt").CombinedOutput()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, out)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasPrefix(l, "Running as user") {
			rows = append(rows, l)
		}
	}
	// opcode 19 = COMPARE_SWAP, QP 0x11, PSN 5, swap 0xdeadbeef
	want := []string{"1,19,0x000011,5,3735928559", "2,,,,", "3,19,0x000011,5,3735928559"}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("tshark read\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

func TestTapDoesNotAllocate(t *testing.T) {
	a, b := Pipe()
	var sink bytes.Buffer
	sink.Grow(1 << 24)
	tap, err := NewTap(a, &sink)
	if err != nil {
		t.Fatal(err)
	}
	frames := [][]byte{rocev2CAS, rocev2CAS}
	bufs := newBufs(2)
	round := func() {
		tap.Send(frames)
		b.Recv(bufs)
		b.Send(frames)
		tap.Recv(bufs)
	}
	round()
	if allocs := testing.AllocsPerRun(1000, round); allocs != 0 {
		t.Fatalf("%v allocations per round, want 0", allocs)
	}
}

// echoPort answers every frame sent to it at once: Send hands the frame to
// a concurrent Recv and returns only after that Recv has returned it, the
// worst case for a capture's order (a peer faster than the sender's own
// bookkeeping).
type echoPort struct {
	q        chan []byte
	returned chan struct{}
}

func (p *echoPort) Name() string { return "echo" }

func (p *echoPort) Recv(bufs [][]byte) (int, error) {
	f, ok := <-p.q
	if !ok {
		return 0, ErrClosed
	}
	bufs[0] = append(bufs[0][:0], f...)
	p.returned <- struct{}{}
	return 1, nil
}

func (p *echoPort) Send(frames [][]byte) (int, error) {
	p.q <- numbered(99) // the answer
	select {
	case <-p.returned:
	case <-time.After(5 * time.Second):
		return 0, errors.New("echo: the answer was not received")
	}
	return len(frames), nil
}

func (p *echoPort) Close() error { close(p.q); return nil }

// A frame the peer answers before the wrapped Send has even returned is
// still recorded after the frame it answers.
func TestTapRecordsSendBeforeItsAnswer(t *testing.T) {
	inner := &echoPort{q: make(chan []byte, 1), returned: make(chan struct{})}
	var buf bytes.Buffer
	tap, err := NewTap(inner, &buf)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tap.Recv(newBufs(1))
		done <- err
	}()
	if _, err := tap.Send([][]byte{numbered(1)}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := tap.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := pcapgo.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range [][]byte{numbered(1), numbered(99)} {
		data, _, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if !bytes.Equal(data, w) {
			t.Fatalf("record %d is not the %s", i, []string{"sent frame", "answer"}[i])
		}
	}
}
