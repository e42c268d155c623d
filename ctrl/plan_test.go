package ctrl

import (
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
)

func testRack(t testing.TB, edit func(*rack.Config)) *rack.Rack {
	t.Helper()
	c := rack.Defaults()
	c.P4Info, c.DeviceConfig = "unused", "unused"
	c.Hosts = []rack.Host{
		{Name: "client0", MAC: "02:00:00:00:00:01", IP: "10.0.0.1", Port: 1},
		{Name: "client1", MAC: "02:00:00:00:00:03", IP: "10.0.0.3", Port: 3},
		{Name: "mem0", MAC: "02:00:00:00:00:02", IP: "10.0.0.2", Port: 2},
	}
	c.MemoryNodes = []rack.MemoryNode{{Host: "mem0", Regions: []rack.Region{{Base: "0x7f0000000000", Length: "0x1000000"}}}}
	c.TrackedKeys = []uint64{5, 6, 7}
	if edit != nil {
		edit(&c)
	}
	r, err := c.Parse()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildPlan(t *testing.T) {
	s, _ := p4rtc.NewSchema(testP4Info(t))
	p, err := BuildPlan(testRack(t, func(c *rack.Config) {
		c.Steering = rack.SteerReadWrite
		c.ObjectSize = 64
		c.TailTTL = 7 * time.Millisecond
	}), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Forward) != 3 || p.KeySlots != 4096 {
		t.Fatalf("forward %d entries, %d key slots", len(p.Forward), p.KeySlots)
	}
	if v := p.Registers[0].GetData().GetBitstring(); len(v) != 1 || v[0] != 3 {
		t.Fatalf("steer_mode %x, want 3", v)
	}
	if len(p.Registers) != 3 {
		t.Fatalf("%d configuration registers, want steer_mode, node_size and tail_ttl", len(p.Registers))
	}
	if v, _ := p4rtc.ToUint(p.Registers[1].GetData().GetBitstring()); v != 88 {
		t.Fatalf("node_size %d, want 24+64", v)
	}
	if v, _ := p4rtc.ToUint(p.Registers[2].GetData().GetBitstring()); v != 7000 {
		t.Fatalf("tail_ttl %d, want 7000 (7ms in microseconds)", v)
	}
	// The default tail-ttl (25ms) is written in microseconds.
	d, err := BuildPlan(testRack(t, nil), s)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := p4rtc.ToUint(d.Registers[2].GetData().GetBitstring()); v != 25000 {
		t.Fatalf("default tail_ttl %d, want 25000", v)
	}
	if p.Tracked[5] != 0 || p.Tracked[7] != 2 {
		t.Fatalf("tracked %v", p.Tracked)
	}
}

func TestBuildPlanRefusesBeforeWriting(t *testing.T) {
	s, _ := p4rtc.NewSchema(testP4Info(t))
	many := make([]uint64, 4097)
	for i := range many {
		many[i] = uint64(i)
	}
	if _, err := BuildPlan(testRack(t, func(c *rack.Config) { c.TrackedKeys = many }), s); err == nil ||
		!strings.HasPrefix(err.Error(), "ctrl.tracked-keys: 4097 keys, the switch has 4096 key slots") {
		t.Fatalf("too many tracked keys: %v", err)
	}
	if _, err := BuildPlan(testRack(t, func(c *rack.Config) {
		c.TrackedKeys = nil
		c.HotKeys, c.HotKeyProbes, c.HotKeyRange = 4095, 4, "0-9"
	}), s); err == nil || !strings.HasPrefix(err.Error(), "ctrl.hot-keys: ") {
		t.Fatalf("too many hot keys: %v", err)
	}
	// A pipeline without an object the loops need is refused up front.
	info := testP4Info(t)
	info.Registers = info.Registers[:len(info.Registers)-1] // no cas_out_ts
	s2, _ := p4rtc.NewSchema(info)
	if _, err := BuildPlan(testRack(t, nil), s2); err == nil || !strings.Contains(err.Error(), `"cas_out_ts"`) {
		t.Fatalf("missing register: %v", err)
	}
}
