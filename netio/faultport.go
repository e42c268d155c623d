package netio

import (
	"fmt"
	"sync"
	"time"
)

// FaultPort injects faults into the frames sent through any Port (the
// egress direction; put another FaultPort on the peer for the other way).
// Received frames pass through untouched. In-memory links carry their own
// injector (LinkConfig); FaultPort is for ports that have none, such as an
// AF_PACKET port between namespaces.
//
// When frames can be held back (Delay or Reorder set), one goroutine
// releases them when due; it ends with Close.
type FaultPort struct {
	inner Port
	mu    sync.Mutex
	inj   *injector
	c     counters
	out   [][]byte // frames the injector let through, owned buffers
	epoch time.Time
	wake  chan struct{}
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

// NewFaultPort wraps p with the fault injector f on sends.
func NewFaultPort(p Port, f Faults) (*FaultPort, error) {
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("netio: fault port %s: %w", p.Name(), err)
	}
	fp := &FaultPort{inner: p, epoch: time.Now(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	fp.inj = newInjector(f, &fp.c, fp)
	if f.Delay > 0 || f.Reorder > 0 {
		fp.wg.Add(1)
		go fp.releaser()
	}
	return fp, nil
}

func (fp *FaultPort) now() int64 { return int64(time.Since(fp.epoch)) }

// deliver implements sink.
func (fp *FaultPort) deliver(buf []byte) bool {
	fp.out = append(fp.out, buf)
	return true
}

// Name implements Port.
func (fp *FaultPort) Name() string { return fp.inner.Name() }

// Recv implements Port: it receives from the wrapped port unchanged.
func (fp *FaultPort) Recv(bufs [][]byte) (int, error) { return fp.inner.Recv(bufs) }

// Send implements Port: frames go through the injector, then those it lets
// through now are sent on the wrapped port. It reports every frame as
// accepted (a dropped frame was accepted and lost, like on a wire).
func (fp *FaultPort) Send(frames [][]byte) (int, error) {
	for _, f := range frames {
		if len(f) > MaxFrameSize {
			return 0, fmt.Errorf("netio: fault port %s: frame of %d bytes exceeds MaxFrameSize", fp.Name(), len(f))
		}
	}
	fp.mu.Lock()
	now := fp.now()
	fp.inj.release(now)
	for _, f := range frames {
		fp.inj.push(now, f)
	}
	err := fp.flushLocked()
	_, held := fp.inj.nextDue()
	fp.mu.Unlock()
	if held {
		select {
		case fp.wake <- struct{}{}:
		default:
		}
	}
	if err != nil {
		return 0, err
	}
	return len(frames), nil
}

// flushLocked sends the frames in fp.out on the wrapped port.
func (fp *FaultPort) flushLocked() error {
	if len(fp.out) == 0 {
		return nil
	}
	n, err := fp.inner.Send(fp.out)
	if n < len(fp.out) {
		// The injector counted them out; the wrapped port refused them.
		fp.c.overflow.Add(uint64(len(fp.out) - n))
		fp.c.out.Add(-uint64(len(fp.out) - n))
	}
	for i, b := range fp.out {
		fp.inj.put(b)
		fp.out[i] = nil
	}
	fp.out = fp.out[:0]
	return err
}

// releaser sends held frames when they become due.
func (fp *FaultPort) releaser() {
	defer fp.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		fp.mu.Lock()
		now := fp.now()
		fp.inj.release(now)
		fp.flushLocked()
		due, held := fp.inj.nextDue()
		fp.mu.Unlock()
		wait := time.Hour
		if held {
			wait = time.Duration(due - now)
		}
		t.Reset(wait)
		select {
		case <-fp.done:
			return
		case <-fp.wake:
		case <-t.C:
		}
	}
}

// Close implements Port: it stops the releaser (frames still held are lost)
// and closes the wrapped port.
func (fp *FaultPort) Close() error {
	fp.once.Do(func() { close(fp.done) })
	fp.wg.Wait()
	return fp.inner.Close()
}

// Stats returns the counters of the frames sent through fp.
func (fp *FaultPort) Stats() Stats { return fp.c.snapshot() }

var _ Port = (*FaultPort)(nil)
