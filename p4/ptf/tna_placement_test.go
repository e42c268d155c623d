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
// (conditions unevaluated, as bf-p4c's mutual exclusion is structural).
// The ACK block and the request block are the two arms of one if, every
// register is accessed at most once on any path (the retransmission reads
// of the record sit in the else of the branch that writes it), and the
// independent accesses are written in one order on all paths. What
// remains is one stage-order cycle, and it is the program's information
// flow, not its layout: a CAS reads the key's tail and then records the
// compare and VA as forwarded (rule 5 puts the tail's version and VA in
// them), and the ATOMIC ACK reads that compare (rule 6: success is orig
// == the compare as forwarded) and, on a failure, that VA, before it
// writes the tail. docs/swordbox-p4.md ("The Tofino program") says what a
// hardware build does about it. The switch (--arch tna), the bench and
// the differential tests therefore compile without the check (it is
// opt-in: target.CompileOptions.TofinoPlacement).
func TestTNASwordboxPlacementReport(t *testing.T) {
	src, err := os.ReadFile(tnaProgramPath)
	if err != nil {
		t.Fatal(err)
	}
	const f = "p4/tna/swordbox.p4"
	const (
		readCmp = "meta.link_cmp = cas_out_compare_read.execute(meta.link_slot);"
		readVA  = "meta.link_va = cas_out_va_read.execute(meta.link_slot);"
	)
	line := func(s string) int { return strings.Count(string(src[:strings.Index(string(src), s)]), "\n") + 1 }
	cases := []struct {
		name string
		src  string
		want []string // nil: the check passes
		comp []string // objects the reported cycle's component must hold
	}{
		{name: "as is", src: string(src), want: []string{
			f + ":" + strconv.Itoa(line(readCmp)) + ":41: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.cas_out_compare -> SwordboxIngress.tail_key -> SwordboxIngress.cas_out_compare)",
		}, comp: []string{"SwordboxIngress.cas_out_va", "SwordboxIngress.tail_ts", "SwordboxIngress.tail_va_hi", "SwordboxIngress.tail_valid"}},
		// Without the ACK's two reads of the record as forwarded (which
		// changes rule 6, so only this check runs it) nothing is left:
		// the cycle above is the whole report, and the rest of the program
		// is placeable.
		{name: "without the ACK's reads of the record as forwarded", src: strings.NewReplacer(
			readCmp, "meta.link_cmp = 0;", readVA, "meta.link_va = 0;").Replace(string(src))},
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
				t.Fatalf("the check passes now (%v): flip this test", p.TofinoPlacement())
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
