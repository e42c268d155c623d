/*
 * p4/tna/swordbox.p4: SwordBox steering for Clover on Tofino (P4_16, TNA).
 *
 * The same program as p4/swordbox.p4 (v1model), rule for rule: the contract
 * is docs/swordbox-p4.md ("Semantics", "Why each rule"), the controller
 * (ctrl) is the same, and it finds every table, register and counter below
 * by the same P4Info names. A differential test (p4/ptf/tna_diff_test.go)
 * runs both programs on the Go target under the same table entries and
 * checks that they forward the same frames and hold the same state.
 *
 * Where the Tofino version differs from the v1model one, and why:
 *
 *   - Ingress only (as the paper's program, section 5.1): every decision is
 *     taken in the ingress pipeline and the packet bypasses egress
 *     (ig_tm_md.bypass_egress). The egress parser, control and deparser
 *     exist because TNA's Pipeline needs them; they never see a packet.
 *   - Stateful ALUs: a Tofino register lives in one stage and is read and
 *     written by one RegisterAction per packet. Where the v1model program
 *     reads a register and writes it later in the same packet, this one
 *     folds the two into one RegisterAction (for example the CAS record's
 *     PSN: return the old value, store the new one). Each register is
 *     touched by at most one RegisterAction.execute per packet (the
 *     differential tests check it: the target counts a second access in
 *     Stats.RegisterReaccesses); registers have several RegisterActions,
 *     one per path (ACK, CAS, READ, READ response).
 *   - Register widths: Tofino cells are 8, 16 or 32 bits, or a 64-bit pair
 *     of 32-bit halves. 64-bit quantities the data plane compares (VAs) stay
 *     split into _hi/_lo registers as in the v1model program; 64-bit values
 *     it only stores and returns (keys, the CAS's compare and swap) use
 *     64-bit pair cells; the 48-bit ones (MAC addresses, timestamps) use
 *     64-bit cells too (no 48-bit cell exists). Their P4Info bitwidth is
 *     therefore 64 where the v1model program says 48; the controller reads
 *     them as numbers and does not care.
 *   - Time: TNA's clock is the parser's global_tstamp in NANOSECONDS
 *     (48 bits); v1model's ingress_global_timestamp counts microseconds.
 *     The controller sets tail_ttl in microseconds (the contract), so the
 *     program multiplies it by 1000 with shifts (x*1000 = x<<10 - x<<4 -
 *     x<<3; Tofino has no multiplier) and compares ages in nanoseconds.
 *     tail_ts and cas_out_ts hold nanoseconds here. The controller treats
 *     cas_out_ts as an opaque part of a record's identity (ctrl/repair.go).
 *     The 48-bit nanosecond clock wraps after 2^48 ns (78 hours): a tail
 *     left untouched that long could look fresh again for tail_ttl; the
 *     v1model clock wraps after 2^48 us (8.9 years).
 *   - Hashes: one Hash extern per use (a Tofino hash unit takes one field
 *     list). A Hash<bit<W>> of CRC32 keeps the low W bits of the CRC, which
 *     is crc32 mod 2^W: the v1model program's hash(..., crc32, 0, ..., 2^W).
 *   - The forward table's direct counter counts in every action
 *     (TNA counts a DirectCounter only when an action calls count()).
 *   - The stats counter: a Tofino counter counts once per packet, so the
 *     contract's stats cells are counted in stats and stats_part2 ..
 *     stats_part9 (see the declarations), each at most once on any path
 *     and in one stage order like the registers; ctrl sums them.
 *   - Forwarding and drops through the TNA intrinsic metadata: the unicast
 *     egress port (ig_tm_md.ucast_egress_port) and the deparser's drop
 *     control (ig_dprsr_md.drop_ctl).
 *   - Metadata is cleared explicitly at the top of ingress (Tofino does not
 *     promise zeroed metadata; v1model does).
 *
 * Placement on the stages (docs/swordbox-p4.md, "The Tofino program"):
 *
 *   - Every register is accessed at most once on any path through the
 *     program's branches (bf-p4c decides mutual exclusion from the
 *     structure, not from the conditions), and the registers are accessed
 *     in one order on every path: the CAS record's identity (client,
 *     server, PSN, VA and LH as sent), cas_out_valid, the node map (first
 *     way, second way), the record's key part (who, which key and node,
 *     when), the key's chain end (spec_*), the record's chain part
 *     (link_chained, link_pred_lh), the key's tail, then the record as
 *     forwarded (compare, VA, swap, frame fields). The counters too, among
 *     them the stats parts that close a path: stats_part7, then
 *     stats_part4, then stats_part9. A READ response (rule 14) is an arm
 *     of its own: tracked_keys, then the tail, read only. The target's
 *     placement check (target.CompileOptions.TofinoPlacement) passes
 *     (p4/ptf's TestTNASwordboxPlacementReport).
 *   - Two kinds of packets take two passes (Resubmit, no recirculation):
 *     the ATOMIC ACK of a tracked link and, in chain mode, a linking CAS.
 *     The ACK decides rule 6 and 11 by the compare and VA as forwarded,
 *     which the CAS writes after it reads the tail (rule 5 takes them from
 *     the tail), and then writes the tail; and a chained CAS decides by the
 *     chain end and the node's mark and then writes both. A packet carries
 *     data only to later stages, so no single pass can; the first pass
 *     reads and decides (no write but the record's clearing), carries the
 *     decision in the resubmit header (resub_t), and the second pass writes.
 *     The second pass is the one forwarded, so it also rewrites what goes
 *     out: the chained CAS's VA, compare and swap, and the vouch of the
 *     ACK of a chained success after the confirmed tail (rule 13), whose
 *     predecessor's LH the first pass sends in resub_t.end_lh.
 *     The target resubmits at once, before any other packet, so the two
 *     passes see the state one pass would; on hardware other packets may
 *     pass in between (docs/swordbox-p4.md says what that changes).
 *
 * The ICRC is not recomputed (also not for a vouched ATOMIC ACK or READ
 * response) and the IPv4 header is never changed, exactly as in the
 * v1model program (docs/swordbox-p4.md, rule 9): the hosts behind the
 * switch run with ICRC checking off.
 */
#include <core.p4>
#include <tna.p4>

/* The port PacketIns leave by and PacketOuts come in on. 255 is the software
 * rack's (p4rt.DefaultCPUPort). On a Tofino it is the PCIe CPU port of the
 * model (64 on a 2-pipe Tofino 1, 192 on a 4-pipe one): build with
 * -DSWORDBOX_CPU_PORT=<port> (bf-p4c takes -D as cpp does). */
#ifndef SWORDBOX_CPU_PORT
#define SWORDBOX_CPU_PORT 255
#endif
const PortId_t CPU_PORT = SWORDBOX_CPU_PORT;

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

/* Register and table sizes (the same as the v1model program's). */
const bit<32> KEY_SLOTS  = 4096;   /* tracked Clover keys (slot given by the controller) */
const bit<32> NODE_SLOTS = 65536;  /* node map: crc32(node LH) -> VA, key, version */
const bit<32> ADDR_SLOTS = 65536;  /* address map for READ steering: crc32(VA) -> key */
const bit<32> LINK_SLOTS = 8192;   /* CAS in flight: crc32(client IP, server IP, PSN) */
/* Chain mode's second way of the node map is indexed by crc32(LH, LH + NODE_SALT)
 * (the v1model program says why). */
const bit<32> NODE_SALT = 0x9e3779b9;

typedef bit<16> key_slot_t;        /* as the controller's track(slot) gives it */
typedef bit<16> map_slot_t;        /* node and address map slots: 16 bits of crc32 */
typedef bit<13> link_slot_t;       /* CAS records: 13 bits of crc32 */

/* Steering modes, the config table's mode parameter (bit 0: write steering, bit 1: read steering). */
const bit<8> MODE_WRITE = 1;
const bit<8> MODE_READ  = 2;
const bit<8> MODE_CHAIN = 4;   /* with MODE_WRITE: chain CAS onto the last forwarded link */

/* Indices of the stats counter (docs/swordbox-p4.md, "Counters"). */
const bit<32> STAT_ROCE            = 0;
const bit<32> STAT_NODE_WRITES     = 1;
const bit<32> STAT_CAS             = 2;
const bit<32> STAT_CAS_STEERED     = 3;
const bit<32> STAT_READS           = 4;
const bit<32> STAT_READS_STEERED   = 5;
const bit<32> STAT_READ_MISSES     = 6;
const bit<32> STAT_RETRANSMITS     = 7;
const bit<32> STAT_ACKS_CLEARED    = 8;
const bit<32> STAT_LINK_TAKEOVER   = 9;
const bit<32> STAT_TAIL_DROPPED    = 10;
const bit<32> STAT_LINK_UNRESOLVED = 11;
const bit<32> STAT_TAIL_CONFIRMED  = 12;
const bit<32> STAT_TAIL_EXPIRED    = 13;
const bit<32> STAT_CONFIRM_STALE   = 14;
const bit<32> STAT_LINK_AMBIGUOUS  = 15;
const bit<32> STAT_CAS_CHAINED     = 16;
const bit<32> STAT_CHAIN_BROKEN    = 17;
const bit<32> STAT_CHAIN_REFUSED   = 18;
const bit<32> STAT_READS_CHAIN_END = 19;
const bit<32> STAT_VOUCHED         = 20;
const bit<32> STAT_END_PRED_UNCONFIRMED = 21;
const bit<32> STAT_END_CHAINED_FAIL = 22;
const bit<32> STAT_READS_VOUCHED   = 23;
const bit<32> STAT_COUNT           = 24;

