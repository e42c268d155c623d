package p4rtc_test

import (
	"fmt"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
)

// A table entry built by names: the IDs come from the P4Info, values are
// checked against their bit widths and canonicalized.
func ExampleSchema_TableEntry() {
	info := &p4cfg.P4Info{
		Tables: []*p4cfg.Table{{
			Preamble: &p4cfg.Preamble{Id: 0x02000001, Name: "SwordboxIngress.forward", Alias: "forward"},
			MatchFields: []*p4cfg.MatchField{{Id: 1, Name: "hdr.ethernet.dst_addr", Bitwidth: 48,
				Match: &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_EXACT}}},
		}},
		Actions: []*p4cfg.Action{{
			Preamble: &p4cfg.Preamble{Id: 0x01000002, Name: "SwordboxIngress.set_egress", Alias: "set_egress"},
			Params:   []*p4cfg.Action_Param{{Id: 1, Name: "port", Bitwidth: 9}},
		}},
	}
	s, _ := p4rtc.NewSchema(info)
	e, err := s.TableEntry("forward",
		[]p4rtc.Match{p4rtc.Exact("hdr.ethernet.dst_addr", []byte{2, 0, 0, 0, 0, 1})},
		"set_egress", p4rtc.P("port", 3))
	fmt.Printf("table %#x, key %x, action %#x, port %x, %v\n", e.GetTableId(), e.GetMatch()[0].GetExact().GetValue(),
		e.GetAction().GetAction().GetActionId(), e.GetAction().GetAction().GetParams()[0].GetValue(), err)
	_, err = s.TableEntry("forward", nil, "set_egress", p4rtc.P("port", 600))
	fmt.Println(err)
	// Output:
	// table 0x2000001, key 020000000001, action 0x1000002, port 03, <nil>
	// table SwordboxIngress.forward: action SwordboxIngress.set_egress param port: value 0x0258 does not fit in 9 bits
}
