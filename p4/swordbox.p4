/*
 * swordbox.p4: SwordBox steering for Clover (P4_16, v1model).
 *
 * What it does (SwordBox paper, sections 4.2, 4.4.2, 4.5 and 5.1), with the
 * rules that make it safe (docs/swordbox-p4.md, "Semantics"):
 *   - forwards Ethernet frames by destination MAC, with a CPU port for
 *     PacketIn / PacketOut (@controller_header metadata);
 *   - learns, from every Clover node WRITE (docs/clover-layout.md), where
 *     the node lives: its VA, key and entry version, in two hashed maps, one
 *     by the node's own logical handle (carried in the node) and one by VA;
 *   - recognises a linking CAS by its swap value (the new node's handle and
 *     version), so no per-connection state is needed: 240+ clients' ~720
 *     connections cost nothing;
 *   - caches, per tracked key, the tail CONFIRMED by the ATOMIC ACK of the
 *     CAS that linked it, and steers stale CAS and node READs to it while it
 *     is younger than tail_ttl (set by the controller below Clover's T_r, so
 *     a steered request never lands on a reclaimed slot);
 *   - forgets a cached tail when a CAS steered to it fails;
 *   - in chain mode (config mode bit 2, with write steering), steers each
 *     linking CAS of a key onto the node of the key's previous linking CAS
 *     as soon as that CAS is forwarded, confirmed or not, so that
 *     concurrent puts of one key all link, one after another, in one round
 *     trip; the tail is still confirmed at the ACK, and the ACK of a link
 *     whose predecessor is the confirmed tail vouches for it (a word no
 *     memory holds), so its client needs no proof; other steered successes
 *     the Clover client proves (clover/doc.go); node READs go to the
 *     chain's end, and a READ response whose node is the confirmed tail is
 *     vouched for (bit 63 of its header word): the client takes a steered
 *     node only with that vouch;
 *   - forwards a retransmitted CAS exactly as its first copy was forwarded;
 *   - keeps every CAS forwarded until its ATOMIC ACK, so that the controller
 *     can retransmit one outstanding too long (section 4.5).
 *
 * ICRC: the switch rewrites the AtomicETH and RETH VAs, the AtomicETH
 * compare and swap values, vouched ATOMIC ACKs and READ responses, but does
 * NOT recompute the RoCEv2 ICRC, exactly as the paper's Tofino program
 * (section 5.1): the hosts behind the switch run with ICRC checking off. The IPv4 header is never changed by
 * steering, so its checksum stays valid (and is not recomputed).
 *
 * Registers are one value per index; 64-bit quantities the data plane
 * compares (VAs) are kept as two 32-bit registers, as on Tofino.
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
const bit<8> OP_READ_RESP_ONLY  = 0x10;
const bit<8> OP_ACKNOWLEDGE     = 0x11;
const bit<8> OP_ATOMIC_ACK      = 0x12;
const bit<8> OP_COMPARE_SWAP    = 0x13;
const bit<8> OP_FETCH_ADD       = 0x14;

/* Register and table sizes. */
const bit<32> KEY_SLOTS  = 4096;   /* tracked Clover keys (slot given by the controller) */
const bit<32> NODE_SLOTS = 65536;  /* node map: crc32(node LH) -> VA, key, version */
const bit<32> ADDR_SLOTS = 65536;  /* address map for READ steering: crc32(VA) -> key */
const bit<32> LINK_SLOTS = 8192;   /* CAS in flight: crc32(client IP, server IP, PSN) */
/* Chain mode's second way of the node map is indexed by crc32(LH, LH + NODE_SALT):
 * a CRC is linear, so crc32(LH) mod 2^16 maps whole families of LHs (pairs that
 * differ by one fixed XOR pattern) to one slot; the sum's carries break that. */
const bit<32> NODE_SALT = 0x9e3779b9;

/* Steering modes, the config table's mode parameter (bit 0: write steering, bit 1: read steering). */
const bit<8> MODE_WRITE = 1;
const bit<8> MODE_READ  = 2;
const bit<8> MODE_CHAIN = 4;   /* with MODE_WRITE: chain CAS onto the last forwarded link */


/* Indices of the stats counter. */
const bit<32> STAT_ROCE            = 0;  /* RoCEv2 requests seen while steering is on */
const bit<32> STAT_NODE_WRITES     = 1;  /* node WRITEs learned (node and address maps) */
const bit<32> STAT_CAS             = 2;  /* linking CAS seen (not retransmissions) */
const bit<32> STAT_CAS_STEERED     = 3;  /* CAS requests steered */
const bit<32> STAT_READS           = 4;  /* node-sized READ requests seen */
const bit<32> STAT_READS_STEERED   = 5;  /* READ requests steered */
const bit<32> STAT_READ_MISSES     = 6;  /* node-sized READs not steered (no fresh tail of a known key) */
const bit<32> STAT_RETRANSMITS     = 7;  /* CAS retransmissions forwarded as their first copy */
const bit<32> STAT_ACKS_CLEARED    = 8;  /* ATOMIC ACKs that matched a CAS in flight */
const bit<32> STAT_LINK_TAKEOVER   = 9;  /* CAS records overwritten before their ACK (hash collision) */
const bit<32> STAT_TAIL_DROPPED    = 10; /* cached tails forgotten because a CAS steered to them failed */
const bit<32> STAT_LINK_UNRESOLVED = 11; /* linking CAS whose new node is not in the node map (not learned) */
const bit<32> STAT_TAIL_CONFIRMED  = 12; /* tails confirmed by a successful linking CAS's ACK */
const bit<32> STAT_TAIL_EXPIRED    = 13; /* requests not steered because the tail was older than tail_ttl */
const bit<32> STAT_CONFIRM_STALE   = 14; /* confirmations older than the cached tail (not applied) */
const bit<32> STAT_LINK_AMBIGUOUS  = 15; /* CAS whose client, server and PSN another CAS had (not learned) */
const bit<32> STAT_CAS_CHAINED     = 16; /* CAS chained onto the key's last forwarded link (chain mode) */
const bit<32> STAT_CHAIN_BROKEN    = 17; /* chains ended: a chained CAS failed, or its ACK found its predecessor unconfirmed */
const bit<32> STAT_CHAIN_REFUSED   = 18; /* CAS not chained: the chain's end has the entry version the client compares, or its node was chained before */
const bit<32> STAT_READS_CHAIN_END  = 19; /* node READs steered to the chain's end: links after the confirmed tail in flight (rule 12) */
const bit<32> STAT_VOUCHED         = 20; /* ATOMIC ACKs of chained links rewritten to vouch for them (rule 13) */
const bit<32> STAT_END_PRED_UNCONFIRMED = 21; /* chains ended: a chained success whose predecessor was never confirmed */
const bit<32> STAT_END_CHAINED_FAIL = 22; /* chains ended: a chained CAS failed */
const bit<32> STAT_READS_VOUCHED   = 23; /* node READ responses vouched for (rule 14) */
const bit<32> STAT_COUNT           = 24;

