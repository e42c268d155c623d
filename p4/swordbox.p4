/*
 * swordbox.p4: SwordBox steering for Clover (P4_16, v1model).
 *
 * What it does (SwordBox paper, sections 4.2, 4.4.2, 4.5 and 5.1):
 *   - forwards Ethernet frames by destination MAC, with a CPU port for
 *     PacketIn / PacketOut (@controller_header metadata);
 *   - tracks RoCEv2 RC connections (source IP, destination IP, UDP source
 *     port, destination QP) in registers: the last PSN seen, the key of the
 *     connection's last Clover node WRITE and that WRITE's VA;
 *   - caches, per tracked key, the VA and the GC entry version of the tail
 *     of the key's version chain, and steers stale CAS and READ requests to
 *     it by rewriting the target VA (and, for CAS, the entry-version bits of
 *     compare and swap);
 *   - keeps, per connection, the last CAS forwarded so that the controller
 *     can retransmit it when it stays outstanding too long (section 4.5);
 *     the CAS's ATOMIC ACKNOWLEDGE clears it.
 *
 * The Clover node layout it parses is docs/clover-layout.md: a node WRITE
 * carries the header word (u64, little-endian) then the key (u64,
 * little-endian) at the front of its payload; the entry version is bits
 * 18..11 of the header word. Every name below is part of the controller
 * contract, documented in docs/swordbox-p4.md.
 *
 * ICRC: the switch rewrites the AtomicETH and RETH VAs and the AtomicETH
 * compare and swap values but does NOT recompute the RoCEv2 ICRC, exactly as
 * the paper's Tofino program (section 5.1): the memory nodes behind the
 * switch run with ICRC checking off. The IPv4 header is never changed by
 * steering, so its checksum stays valid (and is not recomputed).
 *
 * Registers are one value per index; 64-bit quantities the data plane
 * compares (cached tail VA, pending VA, address map VA) are kept as two
 * 32-bit registers, as on Tofino.
 */
#include <core.p4>
#include <v1model.p4>

const bit<9>  CPU_PORT       = 255;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_UDP    = 17;
const bit<16> ROCE_UDP_PORT  = 4791;

/* BTH opcodes of the RC transport. */
const bit<8> OP_WRITE_FIRST     = 0x06;
const bit<8> OP_WRITE_ONLY      = 0x0A;
const bit<8> OP_READ_REQUEST    = 0x0C;
const bit<8> OP_ACKNOWLEDGE     = 0x11;
const bit<8> OP_ATOMIC_ACK      = 0x12;
const bit<8> OP_COMPARE_SWAP    = 0x13;
const bit<8> OP_FETCH_ADD       = 0x14;

/* Register and table sizes. */
const bit<32> CONN_SLOTS = 1024;   /* tracked RC connections (hash of the 4-tuple); a power of two */
const bit<32> KEY_SLOTS  = 4096;   /* tracked Clover keys (slot given by the controller) */
const bit<32> ADDR_SLOTS = 16384;  /* address-to-key map for READ steering (hash of the VA) */
const bit<32> ACK_SLOTS  = 4096;   /* (client IP, server IP, PSN) -> connection, for ATOMIC ACKs */

/* steer_mode register values (bit 0: write steering, bit 1: read steering). */
const bit<8> MODE_WRITE = 1;
const bit<8> MODE_READ  = 2;

/* conn_flags register bits. */
const bit<8> CONN_HAS_KEY  = 1;  /* conn_key holds the key of the last node WRITE */
const bit<8> CONN_PENDING  = 2;  /* conn_pending_* hold that WRITE's node, not yet linked by a CAS */

