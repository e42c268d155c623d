// pre.p4 exercises v1model's packet replication engine: multicast groups
// (standard_metadata.mcast_grp), ingress-to-egress and egress-to-egress
// clones, with and without a preserved field list. A 9-byte header says
// what to do (op) and with which group or session (arg); egress writes
// what it sees (egress_rid, instance_type, metadata) into the header.
// For the P4Runtime conformance tests it also has a table with a direct
// counter (fwd: unicast by arg), a const table, a register, a counter and
// a table with range and optional keys (classify), a meter (pm) and a
// direct meter on fwd (its colour in lost), a digest (learn_t), a table
// with an action selector (ecmp), one with an action profile (prof) and
// one with idle timeouts (aged).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;     // 1 multicast, 2 clone I2E, 3 clone I2E keeping kept, 4 clone E2E keeping kept,
                    // 5 multicast then mark_to_drop, 6 classify (range and optional match) into kept,
                    // 7 resubmit keeping kept (= arg + 1), 8 recirculate keeping kept (= arg + 2) as op 9,
                    // 10 resubmit for ever, 11 meter pm[arg] into lost, 12 digest learn_t {arg, ingress_port},
                    // 13 ecmp (action selector: identity hash of {mark, lost}, 8 bits: lost picks), 14 prof (action profile),
                    // 15 aged (a table with idle timeouts)
    bit<8>  arg;    // group or session id
    bit<16> rid;    // egress: standard_metadata.egress_rid
    bit<8>  itype;  // egress: standard_metadata.instance_type
    bit<8>  mark;   // ingress sets 0xAA (an I2E clone does not carry it)
    bit<8>  kept;   // egress: meta.kept (in field list 1)
    bit<8>  lost;   // egress: meta.lost (in no field list)
    bit<8>  port;   // egress: standard_metadata.egress_port
}

struct headers { h_t h; }

struct learn_t {
    bit<8> arg;
    bit<9> port;
}

struct meta_t {
    @field_list(1)
    bit<8> kept;
    bit<8> lost;
}

parser P(packet_in pk, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control I(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) hits;
    register<bit<16>>(8) r;
    counter(8, CounterType.packets) c;
    meter(4, MeterType.packets) pm;
    direct_meter<bit<8>>(MeterType.packets) dm;

    action set_port(bit<9> p) { sm.egress_spec = p; dm.read(meta.lost); }
    table fwd {
        key = { hdr.h.arg: exact; }
        actions = { set_port; NoAction; }
        default_action = NoAction();
        counters = hits;
        meters = dm;
        size = 64;
    }
    action tag(bit<8> v) { meta.kept = v; }
    table classify {
        key = { hdr.h.arg: range; hdr.h.mark: optional; }
        actions = { tag; NoAction; }
        default_action = NoAction();
    }
    action to_port(bit<9> p) { sm.egress_spec = p; }
    action_selector(HashAlgorithm.identity, 16, 8) sel;
    table ecmp {
        key = { hdr.h.arg: exact; hdr.h.mark: selector; hdr.h.lost: selector; }
        actions = { to_port; NoAction; }
        implementation = sel;
    }
    action_profile(4) ap;
    table prof {
        key = { hdr.h.arg: exact; }
        actions = { to_port; NoAction; }
        implementation = ap;
    }
    table aged {
        key = { hdr.h.arg: exact; }
        actions = { to_port; NoAction; }
        support_timeout = true;
    }
    table fixed {
        key = { hdr.h.op: exact; }
        actions = { NoAction; }
        const entries = { 9 : NoAction(); }
    }

    apply {
        if (sm.instance_type == 0) {
            meta.kept = hdr.h.arg;
            meta.lost = hdr.h.arg;
        }
        sm.egress_spec = 1;
        c.count(0);
        fixed.apply();
        if (hdr.h.op == 0) {
            fwd.apply();
        } else if (hdr.h.op == 1) {
            sm.mcast_grp = (bit<16>)hdr.h.arg;
        } else if (hdr.h.op == 2) {
            clone(CloneType.I2E, (bit<32>)hdr.h.arg);
        } else if (hdr.h.op == 3) {
            clone_preserving_field_list(CloneType.I2E, (bit<32>)hdr.h.arg, 1);
        } else if (hdr.h.op == 5) {
            sm.mcast_grp = (bit<16>)hdr.h.arg;
            mark_to_drop(sm);
        } else if (hdr.h.op == 6) {
            classify.apply();
        } else if (hdr.h.op == 7 && sm.instance_type == 0) {
            meta.kept = hdr.h.arg + 1;
            resubmit_preserving_field_list(1);
        } else if (hdr.h.op == 10) {
            resubmit_preserving_field_list(1);
        } else if (hdr.h.op == 11) {
            pm.execute_meter((bit<32>)hdr.h.arg, meta.lost);
        } else if (hdr.h.op == 12) {
            digest<learn_t>(1, {hdr.h.arg, sm.ingress_port});
        } else if (hdr.h.op == 13) {
            ecmp.apply();
        } else if (hdr.h.op == 14) {
            prof.apply();
        } else if (hdr.h.op == 15) {
            aged.apply();
        }
        hdr.h.mark = 0xAA;
    }
}

control E(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.itype = (bit<8>)sm.instance_type;
        hdr.h.kept = meta.kept;
        hdr.h.lost = meta.lost;
        hdr.h.port = (bit<8>)sm.egress_port;
        if (hdr.h.op == 4 && sm.instance_type == 0) {
            clone_preserving_field_list(CloneType.E2E, (bit<32>)hdr.h.arg, 1);
        }
        if (hdr.h.op == 8 && sm.instance_type == 0) {
            meta.kept = meta.kept + 2;
            hdr.h.op = 9;
            recirculate_preserving_field_list(1);
        }
    }
}

control CC(inout headers hdr, inout meta_t meta) { apply { } }

control D(packet_out pk, in headers hdr) { apply { pk.emit(hdr.h); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
