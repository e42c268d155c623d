package netio

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Tap wraps a Port and records every frame it sends and receives to a pcap
// stream (Ethernet link type, nanosecond timestamps) that Wireshark and
// tshark read. A sent frame is recorded once the wrapped port accepted it, a
// received frame when Recv returns it. The Tap holds its lock across the
// wrapped port's Send (which never blocks for long), so a frame the peer
// sends in answer, however fast, is recorded after the frame it answers.
// Classic pcap has no direction field: tap each end of a link into its own
// file when direction matters.
//
// Recording happens under one mutex on the caller's goroutine into a
// buffered writer; it does not allocate. Call Flush to make the file
// readable while the port is in use; Close flushes.
type Tap struct {
	inner Port
	mu    sync.Mutex
	bw    *bufio.Writer
	pw    *pcapgo.Writer
	file  io.Closer // non-nil when the Tap opened the file
	err   error     // first write error; recording stops after it
	n     uint64
}

// NewTap records the traffic of p to w. w should not be shared.
func NewTap(p Port, w io.Writer) (*Tap, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	pw := pcapgo.NewWriterNanos(bw)
	if err := pw.WriteFileHeader(MaxFrameSize, layers.LinkTypeEthernet); err != nil {
		return nil, fmt.Errorf("netio: tap %s: pcap header: %w", p.Name(), err)
	}
	return &Tap{inner: p, bw: bw, pw: pw}, nil
}

// NewTapFile records the traffic of p to a new pcap file at path; Close
// closes the file.
func NewTapFile(p Port, path string) (*Tap, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("netio: tap %s: %w", p.Name(), err)
	}
	t, err := NewTap(p, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	t.file = f
	return t, nil
}

func (t *Tap) record(frames [][]byte) {
	if len(frames) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recordLocked(frames)
}

// recordLocked is record with t.mu held.
func (t *Tap) recordLocked(frames [][]byte) {
	if len(frames) == 0 {
		return
	}
	now := time.Now()
	if t.err != nil {
		return
	}
	for _, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: now, CaptureLength: len(f), Length: len(f)}
		if err := t.pw.WritePacket(ci, f); err != nil {
			t.err = fmt.Errorf("netio: tap %s: %w", t.inner.Name(), err)
			return
		}
		t.n++
	}
}

// Name implements Port.
func (t *Tap) Name() string { return t.inner.Name() }

// Recv implements Port and records the frames received.
func (t *Tap) Recv(bufs [][]byte) (int, error) {
	n, err := t.inner.Recv(bufs)
	t.record(bufs[:n])
	return n, err
}

// Send implements Port and records the frames the wrapped port accepted,
// before any frame a concurrent Recv returns afterwards.
func (t *Tap) Send(frames [][]byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, err := t.inner.Send(frames)
	t.recordLocked(frames[:n])
	return n, err
}

// Frames returns how many frames have been recorded.
func (t *Tap) Frames() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// Flush writes buffered records to the underlying writer and reports the
// first recording error, if any.
func (t *Tap) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return t.err
	}
	if err := t.bw.Flush(); err != nil {
		t.err = fmt.Errorf("netio: tap %s: %w", t.inner.Name(), err)
	}
	return t.err
}

// Close closes the wrapped port, flushes the capture and closes the file
// NewTapFile opened. It returns the first error.
func (t *Tap) Close() error {
	err := t.inner.Close()
	if ferr := t.Flush(); err == nil {
		err = ferr
	}
	if t.file != nil {
		if cerr := t.file.Close(); err == nil {
			err = cerr
		}
		t.file = nil
	}
	return err
}

var _ Port = (*Tap)(nil)
