package p4rtc

import (
	"bytes"
	"testing"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// FuzzCanonical checks that Canonical and ToUint agree on every input.
func FuzzCanonical(f *testing.F) {
	f.Add([]byte{0, 0, 1}, 9)
	f.Add([]byte{}, 0)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 64)
	f.Fuzz(func(t *testing.T, b []byte, width int) {
		width %= 129
		c, err := Canonical(b, width)
		if err != nil {
			return
		}
		if len(c) == 0 || (len(c) > 1 && c[0] == 0) {
			t.Fatalf("Canonical(%x) = %x is not canonical", b, c)
		}
		if v, err := ToUint(b); err == nil {
			if !bytes.Equal(Uint(v), c) {
				t.Fatalf("Uint(ToUint(%x)) = %x, Canonical = %x", b, Uint(v), c)
			}
		}
	})
}

// FuzzSchema indexes arbitrary P4Infos and resolves every name in them:
// no panic, and every full name resolves to an object with that name.
func FuzzSchema(f *testing.F) {
	seed, _ := proto.Marshal(testInfo())
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		info := &p4cfg.P4Info{}
		if proto.Unmarshal(b, info) != nil {
			return
		}
		s, err := NewSchema(info)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range s.Tables() {
			if tb, err := s.Table(name); err == nil && tb.GetPreamble().GetName() != name {
				t.Fatalf("table %q resolved to %q", name, tb.GetPreamble().GetName())
			}
			_, _ = s.TableRead(name)
			_, _ = s.TableEntry(name, nil, "")
		}
		for _, name := range s.Registers() {
			_, _ = s.RegisterRead(name, -1)
		}
		for _, name := range s.Counters() {
			_, _ = s.CounterRead(name, 0)
		}
		_, _ = s.PacketOutMetadata(P("egress_port", 1))
	})
}
