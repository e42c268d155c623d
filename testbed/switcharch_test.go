package testbed

import (
	"strings"
	"testing"
	"time"
)

// TestLinRackTNA: linearizability on the software rack whose switch runs
// p4/tna/swordbox.p4 (the Tofino program on the target's TNA model) under
// the same controller, in every steering mode and in chain mode
// (docs/swordbox-p4.md, "Chain mode"), on 64 hot keys; the modes that
// steer must steer, and chain mode must chain (runLin's checks).
func TestLinRackTNA(t *testing.T) {
	for i, c := range []struct {
		mode  string
		chain bool
	}{{SteerOff, false}, {SteerWrite, false}, {SteerReadWrite, false}, {SteerReadWrite, true}} {
		name := c.mode
		if c.chain {
			name += "+chain"
		}
		t.Run(name, func(t *testing.T) {
			o := hot(linBase(t), c.mode, uint64(40+i))
			o.SwitchArch, o.Chain = ArchTNA, c.chain
			res := runLin(t, "tna", o)
			const statTailsConfirmed = 12 // docs/swordbox-p4.md, "Counters"
			if c.mode != SteerOff && res.Stats[statTailsConfirmed] == 0 {
				t.Errorf("the TNA program confirmed no tail")
			}
		})
	}
}

// TestSwitchProgram: the architectures' programs compile, a program is
// refused under the other architecture's name, and an unknown
// architecture is refused with the accepted ones.
func TestSwitchProgram(t *testing.T) {
	for _, c := range []struct {
		arch, path, want string
	}{
		{"", "", ""},
		{ArchV1Model, "", ""},
		{ArchTNA, "", ""},
		{ArchTNA, "../p4/tna/swordbox.p4", ""},
		{ArchV1Model, "../p4/swordbox.p4", ""},
		{ArchTNA, "../p4/swordbox.p4", "is a v1model program, not tna"},
		{ArchV1Model, "../p4/tna/swordbox.p4", "is a tna program, not v1model"},
		{"psa", "", `switch architecture "psa": want v1model or tna`},
		{ArchTNA, "no-such-file.p4", "no-such-file.p4"},
	} {
		prog, file, src, err := SwitchProgram(c.arch, c.path)
		if c.want == "" {
			if err != nil || prog == nil || len(src) == 0 || file == "" {
				t.Errorf("SwitchProgram(%q, %q): %v", c.arch, c.path, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SwitchProgram(%q, %q): error %v, want one saying %q", c.arch, c.path, err, c.want)
		}
	}
	o := LinOptions{Steering: SteerWrite, Keys: 64, Threads: 8, ClientHosts: 2, ValueSize: 64, Duration: time.Second, SwitchArch: "bmv2"}
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "switch architecture") {
		t.Errorf("LinOptions with switch architecture bmv2: %v, want a refusal naming it", err)
	}
}
