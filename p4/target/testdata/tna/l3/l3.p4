// A small TNA router, a test program of this target: IPv4 longest-prefix
// forwarding with TTL decrement and checksum update in egress, the IPv4
// checksum verified in the parser, packet-in/packet-out through the CPU
// port, IPv6 (128-bit addresses) passed through ingress only.
#include <core.p4>
#include <tna.p4>
#include "headers.p4"

struct headers {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    bridge_h     bridge;
    ethernet_h   ethernet;
    ipv4_h       ipv4;
    ipv6_h       ipv6;
}

struct ig_md_t { port_md_t port_md; bool csum_ok; }

struct eg_headers { bridge_h bridge; ethernet_h ethernet; ipv4_h ipv4; }
struct eg_md_t { }

parser IgParser(packet_in pkt, out headers hdr, out ig_md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_csum;
    state start {
        pkt.extract(ig_intr_md);
        md.port_md = port_metadata_unpack<port_md_t>(pkt);
        transition select(ig_intr_md.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out { pkt.extract(hdr.packet_out); transition parse_ethernet; }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: parse_ipv4;
            0x86dd: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_csum.add(hdr.ipv4);
        md.csum_ok = ipv4_csum.verify();
        transition accept;
    }
    state parse_ipv6 { pkt.extract(hdr.ipv6); transition accept; }
}

control Ig(inout headers hdr, inout ig_md_t md,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) route_ctr;
    action fwd(PortId_t port) { ig_tm_md.ucast_egress_port = port; route_ctr.count(); }
    action to_cpu() {
        ig_tm_md.ucast_egress_port = CPU_PORT;
        ig_tm_md.bypass_egress = 1;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = (bit<16>)ig_intr_md.ingress_port;
        route_ctr.count();
    }
    action drop() { ig_dprsr_md.drop_ctl = 1; route_ctr.count(); }
    table route {
        key = { hdr.ipv4.dst_addr : lpm; }
        actions = { fwd; to_cpu; drop; }
        default_action = drop;
        counters = route_ctr;
        size = 64;
    }
    apply {
        if (ig_prsr_md.parser_err != 0) {
            ig_tm_md.ucast_egress_port = 9;
            ig_tm_md.bypass_egress = 1;
            exit;
        }
        if (hdr.packet_out.isValid()) {
            ig_tm_md.ucast_egress_port = (PortId_t)hdr.packet_out.egress_port;
            ig_tm_md.bypass_egress = 1;
            hdr.packet_out.setInvalid();
            exit;
        }
        if (hdr.ipv4.isValid()) {
            if (!md.csum_ok) {
                drop();
                exit;
            }
            route.apply();
            if (ig_tm_md.bypass_egress == 0) {
                hdr.bridge.setValid();
                hdr.bridge.ingress_port = ig_intr_md.ingress_port;
            }
        } else if (hdr.ipv6.isValid()) {
            hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
            ipv6_h copy = hdr.ipv6;
            hdr.ipv6 = copy;
            ig_tm_md.ucast_egress_port = 2;
            ig_tm_md.bypass_egress = 1;
        }
    }
}

control IgDeparser(packet_out pkt, inout headers hdr, in ig_md_t md, in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}

parser EgParser(packet_in pkt, out eg_headers hdr, out eg_md_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control Eg(inout eg_headers hdr, inout eg_md_t md,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.ethernet.src_addr = 48w0x020000000000 | (bit<48>)hdr.bridge.ingress_port;
        hdr.bridge.setInvalid();
    }
}

control EgDeparser(packet_out pkt, inout eg_headers hdr, in eg_md_t md, in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_csum;
    apply {
        hdr.ipv4.hdr_checksum = ipv4_csum.update({
            hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
            hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
            hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        pkt.emit(hdr);
    }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