/* Indices of the stats counter. */
const bit<32> STAT_ROCE          = 0;  /* RoCEv2 packets seen while steering is on */
const bit<32> STAT_NODE_WRITES   = 1;  /* node WRITEs of a tracked key learned */
const bit<32> STAT_CAS           = 2;  /* CAS requests seen (not retransmissions) */
const bit<32> STAT_CAS_STEERED   = 3;  /* CAS requests steered */
const bit<32> STAT_READS         = 4;  /* node-sized READ requests seen */
const bit<32> STAT_READS_STEERED = 5;  /* READ requests steered */
const bit<32> STAT_READ_MISSES   = 6;  /* node-sized READs not steered for lack of a cached tail */
const bit<32> STAT_RETRANSMITS   = 7;  /* requests whose PSN is not ahead of the last seen */
const bit<32> STAT_ACKS_CLEARED  = 8;  /* ATOMIC ACKs that cleared an outstanding CAS */
const bit<32> STAT_CONN_TAKEOVER = 9;  /* connection slots taken over by another 4-tuple's node WRITE */
const bit<32> STAT_TAIL_DROPPED  = 10; /* cached tails invalidated because the CAS that made them failed */
const bit<32> STAT_CONN_FOREIGN  = 11; /* requests on a connection whose slot another connection owns */
const bit<32> STAT_COUNT         = 16;

/* Entry-version bits 18..11 of a Clover header word. */
const bit<64> EV_MASK  = 0x000000000007F800;
const bit<64> EV_SHIFT = 11;

typedef bit<48> mac_t;
typedef bit<32> ip4_t;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    mac_t   dst_addr;
    mac_t   src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdr_checksum;
    ip4_t   src_addr;
    ip4_t   dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* InfiniBand Base Transport Header, 12 bytes. */
header bth_t {
    bit<8>  opcode;
    bit<1>  solicited;
    bit<1>  mig_req;
    bit<2>  pad_count;
    bit<4>  tver;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  resv6;
    bit<24> dst_qp;
    bit<1>  ack_req;
    bit<7>  resv7;
    bit<24> psn;
}

/* RDMA Extended Transport Header (WRITE_FIRST/ONLY, READ_REQUEST), 16 bytes. */
header reth_t {
    bit<64> va;
    bit<32> rkey;
    bit<32> dma_len;
}

/* Atomic Extended Transport Header (COMPARE_SWAP, FETCH_ADD), 28 bytes. */
header atomic_eth_t {
    bit<64> va;
    bit<32> rkey;
    bit<64> swap;
    bit<64> compare;
}

/* ACK Extended Transport Header, 4 bytes. */
header aeth_t {
    bit<8>  syndrome;
    bit<24> msn;
}

/* Atomic ACK Extended Transport Header, 8 bytes. */
header atomic_ack_eth_t {
    bit<64> orig;
}

/*
 * The first 16 bytes of a Clover node WRITE payload (docs/clover-layout.md):
 * the header word and the key, both little-endian u64, so they are parsed
 * byte by byte. Entry version = header word bits 18..11 = hw2[2:0] ++ hw1[7:3].
 */
header clover_node_t {
    bit<8>  hw0;
    bit<8>  hw1;
    bit<8>  hw2;
    bit<8>  hw3;
    bit<32> hw_high;
    bit<8>  key0;
    bit<8>  key1;
    bit<8>  key2;
    bit<8>  key3;
    bit<8>  key4;
    bit<8>  key5;
    bit<8>  key6;
    bit<8>  key7;
}

struct headers_t {
    packet_in_t      packet_in;
    packet_out_t     packet_out;
    ethernet_t       ethernet;
    ipv4_t           ipv4;
    udp_t            udp;
    bth_t            bth;
    reth_t           reth;
    atomic_eth_t     atomic_eth;
    aeth_t           aeth;
    atomic_ack_eth_t atomic_ack;
    clover_node_t    node;
}

