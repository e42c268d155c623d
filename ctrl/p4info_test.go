package ctrl

import (
	"testing"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
)

// testP4Info is a hand-written P4Info with the objects of swordbox.p4 the
// controller uses, named as docs/swordbox-p4.md says (IDs arbitrary): the
// unit tests of the plan do not depend on the P4 front end. The
// integration tests use the generated p4/swordbox.p4info.txtpb.
func testP4Info(t testing.TB) *p4cfg.P4Info {
	t.Helper()
	id := uint32(1)
	pre := func(name string) *p4cfg.Preamble {
		id++
		return &p4cfg.Preamble{Id: id, Name: "SwordboxIngress." + name, Alias: name}
	}
	bits := func(w int32) *p4cfg.P4DataTypeSpec {
		return &p4cfg.P4DataTypeSpec{TypeSpec: &p4cfg.P4DataTypeSpec_Bitstring{
			Bitstring: &p4cfg.P4BitstringLikeTypeSpec{TypeSpec: &p4cfg.P4BitstringLikeTypeSpec_Bit{Bit: &p4cfg.P4BitTypeSpec{Bitwidth: w}}}}}
	}
	exact := &p4cfg.MatchField_MatchType_{MatchType: p4cfg.MatchField_EXACT}
	info := &p4cfg.P4Info{
		Tables: []*p4cfg.Table{
			{Preamble: pre("forward"), Size: 1024,
				MatchFields: []*p4cfg.MatchField{{Id: 1, Name: "hdr.ethernet.dst_addr", Bitwidth: 48, Match: exact}}},
			{Preamble: pre("tracked_keys"), Size: 4096,
				MatchFields: []*p4cfg.MatchField{{Id: 1, Name: "meta.clover_key", Bitwidth: 64, Match: exact}}},
			{Preamble: pre("config"), Size: 1},
		},
		Actions: []*p4cfg.Action{
			{Preamble: pre("set_egress"), Params: []*p4cfg.Action_Param{{Id: 1, Name: "port", Bitwidth: 9}}},
			{Preamble: pre("track"), Params: []*p4cfg.Action_Param{{Id: 1, Name: "slot", Bitwidth: 16}}},
			{Preamble: pre("set_config"), Params: []*p4cfg.Action_Param{
				{Id: 1, Name: "mode", Bitwidth: 8}, {Id: 2, Name: "node_size", Bitwidth: 32}, {Id: 3, Name: "tail_ttl", Bitwidth: 48}}},
		},
		ControllerPacketMetadata: []*p4cfg.ControllerPacketMetadata{{
			Preamble: &p4cfg.Preamble{Id: 99, Name: "packet_out", Alias: "packet_out"},
			Metadata: []*p4cfg.ControllerPacketMetadata_Metadata{{Id: 1, Name: "egress_port", Bitwidth: 9}, {Id: 2, Name: "_pad", Bitwidth: 7}},
		}},
	}
	regs := []struct {
		name string
		w    int32
		size int32
	}{
		{"tail_valid", 8, 4096},
		{"cas_out_valid", 8, 8192}, {"cas_out_src_mac", 48, 8192}, {"cas_out_dst_mac", 48, 8192},
		{"cas_out_src_ip", 32, 8192}, {"cas_out_dst_ip", 32, 8192}, {"cas_out_udp_sport", 16, 8192},
		{"cas_out_dst_qp", 32, 8192}, {"cas_out_psn", 32, 8192}, {"cas_out_pkey", 16, 8192},
		{"cas_out_va", 64, 8192}, {"cas_out_rkey", 32, 8192}, {"cas_out_swap", 64, 8192},
		{"cas_out_compare", 64, 8192}, {"cas_out_ts", 48, 8192},
	}
	for _, r := range regs {
		info.Registers = append(info.Registers, &p4cfg.Register{Preamble: pre(r.name), TypeSpec: bits(r.w), Size: r.size})
	}
	for _, c := range []struct {
		name string
		size int64
	}{{"stats", 16}, {"key_cas_steered", 4096}, {"key_reads_steered", 4096}, {"key_read_misses", 4096}, {"key_retransmits", 4096}} {
		info.Counters = append(info.Counters, &p4cfg.Counter{Preamble: pre(c.name), Size: c.size,
			Spec: &p4cfg.CounterSpec{Unit: p4cfg.CounterSpec_PACKETS}})
	}
	return info
}