/* Entry-version bits 18..11 of a Clover header word. */
const bit<64> EV_MASK  = 0x000000000007F800;
const bit<64> EV_SHIFT = 11;

/* Bit 63 of an ATOMIC ACK's original value: the switch vouches for the link
 * (rule 13); the rest names the predecessor (docs/clover-layout.md). */
const bit<64> VOUCH_MARK = 0x8000000000000000;

/* The delete mark in a next pointer (docs/clover-layout.md). */
const bit<32> LH_DELETED = 0xFFFFFFFF;

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
 * The first 24 bytes of a Clover node WRITE payload (docs/clover-layout.md):
 * the header word, the key and the node's own logical handle, little-endian,
 * so they are parsed byte by byte. Entry version = header word bits 18..11
 * = hw2[2:0] ++ hw1[7:3].
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
    bit<8>  self0;
    bit<8>  self1;
    bit<8>  self2;
    bit<8>  self3;
    bit<32> self_high;
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
    bit<48> ttl;
    bit<48> now;
    bit<64> clover_key;
    bit<1>  tracked;
    bit<32> key_slot;
    /* the key's cached tail */
    bit<8>  tail_valid;
    bit<64> tail_key;
    bit<32> tail_va_hi;
    bit<32> tail_va_lo;
    bit<8>  tail_ver;
    bit<32> tail_dst_ip;
    bit<48> tail_ts;
    bit<32> tail_lh;
    bit<1>  tail_fresh;
    /* the key's chain: the node of its last forwarded linking CAS (chain mode) */
    bit<8>  spec_valid;
    bit<64> spec_key;
    bit<32> spec_lh;
    bit<32> spec_va_hi;
    bit<32> spec_va_lo;
    bit<8>  spec_ver;
    bit<32> spec_dst_ip;
    bit<48> spec_ts;
    bit<8>  link_chained;
    bit<32> pred_lh;
    bit<1>  chain_end;
    bit<1>  vouch;       /* the ATOMIC ACK of a chained link whose predecessor is confirmed */
    bit<1>  chain;       /* chain mode: mode bits 0 and 2 (set after config) */
    bit<1>  spec_live;   /* the key's chain is valid, of this key, on this memory node and fresh */
    /* the node a linking CAS links (from its swap value and the node map) */
    bit<32> new_lh;
    bit<8>  new_ver;
    bit<32> node_slot;
    bit<32> node_lh;
    bit<8>  node_ver;
    bit<8>  node_chained;
    bit<32> node2_slot;
    bit<1>  node_way;    /* 1: the node was found in the node map's second way (chain mode) */
    bit<32> node_va_hi;
    bit<32> node_va_lo;
    /* the address map */
    bit<32> addr_slot;
    bit<32> addr_va_hi;
    bit<32> addr_va_lo;
    /* the CAS record (in flight until its ATOMIC ACK) */
    bit<32> link_slot;
    bit<8>  link_valid;
    bit<32> link_psn;
    bit<32> link_cip;
    bit<32> link_mip;
    bit<64> link_orig_va;
    bit<32> orig_va_hi;     /* the VA a recorded CAS was sent with */
    bit<32> orig_va_lo;
    bit<32> link_lh;
    bit<8>  link_tracked;
    bit<64> link_key;
    bit<64> link_cmp;
    bit<64> link_va;
    bit<48> link_ts;
    bit<1>  retrans;
    bit<1>  ambiguous;
    bit<1>  linking;
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
            OP_READ_RESP_ONLY: parse_read_resp;
            default: accept;
        }
    }

    state parse_reth {
        packet.extract(hdr.reth);
        transition accept;
    }

    /* A WRITE shorter than a node prefix (24 bytes) carries no node. */
    state parse_write_reth {
        packet.extract(hdr.reth);
        transition select(hdr.reth.dma_len) {
            32w0 &&& 32w0xFFFFFFF0: accept;
            32w16 &&& 32w0xFFFFFFF8: accept;
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

    /* A READ response with fewer than 24 payload bytes carries no node prefix
     * (UDP length = 8 + BTH 12 + AETH 4 + payload + ICRC 4). */
    state parse_read_resp {
        packet.extract(hdr.aeth);
        transition select(hdr.udp.length) {
            16w0 &&& 16w0xFFE0: accept;
            16w32 &&& 16w0xFFF0: accept;
            16w48 &&& 16w0xFFFC: accept;
            default: parse_node;
        }
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

    /* ---- per tracked key (index: the slot given by tracked_keys) ---- */
    register<bit<8>>(KEY_SLOTS)  tail_valid;
    register<bit<64>>(KEY_SLOTS) tail_key;     /* the key whose tail this is (slots are reassigned) */
    register<bit<32>>(KEY_SLOTS) tail_va_hi;   /* cached tail VA, high and low 32 bits */
    register<bit<32>>(KEY_SLOTS) tail_va_lo;
    register<bit<8>>(KEY_SLOTS)  tail_ver;     /* the tail's entry version */
    register<bit<32>>(KEY_SLOTS) tail_dst_ip;  /* memory node holding the tail */
    register<bit<48>>(KEY_SLOTS) tail_ts;      /* when the CAS that linked it was forwarded */
    register<bit<32>>(KEY_SLOTS) tail_lh;      /* the tail's LH (chain mode: a chained link's predecessor is matched against it) */

    /* ---- per tracked key, chain mode: the node of the last linking CAS
     * forwarded (steered onto the previous one), confirmed or not ---- */
    register<bit<8>>(KEY_SLOTS)  spec_valid;
    register<bit<64>>(KEY_SLOTS) spec_key;
    register<bit<32>>(KEY_SLOTS) spec_lh;
    register<bit<32>>(KEY_SLOTS) spec_va_hi;
    register<bit<32>>(KEY_SLOTS) spec_va_lo;
    register<bit<8>>(KEY_SLOTS)  spec_ver;
    register<bit<32>>(KEY_SLOTS) spec_dst_ip;
    register<bit<48>>(KEY_SLOTS) spec_ts;      /* when its CAS was forwarded */

    /* ---- node map: where each recently written node lives (index: crc32(LH)) ---- */
    register<bit<32>>(NODE_SLOTS) node_lh;
    register<bit<8>>(NODE_SLOTS)  node_ver;
    register<bit<32>>(NODE_SLOTS) node_va_hi;
    register<bit<32>>(NODE_SLOTS) node_va_lo;
    register<bit<64>>(NODE_SLOTS) node_key;
    register<bit<8>>(NODE_SLOTS)  node_chained; /* 1: a CAS linking it was chained (chain mode) */
    /* chain mode: the node map's second way (index: crc32(LH, LH + NODE_SALT)). A
     * node whose first-way entry another node WRITE replaced is still found here,
     * so its linking CAS is chained rather than passing unlearned and ending the
     * key's chain. */
    register<bit<32>>(NODE_SLOTS) node2_lh;
    register<bit<8>>(NODE_SLOTS)  node2_ver;
    register<bit<32>>(NODE_SLOTS) node2_va_hi;
    register<bit<32>>(NODE_SLOTS) node2_va_lo;
    register<bit<64>>(NODE_SLOTS) node2_key;
    register<bit<8>>(NODE_SLOTS)  node2_chained;

    /* ---- address map for READ steering (index: crc32(VA)) ---- */
    register<bit<32>>(ADDR_SLOTS) addr_va_hi;
    register<bit<32>>(ADDR_SLOTS) addr_va_lo;
    register<bit<64>>(ADDR_SLOTS) addr_key;

    /* ---- CAS in flight (index: crc32(client IP, server IP, PSN)) ----
     * What the switch needs at the ATOMIC ACK (the link's outcome), to
     * forward a retransmission as the first copy, and (cas_out_*) for the
     * controller to rebuild and retransmit a CAS outstanding too long. */
    register<bit<32>>(LINK_SLOTS) link_orig_va_hi;  /* VA as the client sent it */
    register<bit<32>>(LINK_SLOTS) link_orig_va_lo;
    register<bit<32>>(LINK_SLOTS) link_lh;          /* the new node's LH (swap bits 59..28) */
    register<bit<8>>(LINK_SLOTS)  link_tracked;     /* 1: a linking CAS of a tracked key */
    register<bit<32>>(LINK_SLOTS) link_key_slot;
    register<bit<64>>(LINK_SLOTS) link_key;
    register<bit<32>>(LINK_SLOTS) link_va_hi;       /* the new node's VA (the tail it makes) */
    register<bit<32>>(LINK_SLOTS) link_va_lo;
    register<bit<8>>(LINK_SLOTS)  link_ver;         /* the new node's entry version */
    register<bit<8>>(LINK_SLOTS)  link_chained;     /* 1: chained onto the node below (chain mode) */
    register<bit<32>>(LINK_SLOTS) link_pred_lh;     /* the LH of the node it was chained onto */
    register<bit<8>>(LINK_SLOTS)  cas_out_valid;
    register<bit<48>>(LINK_SLOTS) cas_out_src_mac;
    register<bit<48>>(LINK_SLOTS) cas_out_dst_mac;
    register<bit<32>>(LINK_SLOTS) cas_out_src_ip;
    register<bit<32>>(LINK_SLOTS) cas_out_dst_ip;
    register<bit<16>>(LINK_SLOTS) cas_out_udp_sport;
    register<bit<32>>(LINK_SLOTS) cas_out_dst_qp;
    register<bit<32>>(LINK_SLOTS) cas_out_psn;
    register<bit<16>>(LINK_SLOTS) cas_out_pkey;
    register<bit<64>>(LINK_SLOTS) cas_out_va;       /* as forwarded (after steering) */
    register<bit<32>>(LINK_SLOTS) cas_out_rkey;
    register<bit<64>>(LINK_SLOTS) cas_out_swap;
    register<bit<64>>(LINK_SLOTS) cas_out_compare;
    register<bit<48>>(LINK_SLOTS) cas_out_ts;       /* ingress_global_timestamp when forwarded */

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

    /*
     * Steering configuration: one keyless table whose default entry the
     * controller sets with a P4Runtime MODIFY (is_default_action = true).
     * A table rather than registers because PI's P4Runtime server (BMv2's
     * simple_switch_grpc, bf_switchd) implements no register writes, while
     * every P4Runtime server modifies a table's default entry. The default
     * keeps steering off, so a switch nobody configured only forwards.
     *   mode:      0 off, 1 write, 2 read, 3 write and read
     *   node_size: DMA length of a node WRITE/READ: 24 + object size
     *   tail_ttl:  microseconds a confirmed tail may be steered to; below T_r/2
     */
    action set_config(bit<8> mode, bit<32> node_size, bit<48> tail_ttl) {
        meta.mode = mode;
        meta.node_size = node_size;
        meta.ttl = tail_ttl;
    }

    table config {
        actions = {
            set_config;
        }
        default_action = set_config(0, 0, 0);
        size = 1;
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
        tail_key.read(meta.tail_key, meta.key_slot);
        tail_va_hi.read(meta.tail_va_hi, meta.key_slot);
        tail_va_lo.read(meta.tail_va_lo, meta.key_slot);
        tail_ver.read(meta.tail_ver, meta.key_slot);
        tail_dst_ip.read(meta.tail_dst_ip, meta.key_slot);
        tail_ts.read(meta.tail_ts, meta.key_slot);
        tail_lh.read(meta.tail_lh, meta.key_slot);
    }

    action read_link() {
        cas_out_valid.read(meta.link_valid, meta.link_slot);
        cas_out_psn.read(meta.link_psn, meta.link_slot);
        cas_out_src_ip.read(meta.link_cip, meta.link_slot);
        cas_out_dst_ip.read(meta.link_mip, meta.link_slot);
    }

    action record_link() {
        cas_out_valid.write(meta.link_slot, 1);
        cas_out_src_mac.write(meta.link_slot, hdr.ethernet.src_addr);
        cas_out_dst_mac.write(meta.link_slot, hdr.ethernet.dst_addr);
        cas_out_src_ip.write(meta.link_slot, hdr.ipv4.src_addr);
        cas_out_dst_ip.write(meta.link_slot, hdr.ipv4.dst_addr);
        cas_out_udp_sport.write(meta.link_slot, hdr.udp.src_port);
        cas_out_dst_qp.write(meta.link_slot, (bit<32>)hdr.bth.dst_qp);
        cas_out_psn.write(meta.link_slot, (bit<32>)hdr.bth.psn);
        cas_out_pkey.write(meta.link_slot, hdr.bth.pkey);
        cas_out_va.write(meta.link_slot, hdr.atomic_eth.va);
        cas_out_rkey.write(meta.link_slot, hdr.atomic_eth.rkey);
        cas_out_swap.write(meta.link_slot, hdr.atomic_eth.swap);
        cas_out_compare.write(meta.link_slot, hdr.atomic_eth.compare);
        cas_out_ts.write(meta.link_slot, meta.now);
        link_orig_va_hi.write(meta.link_slot, meta.link_orig_va[63:32]);
        link_orig_va_lo.write(meta.link_slot, meta.link_orig_va[31:0]);
        link_lh.write(meta.link_slot, meta.new_lh);
        link_tracked.write(meta.link_slot, (bit<8>)meta.linking);
        link_key_slot.write(meta.link_slot, meta.key_slot);
        link_key.write(meta.link_slot, meta.clover_key);
        link_va_hi.write(meta.link_slot, meta.node_va_hi);
        link_va_lo.write(meta.link_slot, meta.node_va_lo);
        link_ver.write(meta.link_slot, meta.new_ver);
        link_chained.write(meta.link_slot, meta.link_chained);
        link_pred_lh.write(meta.link_slot, meta.pred_lh);
    }

    action read_spec() {
        spec_valid.read(meta.spec_valid, meta.key_slot);
        spec_key.read(meta.spec_key, meta.key_slot);
        spec_lh.read(meta.spec_lh, meta.key_slot);
        spec_va_hi.read(meta.spec_va_hi, meta.key_slot);
        spec_va_lo.read(meta.spec_va_lo, meta.key_slot);
        spec_ver.read(meta.spec_ver, meta.key_slot);
        spec_dst_ip.read(meta.spec_dst_ip, meta.key_slot);
        spec_ts.read(meta.spec_ts, meta.key_slot);
    }

    /* The key's chain now ends at the node in meta.spec_* (chain mode). */
    action write_spec() {
        spec_valid.write(meta.key_slot, 1);
        spec_key.write(meta.key_slot, meta.spec_key);
        spec_lh.write(meta.key_slot, meta.spec_lh);
        spec_va_hi.write(meta.key_slot, meta.spec_va_hi);
        spec_va_lo.write(meta.key_slot, meta.spec_va_lo);
        spec_ver.write(meta.key_slot, meta.spec_ver);
        spec_dst_ip.write(meta.key_slot, meta.spec_dst_ip);
        spec_ts.write(meta.key_slot, meta.spec_ts);
    }

    apply {
        if (hdr.packet_out.isValid()) {
            /* PacketOut: sent as is to the port the controller chose; never steered. */
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            forward.apply();

            if (hdr.bth.isValid()) {
                config.apply();
                meta.now = standard_metadata.ingress_global_timestamp;
                if ((meta.mode & (MODE_WRITE | MODE_CHAIN)) == (MODE_WRITE | MODE_CHAIN)) {
                    meta.chain = 1;
                }
            }

            /* ATOMIC ACK: the outcome of the CAS it answers. */
            if (hdr.atomic_ack.isValid()) {
                hash(meta.link_slot, HashAlgorithm.crc32, 32w0,
                     { hdr.ipv4.dst_addr, hdr.ipv4.src_addr, hdr.bth.psn }, LINK_SLOTS);
                read_link();
                if (meta.link_valid == 1 && meta.link_psn == (bit<32>)hdr.bth.psn &&
                    meta.link_cip == hdr.ipv4.dst_addr && meta.link_mip == hdr.ipv4.src_addr) {
                    cas_out_valid.write(meta.link_slot, 0);
                    stats.count(STAT_ACKS_CLEARED);
                    link_tracked.read(meta.link_tracked, meta.link_slot);
                    if (meta.link_tracked == 1) {
                        link_key_slot.read(meta.key_slot, meta.link_slot);
                        link_key.read(meta.link_key, meta.link_slot);
                        cas_out_compare.read(meta.link_cmp, meta.link_slot);
                        cas_out_ts.read(meta.link_ts, meta.link_slot);
                        read_tail();
                        link_chained.read(meta.link_chained, meta.link_slot);
                        if (meta.link_chained == 1) {
                            /* Chain mode: a CAS chained onto the node of the key's previous
                             * link. Its node is linked only once that predecessor is. */
                            link_pred_lh.read(meta.pred_lh, meta.link_slot);
                            if (hdr.atomic_ack.orig == meta.link_cmp) {
                                if (meta.tail_valid == 1 && meta.tail_key == meta.link_key &&
                                    meta.tail_lh == meta.pred_lh) {
                                    /* The predecessor is the confirmed tail: this node is
                                     * in the chain, and now its confirmed tail. */
                                    link_va_hi.read(meta.node_va_hi, meta.link_slot);
                                    link_va_lo.read(meta.node_va_lo, meta.link_slot);
                                    link_ver.read(meta.node_ver, meta.link_slot);
                                    link_lh.read(meta.link_lh, meta.link_slot);
                                    tail_va_hi.write(meta.key_slot, meta.node_va_hi);
                                    tail_va_lo.write(meta.key_slot, meta.node_va_lo);
                                    tail_ver.write(meta.key_slot, meta.node_ver);
                                    tail_lh.write(meta.key_slot, meta.link_lh);
                                    tail_dst_ip.write(meta.key_slot, hdr.ipv4.src_addr);
                                    tail_ts.write(meta.key_slot, meta.link_ts);
                                    stats.count(STAT_TAIL_CONFIRMED);
                                    meta.vouch = 1;
                                } else {
                                    /* Its predecessor was never confirmed (a lost or
                                     * reordered ACK, a record taken over): no later link
                                     * of this chain can be. End the chain; the next
                                     * unsteered success starts a new one. */
                                    meta.chain_end = 1;
                                    stats.count(STAT_END_PRED_UNCONFIRMED);
                                }
                            } else {
                                /* The node the chain ended at had a successor the switch
                                 * did not learn: end the chain, and forget that node if it
                                 * is also the confirmed tail. The chain ends here, so the
                                 * client's retry of this node may be chained again. */
                                meta.chain_end = 1;
                                stats.count(STAT_END_CHAINED_FAIL);
                                link_lh.read(meta.link_lh, meta.link_slot);
                                hash(meta.node_slot, HashAlgorithm.crc32, 32w0, { meta.link_lh }, NODE_SLOTS);
                                node_lh.read(meta.node_lh, meta.node_slot);
                                if (meta.node_lh == meta.link_lh) {
                                    node_chained.write(meta.node_slot, 0);
                                }
                                hash(meta.node2_slot, HashAlgorithm.crc32, 32w0,
                                     { meta.link_lh, meta.link_lh + NODE_SALT }, NODE_SLOTS);
                                node2_lh.read(meta.node_lh, meta.node2_slot);
                                if (meta.node_lh == meta.link_lh) {
                                    node2_chained.write(meta.node2_slot, 0);
                                }
                                cas_out_va.read(meta.link_va, meta.link_slot);
                                if (meta.tail_valid == 1 && meta.tail_key == meta.link_key &&
                                    (meta.tail_va_hi ++ meta.tail_va_lo) == meta.link_va) {
                                    tail_valid.write(meta.key_slot, 0);
                                    stats.count(STAT_TAIL_DROPPED);
                                }
                            }
                            if (meta.chain_end == 1) {
                                read_spec();
                                if (meta.spec_key == meta.link_key) {
                                    spec_valid.write(meta.key_slot, 0);
                                }
                                stats.count(STAT_CHAIN_BROKEN);
                            }
                        } else if (hdr.atomic_ack.orig == meta.link_cmp) {
                            /* The CAS succeeded: its node is linked after a node that was
                             * the tail, so it is now the tail. A confirmation older than
                             * the cached tail (ACKs of two links reordered) is not applied. */
                            if (meta.tail_key != meta.link_key ||
                                meta.link_ts - meta.tail_ts < 48w0x800000000000) {
                                link_va_hi.read(meta.node_va_hi, meta.link_slot);
                                link_va_lo.read(meta.node_va_lo, meta.link_slot);
                                link_ver.read(meta.node_ver, meta.link_slot);
                                link_lh.read(meta.link_lh, meta.link_slot);
                                tail_valid.write(meta.key_slot, 1);
                                tail_key.write(meta.key_slot, meta.link_key);
                                tail_va_hi.write(meta.key_slot, meta.node_va_hi);
                                tail_va_lo.write(meta.key_slot, meta.node_va_lo);
                                tail_ver.write(meta.key_slot, meta.node_ver);
                                tail_dst_ip.write(meta.key_slot, hdr.ipv4.src_addr);
                                tail_ts.write(meta.key_slot, meta.link_ts);
                                stats.count(STAT_TAIL_CONFIRMED);
                                tail_lh.write(meta.key_slot, meta.link_lh);
                                if (meta.chain == 1) {
                                    /* Chain mode with no live chain of this key: start
                                     * one at the node just confirmed. */
                                    read_spec();
                                    if (meta.spec_valid == 0 || meta.spec_key != meta.link_key ||
                                        meta.now - meta.spec_ts >= meta.ttl) {
                                        meta.spec_key = meta.link_key;
                                        meta.spec_lh = meta.link_lh;
                                        meta.spec_va_hi = meta.node_va_hi;
                                        meta.spec_va_lo = meta.node_va_lo;
                                        meta.spec_ver = meta.node_ver;
                                        meta.spec_dst_ip = hdr.ipv4.src_addr;
                                        meta.spec_ts = meta.link_ts;
                                        write_spec();
                                    }
                                }
                            } else {
                                stats.count(STAT_CONFIRM_STALE);
                            }
                        } else {
                            /* The CAS failed. If it was aimed at the cached tail, that
                             * tail has a successor the switch did not learn: forget it. */
                            cas_out_va.read(meta.link_va, meta.link_slot);
                            if (meta.tail_valid == 1 && meta.tail_key == meta.link_key &&
                                (meta.tail_va_hi ++ meta.tail_va_lo) == meta.link_va) {
                                tail_valid.write(meta.key_slot, 0);
                                stats.count(STAT_TAIL_DROPPED);
                            }
                        }
                    }
                }
            }

            /* Rule 13: the ACK of a chained link just confirmed vouches for it:
             * bit 63 set (memory never holds it: the layout keeps bits 63..60
             * zero), the predecessor's LH in the next field, its version kept in
             * bits 18..11. Hosts run with ICRC checking off (rule 9). */
            if (meta.vouch == 1) {
                hdr.atomic_ack.orig = VOUCH_MARK | ((bit<64>)meta.pred_lh << 28) |
                                      (hdr.atomic_ack.orig & EV_MASK);
                stats.count(STAT_VOUCHED);
            }

            /* Rule 14: a node READ response whose node is the key's confirmed tail
             * (fresh, from its memory node) is vouched for: bit 63 of its header
             * word, which memory never holds, tells the client the node is in the
             * chain. Hosts run with ICRC checking off (rule 9). */
            if (hdr.node.isValid() && hdr.bth.opcode == OP_READ_RESP_ONLY &&
                (meta.mode & MODE_READ) != 0 &&
                (bit<32>)hdr.udp.length == meta.node_size + 28) {
                meta.clover_key = hdr.node.key7 ++ hdr.node.key6 ++ hdr.node.key5 ++ hdr.node.key4 ++
                                  hdr.node.key3 ++ hdr.node.key2 ++ hdr.node.key1 ++ hdr.node.key0;
                tracked_keys.apply();
                if (meta.tracked == 1) {
                    read_tail();
                    meta.node_lh = hdr.node.self3 ++ hdr.node.self2 ++ hdr.node.self1 ++ hdr.node.self0;
                    if (meta.tail_valid == 1 && meta.tail_key == meta.clover_key &&
                        meta.tail_lh == meta.node_lh &&
                        meta.tail_ver == hdr.node.hw2[2:0] ++ hdr.node.hw1[7:3] &&
                        meta.tail_dst_ip == hdr.ipv4.src_addr && meta.now - meta.tail_ts < meta.ttl) {
                        hdr.node.hw_high = hdr.node.hw_high | 32w0x80;
                        stats.count(STAT_READS_VOUCHED);
                    }
                }
            }

            /* Requests (SEND, WRITE, READ, atomics) while steering is on. */
            if (hdr.bth.isValid() && meta.mode != 0 &&
                (hdr.bth.opcode <= OP_READ_REQUEST || hdr.bth.opcode == OP_COMPARE_SWAP ||
                 hdr.bth.opcode == OP_FETCH_ADD)) {
                stats.count(STAT_ROCE);

                if (hdr.node.isValid() && hdr.reth.dma_len == meta.node_size) {
                    /* Node WRITE: learn where the node lives, by its handle and by its VA.
                     * Every node WRITE is learned, tracked key or not: a VA reused by an
                     * untracked key must stop naming the tracked key it held before. */
                    meta.clover_key = hdr.node.key7 ++ hdr.node.key6 ++ hdr.node.key5 ++ hdr.node.key4 ++
                                      hdr.node.key3 ++ hdr.node.key2 ++ hdr.node.key1 ++ hdr.node.key0;
                    meta.node_lh = hdr.node.self3 ++ hdr.node.self2 ++ hdr.node.self1 ++ hdr.node.self0;
                    hash(meta.node_slot, HashAlgorithm.crc32, 32w0, { meta.node_lh }, NODE_SLOTS);
                    node_lh.write(meta.node_slot, meta.node_lh);
                    node_ver.write(meta.node_slot, hdr.node.hw2[2:0] ++ hdr.node.hw1[7:3]);
                    node_va_hi.write(meta.node_slot, hdr.reth.va[63:32]);
                    node_va_lo.write(meta.node_slot, hdr.reth.va[31:0]);
                    node_key.write(meta.node_slot, meta.clover_key);
                    node_chained.write(meta.node_slot, 0);
                    if (meta.chain == 1) {
                        hash(meta.node2_slot, HashAlgorithm.crc32, 32w0,
                             { meta.node_lh, meta.node_lh + NODE_SALT }, NODE_SLOTS);
                        node2_lh.write(meta.node2_slot, meta.node_lh);
                        node2_ver.write(meta.node2_slot, hdr.node.hw2[2:0] ++ hdr.node.hw1[7:3]);
                        node2_va_hi.write(meta.node2_slot, hdr.reth.va[63:32]);
                        node2_va_lo.write(meta.node2_slot, hdr.reth.va[31:0]);
                        node2_key.write(meta.node2_slot, meta.clover_key);
                        node2_chained.write(meta.node2_slot, 0);
                    }
                    hash(meta.addr_slot, HashAlgorithm.crc32, 32w0, { hdr.reth.va }, ADDR_SLOTS);
                    addr_va_hi.write(meta.addr_slot, hdr.reth.va[63:32]);
                    addr_va_lo.write(meta.addr_slot, hdr.reth.va[31:0]);
                    addr_key.write(meta.addr_slot, meta.clover_key);
                    stats.count(STAT_NODE_WRITES);
                } else if (hdr.bth.opcode == OP_COMPARE_SWAP) {
                    meta.link_orig_va = hdr.atomic_eth.va;
                    meta.new_lh = hdr.atomic_eth.swap[59:28];
                    meta.new_ver = hdr.atomic_eth.swap[26:19];
                    hash(meta.link_slot, HashAlgorithm.crc32, 32w0,
                         { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.psn }, LINK_SLOTS);
                    read_link();
                    /* The record at this slot has this CAS's client, server and PSN (valid,
                     * or cleared by its ACK): with the same VA and new node as the client
                     * sent them it is a retransmission. Otherwise another queue pair of
                     * the same client host used the same PSN: an ACK cannot tell the two
                     * apart (it names no request QP), so this CAS confirms nothing. */
                    if (meta.link_psn == (bit<32>)hdr.bth.psn &&
                        meta.link_cip == hdr.ipv4.src_addr && meta.link_mip == hdr.ipv4.dst_addr) {
                        link_orig_va_hi.read(meta.orig_va_hi, meta.link_slot);
                        link_orig_va_lo.read(meta.orig_va_lo, meta.link_slot);
                        link_lh.read(meta.link_lh, meta.link_slot);
                        if ((meta.orig_va_hi ++ meta.orig_va_lo) == hdr.atomic_eth.va &&
                            meta.link_lh == meta.new_lh) {
                            meta.retrans = 1;
                        } else {
                            meta.ambiguous = 1;
                        }
                    }
                    if (meta.retrans == 1) {
                        /* Forwarded exactly as the first copy, so that the memory node
                         * executes the same CAS whichever copy reaches it. */
                        cas_out_va.read(hdr.atomic_eth.va, meta.link_slot);
                        cas_out_compare.read(hdr.atomic_eth.compare, meta.link_slot);
                        cas_out_swap.read(hdr.atomic_eth.swap, meta.link_slot);
                        stats.count(STAT_RETRANSMITS);
                        link_tracked.read(meta.link_tracked, meta.link_slot);
                        if (meta.link_tracked == 1) {
                            link_key_slot.read(meta.key_slot, meta.link_slot);
                            key_retransmits.count(meta.key_slot);
                        }
                    } else {
                        if (meta.link_valid == 1) {
                            stats.count(STAT_LINK_TAKEOVER);
                        }
                        /* A linking CAS: compare is a tail word (next LH and next version
                         * zero: bits 63..19) and swap names a node (not NULL, not the
                         * delete mark). Its node, learned at its WRITE, names the key. */
                        if (hdr.atomic_eth.compare[63:19] == 0 && meta.new_lh != 0 &&
                            meta.new_lh != LH_DELETED) {
                            stats.count(STAT_CAS);
                            hash(meta.node_slot, HashAlgorithm.crc32, 32w0, { meta.new_lh }, NODE_SLOTS);
                            node_lh.read(meta.node_lh, meta.node_slot);
                            node_ver.read(meta.node_ver, meta.node_slot);
                            if (meta.node_lh == meta.new_lh && meta.node_ver == meta.new_ver) {
                                node_key.read(meta.clover_key, meta.node_slot);
                                node_va_hi.read(meta.node_va_hi, meta.node_slot);
                                node_va_lo.read(meta.node_va_lo, meta.node_slot);
                                node_chained.read(meta.node_chained, meta.node_slot);
                                tracked_keys.apply();
                            } else {
                                if (meta.chain == 1) {
                                    hash(meta.node2_slot, HashAlgorithm.crc32, 32w0,
                                         { meta.new_lh, meta.new_lh + NODE_SALT }, NODE_SLOTS);
                                    node2_lh.read(meta.node_lh, meta.node2_slot);
                                    node2_ver.read(meta.node_ver, meta.node2_slot);
                                    if (meta.node_lh == meta.new_lh && meta.node_ver == meta.new_ver) {
                                        meta.node_way = 1;
                                    }
                                }
                                if (meta.node_way == 1) {
                                    node2_key.read(meta.clover_key, meta.node2_slot);
                                    node2_va_hi.read(meta.node_va_hi, meta.node2_slot);
                                    node2_va_lo.read(meta.node_va_lo, meta.node2_slot);
                                    node2_chained.read(meta.node_chained, meta.node2_slot);
                                    tracked_keys.apply();
                                } else {
                                    stats.count(STAT_LINK_UNRESOLVED);
                                }
                            }
                            if (meta.tracked == 1 && meta.ambiguous == 0 && meta.chain == 1) {
                                read_spec();
                                if (meta.spec_valid == 1 && meta.spec_key == meta.clover_key &&
                                    meta.spec_dst_ip == hdr.ipv4.dst_addr && meta.now - meta.spec_ts < meta.ttl) {
                                    meta.spec_live = 1;
                                }
                                if (meta.spec_live == 1 && (meta.node_chained == 1 ||
                                    ((meta.spec_va_hi ++ meta.spec_va_lo) != hdr.atomic_eth.va &&
                                     meta.spec_ver == hdr.atomic_eth.compare[18:11]))) {
                                    /* Not chained: a CAS linking a node chained before (its
                                     * client's retry after a failure the switch may not have
                                     * seen, its record taken over: the chain may have grown
                                     * from that node since, and chained it could close a loop
                                     * of nodes reachable from nowhere; a failure the switch saw
                                     * cleared the mark), and a CAS that, steered to the chain's
                                     * end, would return the tail word its client compares,
                                     * which the client would take for a success on its own
                                     * tail without proving it. */
                                    stats.count(STAT_CHAIN_REFUSED);
                                } else if (meta.spec_live == 1) {
                                    /* Chain mode: link onto the node of the key's last
                                     * forwarded linking CAS, confirmed or not, and make this
                                     * CAS's node the chain's end. */
                                    meta.linking = 1;
                                    meta.link_chained = 1;
                                    meta.pred_lh = meta.spec_lh;
                                    if ((meta.spec_va_hi ++ meta.spec_va_lo) != hdr.atomic_eth.va) {
                                        hdr.atomic_eth.va = meta.spec_va_hi ++ meta.spec_va_lo;
                                        hdr.atomic_eth.compare = (hdr.atomic_eth.compare & ~EV_MASK) |
                                                                 (((bit<64>)meta.spec_ver) << EV_SHIFT);
                                        hdr.atomic_eth.swap = (hdr.atomic_eth.swap & ~EV_MASK) |
                                                              (((bit<64>)meta.spec_ver) << EV_SHIFT);
                                        key_cas_steered.count(meta.key_slot);
                                        stats.count(STAT_CAS_STEERED);
                                    }
                                    stats.count(STAT_CAS_CHAINED);
                                    meta.spec_lh = meta.new_lh;
                                    meta.spec_ver = meta.new_ver;
                                    meta.spec_va_hi = meta.node_va_hi;
                                    meta.spec_va_lo = meta.node_va_lo;
                                    meta.spec_ts = meta.now;
                                    write_spec();
                                    if (meta.node_way == 1) {
                                        node2_chained.write(meta.node2_slot, 1);
                                    } else {
                                        node_chained.write(meta.node_slot, 1);
                                    }
                                }
                            }
                            if (meta.tracked == 1 && meta.link_chained == 0) {
                                meta.linking = 1;
                                read_tail();
                                if (meta.tail_valid == 1 && meta.tail_key == meta.clover_key &&
                                    meta.tail_dst_ip == hdr.ipv4.dst_addr &&
                                    (meta.tail_va_hi ++ meta.tail_va_lo) != hdr.atomic_eth.va) {
                                    if (meta.now - meta.tail_ts >= meta.ttl) {
                                        stats.count(STAT_TAIL_EXPIRED);
                                    } else if ((meta.mode & MODE_WRITE) != 0 && meta.spec_live == 0) {
                                        /* Stale CAS: steer it to the confirmed tail. */
                                        hdr.atomic_eth.va = meta.tail_va_hi ++ meta.tail_va_lo;
                                        hdr.atomic_eth.compare = (hdr.atomic_eth.compare & ~EV_MASK) |
                                                                 (((bit<64>)meta.tail_ver) << EV_SHIFT);
                                        hdr.atomic_eth.swap = (hdr.atomic_eth.swap & ~EV_MASK) |
                                                              (((bit<64>)meta.tail_ver) << EV_SHIFT);
                                        key_cas_steered.count(meta.key_slot);
                                        stats.count(STAT_CAS_STEERED);
                                    }
                                }
                            }
                        }
                        if (meta.ambiguous == 1) {
                            meta.linking = 0;
                            stats.count(STAT_LINK_AMBIGUOUS);
                        }
                        record_link();
                    }
                } else if (hdr.bth.opcode == OP_READ_REQUEST && hdr.reth.dma_len == meta.node_size &&
                           (meta.mode & MODE_READ) != 0) {
                    stats.count(STAT_READS);
                    hash(meta.addr_slot, HashAlgorithm.crc32, 32w0, { hdr.reth.va }, ADDR_SLOTS);
                    addr_va_hi.read(meta.addr_va_hi, meta.addr_slot);
                    addr_va_lo.read(meta.addr_va_lo, meta.addr_slot);
                    if ((meta.addr_va_hi ++ meta.addr_va_lo) == hdr.reth.va) {
                        addr_key.read(meta.clover_key, meta.addr_slot);
                        tracked_keys.apply();
                    }
                    if (meta.tracked == 1) {
                        if (meta.chain == 1) {
                            read_spec();
                        }
                        read_tail();
                        if (meta.tail_valid == 1 && meta.tail_key == meta.clover_key &&
                            meta.tail_dst_ip == hdr.ipv4.dst_addr && meta.now - meta.tail_ts < meta.ttl) {
                            meta.tail_fresh = 1;
                        }
                        if (meta.spec_valid == 1 && meta.spec_key == meta.clover_key &&
                            meta.spec_dst_ip == hdr.ipv4.dst_addr && meta.now - meta.spec_ts < meta.ttl &&
                            meta.spec_lh != meta.tail_lh && meta.spec_ts - meta.tail_ts < 48w0x800000000000) {
                            /* Chain mode: links after the confirmed tail are in flight
                             * (the chain's end was forwarded after the tail's link, not
                             * left behind by an unchained link): steer to the chain's
                             * end; its response is vouched for (rule 14) only if its
                             * link is confirmed by then. */
                            meta.tail_fresh = 1;
                            meta.tail_va_hi = meta.spec_va_hi;
                            meta.tail_va_lo = meta.spec_va_lo;
                            stats.count(STAT_READS_CHAIN_END);
                        }
                    }
                    if (meta.tail_fresh == 1) {
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