/* Entry-version bits 18..11 of a Clover header word. */
const bit<64> EV_MASK = 0x000000000007F800;

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
 * The first 24 bytes of a Clover node WRITE payload (docs/clover-layout.md),
 * little-endian, so parsed byte by byte. Entry version = header word bits
 * 18..11 = hw2[2:0] ++ hw1[7:3].
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

/*
 * What the first pass of a resubmitted packet decided (in place of the port
 * metadata on the second pass; 64 bits, as Tofino 1 carries). A CAS in
 * chain mode: whether the key's chain is live, and whether it refuses this
 * CAS (rule 10). An ATOMIC ACK of a tracked link: what rules 6 and 11 do.
 */
header resub_t {
    bit<1>  live;       /* CAS: the key's chain is valid, of this key and memory node, fresh */
    bit<1>  refused;    /* CAS: ... and not chained (rule 10's exceptions) */
    bit<1>  confirm;    /* ACK: an unchained success confirms its node as the tail */
    bit<1>  stale;      /* ACK: an unchained success older than the cached tail */
    bit<1>  chain_ok;   /* ACK: a chained success after the confirmed tail */
    bit<1>  drop_tail;  /* ACK: a failure aimed at the cached tail, which is valid */
    bit<1>  chain_end;  /* ACK: the chain ends (stats 17) */
    bit<1>  clear_spec; /* ACK: ... and it is this key's chain (spec_valid := 0) */
    bit<1>  seed;       /* ACK: start a chain at the node just confirmed */
    bit<1>  unmark;     /* ACK: a chained failure: its node may be chained again */
    bit<22> pad;
    /* CAS: the LH of the chain's end the first pass decided by; ACK of a
     * chained success after the confirmed tail (chain_ok): its predecessor's
     * LH, which the vouch names (rule 13) */
    bit<32> end_lh;
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
    bit<8>     mode;
    bit<32>    node_size;
    bit<64>    ttl_us;      /* tail_ttl as the controller set it */
    bit<64>    ttl_ns;      /* the same in nanoseconds */
    bit<48>    now;         /* global_tstamp, nanoseconds */
    bit<64>    clover_key;
    bit<1>     key_known;   /* clover_key names a learned node's key */
    bit<1>     tracked;
    key_slot_t key_slot;
    /* the key's cached tail */
    bit<8>     tail_valid;
    bit<64>    tail_key;
    bit<32>    tail_va_hi;
    bit<32>    tail_va_lo;
    bit<8>     tail_ver;
    bit<32>    tail_dst_ip;
    bit<48>    tail_ts;
    bit<48>    tail_age;
    bit<1>     tail_fresh;
    /* the node a linking CAS links (from its swap value and the node map) */
    bit<32>    new_lh;
    bit<8>     new_ver;
    map_slot_t node_slot;
    bit<32>    node_lh;
    bit<8>     node_ver;
    bit<32>    node_va_hi;
    bit<32>    node_va_lo;
    /* the address map */
    map_slot_t addr_slot;
    bit<32>    addr_va_hi;
    bit<32>    addr_va_lo;
    /* the CAS record (in flight until its ATOMIC ACK) */
    link_slot_t link_slot;
    bit<32>    psn;         /* the BTH PSN, widened as the record holds it */
    bit<1>     link_match;  /* the record has this packet's client, server and PSN */
    bit<8>     link_valid;
    bit<32>    link_psn;
    bit<32>    link_cip;
    bit<32>    link_mip;
    bit<32>    orig_va_hi;  /* the VA a recorded CAS was sent with */
    bit<32>    orig_va_lo;
    bit<32>    link_lh;
    bit<8>     link_tracked;
    bit<64>    link_key;
    bit<64>    link_cmp;
    bit<64>    link_va;
    bit<48>    link_ts;
    bit<1>     retrans;
    bit<1>     ambiguous;
    bit<1>     linking;
    /* the stats_part4 and stats_part9 cells this packet counts, if any */
    bit<32>    stat4;
    bit<1>     count4;
    bit<32>    stat9;
    bit<1>     count9;
    /* chain mode */
    bit<1>     chain;       /* mode bits 0 and 2 (set after config) */
    bit<1>     chained;     /* this CAS is chained onto the key's chain end */
    bit<1>     spec_live;   /* the key's chain is live for this CAS (second pass): no rule 5 */
    bit<8>     node_chained;
    map_slot_t node2_slot;
    bit<32>    tail_lh;
    bit<8>     spec_valid;
    bit<64>    spec_key;
    bit<32>    spec_lh;
    bit<32>    spec_va_hi;
    bit<32>    spec_va_lo;
    bit<8>     spec_ver;
    bit<32>    spec_dst_ip;
    bit<48>    spec_ts;
    bit<48>    spec_age;    /* now - spec_ts (a READ in chain mode, rule 12) */
    bit<8>     link_chained;
    bit<32>    pred_lh;
    bit<1>     resubmit;    /* the first pass of a resubmitted packet */
    resub_t    resub;       /* what the first pass decided (the second pass reads it) */
}

/* Egress never sees a packet (bypass_egress); TNA still wants its types. */
struct egress_headers_t {}
struct egress_metadata_t {}