struct metadata_t {
    bit<8>  mode;
    bit<32> node_size;
    bit<1>  is_request;
    bit<32> conn;
    bit<32> conn_tag;
    bit<32> old_tag;
    bit<32> last_psn;
    bit<24> psn_delta;
    bit<1>  retrans;
    bit<8>  conn_flags;
    bit<1>  key_valid;
    bit<64> clover_key;
    bit<1>  tracked;
    bit<32> key_slot;
    bit<8>  tail_valid;
    bit<32> tail_va_hi;
    bit<32> tail_va_lo;
    bit<8>  tail_ver;
    bit<32> tail_dst_ip;
    bit<32> pend_va_hi;
    bit<32> pend_va_lo;
    bit<8>  pend_ver;
    bit<32> addr_slot;
    bit<8>  addr_valid;
    bit<32> addr_va_hi;
    bit<32> addr_va_lo;
    bit<32> ack_slot;
    bit<32> ack_conn;
    bit<8>  out_valid;
    bit<32> out_psn;
    bit<32> out_src_ip;
    bit<32> out_dst_ip;
    bit<1>  conn_own;
    bit<8>  link_valid;
    bit<32> link_slot;
    bit<32> link_psn;
    bit<32> link_cip;
    bit<64> link_cmp;
    bit<32> link_va_hi;
    bit<32> link_va_lo;
}

parser SwordboxParser(packet_in packet,
                      out headers_t hdr,
                      inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4w5, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            ROCE_UDP_PORT: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        packet.extract(hdr.bth);
        transition select(hdr.bth.opcode) {
            OP_WRITE_FIRST: parse_write_reth;
            OP_WRITE_ONLY: parse_write_reth;
            OP_READ_REQUEST: parse_reth;
            OP_COMPARE_SWAP: parse_atomic_eth;
            OP_FETCH_ADD: parse_atomic_eth;
            OP_ACKNOWLEDGE: parse_aeth;
            OP_ATOMIC_ACK: parse_atomic_ack;
            default: accept;
        }
    }

    state parse_reth {
        packet.extract(hdr.reth);
        transition accept;
    }

    /* A WRITE shorter than a node prefix (16 bytes) carries no node. */
    state parse_write_reth {
        packet.extract(hdr.reth);
        transition select(hdr.reth.dma_len) {
            32w0 &&& 32w0xFFFFFFF0: accept;
            default: parse_node;
        }
    }

    state parse_node {
        packet.extract(hdr.node);
        transition accept;
    }

    state parse_atomic_eth {
        packet.extract(hdr.atomic_eth);
        transition accept;
    }

    state parse_aeth {
        packet.extract(hdr.aeth);
        transition accept;
    }

    state parse_atomic_ack {
        packet.extract(hdr.aeth);
        packet.extract(hdr.atomic_ack);
        transition accept;
    }
}

/*
 * The program never changes the IPv4 header (steering rewrites RoCEv2
 * extension headers only), so it neither verifies nor recomputes the IPv4
 * checksum: a frame is forwarded with the checksum it came with, as a bridge
 * would.
 */
control SwordboxVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SwordboxIngress(inout headers_t hdr,
                        inout metadata_t meta,
                        inout standard_metadata_t standard_metadata) {

    /* ---- steering configuration (written by the controller) ---- */
    register<bit<8>>(1)  steer_mode;  /* 0 off, 1 write, 2 read, 3 write and read */
    register<bit<32>>(1) node_size;   /* DMA length of a node WRITE/READ: 16 + object size */

    /* ---- per connection (index: conn_tag mod CONN_SLOTS) ---- */
    register<bit<32>>(CONN_SLOTS) conn_tag;           /* 1 + crc32 of the 4-tuple mod 2^32-1; 0 = free */
    register<bit<32>>(CONN_SLOTS) conn_last_psn;      /* bit 24: valid; bits 23..0: last request PSN */
    register<bit<8>>(CONN_SLOTS)  conn_flags;         /* CONN_HAS_KEY | CONN_PENDING */
    register<bit<64>>(CONN_SLOTS) conn_key;           /* key of the last node WRITE */
    register<bit<32>>(CONN_SLOTS) conn_pending_va_hi; /* VA of that WRITE (the pending new tail) */
    register<bit<32>>(CONN_SLOTS) conn_pending_va_lo;
    register<bit<8>>(CONN_SLOTS)  conn_pending_ver;   /* its entry version (header word bits 18..11) */
    /* The last linking CAS of the connection, checked against its ATOMIC ACK:
     * a failed CAS must not leave its node as the key's cached tail. */
    register<bit<8>>(CONN_SLOTS)  conn_link_valid;
    register<bit<32>>(CONN_SLOTS) conn_link_slot;     /* key slot */
    register<bit<32>>(CONN_SLOTS) conn_link_psn;
    register<bit<32>>(CONN_SLOTS) conn_link_cip;      /* client IP */
    register<bit<64>>(CONN_SLOTS) conn_link_cmp;      /* compare value as forwarded */
    register<bit<32>>(CONN_SLOTS) conn_link_va_hi;    /* the node it links (the new cached tail) */
    register<bit<32>>(CONN_SLOTS) conn_link_va_lo;

    /* ---- per tracked key (index: the slot given by tracked_keys) ---- */
    register<bit<8>>(KEY_SLOTS)  tail_valid;
    register<bit<32>>(KEY_SLOTS) tail_va_hi;   /* cached tail VA, high and low 32 bits */
    register<bit<32>>(KEY_SLOTS) tail_va_lo;
    register<bit<8>>(KEY_SLOTS)  tail_ver;     /* the tail's entry version */
    register<bit<32>>(KEY_SLOTS) tail_dst_ip;  /* memory node holding the tail */

    /* ---- address-to-key map for READ steering (index: crc32 of the VA) ---- */
    register<bit<8>>(ADDR_SLOTS)  addr_valid;
    register<bit<32>>(ADDR_SLOTS) addr_va_hi;
    register<bit<32>>(ADDR_SLOTS) addr_va_lo;
    register<bit<64>>(ADDR_SLOTS) addr_key;

    /* ---- outstanding CAS, per connection (section 4.5) ---- */
    register<bit<8>>(CONN_SLOTS)  cas_out_valid;
    register<bit<48>>(CONN_SLOTS) cas_out_src_mac;
    register<bit<48>>(CONN_SLOTS) cas_out_dst_mac;
    register<bit<32>>(CONN_SLOTS) cas_out_src_ip;
    register<bit<32>>(CONN_SLOTS) cas_out_dst_ip;
    register<bit<16>>(CONN_SLOTS) cas_out_udp_sport;
    register<bit<32>>(CONN_SLOTS) cas_out_dst_qp;
    register<bit<32>>(CONN_SLOTS) cas_out_psn;
    register<bit<16>>(CONN_SLOTS) cas_out_pkey;
    register<bit<64>>(CONN_SLOTS) cas_out_va;
    register<bit<32>>(CONN_SLOTS) cas_out_rkey;
    register<bit<64>>(CONN_SLOTS) cas_out_swap;
    register<bit<64>>(CONN_SLOTS) cas_out_compare;
    register<bit<48>>(CONN_SLOTS) cas_out_ts;     /* ingress_global_timestamp when forwarded */
    register<bit<32>>(ACK_SLOTS)  cas_ack_map;    /* crc32(client IP, server IP, PSN) -> 1 + connection */

    /* ---- counters ---- */
    counter(STAT_COUNT, CounterType.packets) stats;
    counter(KEY_SLOTS, CounterType.packets) key_cas_steered;
    counter(KEY_SLOTS, CounterType.packets) key_reads_steered;
    counter(KEY_SLOTS, CounterType.packets) key_read_misses;
    counter(KEY_SLOTS, CounterType.packets) key_retransmits;
    direct_counter(CounterType.packets_and_bytes) forward_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_egress(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action send_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    table forward {
        key = {
            hdr.ethernet.dst_addr: exact;
        }
        actions = {
            set_egress;
            send_to_cpu;
            drop;
        }
        default_action = drop();
        counters = forward_counter;
        size = 1024;
    }

    action track(bit<16> slot) {
        meta.tracked = 1;
        meta.key_slot = (bit<32>)slot;
    }

    table tracked_keys {
        key = {
            meta.clover_key: exact;
        }
        actions = {
            track;
            NoAction;
        }
        default_action = NoAction();
        size = 4096;
    }

    action read_tail() {
        tail_valid.read(meta.tail_valid, meta.key_slot);
        tail_va_hi.read(meta.tail_va_hi, meta.key_slot);
        tail_va_lo.read(meta.tail_va_lo, meta.key_slot);
        tail_ver.read(meta.tail_ver, meta.key_slot);
        tail_dst_ip.read(meta.tail_dst_ip, meta.key_slot);
    }

    action record_outstanding_cas() {
        cas_out_valid.write(meta.conn, 1);
        cas_out_src_mac.write(meta.conn, hdr.ethernet.src_addr);
        cas_out_dst_mac.write(meta.conn, hdr.ethernet.dst_addr);
        cas_out_src_ip.write(meta.conn, hdr.ipv4.src_addr);
        cas_out_dst_ip.write(meta.conn, hdr.ipv4.dst_addr);
        cas_out_udp_sport.write(meta.conn, hdr.udp.src_port);
        cas_out_dst_qp.write(meta.conn, (bit<32>)hdr.bth.dst_qp);
        cas_out_psn.write(meta.conn, (bit<32>)hdr.bth.psn);
        cas_out_pkey.write(meta.conn, hdr.bth.pkey);
        cas_out_va.write(meta.conn, hdr.atomic_eth.va);
        cas_out_rkey.write(meta.conn, hdr.atomic_eth.rkey);
        cas_out_swap.write(meta.conn, hdr.atomic_eth.swap);
        cas_out_compare.write(meta.conn, hdr.atomic_eth.compare);
        cas_out_ts.write(meta.conn, standard_metadata.ingress_global_timestamp);
        hash(meta.ack_slot, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.psn }, ACK_SLOTS);
        cas_ack_map.write(meta.ack_slot, meta.conn + 1);
    }

    apply {
        if (hdr.packet_out.isValid()) {
            /* PacketOut: sent as is to the port the controller chose; never steered. */
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            forward.apply();

            if (hdr.bth.isValid()) {
                steer_mode.read(meta.mode, 0);
                node_size.read(meta.node_size, 0);
            }

            /* ATOMIC ACK: clear the outstanding CAS it answers. */
            if (hdr.atomic_ack.isValid()) {
                hash(meta.ack_slot, HashAlgorithm.crc32, 32w0,
                     { hdr.ipv4.dst_addr, hdr.ipv4.src_addr, hdr.bth.psn }, ACK_SLOTS);
                cas_ack_map.read(meta.ack_conn, meta.ack_slot);
                if (meta.ack_conn != 0) {
                    meta.conn = meta.ack_conn - 1;
                    cas_out_valid.read(meta.out_valid, meta.conn);
                    cas_out_psn.read(meta.out_psn, meta.conn);
                    cas_out_src_ip.read(meta.out_src_ip, meta.conn);
                    cas_out_dst_ip.read(meta.out_dst_ip, meta.conn);
                    if (meta.out_valid == 1 && meta.out_psn == (bit<32>)hdr.bth.psn &&
                        meta.out_src_ip == hdr.ipv4.dst_addr && meta.out_dst_ip == hdr.ipv4.src_addr) {
                        cas_out_valid.write(meta.conn, 0);
                        cas_ack_map.write(meta.ack_slot, 0);
                        stats.count(STAT_ACKS_CLEARED);
                    }
                    /* The outcome of a linking CAS: the original value equals the
                     * compare value exactly when the CAS succeeded. A failed one
                     * linked nothing, so if its node is still the key's cached tail,
                     * forget that tail (the next linking CAS teaches a new one)
                     * rather than steer requests to a node that may be reused. */
                    conn_link_valid.read(meta.link_valid, meta.conn);
                    conn_link_psn.read(meta.link_psn, meta.conn);
                    conn_link_cip.read(meta.link_cip, meta.conn);
                    if (meta.link_valid == 1 && meta.link_psn == (bit<32>)hdr.bth.psn &&
                        meta.link_cip == hdr.ipv4.dst_addr) {
                        conn_link_valid.write(meta.conn, 0);
                        cas_ack_map.write(meta.ack_slot, 0);
                        conn_link_cmp.read(meta.link_cmp, meta.conn);
                        if (hdr.atomic_ack.orig != meta.link_cmp) {
                            conn_link_slot.read(meta.link_slot, meta.conn);
                            conn_link_va_hi.read(meta.link_va_hi, meta.conn);
                            conn_link_va_lo.read(meta.link_va_lo, meta.conn);
                            tail_va_hi.read(meta.tail_va_hi, meta.link_slot);
                            tail_va_lo.read(meta.tail_va_lo, meta.link_slot);
                            if (meta.tail_va_hi == meta.link_va_hi && meta.tail_va_lo == meta.link_va_lo) {
                                tail_valid.write(meta.link_slot, 0);
                                stats.count(STAT_TAIL_DROPPED);
                            }
                        }
                    }
                }
            }

            /* Requests (SEND, WRITE, READ, atomics) while steering is on. */
            if (hdr.bth.isValid() && meta.mode != 0 &&
                (hdr.bth.opcode <= OP_READ_REQUEST || hdr.bth.opcode == OP_COMPARE_SWAP ||
                 hdr.bth.opcode == OP_FETCH_ADD)) {
                stats.count(STAT_ROCE);

                /* Connection slot and tag from one hash of the 4-tuple: the tag
                 * (never 0) is kept in the slot; a different 4-tuple hashing to the
                 * same slot takes it over. */
                hash(meta.conn_tag, HashAlgorithm.crc32, 32w1,
                     { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.udp.src_port, hdr.bth.dst_qp },
                     32w0xFFFFFFFF);
                meta.conn = meta.conn_tag & (CONN_SLOTS - 1);
                conn_tag.read(meta.old_tag, meta.conn);
                meta.conn_own = 1;
                if (meta.old_tag != meta.conn_tag) {
                    /* A free slot goes to any connection; an owned one only to a
                     * node WRITE. Connections that never carry a node WRITE (the
                     * metadata server's SENDs, small READs) would otherwise evict
                     * a Clover data connection between its node WRITE and its
                     * CAS, and the switch would miss that CAS and keep a stale
                     * tail. A request on a slot another connection owns passes
                     * untracked (not steered, not recorded as outstanding). */
                    if (meta.old_tag == 0 || (hdr.node.isValid() && hdr.reth.dma_len == meta.node_size)) {
                        conn_tag.write(meta.conn, meta.conn_tag);
                        conn_last_psn.write(meta.conn, 0);
                        conn_flags.write(meta.conn, 0);
                        conn_link_valid.write(meta.conn, 0);
                        if (meta.old_tag != 0) {
                            stats.count(STAT_CONN_TAKEOVER);
                        }
                    } else {
                        meta.conn_own = 0;
                        stats.count(STAT_CONN_FOREIGN);
                    }
                }

                if (meta.conn_own == 1) {
                    /* Retransmission: PSN not ahead of the last one seen (24-bit serial arithmetic). */
                    conn_last_psn.read(meta.last_psn, meta.conn);
                    meta.psn_delta = hdr.bth.psn - meta.last_psn[23:0];
                    if (meta.last_psn[24:24] == 1 && (meta.psn_delta == 0 || meta.psn_delta[23:23] == 1)) {
                        meta.retrans = 1;
                        stats.count(STAT_RETRANSMITS);
                    } else {
                        conn_last_psn.write(meta.conn, 7w0 ++ 1w1 ++ hdr.bth.psn);
                    }
                    conn_flags.read(meta.conn_flags, meta.conn);
                }

                /* Which key the request concerns. */
                if (hdr.node.isValid() && hdr.reth.dma_len == meta.node_size) {
                    meta.clover_key = hdr.node.key7 ++ hdr.node.key6 ++ hdr.node.key5 ++ hdr.node.key4 ++
                                      hdr.node.key3 ++ hdr.node.key2 ++ hdr.node.key1 ++ hdr.node.key0;
                    meta.key_valid = 1;
                } else if (hdr.bth.opcode == OP_COMPARE_SWAP && (meta.conn_flags & CONN_HAS_KEY) != 0) {
                    conn_key.read(meta.clover_key, meta.conn);
                    meta.key_valid = 1;
                } else if (hdr.bth.opcode == OP_READ_REQUEST && hdr.reth.dma_len == meta.node_size &&
                           (meta.mode & MODE_READ) != 0) {
                    stats.count(STAT_READS);
                    hash(meta.addr_slot, HashAlgorithm.crc32, 32w0, { hdr.reth.va }, ADDR_SLOTS);
                    addr_valid.read(meta.addr_valid, meta.addr_slot);
                    addr_va_hi.read(meta.addr_va_hi, meta.addr_slot);
                    addr_va_lo.read(meta.addr_va_lo, meta.addr_slot);
                    if (meta.addr_valid == 1 && (meta.addr_va_hi ++ meta.addr_va_lo) == hdr.reth.va) {
                        addr_key.read(meta.clover_key, meta.addr_slot);
                        meta.key_valid = 1;
                    }
                }
                if (meta.key_valid == 1) {
                    tracked_keys.apply();
                }

                if (hdr.node.isValid() && hdr.reth.dma_len == meta.node_size) {
                    /* Node WRITE: remember the pending new tail of the connection's key. */
                    if (meta.retrans == 0) {
                        /* The address map names the key of the last node written at
                         * each VA, tracked or not: a slot reused by an untracked key
                         * must stop mapping to the tracked key it held before, or
                         * READs of the new node would be steered to that key's tail. */
                        hash(meta.addr_slot, HashAlgorithm.crc32, 32w0, { hdr.reth.va }, ADDR_SLOTS);
                        addr_valid.write(meta.addr_slot, 1);
                        addr_va_hi.write(meta.addr_slot, hdr.reth.va[63:32]);
                        addr_va_lo.write(meta.addr_slot, hdr.reth.va[31:0]);
                        addr_key.write(meta.addr_slot, meta.clover_key);
                        if (meta.tracked == 1) {
                            conn_key.write(meta.conn, meta.clover_key);
                            conn_pending_va_hi.write(meta.conn, hdr.reth.va[63:32]);
                            conn_pending_va_lo.write(meta.conn, hdr.reth.va[31:0]);
                            conn_pending_ver.write(meta.conn, hdr.node.hw2[2:0] ++ hdr.node.hw1[7:3]);
                            conn_flags.write(meta.conn, CONN_HAS_KEY | CONN_PENDING);
                            stats.count(STAT_NODE_WRITES);
                        } else {
                            conn_flags.write(meta.conn, 0);
                        }
                    }
                } else if (hdr.bth.opcode == OP_COMPARE_SWAP && meta.conn_own == 1) {
                    if (meta.retrans == 1) {
                        if (meta.tracked == 1) {
                            key_retransmits.count(meta.key_slot);
                        }
                    } else {
                        stats.count(STAT_CAS);
                        /* Only an append CAS links the pending node: its compare has
                         * next LH 0 and next version 0 (bits 63..19 zero). */
                        if (meta.tracked == 1 && (meta.conn_flags & CONN_PENDING) != 0 &&
                            hdr.atomic_eth.compare[63:19] == 0) {
                            read_tail();
                            if ((meta.mode & MODE_WRITE) != 0 && meta.tail_valid == 1 &&
                                meta.tail_dst_ip == hdr.ipv4.dst_addr &&
                                (meta.tail_va_hi ++ meta.tail_va_lo) != hdr.atomic_eth.va) {
                                /* Stale CAS: steer it to the cached tail. */
                                hdr.atomic_eth.va = meta.tail_va_hi ++ meta.tail_va_lo;
                                hdr.atomic_eth.compare = (hdr.atomic_eth.compare & ~EV_MASK) |
                                                         (((bit<64>)meta.tail_ver) << EV_SHIFT);
                                hdr.atomic_eth.swap = (hdr.atomic_eth.swap & ~EV_MASK) |
                                                      (((bit<64>)meta.tail_ver) << EV_SHIFT);
                                key_cas_steered.count(meta.key_slot);
                                stats.count(STAT_CAS_STEERED);
                            }
                            /* The connection's pending node becomes the key's tail. */
                            conn_pending_va_hi.read(meta.pend_va_hi, meta.conn);
                            conn_pending_va_lo.read(meta.pend_va_lo, meta.conn);
                            conn_pending_ver.read(meta.pend_ver, meta.conn);
                            tail_valid.write(meta.key_slot, 1);
                            tail_va_hi.write(meta.key_slot, meta.pend_va_hi);
                            tail_va_lo.write(meta.key_slot, meta.pend_va_lo);
                            tail_ver.write(meta.key_slot, meta.pend_ver);
                            tail_dst_ip.write(meta.key_slot, hdr.ipv4.dst_addr);
                            conn_flags.write(meta.conn, CONN_HAS_KEY);
                            /* Remember the link, to check its outcome at the ATOMIC ACK. */
                            conn_link_valid.write(meta.conn, 1);
                            conn_link_slot.write(meta.conn, meta.key_slot);
                            conn_link_psn.write(meta.conn, (bit<32>)hdr.bth.psn);
                            conn_link_cip.write(meta.conn, hdr.ipv4.src_addr);
                            conn_link_cmp.write(meta.conn, hdr.atomic_eth.compare);
                            conn_link_va_hi.write(meta.conn, meta.pend_va_hi);
                            conn_link_va_lo.write(meta.conn, meta.pend_va_lo);
                            hash(meta.ack_slot, HashAlgorithm.crc32, 32w0,
                                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.psn }, ACK_SLOTS);
                            cas_ack_map.write(meta.ack_slot, meta.conn + 1);
                        }
                    }
                    if ((meta.mode & MODE_WRITE) != 0) {
                        record_outstanding_cas();
                    }
                } else if (hdr.bth.opcode == OP_READ_REQUEST && hdr.reth.dma_len == meta.node_size &&
                           (meta.mode & MODE_READ) != 0) {
                    if (meta.tracked == 1) {
                        read_tail();
                    }
                    if (meta.tracked == 1 && meta.tail_valid == 1 && meta.tail_dst_ip == hdr.ipv4.dst_addr) {
                        if ((meta.tail_va_hi ++ meta.tail_va_lo) != hdr.reth.va) {
                            hdr.reth.va = meta.tail_va_hi ++ meta.tail_va_lo;
                            key_reads_steered.count(meta.key_slot);
                            stats.count(STAT_READS_STEERED);
                        }
                    } else {
                        stats.count(STAT_READ_MISSES);
                        if (meta.tracked == 1) {
                            key_read_misses.count(meta.key_slot);
                        }
                    }
                }
            }

            if (standard_metadata.egress_spec == CPU_PORT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = standard_metadata.ingress_port;
                hdr.packet_in._pad = 0;
            }
        }
    }
}

control SwordboxEgress(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply { }
}

control SwordboxComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control SwordboxDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.bth);
        packet.emit(hdr.reth);
        packet.emit(hdr.atomic_eth);
        packet.emit(hdr.aeth);
        packet.emit(hdr.atomic_ack);
        packet.emit(hdr.node);
    }
}

V1Switch(SwordboxParser(),
         SwordboxVerifyChecksum(),
         SwordboxIngress(),
         SwordboxEgress(),
         SwordboxComputeChecksum(),
         SwordboxDeparser()) main;
