package rnic

import (
	"context"
	"sync"

	"github.com/swordbox/swordbox/roce/verbs"
)

// CQ is a completion queue; it implements verbs.CQ.
//
// Decision (the spec makes CQ overrun an asynchronous error): the ring grows
// instead of overrunning, so no completion is ever lost; in steady state, once
// it has reached the depth the application keeps outstanding, it allocates
// nothing.
type CQ struct {
	mu     sync.Mutex
	ring   []verbs.WC
	head   int // next to poll
	n      int // entries held
	notify chan struct{}
}

var _ verbs.CQ = (*CQ)(nil)

func newCQ(depth int) *CQ {
	if depth < 16 {
		depth = 16
	}
	return &CQ{ring: make([]verbs.WC, depth), notify: make(chan struct{}, 1)}
}

// push appends one completion.
func (c *CQ) push(wc verbs.WC) {
	c.mu.Lock()
	if c.n == len(c.ring) {
		bigger := make([]verbs.WC, 2*len(c.ring))
		for i := 0; i < c.n; i++ {
			bigger[i] = c.ring[(c.head+i)%len(c.ring)]
		}
		c.ring, c.head = bigger, 0
	}
	c.ring[(c.head+c.n)%len(c.ring)] = wc
	c.n++
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// Poll copies up to len(wcs) completions into wcs without blocking.
func (c *CQ) Poll(wcs []verbs.WC) int {
	c.mu.Lock()
	k := 0
	for k < len(wcs) && c.n > 0 {
		wcs[k] = c.ring[c.head]
		c.head = (c.head + 1) % len(c.ring)
		c.n--
		k++
	}
	more := c.n > 0
	c.mu.Unlock()
	if more {
		// Keep the wake-up for the next waiter.
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
	return k
}

// Len returns the number of completions waiting.
func (c *CQ) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Wait blocks until at least one completion is available or ctx is done.
func (c *CQ) Wait(ctx context.Context, wcs []verbs.WC) (int, error) {
	for {
		if k := c.Poll(wcs); k > 0 {
			return k, nil
		}
		select {
		case <-c.notify:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
