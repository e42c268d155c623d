package ctrl

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"

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
	cfg := configParams(t, s, p.Config)
	if !reflect.DeepEqual(cfg, map[string]uint64{"mode": 3, "node_size": 88, "tail_ttl": 7000}) {
		t.Fatalf("set_config %v, want mode 3, node_size 24+64, tail_ttl 7000 (7ms in microseconds)", cfg)
	}
	// The default tail-ttl (25ms) is set in microseconds; steering off is mode 0.
	d, err := BuildPlan(testRack(t, func(c *rack.Config) { c.Steering = rack.SteerOff }), s)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := configParams(t, s, d.Config); cfg["tail_ttl"] != 25000 || cfg["mode"] != 0 {
		t.Fatalf("default set_config %v, want tail_ttl 25000, mode 0", cfg)
	}
	if p.Tracked[5] != 0 || p.Tracked[7] != 2 {
		t.Fatalf("tracked %v", p.Tracked)
	}
}

// configParams checks that e is the config table's default entry calling
// set_config and returns its parameters by name.
func configParams(t testing.TB, s *p4rtc.Schema, e *p4.TableEntry) map[string]uint64 {
	t.Helper()
	tb, err := s.Table(tConfig)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Action(aSetConfig)
	if err != nil {
		t.Fatal(err)
	}
	if e.GetTableId() != tb.GetPreamble().GetId() || !e.GetIsDefaultAction() || len(e.GetMatch()) != 0 ||
		e.GetAction().GetAction().GetActionId() != a.GetPreamble().GetId() {
		t.Fatalf("config entry %v: want the default entry of %s calling %s", e, tConfig, aSetConfig)
	}
	out := map[string]uint64{}
	for _, p := range e.GetAction().GetAction().GetParams() {
		for _, ap := range a.GetParams() {
			if ap.GetId() == p.GetParamId() {
				out[ap.GetName()], _ = p4rtc.ToUint(p.GetValue())
			}
		}
	}
	return out
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

// TestBuildPlanChain: chain mode adds mode bit 2 to write steering where
// the program keeps a chain per key (the v1model and the TNA program), and
// is reported as unavailable, leaving the mode as it was, where it does
// not (a program without the spec_valid register).
func TestBuildPlanChain(t *testing.T) {
	for _, tc := range []struct {
		p4info   string
		steering string
		chain    bool
		mode     uint64
		noChain  bool
		drop     string // a register the program lacks
	}{
		{"../p4/swordbox.p4info.txtpb", rack.SteerReadWrite, true, modeWrite | modeRead | modeChain, false, ""},
		{"../p4/swordbox.p4info.txtpb", rack.SteerWrite, true, modeWrite | modeChain, false, ""},
		{"../p4/swordbox.p4info.txtpb", rack.SteerReadWrite, false, modeWrite | modeRead, false, ""},
		{"../p4/swordbox.p4info.txtpb", rack.SteerOff, true, 0, false, ""},
		{"../p4/tna/swordbox.p4info.txtpb", rack.SteerReadWrite, true, modeWrite | modeRead | modeChain, false, ""},
		{"../p4/tna/swordbox.p4info.txtpb", rack.SteerWrite, false, modeWrite, false, ""},
		{"../p4/swordbox.p4info.txtpb", rack.SteerReadWrite, true, modeWrite | modeRead, true, "SwordboxIngress.spec_valid"},
	} {
		info, err := p4rtc.LoadP4Info(tc.p4info)
		if err != nil {
			t.Fatal(err)
		}
		if tc.drop != "" {
			n := len(info.Registers)
			info.Registers = slices.DeleteFunc(info.Registers, func(r *configv1.Register) bool { return r.GetPreamble().GetName() == tc.drop })
			if len(info.Registers) != n-1 {
				t.Fatalf("%s has no register %s", tc.p4info, tc.drop)
			}
		}
		s, err := p4rtc.NewSchema(info)
		if err != nil {
			t.Fatal(err)
		}
		p, err := BuildPlan(testRack(t, func(c *rack.Config) { c.Steering, c.Chain = tc.steering, tc.chain }), s)
		if err != nil {
			t.Fatalf("%s %s chain=%v: %v", tc.p4info, tc.steering, tc.chain, err)
		}
		if m := configParams(t, s, p.Config)["mode"]; m != tc.mode || p.NoChain != tc.noChain {
			t.Errorf("%s %s chain=%v: mode %d, NoChain %v; want %d, %v", tc.p4info, tc.steering, tc.chain, m, p.NoChain, tc.mode, tc.noChain)
		}
	}
}