parser SwordboxIngressParser(packet_in packet,
                             out headers_t hdr,
                             out metadata_t meta,
                             out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        packet.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            default: parse_port_metadata;
        }
    }

    /* The second pass of a resubmitted packet: what the first pass decided. */
    state parse_resubmit {
        packet.extract(meta.resub);
        transition parse_ethernet;
    }

    state parse_port_metadata {
        packet.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
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

control SwordboxIngress(inout headers_t hdr,
                        inout metadata_t meta,
                        in ingress_intrinsic_metadata_t ig_intr_md,
                        in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                        inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {

    /* ---- per tracked key (index: the slot given by tracked_keys) ---- */
    Register<bit<8>, key_slot_t>(KEY_SLOTS)  tail_valid;
    Register<bit<64>, key_slot_t>(KEY_SLOTS) tail_key;     /* the key whose tail this is */
    Register<bit<32>, key_slot_t>(KEY_SLOTS) tail_va_hi;   /* cached tail VA, high and low 32 bits */
    Register<bit<32>, key_slot_t>(KEY_SLOTS) tail_va_lo;
    Register<bit<8>, key_slot_t>(KEY_SLOTS)  tail_ver;     /* the tail's entry version */
    Register<bit<32>, key_slot_t>(KEY_SLOTS) tail_dst_ip;  /* memory node holding the tail */
    Register<bit<64>, key_slot_t>(KEY_SLOTS) tail_ts;      /* ns: when the CAS that linked it was forwarded */
    Register<bit<32>, key_slot_t>(KEY_SLOTS) tail_lh;      /* the tail's LH (rules 11 and 14) */

    /* Requests and READ responses read the tail. */
    RegisterAction<bit<8>, key_slot_t, bit<8>>(tail_valid) tail_valid_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<64>, key_slot_t, bit<64>>(tail_key) tail_key_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_va_hi) tail_va_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_va_lo) tail_va_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(tail_ver) tail_ver_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_dst_ip) tail_dst_ip_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<64>, key_slot_t, bit<64>>(tail_ts) tail_ts_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };

    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_lh) tail_lh_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    /* The ATOMIC ACK's second pass writes what its first pass decided. */
    RegisterAction<bit<64>, key_slot_t, bit<64>>(tail_key) tail_key_write = {
        void apply(inout bit<64> value) { value = meta.link_key; }
    };
    RegisterAction<bit<64>, key_slot_t, bit<64>>(tail_ts) tail_ts_write = {
        void apply(inout bit<64> value) { value = (bit<64>)meta.link_ts; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_va_hi) tail_va_hi_write = {
        void apply(inout bit<32> value) { value = meta.node_va_hi; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_va_lo) tail_va_lo_write = {
        void apply(inout bit<32> value) { value = meta.node_va_lo; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(tail_ver) tail_ver_write = {
        void apply(inout bit<8> value) { value = meta.node_ver; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_dst_ip) tail_dst_ip_write = {
        void apply(inout bit<32> value) { value = hdr.ipv4.src_addr; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(tail_valid) tail_valid_set = {
        void apply(inout bit<8> value) { value = 1; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(tail_valid) tail_valid_clear = {
        void apply(inout bit<8> value) { value = 0; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(tail_lh) tail_lh_write = {
        void apply(inout bit<32> value) { value = meta.link_lh; }
    };

    /* ---- per tracked key, chain mode: the node of the last linking CAS
     * forwarded (steered onto the previous one), confirmed or not ---- */
    Register<bit<8>, key_slot_t>(KEY_SLOTS)  spec_valid;
    Register<bit<64>, key_slot_t>(KEY_SLOTS) spec_key;
    Register<bit<32>, key_slot_t>(KEY_SLOTS) spec_lh;
    Register<bit<32>, key_slot_t>(KEY_SLOTS) spec_va_hi;
    Register<bit<32>, key_slot_t>(KEY_SLOTS) spec_va_lo;
    Register<bit<8>, key_slot_t>(KEY_SLOTS)  spec_ver;
    Register<bit<32>, key_slot_t>(KEY_SLOTS) spec_dst_ip;
    Register<bit<64>, key_slot_t>(KEY_SLOTS) spec_ts;      /* ns: when its CAS was forwarded */

    RegisterAction<bit<64>, key_slot_t, bit<64>>(spec_key) spec_key_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(spec_valid) spec_valid_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<64>, key_slot_t, bit<64>>(spec_ts) spec_ts_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_lh) spec_lh_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_va_hi) spec_va_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_va_lo) spec_va_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(spec_ver) spec_ver_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_dst_ip) spec_dst_ip_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    /* A chained CAS (second pass): the chain's end becomes its node; the old
     * end is returned (its LH is the CAS's predecessor, its VA and version
     * steer the CAS). The chain's key, memory node and validity stay. */
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_lh) spec_lh_chain = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (value == meta.resub.end_lh) {
                value = meta.new_lh;
            }
        }
    };
    RegisterAction<bit<64>, key_slot_t, bit<64>>(spec_ts) spec_ts_chain = {
        void apply(inout bit<64> value) {
            if (meta.chained == 1) {
                value = (bit<64>)meta.now;
            }
        }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_va_hi) spec_va_hi_chain = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (meta.chained == 1) {
                value = meta.node_va_hi;
            }
        }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_va_lo) spec_va_lo_chain = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value;
            if (meta.chained == 1) {
                value = meta.node_va_lo;
            }
        }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(spec_ver) spec_ver_chain = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (meta.chained == 1) {
                value = meta.new_ver;
            }
        }
    };
    /* An ACK (second pass) starts a chain at the node it confirmed, or ends
     * the key's chain. */
    RegisterAction<bit<64>, key_slot_t, bit<64>>(spec_key) spec_key_seed = {
        void apply(inout bit<64> value) { value = meta.link_key; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(spec_valid) spec_valid_set = {
        void apply(inout bit<8> value) { value = 1; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(spec_valid) spec_valid_clear = {
        void apply(inout bit<8> value) { value = 0; }
    };
    RegisterAction<bit<64>, key_slot_t, bit<64>>(spec_ts) spec_ts_seed = {
        void apply(inout bit<64> value) { value = (bit<64>)meta.link_ts; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_lh) spec_lh_seed = {
        void apply(inout bit<32> value) { value = meta.link_lh; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_va_hi) spec_va_hi_seed = {
        void apply(inout bit<32> value) { value = meta.node_va_hi; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_va_lo) spec_va_lo_seed = {
        void apply(inout bit<32> value) { value = meta.node_va_lo; }
    };
    RegisterAction<bit<8>, key_slot_t, bit<8>>(spec_ver) spec_ver_seed = {
        void apply(inout bit<8> value) { value = meta.node_ver; }
    };
    RegisterAction<bit<32>, key_slot_t, bit<32>>(spec_dst_ip) spec_dst_ip_seed = {
        void apply(inout bit<32> value) { value = hdr.ipv4.src_addr; }
    };

    /* ---- node map: where each recently written node lives (index: crc32(LH)) ---- */
    Register<bit<32>, map_slot_t>(NODE_SLOTS) node_lh;
    Register<bit<8>, map_slot_t>(NODE_SLOTS)  node_ver;
    Register<bit<32>, map_slot_t>(NODE_SLOTS) node_va_hi;
    Register<bit<32>, map_slot_t>(NODE_SLOTS) node_va_lo;
    Register<bit<64>, map_slot_t>(NODE_SLOTS) node_key;
    Register<bit<8>, map_slot_t>(NODE_SLOTS)  node_chained; /* 1: a CAS linking it was chained (chain mode) */
    /* chain mode: the node map's second way (index: crc32(LH, LH + NODE_SALT)) */
    Register<bit<32>, map_slot_t>(NODE_SLOTS) node2_lh;
    Register<bit<8>, map_slot_t>(NODE_SLOTS)  node2_ver;
    Register<bit<32>, map_slot_t>(NODE_SLOTS) node2_va_hi;
    Register<bit<32>, map_slot_t>(NODE_SLOTS) node2_va_lo;
    Register<bit<64>, map_slot_t>(NODE_SLOTS) node2_key;
    Register<bit<8>, map_slot_t>(NODE_SLOTS)  node2_chained;

    RegisterAction<bit<32>, map_slot_t, bit<32>>(node_lh) node_lh_write = {
        void apply(inout bit<32> value) { value = meta.node_lh; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node_ver) node_ver_write = {
        void apply(inout bit<8> value) { value = meta.node_ver; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node_va_hi) node_va_hi_write = {
        void apply(inout bit<32> value) { value = hdr.reth.va[63:32]; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node_va_lo) node_va_lo_write = {
        void apply(inout bit<32> value) { value = hdr.reth.va[31:0]; }
    };
    RegisterAction<bit<64>, map_slot_t, bit<64>>(node_key) node_key_write = {
        void apply(inout bit<64> value) { value = meta.clover_key; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node_lh) node_lh_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node_ver) node_ver_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node_va_hi) node_va_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node_va_lo) node_va_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<64>, map_slot_t, bit<64>>(node_key) node_key_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    /* A node WRITE clears the mark; a chained CAS (second pass) sets it and
     * returns it; a chained CAS's failure (the ACK's second pass) clears it
     * when the slot still holds the node. */
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node_chained) node_chained_write = {
        void apply(inout bit<8> value) { value = 0; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node_chained) node_chained_cas = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (meta.chained == 1 && value == 0) {
                value = 1;
            }
        }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node_chained) node_chained_unmark = {
        void apply(inout bit<8> value) {
            if (meta.node_lh == meta.link_lh) {
                value = 0;
            }
        }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node2_lh) node2_lh_write = {
        void apply(inout bit<32> value) { value = meta.node_lh; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node2_ver) node2_ver_write = {
        void apply(inout bit<8> value) { value = meta.node_ver; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node2_va_hi) node2_va_hi_write = {
        void apply(inout bit<32> value) { value = hdr.reth.va[63:32]; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node2_va_lo) node2_va_lo_write = {
        void apply(inout bit<32> value) { value = hdr.reth.va[31:0]; }
    };
    RegisterAction<bit<64>, map_slot_t, bit<64>>(node2_key) node2_key_write = {
        void apply(inout bit<64> value) { value = meta.clover_key; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node2_chained) node2_chained_write = {
        void apply(inout bit<8> value) { value = 0; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node2_lh) node2_lh_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node2_ver) node2_ver_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node2_va_hi) node2_va_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(node2_va_lo) node2_va_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<64>, map_slot_t, bit<64>>(node2_key) node2_key_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node2_chained) node2_chained_cas = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (meta.chained == 1 && value == 0) {
                value = 1;
            }
        }
    };
    RegisterAction<bit<8>, map_slot_t, bit<8>>(node2_chained) node2_chained_unmark = {
        void apply(inout bit<8> value) {
            if (meta.node_lh == meta.link_lh) {
                value = 0;
            }
        }
    };

    /* ---- address map for READ steering (index: crc32(VA)) ---- */
    Register<bit<32>, map_slot_t>(ADDR_SLOTS) addr_va_hi;
    Register<bit<32>, map_slot_t>(ADDR_SLOTS) addr_va_lo;
    Register<bit<64>, map_slot_t>(ADDR_SLOTS) addr_key;

    RegisterAction<bit<32>, map_slot_t, bit<32>>(addr_va_hi) addr_va_hi_write = {
        void apply(inout bit<32> value) { value = hdr.reth.va[63:32]; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(addr_va_lo) addr_va_lo_write = {
        void apply(inout bit<32> value) { value = hdr.reth.va[31:0]; }
    };
    RegisterAction<bit<64>, map_slot_t, bit<64>>(addr_key) addr_key_write = {
        void apply(inout bit<64> value) { value = meta.clover_key; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(addr_va_hi) addr_va_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, map_slot_t, bit<32>>(addr_va_lo) addr_va_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<64>, map_slot_t, bit<64>>(addr_key) addr_key_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };

    /* ---- CAS in flight (index: crc32(client IP, server IP, PSN)) ---- */
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_orig_va_hi;  /* VA as the client sent it */
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_orig_va_lo;
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_lh;          /* the new node's LH (swap bits 59..28) */
    Register<bit<8>, link_slot_t>(LINK_SLOTS)  link_tracked;     /* 1: a linking CAS of a tracked key */
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_key_slot;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) link_key;
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_va_hi;       /* the new node's VA (the tail it makes) */
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_va_lo;
    Register<bit<8>, link_slot_t>(LINK_SLOTS)  link_ver;         /* the new node's entry version */
    Register<bit<8>, link_slot_t>(LINK_SLOTS)  link_chained;     /* 1: chained onto the node below (chain mode) */
    Register<bit<32>, link_slot_t>(LINK_SLOTS) link_pred_lh;     /* the LH of the node it was chained onto */
    Register<bit<8>, link_slot_t>(LINK_SLOTS)  cas_out_valid;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) cas_out_src_mac;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) cas_out_dst_mac;
    Register<bit<32>, link_slot_t>(LINK_SLOTS) cas_out_src_ip;
    Register<bit<32>, link_slot_t>(LINK_SLOTS) cas_out_dst_ip;
    Register<bit<16>, link_slot_t>(LINK_SLOTS) cas_out_udp_sport;
    Register<bit<32>, link_slot_t>(LINK_SLOTS) cas_out_dst_qp;
    Register<bit<32>, link_slot_t>(LINK_SLOTS) cas_out_psn;
    Register<bit<16>, link_slot_t>(LINK_SLOTS) cas_out_pkey;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) cas_out_va;       /* as forwarded (after steering) */
    Register<bit<32>, link_slot_t>(LINK_SLOTS) cas_out_rkey;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) cas_out_swap;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) cas_out_compare;
    Register<bit<64>, link_slot_t>(LINK_SLOTS) cas_out_ts;       /* global_tstamp (ns) when forwarded */

    /* A CAS: the record's client, server and PSN, and the VA and LH it was
     * sent with, are returned and replaced by this CAS's in the same step.
     * When they match (a retransmission) the write stores what was there;
     * otherwise this CAS takes the record over, which it would do anyway. */
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_psn) cas_out_psn_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = meta.psn; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_src_ip) cas_out_src_ip_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = hdr.ipv4.src_addr; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_dst_ip) cas_out_dst_ip_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = hdr.ipv4.dst_addr; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_orig_va_hi) link_orig_va_hi_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = hdr.atomic_eth.va[63:32]; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_orig_va_lo) link_orig_va_lo_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = hdr.atomic_eth.va[31:0]; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_lh) link_lh_swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = meta.new_lh; }
    };
    /* A CAS that is not a retransmission marks the record in flight. */
    RegisterAction<bit<8>, link_slot_t, bit<8>>(cas_out_valid) cas_out_valid_cas = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (meta.retrans == 0) {
                value = 1;
            }
        }
    };
    /* An ATOMIC ACK with the record's client, server and PSN clears it. */
    RegisterAction<bit<8>, link_slot_t, bit<8>>(cas_out_valid) cas_out_valid_ack = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
            if (meta.link_match == 1) {
                value = 0;
            }
        }
    };
    /* The ACK reads the client, server and PSN of the record. */
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_psn) cas_out_psn_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_src_ip) cas_out_src_ip_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_dst_ip) cas_out_dst_ip_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    /* The record as forwarded: written by a new CAS (after steering), read
     * by a retransmission (to forward it as the first copy) and by the ACK. */
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_va) cas_out_va_write = {
        void apply(inout bit<64> value) { value = hdr.atomic_eth.va; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_va) cas_out_va_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_compare) cas_out_compare_write = {
        void apply(inout bit<64> value) { value = hdr.atomic_eth.compare; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_compare) cas_out_compare_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_swap) cas_out_swap_write = {
        void apply(inout bit<64> value) { value = hdr.atomic_eth.swap; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_swap) cas_out_swap_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_src_mac) cas_out_src_mac_write = {
        void apply(inout bit<64> value) { value = (bit<64>)hdr.ethernet.src_addr; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_dst_mac) cas_out_dst_mac_write = {
        void apply(inout bit<64> value) { value = (bit<64>)hdr.ethernet.dst_addr; }
    };
    RegisterAction<bit<16>, link_slot_t, bit<16>>(cas_out_udp_sport) cas_out_udp_sport_write = {
        void apply(inout bit<16> value) { value = hdr.udp.src_port; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_dst_qp) cas_out_dst_qp_write = {
        void apply(inout bit<32> value) { value = (bit<32>)hdr.bth.dst_qp; }
    };
    RegisterAction<bit<16>, link_slot_t, bit<16>>(cas_out_pkey) cas_out_pkey_write = {
        void apply(inout bit<16> value) { value = hdr.bth.pkey; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(cas_out_rkey) cas_out_rkey_write = {
        void apply(inout bit<32> value) { value = hdr.atomic_eth.rkey; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_ts) cas_out_ts_write = {
        void apply(inout bit<64> value) { value = (bit<64>)meta.now; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(cas_out_ts) cas_out_ts_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<8>, link_slot_t, bit<8>>(link_tracked) link_tracked_write = {
        void apply(inout bit<8> value) { value = (bit<8>)meta.linking; }
    };
    RegisterAction<bit<8>, link_slot_t, bit<8>>(link_tracked) link_tracked_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_key_slot) link_key_slot_write = {
        void apply(inout bit<32> value) { value = (bit<32>)meta.key_slot; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_key_slot) link_key_slot_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(link_key) link_key_write = {
        void apply(inout bit<64> value) { value = meta.clover_key; }
    };
    RegisterAction<bit<64>, link_slot_t, bit<64>>(link_key) link_key_read = {
        void apply(inout bit<64> value, out bit<64> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_va_hi) link_va_hi_write = {
        void apply(inout bit<32> value) { value = meta.node_va_hi; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_va_hi) link_va_hi_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_va_lo) link_va_lo_write = {
        void apply(inout bit<32> value) { value = meta.node_va_lo; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_va_lo) link_va_lo_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<8>, link_slot_t, bit<8>>(link_ver) link_ver_write = {
        void apply(inout bit<8> value) { value = meta.new_ver; }
    };
    RegisterAction<bit<8>, link_slot_t, bit<8>>(link_ver) link_ver_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<8>, link_slot_t, bit<8>>(link_chained) link_chained_write = {
        void apply(inout bit<8> value) { value = meta.link_chained; }
    };
    RegisterAction<bit<8>, link_slot_t, bit<8>>(link_chained) link_chained_read = {
        void apply(inout bit<8> value, out bit<8> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_pred_lh) link_pred_lh_write = {
        void apply(inout bit<32> value) { value = meta.pred_lh; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_pred_lh) link_pred_lh_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };
    RegisterAction<bit<32>, link_slot_t, bit<32>>(link_lh) link_lh_read = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; }
    };

    /* ---- hashes: one unit per field list ---- */
    Hash<link_slot_t>(HashAlgorithm_t.CRC32) link_hash_cas;   /* client, server, PSN of a CAS */
    Hash<link_slot_t>(HashAlgorithm_t.CRC32) link_hash_ack;   /* the same, reversed, of its ACK */
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  node_hash_write; /* a node WRITE's own LH */
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  node_hash_cas;   /* the LH a CAS links */
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  node_hash_ack;   /* the LH a chained CAS's ACK links */
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  node2_hash_write; /* the second way's: LH, LH + NODE_SALT */
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  node2_hash_cas;
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  node2_hash_ack;
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  addr_hash_write; /* a node WRITE's VA */
    Hash<map_slot_t>(HashAlgorithm_t.CRC32)  addr_hash_read;  /* a READ's VA */

    /* ---- counters ---- */
    /* The contract's stats counter (docs/swordbox-p4.md, "Counters") is
     * counted at up to nine places on one path through ingress, and a
     * Tofino counter counts at most once per packet. So its cells are counted in nine counters of the
     * same indexes: stats (requests seen) and stats_part2 .. stats_part9,
     * each counted at most once on any path; cell i of the contract's
     * counter is the sum of cell i of the nine. ctrl.ReadCounter("stats")
     * reads that sum (it adds the parts it finds in the P4Info). */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats;       /* requests seen */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part2; /* ACK (first pass): outstanding cleared */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part3; /* ACK (second pass): tail confirmed, stale or dropped */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part4; /* node WRITE, READ, retransmission or takeover; ACK vouched */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part5; /* linking CAS */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part6; /* link unresolved */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part7; /* steered, expired, READ steered or missed; READ response vouched; why an ACK ended a chain */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part8; /* link ambiguous */
    Counter<bit<64>, bit<32>>(STAT_COUNT, CounterType_t.PACKETS) stats_part9; /* chain mode: CAS chained or refused, chain ended, READ to the chain's end */
    Counter<bit<64>, bit<32>>(KEY_SLOTS, CounterType_t.PACKETS) key_cas_steered;
    Counter<bit<64>, bit<32>>(KEY_SLOTS, CounterType_t.PACKETS) key_reads_steered;
    Counter<bit<64>, bit<32>>(KEY_SLOTS, CounterType_t.PACKETS) key_read_misses;
    Counter<bit<64>, bit<32>>(KEY_SLOTS, CounterType_t.PACKETS) key_retransmits;
    DirectCounter<bit<64>>(CounterType_t.PACKETS_AND_BYTES) forward_counter;

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
        forward_counter.count();
    }

    action set_egress(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        forward_counter.count();
    }

    action send_to_cpu() {
        ig_tm_md.ucast_egress_port = CPU_PORT;
        forward_counter.count();
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
     * controller sets with a P4Runtime MODIFY (is_default_action = true),
     * as in the v1model program (PI's P4Runtime server in bf_switchd
     * implements no register writes). The default keeps steering off.
     *   mode:      0 off, 1 write, 2 read, 3 write and read
     *   node_size: DMA length of a node WRITE/READ: 24 + object size
     *   tail_ttl:  microseconds a confirmed tail may be steered to
     */
    action set_config(bit<8> mode, bit<32> node_size, bit<48> tail_ttl) {
        meta.mode = mode;
        meta.node_size = node_size;
        meta.ttl_us = (bit<64>)tail_ttl;
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
        meta.key_slot = slot;
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

    apply {
        meta.key_known = 0;
        meta.tracked = 0;
        meta.key_slot = 0;
        meta.clover_key = 0;
        meta.node_va_hi = 0;
        meta.node_va_lo = 0;
        meta.node_ver = 0;
        meta.new_lh = 0;
        meta.new_ver = 0;
        meta.link_match = 0;
        meta.retrans = 0;
        meta.ambiguous = 0;
        meta.linking = 0;
        meta.tail_fresh = 0;
        meta.count4 = 0;
        meta.stat4 = 0;
        meta.count9 = 0;
        meta.stat9 = 0;
        meta.chain = 0;
        meta.chained = 0;
        meta.spec_live = 0;
        meta.node_chained = 0;
        meta.tail_lh = 0;
        meta.spec_valid = 0;
        meta.spec_key = 0;
        meta.spec_lh = 0;
        meta.link_chained = 0;
        meta.pred_lh = 0;
        meta.resubmit = 0;
        if (ig_intr_md.resubmit_flag == 0) {
            meta.resub.setInvalid();
        }

        if (hdr.packet_out.isValid()) {
            /* PacketOut: sent as is to the port the controller chose; never steered. */
            ig_tm_md.ucast_egress_port = (PortId_t)hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            if (hdr.bth.isValid()) {
                config.apply();
                /* x * 1000 = x * 1024 - x * 16 - x * 8 */
                meta.ttl_ns = (meta.ttl_us << 10) - (meta.ttl_us << 4) - (meta.ttl_us << 3);
                meta.now = ig_prsr_md.global_tstamp;
                if ((meta.mode & (MODE_WRITE | MODE_CHAIN)) == (MODE_WRITE | MODE_CHAIN)) {
                    meta.chain = 1;
                }
            }

            if (ig_intr_md.resubmit_flag == 0 && meta.chain == 1 && hdr.bth.opcode == OP_COMPARE_SWAP &&
                hdr.atomic_eth.compare[63:19] == 0 && hdr.atomic_eth.swap[59:28] != 0 &&
                hdr.atomic_eth.swap[59:28] != LH_DELETED) {
                /* A linking CAS in chain mode, first pass: whether it is chained
                 * (rule 10) depends on the key's chain end and on the node's mark,
                 * and both change when it is; a stage reads or writes its register
                 * once per pass. So this pass only reads them and decides, and the
                 * packet is resubmitted with the decision: the second pass is the
                 * CAS's processing (below), which writes them. */
                meta.new_lh = hdr.atomic_eth.swap[59:28];
                meta.new_ver = hdr.atomic_eth.swap[26:19];
                meta.node_slot = node_hash_cas.get({ meta.new_lh });
                meta.node_lh = node_lh_read.execute(meta.node_slot);
                meta.node_ver = node_ver_read.execute(meta.node_slot);
                if (meta.node_lh == meta.new_lh && meta.node_ver == meta.new_ver) {
                    meta.node_va_hi = node_va_hi_read.execute(meta.node_slot);
                    meta.node_va_lo = node_va_lo_read.execute(meta.node_slot);
                    meta.clover_key = node_key_read.execute(meta.node_slot);
                    meta.node_chained = node_chained_cas.execute(meta.node_slot); /* meta.chained is 0: a read */
                    meta.key_known = 1;
                } else {
                    meta.node2_slot = node2_hash_cas.get({ meta.new_lh, meta.new_lh + NODE_SALT });
                    meta.node_lh = node2_lh_read.execute(meta.node2_slot);
                    meta.node_ver = node2_ver_read.execute(meta.node2_slot);
                    if (meta.node_lh == meta.new_lh && meta.node_ver == meta.new_ver) {
                        meta.node_va_hi = node2_va_hi_read.execute(meta.node2_slot);
                        meta.node_va_lo = node2_va_lo_read.execute(meta.node2_slot);
                        meta.clover_key = node2_key_read.execute(meta.node2_slot);
                        meta.node_chained = node2_chained_cas.execute(meta.node2_slot);
                        meta.key_known = 1;
                    }
                }
                if (meta.key_known == 1) {
                    tracked_keys.apply();
                }
                meta.resub.setValid();
                meta.resub.live = 0;
                meta.resub.refused = 0;
                meta.resub.confirm = 0;
                meta.resub.stale = 0;
                meta.resub.chain_ok = 0;
                meta.resub.drop_tail = 0;
                meta.resub.chain_end = 0;
                meta.resub.clear_spec = 0;
                meta.resub.seed = 0;
                meta.resub.unmark = 0;
                meta.resub.pad = 0;
                meta.resub.end_lh = 0;
                if (meta.tracked == 1) {
                    meta.spec_key = spec_key_read.execute(meta.key_slot);
                    meta.spec_valid = spec_valid_read.execute(meta.key_slot);
                    meta.resub.end_lh = spec_lh_read.execute(meta.key_slot);
                    meta.spec_ts = (bit<48>)spec_ts_read.execute(meta.key_slot);
                    meta.spec_va_hi = spec_va_hi_read.execute(meta.key_slot);
                    meta.spec_va_lo = spec_va_lo_read.execute(meta.key_slot);
                    meta.spec_ver = spec_ver_read.execute(meta.key_slot);
                    meta.spec_dst_ip = spec_dst_ip_read.execute(meta.key_slot);
                    meta.tail_age = meta.now - meta.spec_ts;
                    if (meta.spec_valid == 1 && meta.spec_key == meta.clover_key &&
                        meta.spec_dst_ip == hdr.ipv4.dst_addr && (bit<64>)meta.tail_age < meta.ttl_ns) {
                        meta.resub.live = 1;
                        /* Not chained: a node chained before, and a CAS that, steered
                         * to the chain's end, would come back with the tail word its
                         * client compares (the v1model program says why). */
                        if (meta.node_chained == 1 ||
                            ((meta.spec_va_hi != hdr.atomic_eth.va[63:32] || meta.spec_va_lo != hdr.atomic_eth.va[31:0]) &&
                             meta.spec_ver == hdr.atomic_eth.compare[18:11])) {
                            meta.resub.refused = 1;
                        }
                    }
                }
                meta.resubmit = 1;
            } else if (ig_intr_md.resubmit_flag == 0 && hdr.atomic_ack.isValid()) {
                /* ATOMIC ACK, first pass: the outcome of the CAS it answers. It
                 * clears the record and reads what rules 6 and 11 decide by (the
                 * compare and VA as forwarded after the tail, in the stages a CAS
                 * writes them); an ACK of a tracked link is resubmitted with the
                 * decision, and its second pass (below) writes the tail and the
                 * chain. The record's other readers read it in this order too. */
                meta.link_slot = link_hash_ack.get({ hdr.ipv4.dst_addr, hdr.ipv4.src_addr, hdr.bth.psn });
                meta.link_psn = cas_out_psn_read.execute(meta.link_slot);
                meta.link_cip = cas_out_src_ip_read.execute(meta.link_slot);
                meta.link_mip = cas_out_dst_ip_read.execute(meta.link_slot);
                if (meta.link_psn == (bit<32>)hdr.bth.psn &&
                    meta.link_cip == hdr.ipv4.dst_addr && meta.link_mip == hdr.ipv4.src_addr) {
                    meta.link_match = 1;
                }
                meta.link_valid = cas_out_valid_ack.execute(meta.link_slot);
                if (meta.link_valid == 1 && meta.link_match == 1) {
                    stats_part2.count(STAT_ACKS_CLEARED);
                    meta.link_tracked = link_tracked_read.execute(meta.link_slot);
                    if (meta.link_tracked == 1) {
                        meta.key_slot = (key_slot_t)link_key_slot_read.execute(meta.link_slot);
                        meta.link_key = link_key_read.execute(meta.link_slot);
                        meta.link_ts = (bit<48>)cas_out_ts_read.execute(meta.link_slot);
                        meta.spec_key = spec_key_read.execute(meta.key_slot);
                        meta.spec_valid = spec_valid_read.execute(meta.key_slot);
                        meta.spec_ts = (bit<48>)spec_ts_read.execute(meta.key_slot);
                        meta.link_chained = link_chained_read.execute(meta.link_slot);
                        meta.pred_lh = link_pred_lh_read.execute(meta.link_slot);
                        meta.tail_key = tail_key_read.execute(meta.key_slot);
                        meta.tail_ts = (bit<48>)tail_ts_read.execute(meta.key_slot);
                        meta.tail_va_hi = tail_va_hi_read.execute(meta.key_slot);
                        meta.tail_va_lo = tail_va_lo_read.execute(meta.key_slot);
                        meta.tail_valid = tail_valid_read.execute(meta.key_slot);
                        meta.tail_lh = tail_lh_read.execute(meta.key_slot);
                        meta.link_cmp = cas_out_compare_read.execute(meta.link_slot);
                        meta.link_va = cas_out_va_read.execute(meta.link_slot);

                        meta.resub.setValid();
                        meta.resub.live = 0;
                        meta.resub.refused = 0;
                        meta.resub.confirm = 0;
                        meta.resub.stale = 0;
                        meta.resub.chain_ok = 0;
                        meta.resub.drop_tail = 0;
                        meta.resub.chain_end = 0;
                        meta.resub.clear_spec = 0;
                        meta.resub.seed = 0;
                        meta.resub.unmark = 0;
                        meta.resub.pad = 0;
                        meta.resub.end_lh = 0;
                        /* The CAS failed and was aimed at the cached tail: that tail
                         * has a successor the switch did not learn. */
                        if (hdr.atomic_ack.orig != meta.link_cmp && meta.tail_valid == 1 &&
                            meta.tail_key == meta.link_key &&
                            meta.tail_va_hi == meta.link_va[63:32] && meta.tail_va_lo == meta.link_va[31:0]) {
                            meta.resub.drop_tail = 1;
                        }
                        if (meta.link_chained == 1) {
                            /* Rule 11: a chained success confirms its node when its
                             * predecessor is the confirmed tail; any other outcome
                             * ends the chain, and a failure unmarks its node. */
                            if (hdr.atomic_ack.orig == meta.link_cmp) {
                                if (meta.tail_valid == 1 && meta.tail_key == meta.link_key &&
                                    meta.tail_lh == meta.pred_lh) {
                                    /* ... and its ACK vouches for it (rule 13),
                                     * naming the predecessor. */
                                    meta.resub.chain_ok = 1;
                                    meta.resub.end_lh = meta.pred_lh;
                                } else {
                                    meta.resub.chain_end = 1;
                                }
                            } else {
                                meta.resub.chain_end = 1;
                                meta.resub.unmark = 1;
                            }
                            if (meta.resub.chain_end == 1 && meta.spec_key == meta.link_key) {
                                meta.resub.clear_spec = 1;
                            }
                        } else if (hdr.atomic_ack.orig == meta.link_cmp) {
                            /* Rule 6: confirmed unless the cached tail of the key was
                             * linked by a CAS forwarded later (48-bit wrap-around). */
                            if (meta.tail_key != meta.link_key ||
                                ((meta.link_ts - meta.tail_ts) & 48w0x800000000000) == 0) {
                                meta.resub.confirm = 1;
                                if (meta.chain == 1) {
                                    /* Rule 11: no live chain of this key: start one here. */
                                    meta.tail_age = meta.now - meta.spec_ts;
                                    if (meta.spec_valid == 0 || meta.spec_key != meta.link_key ||
                                        (bit<64>)meta.tail_age >= meta.ttl_ns) {
                                        meta.resub.seed = 1;
                                    }
                                }
                            } else {
                                meta.resub.stale = 1;
                            }
                        }
                        meta.resubmit = 1;
                    }
                }
                if (meta.resubmit == 0) {
                    forward.apply();
                }
            } else {
                forward.apply();

                if (hdr.atomic_ack.isValid()) {
                    /* ATOMIC ACK of a tracked link, second pass: what the first
                     * pass decided. */
                    meta.link_slot = link_hash_ack.get({ hdr.ipv4.dst_addr, hdr.ipv4.src_addr, hdr.bth.psn });
                    meta.link_lh = link_lh_read.execute(meta.link_slot);
                    if (meta.resub.unmark == 1) {
                        /* The chain's end had a successor the switch did not learn:
                         * this node may be chained again (its client's retry). */
                        meta.node_slot = node_hash_ack.get({ meta.link_lh });
                        meta.node_lh = node_lh_read.execute(meta.node_slot);
                        node_chained_unmark.execute(meta.node_slot);
                        meta.node2_slot = node2_hash_ack.get({ meta.link_lh, meta.link_lh + NODE_SALT });
                        meta.node_lh = node2_lh_read.execute(meta.node2_slot);
                        node2_chained_unmark.execute(meta.node2_slot);
                    }
                    meta.key_slot = (key_slot_t)link_key_slot_read.execute(meta.link_slot);
                    meta.link_key = link_key_read.execute(meta.link_slot);
                    meta.link_ts = (bit<48>)cas_out_ts_read.execute(meta.link_slot);
                    meta.node_va_hi = link_va_hi_read.execute(meta.link_slot);
                    meta.node_va_lo = link_va_lo_read.execute(meta.link_slot);
                    meta.node_ver = link_ver_read.execute(meta.link_slot);
                    if (meta.resub.seed == 1) {
                        spec_key_seed.execute(meta.key_slot);
                        spec_valid_set.execute(meta.key_slot);
                        spec_lh_seed.execute(meta.key_slot);
                        spec_ts_seed.execute(meta.key_slot);
                        spec_va_hi_seed.execute(meta.key_slot);
                        spec_va_lo_seed.execute(meta.key_slot);
                        spec_ver_seed.execute(meta.key_slot);
                        spec_dst_ip_seed.execute(meta.key_slot);
                    } else if (meta.resub.clear_spec == 1) {
                        spec_valid_clear.execute(meta.key_slot);
                    }
                    if (meta.resub.confirm == 1 || meta.resub.chain_ok == 1) {
                        if (meta.resub.confirm == 1) {
                            tail_key_write.execute(meta.key_slot);
                        }
                        tail_ts_write.execute(meta.key_slot);
                        tail_va_hi_write.execute(meta.key_slot);
                        tail_va_lo_write.execute(meta.key_slot);
                        tail_ver_write.execute(meta.key_slot);
                        tail_dst_ip_write.execute(meta.key_slot);
                        if (meta.resub.confirm == 1) {
                            tail_valid_set.execute(meta.key_slot);
                        }
                        tail_lh_write.execute(meta.key_slot);
                        stats_part3.count(STAT_TAIL_CONFIRMED);
                    } else if (meta.resub.drop_tail == 1) {
                        tail_valid_clear.execute(meta.key_slot);
                        stats_part3.count(STAT_TAIL_DROPPED);
                    } else if (meta.resub.stale == 1) {
                        stats_part3.count(STAT_CONFIRM_STALE);
                    }
                    /* The counters in the order the request path counts them
                     * (stats_part7, stats_part4, stats_part9). */
                    if (meta.resub.chain_end == 1) {
                        if (meta.resub.unmark == 1) {
                            stats_part7.count(STAT_END_CHAINED_FAIL);
                        } else {
                            stats_part7.count(STAT_END_PRED_UNCONFIRMED);
                        }
                    }
                    /* Rule 13: the ACK of a chained link just confirmed vouches
                     * for it, in this pass, the one forwarded: bit 63 set (memory
                     * never holds it), the predecessor's LH in the next field, the
                     * entry version kept in bits 18..11. Hosts run with ICRC
                     * checking off (rule 9). */
                    if (meta.resub.chain_ok == 1) {
                        hdr.atomic_ack.orig = VOUCH_MARK | ((bit<64>)meta.resub.end_lh << 28) |
                                              (hdr.atomic_ack.orig & EV_MASK);
                        stats_part4.count(STAT_VOUCHED);
                    }
                    if (meta.resub.chain_end == 1) {
                        stats_part9.count(STAT_CHAIN_BROKEN);
                    }
                } else if (hdr.node.isValid() && hdr.bth.opcode == OP_READ_RESP_ONLY &&
                           (meta.mode & MODE_READ) != 0 &&
                           (bit<32>)hdr.udp.length == meta.node_size + 28) {
                    /* Rule 14: a node READ response whose node is the key's
                     * confirmed tail (fresh, from its memory node) is vouched for:
                     * bit 63 of its header word, which memory never holds. One
                     * pass: it reads the tail and writes nothing. */
                    meta.clover_key = hdr.node.key7 ++ hdr.node.key6 ++ hdr.node.key5 ++ hdr.node.key4 ++
                                      hdr.node.key3 ++ hdr.node.key2 ++ hdr.node.key1 ++ hdr.node.key0;
                    tracked_keys.apply();
                    if (meta.tracked == 1) {
                        meta.tail_key = tail_key_read.execute(meta.key_slot);
                        meta.tail_ts = (bit<48>)tail_ts_read.execute(meta.key_slot);
                        meta.tail_ver = tail_ver_read.execute(meta.key_slot);
                        meta.tail_dst_ip = tail_dst_ip_read.execute(meta.key_slot);
                        meta.tail_valid = tail_valid_read.execute(meta.key_slot);
                        meta.tail_lh = tail_lh_read.execute(meta.key_slot);
                        meta.tail_age = meta.now - meta.tail_ts;
                        meta.node_lh = hdr.node.self3 ++ hdr.node.self2 ++ hdr.node.self1 ++ hdr.node.self0;
                        if (meta.tail_valid == 1 && meta.tail_key == meta.clover_key &&
                            meta.tail_lh == meta.node_lh &&
                            meta.tail_ver == hdr.node.hw2[2:0] ++ hdr.node.hw1[7:3] &&
                            meta.tail_dst_ip == hdr.ipv4.src_addr && (bit<64>)meta.tail_age < meta.ttl_ns) {
                            hdr.node.hw_high = hdr.node.hw_high | 32w0x80;
                            stats_part7.count(STAT_READS_VOUCHED);
                        }
                    }
                } else if (hdr.bth.isValid() && meta.mode != 0 &&
                           (hdr.bth.opcode <= OP_READ_REQUEST || hdr.bth.opcode == OP_COMPARE_SWAP ||
                            hdr.bth.opcode == OP_FETCH_ADD)) {
                    /* Requests (SEND, WRITE, READ, atomics) while steering is on. */
                    stats.count(STAT_ROCE);

                    if (hdr.node.isValid() && hdr.reth.dma_len == meta.node_size) {
                        /* Node WRITE: learn where the node lives, by its handle and by its VA,
                         * tracked key or not; in chain mode in the second way too. */
                        meta.clover_key = hdr.node.key7 ++ hdr.node.key6 ++ hdr.node.key5 ++ hdr.node.key4 ++
                                          hdr.node.key3 ++ hdr.node.key2 ++ hdr.node.key1 ++ hdr.node.key0;
                        meta.node_lh = hdr.node.self3 ++ hdr.node.self2 ++ hdr.node.self1 ++ hdr.node.self0;
                        meta.node_ver = hdr.node.hw2[2:0] ++ hdr.node.hw1[7:3];
                        meta.node_slot = node_hash_write.get({ meta.node_lh });
                        node_lh_write.execute(meta.node_slot);
                        node_ver_write.execute(meta.node_slot);
                        node_va_hi_write.execute(meta.node_slot);
                        node_va_lo_write.execute(meta.node_slot);
                        node_key_write.execute(meta.node_slot);
                        node_chained_write.execute(meta.node_slot);
                        if (meta.chain == 1) {
                            meta.node2_slot = node2_hash_write.get({ meta.node_lh, meta.node_lh + NODE_SALT });
                            node2_lh_write.execute(meta.node2_slot);
                            node2_ver_write.execute(meta.node2_slot);
                            node2_va_hi_write.execute(meta.node2_slot);
                            node2_va_lo_write.execute(meta.node2_slot);
                            node2_key_write.execute(meta.node2_slot);
                            node2_chained_write.execute(meta.node2_slot);
                        }
                        meta.addr_slot = addr_hash_write.get({ hdr.reth.va });
                        addr_va_hi_write.execute(meta.addr_slot);
                        addr_va_lo_write.execute(meta.addr_slot);
                        addr_key_write.execute(meta.addr_slot);
                        meta.stat4 = STAT_NODE_WRITES;
                        meta.count4 = 1;
                    } else if (hdr.bth.opcode == OP_COMPARE_SWAP) {
                        meta.new_lh = hdr.atomic_eth.swap[59:28];
                        meta.new_ver = hdr.atomic_eth.swap[26:19];
                        meta.psn = (bit<32>)hdr.bth.psn;
                        meta.link_slot = link_hash_cas.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.psn });
                        meta.link_psn = cas_out_psn_swap.execute(meta.link_slot);
                        meta.link_cip = cas_out_src_ip_swap.execute(meta.link_slot);
                        meta.link_mip = cas_out_dst_ip_swap.execute(meta.link_slot);
                        meta.orig_va_hi = link_orig_va_hi_swap.execute(meta.link_slot);
                        meta.orig_va_lo = link_orig_va_lo_swap.execute(meta.link_slot);
                        meta.link_lh = link_lh_swap.execute(meta.link_slot);
                        /* The record at this slot has this CAS's client, server and PSN (valid,
                         * or cleared by its ACK): with the same VA and new node as the client
                         * sent them it is a retransmission; otherwise another queue pair of
                         * the same host used the same PSN, and this CAS confirms nothing. */
                        if (meta.link_psn == meta.psn &&
                            meta.link_cip == hdr.ipv4.src_addr && meta.link_mip == hdr.ipv4.dst_addr) {
                            if (meta.orig_va_hi == hdr.atomic_eth.va[63:32] && meta.orig_va_lo == hdr.atomic_eth.va[31:0] &&
                                meta.link_lh == meta.new_lh) {
                                meta.retrans = 1;
                            } else {
                                meta.ambiguous = 1;
                            }
                        }
                        /* Chained (rule 10): its first pass found the key's chain live
                         * and not refusing it, and it is neither a retransmission nor
                         * ambiguous. */
                        if (meta.resub.isValid() && meta.resub.live == 1 && meta.retrans == 0 && meta.ambiguous == 0) {
                            /* The chain is live for it: chained, or refused and then
                             * not steered by rule 5 either (rule 10). */
                            meta.spec_live = 1;
                            if (meta.resub.refused == 0) {
                                meta.chained = 1;
                            }
                        }
                        meta.link_valid = cas_out_valid_cas.execute(meta.link_slot);
                        /* A linking CAS: compare is a tail word and swap names a node. */
                        if (meta.retrans == 0 && hdr.atomic_eth.compare[63:19] == 0 && meta.new_lh != 0 &&
                            meta.new_lh != LH_DELETED) {
                            meta.linking = 1;
                            stats_part5.count(STAT_CAS);
                            meta.node_slot = node_hash_cas.get({ meta.new_lh });
                            meta.node_lh = node_lh_read.execute(meta.node_slot);
                            meta.node_ver = node_ver_read.execute(meta.node_slot);
                            if (meta.node_lh == meta.new_lh && meta.node_ver == meta.new_ver) {
                                meta.node_va_hi = node_va_hi_read.execute(meta.node_slot);
                                meta.node_va_lo = node_va_lo_read.execute(meta.node_slot);
                                meta.clover_key = node_key_read.execute(meta.node_slot);
                                meta.node_chained = node_chained_cas.execute(meta.node_slot);
                                meta.key_known = 1;
                            } else if (meta.chain == 1) {
                                meta.node2_slot = node2_hash_cas.get({ meta.new_lh, meta.new_lh + NODE_SALT });
                                meta.node_lh = node2_lh_read.execute(meta.node2_slot);
                                meta.node_ver = node2_ver_read.execute(meta.node2_slot);
                                if (meta.node_lh == meta.new_lh && meta.node_ver == meta.new_ver) {
                                    meta.node_va_hi = node2_va_hi_read.execute(meta.node2_slot);
                                    meta.node_va_lo = node2_va_lo_read.execute(meta.node2_slot);
                                    meta.clover_key = node2_key_read.execute(meta.node2_slot);
                                    meta.node_chained = node2_chained_cas.execute(meta.node2_slot);
                                    meta.key_known = 1;
                                } else {
                                    stats_part6.count(STAT_LINK_UNRESOLVED);
                                }
                            } else {
                                stats_part6.count(STAT_LINK_UNRESOLVED);
                            }
                        }
                    } else if (hdr.bth.opcode == OP_READ_REQUEST && hdr.reth.dma_len == meta.node_size &&
                               (meta.mode & MODE_READ) != 0) {
                        meta.addr_slot = addr_hash_read.get({ hdr.reth.va });
                        meta.addr_va_hi = addr_va_hi_read.execute(meta.addr_slot);
                        meta.addr_va_lo = addr_va_lo_read.execute(meta.addr_slot);
                        if (meta.addr_va_hi == hdr.reth.va[63:32] && meta.addr_va_lo == hdr.reth.va[31:0]) {
                            meta.clover_key = addr_key_read.execute(meta.addr_slot);
                            meta.key_known = 1;
                        }
                        meta.stat4 = STAT_READS;
                        meta.count4 = 1;
                    }

                    /* One lookup of the key for both steering paths. */
                    if (meta.key_known == 1) {
                        tracked_keys.apply();
                    }

                    if (hdr.bth.opcode == OP_COMPARE_SWAP) {
                        /* The record's registers that do not depend on the chain or the
                         * tail, before their stages: a retransmission reads them, any
                         * other CAS writes them. Only a linking CAS of a tracked key
                         * confirms a tail. */
                        meta.linking = meta.linking & meta.tracked;
                        /* What the first pass decided by, again where it may have
                         * changed on a Tofino (not on this target): the node was
                         * chained in between (refused, as rule 10 says), or its key
                         * is no longer tracked or its node no longer in the map. */
                        if (meta.chained == 1 && meta.node_chained == 1) {
                            meta.chained = 0;
                            meta.resub.refused = 1;
                        }
                        if (meta.tracked == 0) {
                            meta.chained = 0;
                        }
                        if (meta.ambiguous == 1) {
                            meta.linking = 0;
                            stats_part8.count(STAT_LINK_AMBIGUOUS);
                        }
                        if (meta.retrans == 1) {
                            meta.stat4 = STAT_RETRANSMITS;
                            meta.count4 = 1;
                            meta.link_tracked = link_tracked_read.execute(meta.link_slot);
                            if (meta.link_tracked == 1) {
                                meta.key_slot = (key_slot_t)link_key_slot_read.execute(meta.link_slot);
                                key_retransmits.count((bit<32>)meta.key_slot);
                            }
                        } else {
                            if (meta.link_valid == 1) {
                                meta.stat4 = STAT_LINK_TAKEOVER;
                                meta.count4 = 1;
                            }
                            link_tracked_write.execute(meta.link_slot);
                            link_key_slot_write.execute(meta.link_slot);
                            link_key_write.execute(meta.link_slot);
                            cas_out_ts_write.execute(meta.link_slot);
                            link_va_hi_write.execute(meta.link_slot);
                            link_va_lo_write.execute(meta.link_slot);
                            link_ver_write.execute(meta.link_slot);
                        }
                        /* Rule 10: the key's chain end becomes this CAS's node, and the
                         * old end is its predecessor (the chain's key, memory node and
                         * validity stay). */
                        if (meta.chained == 1) {
                            /* Only onto the end the first pass decided by: on a
                             * Tofino another CAS may have moved it in between (this
                             * target resubmits at once, so it never does here). */
                            meta.pred_lh = spec_lh_chain.execute(meta.key_slot);
                            if (meta.pred_lh != meta.resub.end_lh) {
                                meta.chained = 0;
                                meta.pred_lh = 0;
                            }
                            spec_ts_chain.execute(meta.key_slot);
                            meta.spec_va_hi = spec_va_hi_chain.execute(meta.key_slot);
                            meta.spec_va_lo = spec_va_lo_chain.execute(meta.key_slot);
                            meta.spec_ver = spec_ver_chain.execute(meta.key_slot);
                        }
                        if (meta.chained == 1) {
                            meta.link_chained = 1;
                            meta.stat9 = STAT_CAS_CHAINED;
                            meta.count9 = 1;
                        } else if (meta.resub.isValid() && meta.resub.refused == 1 && meta.retrans == 0 && meta.ambiguous == 0) {
                            meta.stat9 = STAT_CHAIN_REFUSED;
                            meta.count9 = 1;
                        }
                        if (meta.retrans == 0) {
                            link_chained_write.execute(meta.link_slot);
                            link_pred_lh_write.execute(meta.link_slot);
                        }
                    } else if (hdr.bth.opcode == OP_READ_REQUEST && hdr.reth.dma_len == meta.node_size &&
                               (meta.mode & MODE_READ) != 0) {
                        /* Rule 12: the key's chain: links in flight after the confirmed tail send the READ to its end. */
                        if (meta.chain == 1 && meta.tracked == 1) {
                            meta.spec_key = spec_key_read.execute(meta.key_slot);
                            meta.spec_valid = spec_valid_read.execute(meta.key_slot);
                            meta.spec_lh = spec_lh_read.execute(meta.key_slot);
                            meta.spec_ts = (bit<48>)spec_ts_read.execute(meta.key_slot);
                            meta.spec_va_hi = spec_va_hi_read.execute(meta.key_slot);
                            meta.spec_va_lo = spec_va_lo_read.execute(meta.key_slot);
                            meta.spec_dst_ip = spec_dst_ip_read.execute(meta.key_slot);
                            meta.spec_age = meta.now - meta.spec_ts;
                        }
                    }

                    /* One read of the key's tail, and the age in nanoseconds. */
                    if (meta.tracked == 1) {
                        meta.tail_key = tail_key_read.execute(meta.key_slot);
                        meta.tail_ts = (bit<48>)tail_ts_read.execute(meta.key_slot);
                        meta.tail_va_hi = tail_va_hi_read.execute(meta.key_slot);
                        meta.tail_va_lo = tail_va_lo_read.execute(meta.key_slot);
                        meta.tail_ver = tail_ver_read.execute(meta.key_slot);
                        meta.tail_dst_ip = tail_dst_ip_read.execute(meta.key_slot);
                        meta.tail_valid = tail_valid_read.execute(meta.key_slot);
                        meta.tail_lh = tail_lh_read.execute(meta.key_slot);
                        meta.tail_age = meta.now - meta.tail_ts;
                        if (meta.tail_valid == 1 && meta.tail_key == meta.clover_key &&
                            meta.tail_dst_ip == hdr.ipv4.dst_addr && (bit<64>)meta.tail_age < meta.ttl_ns) {
                            meta.tail_fresh = 1;
                        }
                    }

                    if (hdr.bth.opcode == OP_COMPARE_SWAP) {
                        if (meta.retrans == 1) {
                            /* Forwarded exactly as the first copy. */
                            hdr.atomic_eth.compare = cas_out_compare_read.execute(meta.link_slot);
                            hdr.atomic_eth.va = cas_out_va_read.execute(meta.link_slot);
                            hdr.atomic_eth.swap = cas_out_swap_read.execute(meta.link_slot);
                        } else {
                            if (meta.chained == 1) {
                                /* Chained: steered onto the chain's old end (its VA and
                                 * entry version), unless the client aimed there. */
                                if (meta.spec_va_hi != hdr.atomic_eth.va[63:32] || meta.spec_va_lo != hdr.atomic_eth.va[31:0]) {
                                    hdr.atomic_eth.va = meta.spec_va_hi ++ meta.spec_va_lo;
                                    hdr.atomic_eth.compare[18:11] = meta.spec_ver;
                                    hdr.atomic_eth.swap[18:11] = meta.spec_ver;
                                    key_cas_steered.count((bit<32>)meta.key_slot);
                                    stats_part7.count(STAT_CAS_STEERED);
                                }
                            } else if (meta.tracked == 1 && meta.tail_valid == 1 && meta.tail_key == meta.clover_key &&
                                meta.tail_dst_ip == hdr.ipv4.dst_addr &&
                                (meta.tail_va_hi != hdr.atomic_eth.va[63:32] || meta.tail_va_lo != hdr.atomic_eth.va[31:0])) {
                                /* A linking CAS of a tracked key aimed elsewhere than its tail. */
                                if (meta.tail_fresh == 0) {
                                    stats_part7.count(STAT_TAIL_EXPIRED);
                                } else if ((meta.mode & MODE_WRITE) != 0 && meta.spec_live == 0) {
                                    /* Stale CAS: steer it to the confirmed tail; the tail's entry
                                     * version goes into bits 18..11 of compare and swap. */
                                    hdr.atomic_eth.va = meta.tail_va_hi ++ meta.tail_va_lo;
                                    hdr.atomic_eth.compare[18:11] = meta.tail_ver;
                                    hdr.atomic_eth.swap[18:11] = meta.tail_ver;
                                    key_cas_steered.count((bit<32>)meta.key_slot);
                                    stats_part7.count(STAT_CAS_STEERED);
                                }
                            }
                            /* The record's registers as forwarded, after the tail's stage. */
                            cas_out_compare_write.execute(meta.link_slot);
                            cas_out_va_write.execute(meta.link_slot);
                            cas_out_swap_write.execute(meta.link_slot);
                            cas_out_src_mac_write.execute(meta.link_slot);
                            cas_out_dst_mac_write.execute(meta.link_slot);
                            cas_out_udp_sport_write.execute(meta.link_slot);
                            cas_out_dst_qp_write.execute(meta.link_slot);
                            cas_out_pkey_write.execute(meta.link_slot);
                            cas_out_rkey_write.execute(meta.link_slot);
                        }
                    } else if (hdr.bth.opcode == OP_READ_REQUEST && hdr.reth.dma_len == meta.node_size &&
                               (meta.mode & MODE_READ) != 0) {
                        if (meta.spec_valid == 1 && meta.spec_key == meta.clover_key &&
                            meta.spec_dst_ip == hdr.ipv4.dst_addr && (bit<64>)meta.spec_age < meta.ttl_ns &&
                            meta.spec_lh != meta.tail_lh && meta.spec_ts - meta.tail_ts < 48w0x800000000000) {
                            /* Rule 12: links after the confirmed tail are in flight (the
                             * chain's end was forwarded after the tail's link, not left
                             * behind by an unchained one): steer to the chain's end; its
                             * response is vouched for (rule 14) only if its link is
                             * confirmed by then. */
                            meta.tail_fresh = 1;
                            meta.tail_va_hi = meta.spec_va_hi;
                            meta.tail_va_lo = meta.spec_va_lo;
                            meta.stat9 = STAT_READS_CHAIN_END;
                            meta.count9 = 1;
                        }
                        if (meta.tail_fresh == 1) {
                            if (meta.tail_va_hi != hdr.reth.va[63:32] || meta.tail_va_lo != hdr.reth.va[31:0]) {
                                hdr.reth.va = meta.tail_va_hi ++ meta.tail_va_lo;
                                key_reads_steered.count((bit<32>)meta.key_slot);
                                stats_part7.count(STAT_READS_STEERED);
                            }
                        } else {
                            stats_part7.count(STAT_READ_MISSES);
                            if (meta.tracked == 1) {
                                key_read_misses.count((bit<32>)meta.key_slot);
                            }
                        }
                    }

                    /* stats_part4's and stats_part9's cells are set on several paths
                     * above, which a Tofino counter cannot tell apart (the ifs are in
                     * sequence): one count each. */
                    if (meta.count4 == 1) {
                        stats_part4.count(meta.stat4);
                    }
                    if (meta.count9 == 1) {
                        stats_part9.count(meta.stat9);
                    }
                }
            }

            if (ig_tm_md.ucast_egress_port == CPU_PORT) {
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = ig_intr_md.ingress_port;
                hdr.packet_in._pad = 0;
            }
        }
        /* Ingress only: the packet goes from the traffic manager to its port. */
        ig_tm_md.bypass_egress = 1;
        /* A first pass that decided for its second is resubmitted. */
        if (meta.resubmit == 1) {
            ig_dprsr_md.resubmit_type = 1;
        }
    }
}

control SwordboxIngressDeparser(packet_out packet,
                                inout headers_t hdr,
                                in metadata_t meta,
                                in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    apply {
        if (ig_dprsr_md.resubmit_type == 1) {
            resubmit.emit(meta.resub);
        }
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

parser SwordboxEgressParser(packet_in packet,
                            out egress_headers_t hdr,
                            out egress_metadata_t meta,
                            out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        packet.extract(eg_intr_md);
        transition accept;
    }
}

control SwordboxEgress(inout egress_headers_t hdr,
                       inout egress_metadata_t meta,
                       in egress_intrinsic_metadata_t eg_intr_md,
                       in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                       inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                       inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control SwordboxEgressDeparser(packet_out packet,
                               inout egress_headers_t hdr,
                               in egress_metadata_t meta,
                               in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { }
}

Pipeline(SwordboxIngressParser(),
         SwordboxIngress(),
         SwordboxIngressDeparser(),
         SwordboxEgressParser(),
         SwordboxEgress(),
         SwordboxEgressDeparser()) pipe;

Switch(pipe) main;
