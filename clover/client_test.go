package clover

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"reflect"
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

// TestMetricsAddSub sets every counter of Metrics to a distinct value (by
// reflection, so a field added later and forgotten in combine fails here)
// and checks that Add doubles each and Sub takes it back to zero.
func TestMetricsAddSub(t *testing.T) {
	var m Metrics
	v := reflect.ValueOf(&m).Elem()
	n := uint64(1)
	set := func(f reflect.Value) {
		f.SetUint(n)
		n++
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint64:
			set(f)
		case reflect.Array:
			for j := 0; j < f.Len(); j++ {
				set(f.Index(j))
			}
		case reflect.Int:
			f.SetInt(7)
		default:
			t.Fatalf("field %s of kind %v: teach this test and Metrics.combine about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	orig := m
	sum := orig
	sum.Add(orig)
	diff := sum
	diff.Sub(orig)
	sv, ov, dv := reflect.ValueOf(sum), reflect.ValueOf(orig), reflect.ValueOf(diff)
	for i := 0; i < sv.NumField(); i++ {
		name := sv.Type().Field(i).Name
		switch f := sv.Field(i); f.Kind() {
		case reflect.Uint64:
			if f.Uint() != 2*ov.Field(i).Uint() || dv.Field(i).Uint() != ov.Field(i).Uint() {
				t.Errorf("%s: sum %d diff %d, from %d", name, f.Uint(), dv.Field(i).Uint(), ov.Field(i).Uint())
			}
		case reflect.Array:
			for j := 0; j < f.Len(); j++ {
				if f.Index(j).Uint() != 2*ov.Field(i).Index(j).Uint() || dv.Field(i).Index(j).Uint() != ov.Field(i).Index(j).Uint() {
					t.Errorf("%s[%d] not added or subtracted", name, j)
				}
			}
		case reflect.Int:
			if f.Int() != 7 {
				t.Errorf("%s: max of 7 and 7 is %d", name, f.Int())
			}
		}
	}
}
