package middlebox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
)

// Sharded runs several engines side by side, one per shard. A frame's
// shard is chosen by its memory server's IP address (the destination of a
// request, the source of a response), so all traffic of one server-side
// connection, and of every client connection remapped onto it, is handled
// by one engine (section 6.3). Frames that are not IPv4 go to shard 0.
type Sharded struct {
	shards []*shard
}

type shard struct {
	mu  sync.Mutex
	eng *Engine
	out *Out
}

// NewSharded returns n engines configured alike (each learns and keeps only
// its own servers' connections).
func NewSharded(cfg Config, n int) (*Sharded, error) {
	if n < 1 {
		return nil, fmt.Errorf("middlebox: %d shards", n)
	}
	s := &Sharded{}
	for i := 0; i < n; i++ {
		e, err := New(cfg)
		if err != nil {
			return nil, err
		}
		s.shards = append(s.shards, &shard{eng: e, out: NewOut(4096, 1<<20)})
	}
	return s, nil
}

// Shards returns the number of shards.
func (s *Sharded) Shards() int { return len(s.shards) }

// Engine returns shard i's engine (not safe to use while a Loop runs).
func (s *Sharded) Engine(i int) *Engine { return s.shards[i].eng }

// Counters sums the counters of every shard.
func (s *Sharded) Counters() Counters {
	var c Counters
	for _, sh := range s.shards {
		sh.mu.Lock()
		x := sh.eng.Counters()
		sh.mu.Unlock()
		c.Add(&x)
	}
	return c
}

// ShardOf returns the shard of a frame received on side in.
func ShardOf(frame []byte, in Side, n int) int {
	if n == 1 || len(frame) < roce.EthernetLen+roce.IPv4MinLen ||
		frame[12] != 0x08 || frame[13] != 0x00 {
		return 0
	}
	off := roce.EthernetLen + roce.IPv4DstOff
	if in == ServerSide {
		off = roce.EthernetLen + roce.IPv4SrcOff
	}
	a := uint32(frame[off])<<24 | uint32(frame[off+1])<<16 | uint32(frame[off+2])<<8 | uint32(frame[off+3])
	a *= 0x9e3779b1
	return int(uint64(a>>8) * uint64(n) >> 24)
}

// Loop runs a Sharded engine between a client-side and a server-side
// netio.Port: one receiving goroutine per port; each frame is processed by
// its shard's engine under the shard's lock, and the shard's output is sent
// before the lock is released, so the order of frames on every connection
// is kept.
type Loop struct {
	S     *Sharded
	Ports [2]netio.Port // indexed by Side
	// Burst is the number of frames received at once (default 32).
	Burst int
	// Clock returns the engine's notion of now (default: nanoseconds since
	// the loop started).
	Clock func() int64
}

// Run moves frames until ctx is done or a port is closed. It returns nil
// after ctx is done, or the first port error.
func (l *Loop) Run(ctx context.Context) error {
	if l.Burst <= 0 {
		l.Burst = 32
	}
	if l.Clock == nil {
		start := time.Now()
		l.Clock = func() int64 { return int64(time.Since(start)) }
	}
	errc := make(chan error, 2)
	for side := ClientSide; side <= ServerSide; side++ {
		go func(side Side) { errc <- l.rx(side) }(side)
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	for _, p := range l.Ports {
		p.Close()
	}
	<-errc
	if err == nil {
		<-errc
	}
	if errors.Is(err, netio.ErrClosed) {
		err = nil
	}
	return err
}

func (l *Loop) rx(side Side) error {
	bufs := make([][]byte, l.Burst)
	for i := range bufs {
		bufs[i] = make([]byte, netio.MaxFrameSize)
	}
	frames := make([][]byte, 0, 4096)
	n := len(l.S.shards)
	for {
		for i := range bufs {
			bufs[i] = bufs[i][:cap(bufs[i])]
		}
		k, err := l.Ports[side].Recv(bufs)
		if err != nil {
			return err
		}
		now := l.Clock()
		if n == 1 {
			// One engine: the whole burst under one lock, one Send per side.
			sh := l.S.shards[0]
			sh.mu.Lock()
			sh.out.Reset()
			for _, f := range bufs[:k] {
				sh.eng.Process(now, side, f, sh.out)
			}
			err := l.send(sh.out, frames)
			sh.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		for _, f := range bufs[:k] {
			sh := l.S.shards[ShardOf(f, side, n)]
			sh.mu.Lock()
			sh.out.Reset()
			sh.eng.Process(now, side, f, sh.out)
			err := l.send(sh.out, frames)
			sh.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
}

// send transmits out's frames, per side in order (scratch: frames).
func (l *Loop) send(out *Out, frames [][]byte) error {
	for s := ClientSide; s <= ServerSide; s++ {
		frames = frames[:0]
		for j, o := range out.Frames {
			if out.Sides[j] == s {
				frames = append(frames, o)
			}
		}
		if len(frames) > 0 {
			if _, err := l.Ports[s].Send(frames); err != nil {
				return err
			}
		}
	}
	return nil
}
