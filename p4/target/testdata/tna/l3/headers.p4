// Header types of l3.p4 (a test program of this target).
#ifndef L3_HEADERS
#define L3_HEADERS

const PortId_t CPU_PORT = 64;

@controller_header("packet_in")
header packet_in_h { bit<16> ingress_port; }

@controller_header("packet_out")
header packet_out_h { bit<16> egress_port; }

header ethernet_h { bit<48> dst_addr; bit<48> src_addr; bit<16> ether_type; }

header ipv4_h {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset;
    bit<8> ttl; bit<8> protocol; bit<16> hdr_checksum;
    bit<32> src_addr; bit<32> dst_addr;
}

header ipv6_h {
    bit<4> version; bit<8> traffic_class; bit<20> flow_label;
    bit<16> payload_len; bit<8> next_hdr; bit<8> hop_limit;
    bit<128> src_addr; bit<128> dst_addr;
}

// Bridged from the ingress deparser to the egress parser.
header bridge_h { bit<7> pad; PortId_t ingress_port; }

struct port_md_t { bit<16> a; bit<48> b; }

#endif
