package target

import (
	"strings"
	"testing"
)

// resubmitProg is a tna program that resubmits every packet whose a is
// not zero, carrying b and a register's old value as resubmit data (the
// tna.p4 idiom: the ingress parser extracts the data when resubmit_flag
// is set, else skips the port metadata). The resubmitted pass writes
// what it received into the frame, and counts in the same register as
// the first pass (one access per pass). %s is the deparser's emit.
const resubmitProg = `#include <core.p4>
#include <tna.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; bit<32> d; bit<64> e; }
header resub_t { bit<8> b; bit<8> flag; bit<16> pad; bit<32> old; }
struct headers { h_t h; }
struct meta_t { resub_t resub; }
parser IP(packet_in pk, out headers hdr, out meta_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pk.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resub;
            0: parse_port;
        }
    }
    state parse_resub { pk.extract(md.resub); transition parse_h; }
    state parse_port { pk.advance(PORT_METADATA_SIZE); transition parse_h; }
    state parse_h { pk.extract(hdr.h); transition accept; }
}
control Ing(inout headers hdr, inout meta_t md, in ingress_intrinsic_metadata_t ig_intr_md,
        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<32>>(4) r;
    RegisterAction<bit<32>, bit<32>, bit<32>>(r) inc = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; v = v + 1; }
    };
    apply {
        ig_tm_md.ucast_egress_port = 1;
        ig_tm_md.bypass_egress = 1;
        bit<32> old = inc.execute(0);
        if (ig_intr_md.resubmit_flag == 0) {
            if (hdr.h.a != 0) {
                md.resub.setValid();
                md.resub.b = hdr.h.b;
                md.resub.flag = 1;
                md.resub.pad = 0;
                md.resub.old = old;
                ig_dprsr_md.resubmit_type = 1;
                hdr.h.c = 0xdead; // the first pass's changes never leave
            }
        } else {
            hdr.h.a = md.resub.flag;
            hdr.h.b = md.resub.b + 1;
            hdr.h.d = md.resub.old;
            hdr.h.e = (bit<64>)old;
        }
    }
}
control IDep(packet_out pk, inout headers hdr, in meta_t md, in ingress_intrinsic_metadata_for_deparser_t dp) {
    Resubmit() resubmit;
    apply {
        if (dp.resubmit_type == 1) {
            %s
        }
        pk.emit(hdr);
    }
}
parser EP(packet_in pk, out headers hdr, out meta_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pk.extract(eg_intr_md); transition accept; }
}
control Eg(inout headers hdr, inout meta_t md, in egress_intrinsic_metadata_t eg_intr_md,
        in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
        inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
        inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}
control EDep(packet_out pk, inout headers hdr, in meta_t md, in egress_intrinsic_metadata_for_deparser_t dp) {
    apply { pk.emit(hdr); }
}
Pipeline(IP(), Ing(), IDep(), EP(), Eg(), EDep()) pipe;
Switch(pipe) main;
`

// TestTNAResubmit: the resubmitted pass sees resubmit_flag 1 and the data
// the deparser emitted in place of the port metadata, the frame as
// received (not as the first pass changed it), and the state the first
// pass left; only the second pass's frame leaves; each pass accesses the
// register once (no reaccess counted).
func TestTNAResubmit(t *testing.T) {
	d := NewDevice(mustCompile(t, strings.Replace(resubmitProg, "%s", "resubmit.emit(md.resub);", 1)), Options{})
	if h := runTNA(t, d, hv{a: 0, b: 9, c: 7}); h == nil || *h != (hv{a: 0, b: 9, c: 7}) {
		t.Fatalf("not resubmitted: %+v", h)
	}
	h := runTNA(t, d, hv{a: 5, b: 9, c: 7})
	// The register was 1 when the first pass read it, 2 for the second.
	if want := (hv{a: 1, b: 10, c: 7, d: 1, e: 2}); h == nil || *h != want {
		t.Fatalf("resubmitted: got %+v, want %+v", h, want)
	}
	st := d.Stats()
	if st.Resubmits != 1 || st.RegisterReaccesses != 0 || st.In != 2 || st.Out != 2 {
		t.Errorf("stats %+v: want 1 resubmit, 0 reaccesses, 2 in, 2 out", st)
	}

	// emit() without data: the second pass sees zeros.
	d = NewDevice(mustCompile(t, strings.Replace(resubmitProg, "%s", "resubmit.emit();", 1)), Options{})
	if h := runTNA(t, d, hv{a: 5, b: 9}); h == nil || *h != (hv{a: 0, b: 1, e: 1}) {
		t.Fatalf("emit(): got %+v", h)
	}
}

// TestTNAResubmitOnce: a packet is resubmitted once; a resubmitted pass
// that asks again is dropped and counted in ReentryLimit.
func TestTNAResubmitOnce(t *testing.T) {
	src := strings.Replace(resubmitProg, "%s", "resubmit.emit(md.resub);", 1)
	src = strings.Replace(src, "if (ig_intr_md.resubmit_flag == 0) {", "ig_dprsr_md.resubmit_type = 1; if (ig_intr_md.resubmit_flag == 0) {", 1)
	d := NewDevice(mustCompile(t, src), Options{})
	if h := runTNA(t, d, hv{a: 5}); h != nil {
		t.Fatalf("a packet resubmitted twice left: %+v", h)
	}
	if st := d.Stats(); st.Resubmits != 1 || st.ReentryLimit != 1 || st.Dropped != 1 {
		t.Errorf("stats %+v: want 1 resubmit, 1 reentry drop", st)
	}
}

func TestTNAResubmitRefused(t *testing.T) {
	emit := strings.Replace(resubmitProg, "%s", "resubmit.emit(md.resub);", 1)
	cases := []struct{ name, old, new, want string }{
		{"in ingress", "    Register<bit<32>, bit<32>>(4) r;", "    Resubmit() rs; Register<bit<32>, bit<32>>(4) r;", "test.p4:23:5: Resubmit is an ingress deparser extern, not one of the ingress"},
		{"mode", "Resubmit() resubmit;", "Resubmit(1) resubmit;", "test.p4:50:5: Resubmit takes no arguments"},
		{"wider than 64 bits", "bit<32> old; }", "bit<32> old; bit<8> more; }", "test.p4:53:30: resubmit data resub_t is 72 bits; Tofino 1 carries at most 64"},
		{"not a header", "resubmit.emit(md.resub);", "resubmit.emit(md);", "test.p4:53:27: Resubmit.emit needs a header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(emit, c.old, c.new, 1)
			if src == emit {
				t.Fatal("replacement not found")
			}
			_, err := Compile("test.p4", []byte(src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
