package p4rt

import (
	"fmt"
	"testing"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/status"
)

// The digest engine against the specification's rules, on a fake clock.
func TestDigestEngine(t *testing.T) {
	const id = 7
	d := newDigests(&configv1.P4Info{Digests: []*configv1.Digest{{Preamble: &configv1.Preamble{Id: id}}}})
	cfg := &p4v1.DigestEntry_Config{MaxTimeoutNs: 100, MaxListSize: 3, AckTimeoutNs: 1000}
	if err := d.write(p4v1.Update_INSERT, &p4v1.DigestEntry{DigestId: id, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	vals := func(l *p4v1.DigestList) string {
		if l == nil {
			return "none"
		}
		var out []string
		for _, x := range l.Data {
			out = append(out, fmt.Sprint(x.GetStruct().GetMembers()[0].GetBitstring()[0]))
		}
		return fmt.Sprintf("list %d %v", l.ListId, out)
	}
	add := func(v uint64, now int64) *p4v1.DigestList {
		d.add(id, []uint64{v}, now)
		if len(d.ready) == 0 {
			return nil
		}
		l := d.ready[0]
		d.ready = d.ready[1:]
		return l
	}
	one := func(ls []*p4v1.DigestList) *p4v1.DigestList {
		if len(ls) > 1 {
			t.Fatalf("%d lists", len(ls))
		}
		if len(ls) == 0 {
			return nil
		}
		return ls[0]
	}
	steps := []struct {
		name string
		got  *p4v1.DigestList
		want string
	}{
		{"first message is buffered", add(1, 0), "none"},
		{"a duplicate in the buffer is dropped", add(1, 10), "none"},
		{"second", add(2, 20), "none"},
		{"not due before max_timeout", one(d.due(99)), "none"},
		{"max_list_size distinct messages send a list", add(3, 30), "list 1 [1 2 3]"},
		{"a message in the cache is dropped", add(2, 40), "none"},
		{"a new message waits", add(4, 50), "none"},
		{"max_timeout after the first message sends it", one(d.due(150)), "list 2 [4]"},
	}
	for _, s := range steps {
		if got := vals(s.got); got != s.want {
			t.Errorf("%s: %s, want %s", s.name, got, s.want)
		}
	}
	// An ack empties the cache of its list: 2 is learned again.
	if err := d.ack(&p4v1.DigestListAck{DigestId: id, ListId: 1}); err != nil {
		t.Fatal(err)
	}
	add(2, 200)
	add(4, 200) // list 2 is not acked: still cached
	if got := vals(one(d.due(300))); got != "list 3 [2]" {
		t.Errorf("after ack: %s", got)
	}
	// ack_timeout forgets list 2: 4 is learned again.
	d.due(50 + 1000 + 100)
	add(4, 2000)
	if got := vals(one(d.due(2100))); got != "list 4 [4]" {
		t.Errorf("after ack timeout: %s", got)
	}
	// ack_timeout 0: no cache at all.
	if err := d.write(p4v1.Update_MODIFY, &p4v1.DigestEntry{DigestId: id, Config: &p4v1.DigestEntry_Config{MaxListSize: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := vals(add(9, 3000)); got != "list 5 [9]" {
		t.Errorf("max_list_size 1: %s", got)
	}
	if got := vals(add(9, 3001)); got != "list 6 [9]" {
		t.Errorf("ack_timeout 0: %s", got)
	}
	// Codes.
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"INSERT twice", d.write(p4v1.Update_INSERT, &p4v1.DigestEntry{DigestId: id, Config: cfg}), "AlreadyExists"},
		{"unknown digest", d.write(p4v1.Update_INSERT, &p4v1.DigestEntry{DigestId: 8, Config: cfg}), "NotFound"},
		{"no config", d.write(p4v1.Update_MODIFY, &p4v1.DigestEntry{DigestId: id}), "InvalidArgument"},
		{"negative", d.write(p4v1.Update_MODIFY, &p4v1.DigestEntry{DigestId: id, Config: &p4v1.DigestEntry_Config{MaxListSize: -1}}), "InvalidArgument"},
		{"DELETE", d.write(p4v1.Update_DELETE, &p4v1.DigestEntry{DigestId: id}), "OK"},
		{"DELETE again", d.write(p4v1.Update_DELETE, &p4v1.DigestEntry{DigestId: id}), "NotFound"},
		{"MODIFY disabled", d.write(p4v1.Update_MODIFY, &p4v1.DigestEntry{DigestId: id, Config: cfg}), "NotFound"},
		{"ack disabled", d.ack(&p4v1.DigestListAck{DigestId: id, ListId: 1}), "NotFound"},
	} {
		if got := status.Code(c.err).String(); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if l := add(1, 5000); l != nil || len(d.due(1e9)) != 0 {
		t.Error("a disabled digest made a list")
	}
}
