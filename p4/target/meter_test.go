package target

import (
	"fmt"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// The trTCM of RFC 2698 on a fake clock: colours by bucket, refill by
// rate, caps at the bursts.
func TestMeterColours(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	now := uint64(1000)
	d := NewDevice(p, Options{Now: func() uint64 { return now }})
	id := meterID(t, p, "I.pm")
	// 1000 packets/s committed (burst 1), 2000 peak (burst 2).
	if err := d.WriteMeterEntry(&p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: 1},
		Config: &p4v1.MeterConfig{Cir: 1000, Cburst: 1, Pir: 2000, Pburst: 2}}); err != nil {
		t.Fatal(err)
	}
	colour := func(arg byte) byte {
		o := send(d, 1, preHdr{op: 11, arg: arg}.bytes())
		if len(o) != 1 {
			t.Fatalf("%d frames", len(o))
		}
		return parsePre(o[0].frame).lost
	}
	var got []byte
	for i := 0; i < 3; i++ {
		got = append(got, colour(1))
	}
	now += 500 // +0.5 committed token, +1 peak token
	got = append(got, colour(1))
	now += 500 // +1 committed (now 1), +1 peak (now 1)
	got = append(got, colour(1))
	now += 1_000_000 // a second: both buckets full again, not beyond
	got = append(got, colour(1), colour(1), colour(1))
	got = append(got, colour(0)) // an unconfigured cell is GREEN
	want := []byte{colorGreen, colorYellow, colorRed, colorYellow, colorGreen, colorGreen, colorYellow, colorRed, colorGreen}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("colours %v, want %v", got, want)
	}
	// Clearing the config makes it GREEN again; reads give the config.
	var cfgs []*p4v1.MeterConfig
	if err := d.ReadMeterEntries(&p4v1.MeterEntry{MeterId: id}, func(e *p4v1.MeterEntry) error {
		cfgs = append(cfgs, e.Config)
		return nil
	}); err != nil || len(cfgs) != 4 || cfgs[0] != nil || cfgs[1].GetPir() != 2000 {
		t.Fatalf("read: %v, %v", cfgs, err)
	}
	if err := d.WriteMeterEntry(&p4v1.MeterEntry{MeterId: id}); err != nil {
		t.Fatal(err)
	}
	if c := colour(1); c != colorGreen {
		t.Errorf("cleared meter: colour %d", c)
	}
}

func TestMeterConfigErrors(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	d := NewDevice(p, Options{})
	id := meterID(t, p, "I.pm")
	cases := []struct {
		name string
		e    *p4v1.MeterEntry
		code string
	}{
		{"cir above pir", &p4v1.MeterEntry{MeterId: id, Config: &p4v1.MeterConfig{Cir: 2, Pir: 1}}, "InvalidArgument"},
		{"negative burst", &p4v1.MeterEntry{MeterId: id, Config: &p4v1.MeterConfig{Cburst: -1}}, "InvalidArgument"},
		{"eburst on trTCM", &p4v1.MeterEntry{MeterId: id, Config: &p4v1.MeterConfig{Eburst: 1}}, "InvalidArgument"},
		{"rate too large", &p4v1.MeterEntry{MeterId: id, Config: &p4v1.MeterConfig{Cir: 1 << 41, Pir: 1 << 41}}, "InvalidArgument"},
		{"index -1", &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: -1}}, "InvalidArgument"},
		{"index 4", &p4v1.MeterEntry{MeterId: id, Index: &p4v1.Index{Index: 4}}, "OutOfRange"},
		{"unknown meter", &p4v1.MeterEntry{MeterId: 7}, "NotFound"},
		{"counter data", &p4v1.MeterEntry{MeterId: id, CounterData: &p4v1.MeterCounterData{}}, "Unimplemented"},
	}
	for _, c := range cases {
		if got := statusCode(d.WriteMeterEntry(c.e)); got != c.code {
			t.Errorf("%s: %s, want %s", c.name, got, c.code)
		}
	}
}

// The token arithmetic does not overflow at the largest rates and bursts.
func TestAddTokensBounds(t *testing.T) {
	const max = maxMeterValue * 1e6
	cases := []struct {
		tok, rate int64
		dt        uint64
		want      int64
	}{
		{0, maxMeterValue, 1 << 62, max},
		{0, maxMeterValue, 1, maxMeterValue},
		{max - 1, 1, 1, max},
		{5, 0, 1 << 40, 5},
		{max, 1, 1, max},
	}
	for _, c := range cases {
		if got := addTokens(c.tok, c.rate, c.dt, max); got != c.want {
			t.Errorf("addTokens(%d, %d, %d) = %d, want %d", c.tok, c.rate, c.dt, got, c.want)
		}
	}
}

