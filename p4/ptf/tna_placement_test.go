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
// accesses the CAS record and the tail twice; and the ACK path reads the
// record before the tail while the request path reads the tail before
// writing the record. (The stats counter, split into parts counted once
// per path each, is no longer in the report.) The swordbox switch (--arch tna), the bench and the
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
			f + ":956:37: register SwordboxIngress.cas_out_psn is accessed twice on one path through SwordboxIngress: first at " + f + ":872:33, again here",
			f + ":957:37: register SwordboxIngress.cas_out_src_ip is accessed twice on one path through SwordboxIngress: first at " + f + ":873:33, again here",
			f + ":958:37: register SwordboxIngress.cas_out_dst_ip is accessed twice on one path through SwordboxIngress: first at " + f + ":874:33, again here",
			f + ":975:39: register SwordboxIngress.cas_out_valid is accessed twice on one path through SwordboxIngress: first at " + f + ":879:35, again here",
			f + ":982:45: register SwordboxIngress.link_tracked is accessed twice on one path through SwordboxIngress: first at " + f + ":882:41, again here",
			f + ":984:57: register SwordboxIngress.link_key_slot is accessed twice on one path through SwordboxIngress: first at " + f + ":884:53, again here",
			f + ":1076:21: register SwordboxIngress.link_key is accessed twice on one path through SwordboxIngress: first at " + f + ":885:41, again here",
			f + ":979:50: register SwordboxIngress.cas_out_compare is accessed twice on one path through SwordboxIngress: first at " + f + ":886:41, again here",
			f + ":1073:21: register SwordboxIngress.cas_out_ts is accessed twice on one path through SwordboxIngress: first at " + f + ":887:49, again here",
			f + ":1028:37: register SwordboxIngress.tail_key is accessed twice on one path through SwordboxIngress: first at " + f + ":892:48, again here",
			f + ":1033:45: register SwordboxIngress.tail_ts is accessed twice on one path through SwordboxIngress: first at " + f + ":893:46, again here",
			f + ":1077:21: register SwordboxIngress.link_va_hi is accessed twice on one path through SwordboxIngress: first at " + f + ":895:51, again here",
			f + ":1078:21: register SwordboxIngress.link_va_lo is accessed twice on one path through SwordboxIngress: first at " + f + ":896:51, again here",
			f + ":1079:21: register SwordboxIngress.link_ver is accessed twice on one path through SwordboxIngress: first at " + f + ":897:49, again here",
			f + ":1029:39: register SwordboxIngress.tail_va_hi is accessed twice on one path through SwordboxIngress: first at " + f + ":898:33, again here",
			f + ":1030:39: register SwordboxIngress.tail_va_lo is accessed twice on one path through SwordboxIngress: first at " + f + ":899:33, again here",
			f + ":1031:37: register SwordboxIngress.tail_ver is accessed twice on one path through SwordboxIngress: first at " + f + ":900:33, again here",
			f + ":1032:40: register SwordboxIngress.tail_dst_ip is accessed twice on one path through SwordboxIngress: first at " + f + ":901:33, again here",
			f + ":1027:39: register SwordboxIngress.tail_valid is accessed twice on one path through SwordboxIngress: first at " + f + ":902:33, again here",
			f + ":978:45: register SwordboxIngress.cas_out_va is accessed twice on one path through SwordboxIngress: first at " + f + ":910:44, again here",
			f + ":1071:21: register SwordboxIngress.cas_out_swap is accessed twice on one path through SwordboxIngress: first at " + f + ":980:47, again here",
			f + ":879:35: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.cas_out_valid -> SwordboxIngress.link_orig_va_hi -> SwordboxIngress.cas_out_valid)",
		}},
		// The same program with the request block made the else of the ACK
		// block (the two never run for one packet): what remains is the
		// stage order, and the retransmission branch's reads of the record
		// before the request block's writes of it (two sequential ifs
		// again). The record (link_*, cas_out_*) and the tail (tail_*) are
		// in one cycle component: the ACK path reads the record then writes
		// the tail, the request path reads the tail then writes the record.
		// The node map's cycle is program order only (the node WRITE writes
		// node_va_hi before node_key, the CAS reads node_key first): bf-p4c
		// could reorder those independent accesses, this check does not.
		{name: "ACK and request blocks exclusive", src: strings.Replace(string(src),
			"            }\n\n            /* Requests (SEND, WRITE, READ, atomics) while steering is on. */\n            if (",
			"            } else\n            if (", 1), want: []string{
			f + ":1072:21: register SwordboxIngress.link_tracked is accessed twice on one path through SwordboxIngress: first at " + f + ":980:45, again here",
			f + ":1073:21: register SwordboxIngress.link_key_slot is accessed twice on one path through SwordboxIngress: first at " + f + ":982:57, again here",
			f + ":1070:21: register SwordboxIngress.cas_out_compare is accessed twice on one path through SwordboxIngress: first at " + f + ":977:50, again here",
			f + ":1067:21: register SwordboxIngress.cas_out_va is accessed twice on one path through SwordboxIngress: first at " + f + ":976:45, again here",
			f + ":1069:21: register SwordboxIngress.cas_out_swap is accessed twice on one path through SwordboxIngress: first at " + f + ":978:47, again here",
			f + ":882:41: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.link_tracked -> SwordboxIngress.cas_out_compare -> SwordboxIngress.link_tracked)",
			f + ":941:21: no stage order of SwordboxIngress's stateful objects serves every path (cycle SwordboxIngress.node_va_hi -> SwordboxIngress.node_key -> SwordboxIngress.node_va_hi)",
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
