package target

import (
	"bytes"
	"fmt"
	"sort"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// preHdr is the header of p4/testdata/pre.p4.
type preHdr struct {
	op, arg    byte
	rid        uint16
	itype      byte
	mark       byte
	kept, lost byte
	port       byte
}

func (h preHdr) bytes() []byte {
	return []byte{h.op, h.arg, byte(h.rid >> 8), byte(h.rid), h.itype, h.mark, h.kept, h.lost, h.port}
}

func parsePre(b []byte) preHdr {
	return preHdr{op: b[0], arg: b[1], rid: uint16(b[2])<<8 | uint16(b[3]), itype: b[4], mark: b[5], kept: b[6], lost: b[7], port: b[8]}
}

func replicas(pr ...[2]uint32) []*p4v1.Replica {
	var out []*p4v1.Replica
	for _, x := range pr {
		out = append(out, &p4v1.Replica{PortKind: &p4v1.Replica_Port{Port: encodeBits(uint64(x[0]))}, Instance: x[1]})
	}
	return out
}

func mcastEntry(id uint32, rs ...[2]uint32) *p4v1.PacketReplicationEngineEntry {
	return &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{
		MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: id, Replicas: replicas(rs...)}}}
}

func cloneEntry(id uint32, trunc int32, rs ...[2]uint32) *p4v1.PacketReplicationEngineEntry {
	return &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
		CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: id, Replicas: replicas(rs...), PacketLengthBytes: trunc}}}
}

// outsOf turns emitted frames into "port:header" strings, sorted.
func outsOf(outs []out) []string {
	var s []string
	for _, o := range outs {
		if len(o.frame) < 9 {
			s = append(s, fmt.Sprintf("%d:% x", o.port, o.frame))
			continue
		}
		h := parsePre(o.frame)
		s = append(s, fmt.Sprintf("%d:rid=%d itype=%d mark=%#x kept=%d lost=%d port=%d len=%d", o.port, h.rid, h.itype, h.mark, h.kept, h.lost, h.port, len(o.frame)))
	}
	sort.Strings(s)
	return s
}