func TestDigestRecords(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	d := NewDevice(p, Options{})
	info := p.P4Info()
	if len(info.Digests) != 1 || info.Digests[0].Preamble.Name != "learn_t" || info.Digests[0].Preamble.Id>>24 != 0x18-1 {
		t.Fatalf("P4Info digests %v", info.Digests)
	}
	if m := info.TypeInfo.GetStructs()["learn_t"].GetMembers(); len(m) != 2 || m[1].Name != "port" || m[1].TypeSpec.GetBitstring().GetBit().GetBitwidth() != 9 {
		t.Fatalf("P4Info learn_t %v", m)
	}
	id := info.Digests[0].Preamble.Id
	for _, arg := range []byte{5, 6} {
		send(d, 3, preHdr{op: 12, arg: arg}.bytes())
	}
	var got []string
	take := func() {
		got = nil
		d.TakeDigests(func(dig uint32, vals []uint64) {
			if dig != id {
				t.Errorf("digest id %#x", dig)
			}
			got = append(got, fmt.Sprint(vals))
		})
	}
	take()
	if fmt.Sprint(got) != "[[5 3] [6 3]]" {
		t.Errorf("records %v", got)
	}
	take()
	if len(got) != 0 {
		t.Errorf("records after taking: %v", got)
	}
	// A full queue drops and counts.
	for i := 0; i < digestQueueCap+3; i++ {
		send(d, 2, preHdr{op: 12, arg: byte(i)}.bytes())
	}
	take()
	if len(got) != digestQueueCap || d.Stats().DigestDrops != 3 || got[0] != "[0 2]" {
		t.Errorf("%d records, %d drops, first %v", len(got), d.Stats().DigestDrops, got[0])
	}
}

// Idle timeouts on a fake clock: expiry after the TTL without hits, timer
// restart after a notification and after a hit, time_since_last_hit.
func TestIdleTimeouts(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	now := uint64(0)
	d := NewDevice(p, Options{Now: func() uint64 { return now }})
	aged, fwd := tableID(t, p, "I.aged"), tableID(t, p, "I.fwd")
	te := func(tid uint32, arg byte, ttl int64) *p4v1.TableEntry {
		return &p4v1.TableEntry{TableId: tid, Match: []*p4v1.FieldMatch{exact(1, []byte{arg})},
			Action: act(actionID(t, p, "NoAction")), IdleTimeoutNs: ttl}
	}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, te(aged, 1, 5_000_000)); err != nil { // 5 ms
		t.Fatal(err)
	}
	if err := d.WriteTableEntry(p4v1.Update_INSERT, te(aged, 2, 0)); err != nil { // never expires
		t.Fatal(err)
	}
	expired := func() []string {
		var out []string
		d.ExpiredEntries(func(id uint32, es []*p4v1.TableEntry) {
			for _, e := range es {
				out = append(out, fmt.Sprintf("%x ttl %d", e.Match[0].GetExact().GetValue(), e.IdleTimeoutNs))
				if e.Action != nil || id != aged {
					t.Errorf("notification entry %v", e)
				}
			}
		})
		return out
	}
	now = 4_999
	if got := expired(); len(got) != 0 {
		t.Errorf("before the TTL: %v", got)
	}
	now = 5_000
	if got := fmt.Sprint(expired()); got != "[01 ttl 5000000]" {
		t.Errorf("at the TTL: %v", got)
	}
	if got := expired(); len(got) != 0 {
		t.Errorf("right after a notification: %v", got)
	}
	now = 8_000
	send(d, 1, preHdr{op: 15, arg: 1}.bytes()) // a hit at 8 ms
	now = 12_999
	if got := expired(); len(got) != 0 {
		t.Errorf("within the TTL of the hit: %v", got)
	}
	var since []int64
	if err := d.ReadTableEntries(&p4v1.TableEntry{TableId: aged, TimeSinceLastHit: &p4v1.TableEntry_IdleTimeout{}}, func(e *p4v1.TableEntry) error {
		since = append(since, e.TimeSinceLastHit.GetElapsedNs())
		return nil
	}); err != nil || fmt.Sprint(since) != "[4999000 12999000]" {
		t.Errorf("time_since_last_hit %v, %v", since, err)
	}
	now = 13_000
	if got := fmt.Sprint(expired()); got != "[01 ttl 5000000]" {
		t.Errorf("TTL after the hit: %v", got)
	}
	def := &p4v1.TableEntry{TableId: aged, IsDefaultAction: true, IdleTimeoutNs: 1}
	withSince := te(aged, 3, 1)
	withSince.TimeSinceLastHit = &p4v1.TableEntry_IdleTimeout{}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"TTL on a table without idle timeouts", d.WriteTableEntry(p4v1.Update_INSERT, te(fwd, 3, 1))},
		{"time_since_last_hit in a write", d.WriteTableEntry(p4v1.Update_INSERT, withSince)},
		{"TTL on the default entry", d.WriteTableEntry(p4v1.Update_MODIFY, def)},
		{"negative TTL", d.WriteTableEntry(p4v1.Update_INSERT, te(aged, 3, -1))},
		{"time_since_last_hit of a table without idle timeouts", d.ReadTableEntries(&p4v1.TableEntry{TableId: fwd, TimeSinceLastHit: &p4v1.TableEntry_IdleTimeout{}}, nil)},
	} {
		if got := statusCode(c.err); got != "InvalidArgument" {
			t.Errorf("%s: %s, want InvalidArgument", c.name, got)
		}
	}
	for _, ti := range p.P4Info().Tables {
		want := "NO_TIMEOUT"
		if ti.Preamble.Id == aged {
			want = "NOTIFY_CONTROL"
		}
		if got := ti.IdleTimeoutBehavior.String(); got != want {
			t.Errorf("P4Info table %s: idle_timeout_behavior %s, want %s", ti.Preamble.Name, got, want)
		}
	}
}
