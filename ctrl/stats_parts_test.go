package ctrl

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/ctrl/rack"
	swp4 "github.com/swordbox/swordbox/p4"
	"github.com/swordbox/swordbox/p4/target"
)

// TestReadCounterSumsParts runs one scenario (two puts, the second steered
// and lost) on the v1model program and on the Tofino program, whose stats
// cells are counted in stats and stats_part2 .. stats_part9: ReadCounter
// of stats gives the same cells on both, and on the Tofino program the
// base counter alone does not.
func TestReadCounterSumsParts(t *testing.T) {
	ctx := context.Background()
	read := func(tna bool) (sum, base map[int64]uint64) {
		r := newRig(t, time.Hour)
		if tna {
			prog, err := target.Compile(swp4.TNAFile, swp4.TNASource)
			if err != nil {
				t.Fatal(err)
			}
			r.src, r.info = swp4.TNASource, prog.P4Info()
		}
		// Chain mode off on both: the Tofino program has no chain
		// registers, and the scenario compares the rules both share.
		c := r.controller(r.rackConfig(func(rc *rack.Config) { rc.Chain = false }), nil)
		r.primary(c)
		steeredCASDropped(t, r)
		sum, err := c.ReadCounter(ctx, cStats, nil)
		if err != nil {
			t.Fatal(err)
		}
		base, err = c.readCells(ctx, "counter", cStats, nil, c.Schema.CounterRead, func(e *p4.Entity) (int64, uint64, bool, error) {
			ce := e.GetCounterEntry()
			return ce.GetIndex().GetIndex(), uint64(ce.GetData().GetPacketCount()), ce != nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := Show(ctx, c.Client, c.Schema, "counters", []string{cStats}, &out); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "stats_part5"); got != tna {
			t.Errorf("show counters stats (tna %v) shows the parts: %v\n%s", tna, got, out.String())
		}
		return sum, base
	}
	v1, v1base := read(false)
	tna, tnaBase := read(true)
	if !maps.Equal(v1, v1base) {
		t.Fatalf("v1model: ReadCounter %v, the counter itself %v", v1, v1base)
	}
	// The v1model program's chain cells (16 and up) exist only there and
	// stay 0 with chain mode off; the cells both programs have must agree.
	shared := maps.Clone(v1)
	for idx, n := range v1 {
		if _, ok := tna[idx]; !ok {
			if n != 0 {
				t.Errorf("v1model stats[%d] = %d with chain mode off", idx, n)
			}
			delete(shared, idx)
		}
	}
	if !maps.Equal(shared, tna) {
		t.Fatalf("stats: v1model %v, Tofino program %v", v1, tna)
	}
	if maps.Equal(tna, tnaBase) {
		t.Fatalf("the Tofino program's stats alone hold every count (%v): the parts were not exercised", tnaBase)
	}
	for name, idx := range map[string]int64{"requests": 0, "cas_seen": 2, "cas_steered": 3, "outstanding_cleared": 8, "tails_confirmed": 12} {
		if v1[idx] == 0 {
			t.Errorf("stats[%s] is 0: the scenario does not count it", name)
		}
	}
	t.Logf("stats %v; the Tofino program's base counter %v", tna, tnaBase)
}