func TestPacketReplication(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	d := NewDevice(p, Options{})
	for _, e := range []*p4v1.PacketReplicationEngineEntry{
		mcastEntry(7, [2]uint32{2, 1}, [2]uint32{3, 2}, [2]uint32{3, 9}),
		cloneEntry(9, 0, [2]uint32{4, 5}),
		cloneEntry(10, 0, [2]uint32{5, 0}, [2]uint32{6, 1}),
		cloneEntry(11, 4, [2]uint32{7, 0}),
	} {
		if err := d.WritePREEntry(p4v1.Update_INSERT, e); err != nil {
			t.Fatal(err)
		}
	}
	payload := []byte{0xde, 0xad}
	frame := func(op, arg byte) []byte { return append(preHdr{op: op, arg: arg}.bytes(), payload...) }
	cases := []struct {
		name  string
		frame []byte
		want  []string
	}{
		{"unicast", frame(0, 3), []string{"1:rid=0 itype=0 mark=0xaa kept=3 lost=3 port=1 len=11"}},
		{"multicast: one copy per replica, ingress's headers and metadata, egress_rid the instance", frame(1, 7), []string{
			"2:rid=1 itype=5 mark=0xaa kept=7 lost=7 port=2 len=11",
			"3:rid=2 itype=5 mark=0xaa kept=7 lost=7 port=3 len=11",
			"3:rid=9 itype=5 mark=0xaa kept=7 lost=7 port=3 len=11",
		}},
		{"multicast to a group that does not exist drops", frame(1, 8), nil},
		{"mark_to_drop clears mcast_grp", frame(5, 7), nil},
		{"I2E clone: the packet as received, metadata zeroed", frame(2, 9), []string{
			"1:rid=0 itype=0 mark=0xaa kept=9 lost=9 port=1 len=11",
			"4:rid=5 itype=1 mark=0x0 kept=0 lost=0 port=4 len=11",
		}},
		{"I2E clone preserving field list 1", frame(3, 10), []string{
			"1:rid=0 itype=0 mark=0xaa kept=10 lost=10 port=1 len=11",
			"5:rid=0 itype=1 mark=0x0 kept=10 lost=0 port=5 len=11",
			"6:rid=1 itype=1 mark=0x0 kept=10 lost=0 port=6 len=11",
		}},
		{"clone of a session that does not exist is not made", frame(2, 12), []string{"1:rid=0 itype=0 mark=0xaa kept=12 lost=12 port=1 len=11"}},
		{"E2E clone: egress's headers, field list kept", frame(4, 9), []string{
			"1:rid=0 itype=0 mark=0xaa kept=9 lost=9 port=1 len=11",
			"4:rid=5 itype=2 mark=0xaa kept=9 lost=0 port=4 len=11",
		}},
		{"resubmit: the packet as received, field list kept", frame(7, 20), []string{"1:rid=0 itype=6 mark=0xaa kept=21 lost=0 port=1 len=11"}},
		{"recirculate: the deparsed packet, field list kept", frame(8, 20), []string{"1:rid=0 itype=4 mark=0xaa kept=22 lost=0 port=1 len=11"}},
		{"resubmitting for ever stops", frame(10, 20), nil},
		{"clone truncated to packet_length_bytes", frame(2, 11), []string{
			"1:rid=0 itype=0 mark=0xaa kept=11 lost=11 port=1 len=11",
			"7:02 0b 00 00", // op, arg, rid: the first 4 bytes of the clone
		}},
	}
	for _, c := range cases {
		got := outsOf(send(d, 1, c.frame))
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	if st := d.Stats(); st.ReentryLimit != 1 {
		t.Errorf("ReentryLimit = %d, want 1", st.ReentryLimit)
	}
	// The recirculated packet is the deparsed one (egress made op 9).
	if o := send(d, 1, frame(8, 20)); len(o) != 1 || o[0].frame[0] != 9 {
		t.Errorf("recirculated: %v", o)
	}
	// The payload follows every copy unchanged.
	for _, o := range send(d, 1, frame(1, 7)) {
		if !bytes.Equal(o.frame[9:], payload) {
			t.Errorf("port %d: payload % x", o.port, o.frame[9:])
		}
	}
	// A deleted group no longer replicates.
	if err := d.WritePREEntry(p4v1.Update_DELETE, mcastEntry(7)); err != nil {
		t.Fatal(err)
	}
	if got := send(d, 1, frame(1, 7)); len(got) != 0 {
		t.Errorf("deleted group: %d copies", len(got))
	}
}

func TestPREEntryErrors(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	d := NewDevice(p, Options{})
	if err := d.WritePREEntry(p4v1.Update_INSERT, mcastEntry(1, [2]uint32{1, 0})); err != nil {
		t.Fatal(err)
	}
	backup := mcastEntry(2, [2]uint32{1, 0})
	backup.GetMulticastGroupEntry().Replicas[0].BackupReplicas = []*p4v1.BackupReplica{{Port: []byte{2}}}
	cases := []struct {
		name string
		ut   p4v1.Update_Type
		e    *p4v1.PacketReplicationEngineEntry
		code string
	}{
		{"group id 0", p4v1.Update_INSERT, mcastEntry(0), "InvalidArgument"},
		{"group id over 16 bits", p4v1.Update_INSERT, mcastEntry(0x10000), "InvalidArgument"},
		{"group exists", p4v1.Update_INSERT, mcastEntry(1), "AlreadyExists"},
		{"modify missing group", p4v1.Update_MODIFY, mcastEntry(3), "NotFound"},
		{"delete missing group", p4v1.Update_DELETE, mcastEntry(3), "NotFound"},
		{"duplicate replica", p4v1.Update_INSERT, mcastEntry(4, [2]uint32{1, 1}, [2]uint32{1, 1}), "InvalidArgument"},
		{"instance over 16 bits", p4v1.Update_INSERT, mcastEntry(4, [2]uint32{1, 0x10000}), "InvalidArgument"},
		{"drop port", p4v1.Update_INSERT, mcastEntry(4, [2]uint32{511, 0}), "InvalidArgument"},
		{"backup replicas", p4v1.Update_INSERT, backup, "Unimplemented"},
		{"session id 0", p4v1.Update_INSERT, cloneEntry(0, 0), "InvalidArgument"},
		{"negative truncation", p4v1.Update_INSERT, cloneEntry(5, -1), "InvalidArgument"},
		{"no type", p4v1.Update_INSERT, &p4v1.PacketReplicationEngineEntry{}, "InvalidArgument"},
	}
	for _, c := range cases {
		if got := statusCode(d.WritePREEntry(c.ut, c.e)); got != c.code {
			t.Errorf("%s: %s, want %s", c.name, got, c.code)
		}
	}
	// Read back: wildcard, by id, missing id.
	var n int
	if err := d.ReadPREEntries(mcastEntry(0), func(e *p4v1.PacketReplicationEngineEntry) error {
		n++
		if !bytes.Equal(e.GetMulticastGroupEntry().GetReplicas()[0].GetPort(), []byte{1}) {
			t.Errorf("read back %v", e)
		}
		return nil
	}); err != nil || n != 1 {
		t.Fatalf("wildcard read: %d entries, %v", n, err)
	}
	if got := statusCode(d.ReadPREEntries(mcastEntry(9), func(*p4v1.PacketReplicationEngineEntry) error { return nil })); got != "NotFound" {
		t.Errorf("read of a missing group: %s", got)
	}
}

func TestPacketReplicationNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under -race (sync.Pool drops items)")
	}
	p := mustCompileFile(t, "../testdata/pre.p4")
	d := NewDevice(p, Options{})
	if err := d.WritePREEntry(p4v1.Update_INSERT, mcastEntry(7, [2]uint32{2, 1}, [2]uint32{3, 2})); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePREEntry(p4v1.Update_INSERT, cloneEntry(9, 0, [2]uint32{4, 5})); err != nil {
		t.Fatal(err)
	}
	n := 0
	emit := func(uint32, []byte) { n++ }
	for _, op := range []byte{1, 3, 4, 7, 8} {
		f := preHdr{op: op, arg: 7}.bytes()
		if op != 1 {
			f[1] = 9
		}
		d.Process(1, f, emit) // warm the pooled state's saved copies
		if a := testing.AllocsPerRun(100, func() { d.Process(1, f, emit) }); a != 0 {
			t.Errorf("op %d: %.1f allocations per packet", op, a)
		}
	}
}
