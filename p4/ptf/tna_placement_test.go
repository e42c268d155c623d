package ptf

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/swordbox/swordbox/p4/target"
)

// TestTNASwordboxPlacementReport runs the target's Tofino placement check
// (issue 18) on p4/tna/swordbox.p4 and asserts exactly what it reports
// today: the program is NOT placeable on a Tofino. Every path the check
// walks is a choice at the program's branches (conditions unevaluated, as
// bf-p4c's mutual exclusion is structural), and the ATOMIC ACK block and
// the request block are two sequential ifs, so a path through both
// accesses the CAS record and the tail twice; the stats counter is counted
// up to five times per packet; and the ACK path reads the record before
// the tail while the request path reads the tail before writing the
// record. The swordbox switch (--arch tna), the bench and the
// differential tests compile without the check (it is opt-in:
// target.CompileOptions.TofinoPlacement). When the TNA port of the new
// steering contract lands, this test flips: the program must pass.
func TestTNASwordboxPlacementReport(t *testing.T) {
	src, err := os.ReadFile(tnaProgramPath)
	if err != nil {
		t.Fatal(err)
	}
	const f = "p4/tna/swordbox.p4"
	cases := []struct {
		name string
		src  string
		want []string
		comp []string // objects the reported cycle's component must hold
	}{
		{name: "as is", src: string(src), want: []string{
			f + ":936:37: register SwordboxIngress.cas_out_psn is accessed twice on one path through SwordboxIngress: first at " + f + ":852:33, again here",
			f + ":937:37: register SwordboxIngress.cas_out_src_ip is accessed twice on one path through SwordboxIngress: first at " + f + ":853:33, again here",
			f + ":938:37: register SwordboxIngress.cas_out_dst_ip is accessed twice on one path through SwordboxIngress: first at " + f + ":854:33, again here",
			f + ":955:39: register SwordboxIngress.cas_out_valid is accessed twice on one path through SwordboxIngress: first at " + f + ":859:35, again here",
			f + ":883:33: counter SwordboxIngress.stats is counted twice on one path through SwordboxIngress: first at " + f + ":861:21, again here",
			f + ":962:45: register SwordboxIngress.link_tracked is accessed twice on one path through SwordboxIngress: first at " + f + ":862:41, again here",
			f + ":964:57: register SwordboxIngress.link_key_slot is accessed twice on one path through SwordboxIngress: first at " + f + ":864:53, again here",
			f + ":1056:21: register SwordboxIngress.link_key is accessed twice on one path through SwordboxIngress: first at " + f + ":865:41, again here",
			f + ":959:50: register SwordboxIngress.cas_out_compare is accessed twice on one path through SwordboxIngress: first at " + f + ":866:41, again here",
			f + ":1053:21: register SwordboxIngress.cas_out_ts is accessed twice on one path through SwordboxIngress: first at " + f + ":867:49, again here",
			f + ":1008:37: register SwordboxIngress.tail_key is accessed twice on one path through SwordboxIngress: first at " + f + ":872:48, again here",
			f + ":1013:45: register SwordboxIngress.tail_ts is accessed twice on one path through SwordboxIngress: first at " + f + ":873:46, again here",
			f + ":1057:21: register SwordboxIngress.link_va_hi is accessed twice on one path through SwordboxIngress: first at " + f + ":875:51, again here",
			f + ":1058:21: register SwordboxIngress.link_va_lo is accessed twice on one path through SwordboxIngress: first at " + f + ":876:51, again here",
			f + ":1059:21: register SwordboxIngress.link_ver is accessed twice on one path through SwordboxIngress: first at " + f + ":877:49, again here",
			f + ":1009:39: register SwordboxIngress.tail_va_hi is accessed twice on one path through SwordboxIngress: first at " + f + ":878:33, again here",
			f + ":1010:39: register SwordboxIngress.tail_va_lo is accessed twice on one path through SwordboxIngress: first at " + f + ":879:33, again here",
			f + ":1011:37: register SwordboxIngress.tail_ver is accessed twice on one path through SwordboxIngress: first at " + f + ":880:33, again here",
			f + ":1012:40: register SwordboxIngress.tail_dst_ip is accessed twice on one path through SwordboxIngress: first at " + f + ":881:33, again here",
			f + ":1007:39: register SwordboxIngress.tail_valid is accessed twice on one path through SwordboxIngress: first at " + f + ":882:33, again here",
			f + ":958:45: register SwordboxIngress.cas_out_va is accessed twice on one path through SwordboxIngress: first at " + f + ":890:44, again here",
			f + ":1051:21: register SwordboxIngress.cas_out_swap is accessed twice on one path through SwordboxIngress: first at " + f + ":960:47, again here",
			f + ":859:35: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.cas_out_valid -> SwordboxIngress.link_orig_va_hi -> SwordboxIngress.cas_out_valid)",
		}},
		// The same program with the request block made the else of the ACK
		// block (the two never run for one packet): what remains is the
		// stage order. The record (link_*, cas_out_*) and the tail (tail_*)
		// are in one cycle component: the ACK path reads the record then
		// writes the tail, the request path reads the tail then writes the
		// record.
		{name: "ACK and request blocks exclusive", src: strings.Replace(string(src),
			"            }\n\n            /* Requests (SEND, WRITE, READ, atomics) while steering is on. */\n            if (",
			"            } else\n            if (", 1), want: []string{
			f + ":883:33: counter SwordboxIngress.stats is counted twice on one path through SwordboxIngress: first at " + f + ":861:21, again here",
			f + ":1052:21: register SwordboxIngress.link_tracked is accessed twice on one path through SwordboxIngress: first at " + f + ":960:45, again here",
			f + ":1053:21: register SwordboxIngress.link_key_slot is accessed twice on one path through SwordboxIngress: first at " + f + ":962:57, again here",
			f + ":1050:21: register SwordboxIngress.cas_out_compare is accessed twice on one path through SwordboxIngress: first at " + f + ":957:50, again here",
			f + ":1047:21: register SwordboxIngress.cas_out_va is accessed twice on one path through SwordboxIngress: first at " + f + ":956:45, again here",
			f + ":1049:21: register SwordboxIngress.cas_out_swap is accessed twice on one path through SwordboxIngress: first at " + f + ":958:47, again here",
			f + ":852:33: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.cas_out_psn -> SwordboxIngress.stats -> SwordboxIngress.cas_out_psn)",
			f + ":862:41: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.link_tracked -> SwordboxIngress.cas_out_compare -> SwordboxIngress.link_tracked)",
			f + ":921:21: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.node_va_hi -> SwordboxIngress.node_key -> SwordboxIngress.node_va_hi)",
		}, comp: []string{"SwordboxIngress.tail_key", "SwordboxIngress.link_key", "SwordboxIngress.tail_va_hi", "SwordboxIngress.cas_out_va"}},
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
				if !strings.Contains(cycles[1], " "+o+",") && !strings.Contains(cycles[1], " "+o+")") {
					t.Errorf("%s is not in the cycle component: %s", o, cycles[1])
				}
			}
			if _, err := target.CompileWith(f, []byte(tc.src), target.CompileOptions{TofinoPlacement: true}); err == nil || err.Error() != pe.Error() {
				t.Errorf("CompileOptions.TofinoPlacement: %v", err)
			}
		})
	}
}
