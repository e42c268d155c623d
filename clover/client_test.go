package clover

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

func smallLayout() RegionLayout { return RegionLayout{Shortcuts: 4096, Chunks: 64, ChunkSize: 1 << 16} }

func val(v uint64, size int) []byte {
	b := make([]byte, size)
	for i := 0; i+8 <= size; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], v)
	}
	return b
}

func TestClientBasicOps(t *testing.T) {
	r := newTestRack(t, rackConfig{clients: 2, valueSize: 128, layout: smallLayout()})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := r.clients[0], r.clients[1]
	out := make([]byte, 128)
	if err := a.Get(ctx, 1, out); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of a missing key: %v", err)
	}
	if err := a.Create(ctx, 1, val(10, 128)); err != nil {
		t.Fatal(err)
	}
	if err := b.Create(ctx, 1, val(11, 128)); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := b.Get(ctx, 1, out); err != nil || !bytes.Equal(out, val(10, 128)) {
		t.Fatalf("get after create: %v %x", err, out[:8])
	}
	for v := uint64(20); v < 30; v++ {
		w := a
		if v%2 == 1 {
			w = b
		}
		if err := w.Put(ctx, 1, val(v, 128)); err != nil {
			t.Fatal(err)
		}
		for _, rd := range []*Client{a, b} {
			if err := rd.Get(ctx, 1, out); err != nil || !bytes.Equal(out, val(v, 128)) {
				t.Fatalf("get after put %d: %v %x", v, err, out[:8])
			}
		}
	}
	if err := a.Delete(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Get(ctx, 1, out); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if err := b.Put(ctx, 1, val(99, 128)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("put after delete: %v", err)
	}
	if err := b.Create(ctx, 1, val(100, 128)); err != nil {
		t.Fatalf("re-create: %v", err)
	}
	if err := a.Get(ctx, 1, out); err != nil || !bytes.Equal(out, val(100, 128)) {
		t.Fatalf("get after re-create: %v %x", err, out[:8])
	}
	if err := a.Put(ctx, 1, make([]byte, 5)); !errors.Is(err, ErrValueSize) {
		t.Fatalf("short value: %v", err)
	}
	m := a.Metrics()
	t.Logf("client a: %+v", m)
}
