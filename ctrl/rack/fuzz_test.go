package rack

import (
	"testing"
)

// FuzzParse feeds arbitrary field values to Parse: it must refuse with a
// FieldError or return a rack that keeps its invariants, never panic.
func FuzzParse(f *testing.F) {
	f.Add("02:00:00:00:00:01", "10.0.0.1", 1, "0x7f0000000000", "0x1000", "1-4", "write")
	f.Add("zz", "::1", 600, "", "0", "9-1", "sideways")
	f.Add("02:00:00:00:00:01", "10.0.0.1", 510, "0xffffffffffffffff", "1", "0-0", "off")
	f.Fuzz(func(t *testing.T, mac, ip string, port int, base, length, hotRange, steering string) {
		c := Defaults()
		c.P4Info, c.DeviceConfig = "x", "y"
		c.Steering = steering
		c.Hosts = []Host{{Name: "h", MAC: mac, IP: ip, Port: port}, {Name: "m", MAC: "02:00:00:00:00:09", IP: "10.9.9.9", Port: 9}}
		c.MemoryNodes = []MemoryNode{{Host: "m", Regions: []Region{{Base: base, Length: length}, {Base: length, Length: base}}}}
		c.HotKeys, c.HotKeyRange = 1, hotRange
		r, err := c.Parse()
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("not a FieldError: %v", err)
			}
			return
		}
		for _, h := range r.Hosts {
			if h.Port > MaxPort || !h.IP.Is4() || h.MAC[0]&1 != 0 {
				t.Fatalf("invalid host accepted: %+v", h)
			}
		}
		for _, m := range r.Memory {
			for i, a := range m.Regions {
				if a.Length == 0 || a.End() < a.Base {
					t.Fatalf("invalid region accepted: %+v", a)
				}
				for _, b := range m.Regions[i+1:] {
					if a.Base < b.End() && b.Base < a.End() {
						t.Fatalf("overlapping regions accepted: %+v %+v", a, b)
					}
				}
			}
		}
		if len(r.Candidates) == 0 {
			t.Fatal("hot keys without candidates accepted")
		}
	})
}
