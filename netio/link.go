package netio

import (
	"fmt"
	"sync"
	"time"
)

// DefaultLinkCapacity is the number of frames a link direction queues when
// LinkConfig.Capacity is zero.
const DefaultLinkCapacity = 1024

// LinkConfig configures an in-memory link between two ports, A and B.
type LinkConfig struct {
	// Capacity is the number of frames each direction queues before it
	// drops at the tail like a full NIC ring (counted as Overflow). Zero
	// means DefaultLinkCapacity.
	Capacity int
	// AtoB and BtoA are the faults injected on frames sent by A and by B.
	AtoB, BtoA Faults
}

// LinkPort is one end of an in-memory link. It implements Port; frames sent
// on one end are received on the other.
//
// Each direction keeps a bounded ring of frame buffers that are recycled, so
// after warm-up neither Send nor Recv allocates. Several goroutines may call
// Send and Recv on the same port; one receiving goroutine per port is the
// intended use.
type LinkPort struct {
	name string
	tx   *direction // frames this port sends
	rx   *direction // frames this port receives
	// timer wakes Recv when a delayed frame becomes due; only Recv uses it.
	timer   *time.Timer
	timerMu sync.Mutex
}

// direction is one way of a link: the fault injector in front of a bounded
// FIFO of owned buffers.
type direction struct {
	mu     sync.Mutex
	ring   [][]byte
	head   int
	n      int
	inj    *injector
	c      counters
	closed bool          // the receiving port is closed
	notify chan struct{} // capacity 1: "frames may be ready"
	done   chan struct{} // closed when the receiving port closes
	epoch  time.Time
}

func newDirection(capacity int, f Faults) *direction {
	d := &direction{
		ring:   make([][]byte, capacity),
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
		epoch:  time.Now(),
	}
	d.inj = newInjector(f, &d.c, d)
	return d
}

// now is the direction's clock in nanoseconds (monotonic).
func (d *direction) now() int64 { return int64(time.Since(d.epoch)) }

// deliver implements sink: append to the ring, or drop at the tail.
func (d *direction) deliver(buf []byte) bool {
	if d.closed || d.n == len(d.ring) {
		d.inj.put(buf)
		return false
	}
	i := d.head + d.n
	if i >= len(d.ring) {
		i -= len(d.ring)
	}
	d.ring[i] = buf
	d.n++
	return true
}

func (d *direction) signal() {
	select {
	case d.notify <- struct{}{}:
	default:
	}
}

// NewLink returns the two connected ends of an in-memory link.
func NewLink(nameA, nameB string, cfg LinkConfig) (*LinkPort, *LinkPort, error) {
	if cfg.Capacity < 0 {
		return nil, nil, fmt.Errorf("netio: link %s-%s: negative capacity %d", nameA, nameB, cfg.Capacity)
	}
	if cfg.Capacity == 0 {
		cfg.Capacity = DefaultLinkCapacity
	}
	if err := cfg.AtoB.Validate(); err != nil {
		return nil, nil, fmt.Errorf("netio: link %s->%s: %w", nameA, nameB, err)
	}
	if err := cfg.BtoA.Validate(); err != nil {
		return nil, nil, fmt.Errorf("netio: link %s->%s: %w", nameB, nameA, err)
	}
	ab := newDirection(cfg.Capacity, cfg.AtoB)
	ba := newDirection(cfg.Capacity, cfg.BtoA)
	a := &LinkPort{name: nameA, tx: ab, rx: ba}
	b := &LinkPort{name: nameB, tx: ba, rx: ab}
	return a, b, nil
}

// Pipe returns the two ends, "a" and "b", of a fault-free in-memory link
// with the default capacity.
func Pipe() (*LinkPort, *LinkPort) {
	a, b, err := NewLink("a", "b", LinkConfig{})
	if err != nil {
		panic(err) // unreachable: the default configuration is valid
	}
	return a, b
}

// Name implements Port.
func (p *LinkPort) Name() string { return p.name }

