package swarm

import (
	"context"
	"encoding/binary"
)

// Test access to the building blocks under the KV API.

// RegisterRead is the reliable max register's read of key's replicas.
func (c *Client) RegisterRead(ctx context.Context, key uint64) (Word, error) {
	ks, err := c.state(key, true)
	if err != nil {
		return 0, err
	}
	return c.mread(ctx, ks, true)
}

// RegisterWrite writes (ts, this writer, a fresh buffer, VERIFIED) to the
// reliable max register of key's replicas and returns the word.
func (c *Client) RegisterWrite(ctx context.Context, key, ts uint64) (Word, error) {
	ks, err := c.state(key, true)
	if err != nil {
		return 0, err
	}
	log, err := c.takeBuf(ctx)
	if err != nil {
		return 0, err
	}
	w := MakeWord(ts, c.cfg.ID, log, true)
	v := make([]byte, c.cfg.Layout.ValueSize)
	binary.LittleEndian.PutUint64(v, ts)
	return w, c.innerWrite(ctx, ks, w, v, false)
}

// TryLock is the timestamp lock of writer pid on key.
func (c *Client) TryLock(ctx context.Context, key uint64, pid int, id, mode Word) (bool, error) {
	ks, err := c.state(key, true)
	if err != nil {
		return false, err
	}
	return c.tryLock(ctx, ks, pid, id, mode)
}

// WriteGuessedThenCrash is the first round trip of a Safe-Guess write sent
// to the given nodes only, with nothing after it: a writer that crashed
// right after its guessed tuple reached those nodes.
func (c *Client) WriteGuessedThenCrash(ctx context.Context, key uint64, value []byte, nodes []int) (Word, error) {
	ks, err := c.state(key, true)
	if err != nil {
		return 0, err
	}
	log, err := c.takeBuf(ctx)
	if err != nil {
		return 0, err
	}
	w := MakeWord(c.clock.guess(), c.cfg.ID, log, false)
	entry := make([]byte, c.cfg.Layout.EntrySize())
	PutEntry(entry, w, value)
	for _, i := range nodes {
		c.postMax(i, ks, w, c.maxWriteWRs(i, ks, w, entry, false, func(bool) {})...)
	}
	return w, c.Drain(ctx)
}
