package ptf

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/swordbox/swordbox/p4/target"
)

// TestTNASwordboxPlacementReport runs the target's Tofino placement check
// (issue 18) on p4/tna/swordbox.p4 and asserts exactly what it reports.
// Every path the check walks is a choice at the program's branches
// (conditions unevaluated, as bf-p4c's mutual exclusion is structural);
// the first and second pass of a resubmitted packet are two such paths of
// one pipeline. The program passes: every register is accessed at most
// once on any path, and the registers are accessed in one order on all
// paths. What made that possible is the resubmit of two kinds of packets
// (docs/swordbox-p4.md, "The Tofino program"): the ATOMIC ACK of a
// tracked link reads the compare and VA as forwarded after the tail in
// its first pass and writes the tail in its second, and a linking CAS in
// chain mode reads the key's chain end and its node's mark in its first
// pass and writes them in its second. The other cases undo one of those
// in memory and assert what the check then reports, so this test fails if
// the check stops seeing them.
func TestTNASwordboxPlacementReport(t *testing.T) {
	src, err := os.ReadFile(tnaProgramPath)
	if err != nil {
		t.Fatal(err)
	}
	const f = "p4/tna/swordbox.p4"
	const (
		readCmp  = "                        meta.link_cmp = cas_out_compare_read.execute(meta.link_slot);\n"
		readVA   = "                        meta.link_va = cas_out_va_read.execute(meta.link_slot);\n"
		readTail = "                        meta.tail_key = tail_key_read.execute(meta.key_slot);\n"
		// the second pass's chain end, written before the tail is read;
		// in one pass it would have to be read first (rule 10 decides by it)
		chainEnd = "                            spec_ts_chain.execute(meta.key_slot);\n"
	)
	line := func(src, s string) int { return strings.Count(src[:strings.Index(src, s)], "\n") + 1 }
	// The ACK decides by the compare and VA as forwarded before it reads
	// the tail, as it did in one pass.
	ackFirst := strings.Replace(strings.Replace(string(src), readCmp+readVA, "", 1), readTail, readCmp+readVA+readTail, 1)
	onePass := strings.Replace(string(src), chainEnd, "                            meta.spec_ts = (bit<48>)spec_ts_read.execute(meta.key_slot);\n"+chainEnd, 1)
	cases := []struct {
		name string
		src  string
		want []string // nil: the check passes
		comp []string // objects the reported cycle's component must hold
	}{
		{name: "as is", src: string(src)},
		{name: "the ACK reads the record as forwarded before the tail", src: ackFirst, want: []string{
			f + ":" + strconv.Itoa(line(ackFirst, readCmp)) + ":41: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.cas_out_compare -> SwordboxIngress.tail_key -> SwordboxIngress.cas_out_compare)",
		}, comp: []string{"SwordboxIngress.cas_out_va", "SwordboxIngress.tail_ts", "SwordboxIngress.tail_va_hi", "SwordboxIngress.tail_valid"}},
		// Rule 10 decides by the chain end's age before it writes it:
		// in one pass the same register twice.
		{name: "a chained CAS reads its chain end in the second pass", src: onePass, want: []string{
			f + ":" + strconv.Itoa(line(onePass, chainEnd)) + ":29: register SwordboxIngress.spec_ts is accessed twice on one path through SwordboxIngress: first at " +
				f + ":" + strconv.Itoa(line(onePass, chainEnd)-1) + ":53, again here",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.src == string(src) && tc.name != "as is" {
				t.Fatal("the text the case rewrites is no longer in the program")
			}
			p, err := target.Compile(f, []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if err := p.TofinoPlacement(); err != nil {
					t.Fatalf("placement: %v", err)
				}
				if _, err := target.CompileWith(f, []byte(tc.src), target.CompileOptions{TofinoPlacement: true}); err != nil {
					t.Errorf("CompileOptions.TofinoPlacement: %v", err)
				}
				return
			}
			var pe *target.PlacementError
			if !errors.As(p.TofinoPlacement(), &pe) {
				t.Fatalf("the check passes (%v)", p.TofinoPlacement())
			}
			var got []string
			var cycles []string
			for _, pr := range pe.Problems {
				i := strings.Index(pr, " (")
				if strings.Contains(pr, "no stage order") {
					i = strings.Index(pr, "):") + 1
					cycles = append(cycles, pr)
				}
				got = append(got, pr[:i])
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			for _, o := range tc.comp {
				if !strings.Contains(cycles[0], " "+o+",") && !strings.Contains(cycles[0], " "+o+")") {
					t.Errorf("%s is not in the cycle component: %s", o, cycles[0])
				}
			}
			if _, err := target.CompileWith(f, []byte(tc.src), target.CompileOptions{TofinoPlacement: true}); err == nil || err.Error() != pe.Error() {
				t.Errorf("CompileOptions.TofinoPlacement: %v", err)
			}
		})
	}
}