// Send implements Port. It copies every frame into a link buffer, passes it
// through the fault injector of this direction and queues it for the peer;
// frames beyond the queue capacity are dropped (Stats.Overflow). A frame
// longer than MaxFrameSize is refused with an error.
func (p *LinkPort) Send(frames [][]byte) (int, error) {
	d := p.tx
	if p.isClosed() {
		return 0, ErrClosed
	}
	d.mu.Lock()
	now := d.now()
	d.inj.release(now)
	for i, f := range frames {
		if len(f) > MaxFrameSize {
			d.mu.Unlock()
			d.signal()
			return i, fmt.Errorf("netio: link port %s: frame of %d bytes exceeds MaxFrameSize", p.name, len(f))
		}
		d.inj.push(now, f)
	}
	d.mu.Unlock()
	d.signal()
	return len(frames), nil
}

func (p *LinkPort) isClosed() bool {
	select {
	case <-p.rx.done:
		return true
	default:
		return false
	}
}

// Recv implements Port. It blocks until a frame is queued (or a delayed
// frame becomes due) or the port is closed.
func (p *LinkPort) Recv(bufs [][]byte) (int, error) {
	for {
		n, wait, err := p.tryRecv(bufs)
		if n > 0 || err != nil || len(bufs) == 0 {
			return n, err
		}
		if !p.wait(wait) {
			return 0, ErrClosed
		}
	}
}

// TryRecv is Recv without blocking: it returns 0 frames when none is ready.
func (p *LinkPort) TryRecv(bufs [][]byte) (int, error) {
	n, _, err := p.tryRecv(bufs)
	return n, err
}

// tryRecv takes ready frames; when there are none it returns how long to
// wait for the next held frame (-1: until signalled).
func (p *LinkPort) tryRecv(bufs [][]byte) (int, time.Duration, error) {
	d := p.rx
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return 0, 0, ErrClosed
	}
	now := d.now()
	d.inj.release(now)
	k := 0
	for k < len(bufs) && d.n > 0 {
		src := d.ring[d.head]
		b := bufs[k][:cap(bufs[k])]
		bufs[k] = b[:copy(b, src)]
		d.ring[d.head] = nil
		d.inj.put(src)
		d.head++
		if d.head == len(d.ring) {
			d.head = 0
		}
		d.n--
		k++
	}
	wait := time.Duration(-1)
	if k == 0 {
		if due, ok := d.inj.nextDue(); ok {
			wait = time.Duration(due - now)
		}
	}
	more := d.n > 0
	d.mu.Unlock()
	if more {
		d.signal() // let another receiver run
	}
	return k, wait, nil
}

// wait blocks until signalled, until wait has passed (wait >= 0) or until
// the port closes; it reports false on close.
func (p *LinkPort) wait(wait time.Duration) bool {
	d := p.rx
	if wait < 0 {
		select {
		case <-d.notify:
			return true
		case <-d.done:
			return false
		}
	}
	p.timerMu.Lock()
	if p.timer == nil {
		p.timer = time.NewTimer(wait)
	} else {
		p.timer.Reset(wait)
	}
	t := p.timer
	p.timerMu.Unlock()
	select {
	case <-d.notify:
		return true
	case <-t.C:
		return true
	case <-d.done:
		return false
	}
}

// Close implements Port. It unblocks a pending Recv with ErrClosed; frames
// the peer sends afterwards are counted as Overflow in the peer's Stats.
// Closing twice is harmless.
func (p *LinkPort) Close() error {
	d := p.rx
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.done)
	return nil
}

// Stats returns the counters of the direction this port sends into.
func (p *LinkPort) Stats() Stats { return p.tx.c.snapshot() }

// RxStats returns the counters of the direction this port receives from
// (the peer's Stats).
func (p *LinkPort) RxStats() Stats { return p.rx.c.snapshot() }

// SetFaults replaces the faults injected on frames this port sends, and
// reseeds the injector from f.Seed. Frames currently held back (delayed or
// reordered) are delivered first.
func (p *LinkPort) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("netio: link port %s: %w", p.name, err)
	}
	d := p.tx
	d.mu.Lock()
	d.inj.flush()
	d.inj.setFaults(f)
	d.mu.Unlock()
	d.signal()
	return nil
}

var _ Port = (*LinkPort)(nil)
