package rack

import (
	"errors"
	"strings"
	"testing"
)

func good() Config {
	c := Defaults()
	c.P4Info = "p4/swordbox.p4info.txtpb"
	c.DeviceConfig = "p4/swordbox.p4"
	c.Hosts = []Host{
		{Name: "client0", MAC: "02:00:00:00:00:01", IP: "10.0.0.1", Port: 1},
		{Name: "mem0", MAC: "02:00:00:00:00:02", IP: "10.0.0.2", Port: 2},
	}
	c.MemoryNodes = []MemoryNode{{Host: "mem0", Regions: []Region{{Base: "0x7f0000000000", Length: "0x100000"}}}}
	c.TrackedKeys = []uint64{1, 2}
	return c
}

func TestParseGood(t *testing.T) {
	r, err := good().Parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hosts) != 2 || r.Hosts[1].Port != 2 || r.Hosts[1].MAC != [6]byte{2, 0, 0, 0, 0, 2} {
		t.Fatalf("hosts: %+v", r.Hosts)
	}
	if g := r.Memory[0].Regions[0]; g.Base != 0x7f0000000000 || g.End() != 0x7f0000100000 {
		t.Fatalf("region: %+v", g)
	}
	if h, ok := r.HostByIP(r.Hosts[0].IP); !ok || h.Name != "client0" {
		t.Fatalf("HostByIP: %+v %v", h, ok)
	}
}

func TestParseRefusesNamingTheField(t *testing.T) {
	cases := []struct {
		field string
		edit  func(*Config)
	}{
		{"ctrl.switch", func(c *Config) { c.Switch = "nowhere" }},
		{"ctrl.election-id", func(c *Config) { c.ElectionID = 0 }},
		{"ctrl.p4info", func(c *Config) { c.P4Info = "" }},
		{"ctrl.device-config", func(c *Config) { c.DeviceConfig = "" }},
		{"ctrl.tls-ca", func(c *Config) { c.TLSCert = "c.pem"; c.TLSKey = "k.pem" }},
		{"ctrl.tls-key", func(c *Config) { c.TLSCA = "ca.pem"; c.TLSCert = "c.pem" }},
		{"ctrl.steering", func(c *Config) { c.Steering = "sideways" }},
		{"ctrl.object-size", func(c *Config) { c.ObjectSize = 0 }},
		{"ctrl.object-size", func(c *Config) { c.ObjectSize = 5000 }},
		{"ctrl.hosts[0].name", func(c *Config) { c.Hosts[0].Name = "" }},
		{"ctrl.hosts[1].name", func(c *Config) { c.Hosts[1].Name = "client0" }},
		{"ctrl.hosts[1].mac", func(c *Config) { c.Hosts[1].MAC = "zz:00:00:00:00:02" }},
		{"ctrl.hosts[1].mac", func(c *Config) { c.Hosts[1].MAC = "01:00:5e:00:00:01" }},
		{"ctrl.hosts[1].mac", func(c *Config) { c.Hosts[1].MAC = c.Hosts[0].MAC }},
		{"ctrl.hosts[0].ip", func(c *Config) { c.Hosts[0].IP = "10.0.0.300" }},
		{"ctrl.hosts[0].ip", func(c *Config) { c.Hosts[0].IP = "fe80::1" }},
		{"ctrl.hosts[1].ip", func(c *Config) { c.Hosts[1].IP = "10.0.0.1" }},
		{"ctrl.hosts[1].port", func(c *Config) { c.Hosts[1].Port = 511 }},
		{"ctrl.hosts[1].port", func(c *Config) { c.Hosts[1].Port = -1 }},
		{"ctrl.memory-nodes[0].host", func(c *Config) { c.MemoryNodes[0].Host = "mem9" }},
		{"ctrl.memory-nodes[1].host", func(c *Config) { c.MemoryNodes = append(c.MemoryNodes, c.MemoryNodes[0]) }},
		{"ctrl.memory-nodes[0].regions[0].base", func(c *Config) { c.MemoryNodes[0].Regions[0].Base = "0xZZ" }},
		{"ctrl.memory-nodes[0].regions[0].length", func(c *Config) { c.MemoryNodes[0].Regions[0].Length = "0" }},
		{"ctrl.memory-nodes[0].regions[0].length", func(c *Config) {
			c.MemoryNodes[0].Regions[0] = Region{Base: "0xffffffffffffff00", Length: "0x200"}
		}},
		{"ctrl.memory-nodes[0].regions[1]", func(c *Config) {
			c.MemoryNodes[0].Regions = append(c.MemoryNodes[0].Regions, Region{Base: "0x7f0000000800", Length: "16"})
		}},
		{"ctrl.memory-nodes", func(c *Config) { c.MemoryNodes = nil }},
		{"ctrl.hot-keys", func(c *Config) { c.HotKeys = 4 }},
		{"ctrl.hot-keys", func(c *Config) { c.TrackedKeys = nil; c.HotKeys = -1 }},
		{"ctrl.hot-key-probes", func(c *Config) { c.TrackedKeys, c.HotKeys, c.HotKeyRange, c.HotKeyProbes = nil, 4, "0-99", 0 }},
		{"ctrl.tracked-keys[2]", func(c *Config) { c.TrackedKeys = []uint64{1, 2, 1} }},
		{"ctrl.repair-period", func(c *Config) { c.RepairPeriod = 0 }},
		{"ctrl.repair-threshold", func(c *Config) { c.RepairThreshold = c.RepairPeriod / 2 }},
		{"ctrl.hot-keys-period", func(c *Config) { c.HotKeysPeriod = 0 }},
	}
	for _, tc := range cases {
		c := good()
		c.Hosts = append([]Host(nil), c.Hosts...)
		c.MemoryNodes = []MemoryNode{{Host: "mem0", Regions: append([]Region(nil), c.MemoryNodes[0].Regions...)}}
		tc.edit(&c)
		_, err := c.Parse()
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: want a FieldError, got %v", tc.field, err)
			continue
		}
		if fe.Field != tc.field || !strings.HasPrefix(err.Error(), tc.field+": ") {
			t.Errorf("want field %s, got %q", tc.field, err)
		}
	}
}

func TestSteeringOffNeedsNoMemoryNode(t *testing.T) {
	c := good()
	c.Steering = SteerOff
	c.MemoryNodes = nil
	c.TrackedKeys = nil
	if _, err := c.Parse(); err != nil {
		t.Fatal(err)
	}
}

func TestHotKeyCandidates(t *testing.T) {
	c := good()
	c.TrackedKeys = nil
	c.HotKeys = 2
	c.HotKeyCandidates = []uint64{7, 3}
	c.HotKeyRange = "2-5"
	r, err := c.Parse()
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{7, 3, 2, 4, 5}
	if len(r.Candidates) != len(want) {
		t.Fatalf("candidates %v, want %v", r.Candidates, want)
	}
	for i := range want {
		if r.Candidates[i] != want[i] {
			t.Fatalf("candidates %v, want %v", r.Candidates, want)
		}
	}
	for _, bad := range []string{"5-2", "x-3", "7"} {
		c.HotKeyRange = bad
		if _, err := c.Parse(); err == nil || !strings.HasPrefix(err.Error(), "ctrl.hot-key-range: ") {
			t.Errorf("range %q: %v", bad, err)
		}
	}
	c.HotKeyRange, c.HotKeyCandidates = "", nil
	if _, err := c.Parse(); err == nil || !strings.HasPrefix(err.Error(), "ctrl.hot-key-candidates: ") {
		t.Errorf("no candidates: %v", err)
	}
}
