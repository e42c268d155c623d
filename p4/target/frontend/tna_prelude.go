package frontend

// tnaPrelude is what #include <tna.p4> declares on this target: the types,
// constants and intrinsic metadata of Tofino's TNA (tofino1 sizes), written
// here from the architecture's interface (field names, widths and order, as
// bf-p4c's tna.p4 declares them). The externs (Register, RegisterAction,
// Hash, ...) and the Pipeline and Switch packages are built into the
// compiler (tna.go, tna_extern.go); parsers such as TofinoIngressParser are
// not part of tna.p4 (programs bring their own, usually in util.p4).
const tnaPrelude = `
typedef bit<9>  PortId_t;
typedef bit<16> MulticastGroupId_t;
typedef bit<5>  QueueId_t;
typedef bit<3>  MirrorType_t;
typedef bit<10> MirrorId_t;
typedef bit<3>  ResubmitType_t;
typedef bit<3>  DigestType_t;
typedef bit<16> ReplicationId_t;
typedef error   ParserError_t;

const bit<32> PORT_METADATA_SIZE = 32w64;

const bit<16> PARSER_ERROR_OK           = 16w0x0000;
const bit<16> PARSER_ERROR_NO_MATCH     = 16w0x0001;
const bit<16> PARSER_ERROR_PARTIAL_HDR  = 16w0x0002;
const bit<16> PARSER_ERROR_CTR_RANGE    = 16w0x0004;
const bit<16> PARSER_ERROR_TIMEOUT_USER = 16w0x0008;
const bit<16> PARSER_ERROR_TIMEOUT_HW   = 16w0x0010;
const bit<16> PARSER_ERROR_SRC_EXT      = 16w0x0020;
const bit<16> PARSER_ERROR_DST_CONT     = 16w0x0040;
const bit<16> PARSER_ERROR_PHV_OWNER    = 16w0x0080;
const bit<16> PARSER_ERROR_MULTIWRITE   = 16w0x0100;
const bit<16> PARSER_ERROR_ARAM_MBE     = 16w0x0400;
const bit<16> PARSER_ERROR_FCS          = 16w0x0800;

enum MeterType_t { PACKETS, BYTES }
enum bit<8> MeterColor_t { GREEN = 8w0, YELLOW = 8w1, RED = 8w3 }
enum CounterType_t { PACKETS, BYTES, PACKETS_AND_BYTES }
enum SelectorMode_t { FAIR, RESILIENT }
enum HashAlgorithm_t { IDENTITY, RANDOM, CRC8, CRC16, CRC32, CRC64, CUSTOM }

error { CounterRange, Timeout, PhvOwner, MultiWrite, IbufOverflow, IbufUnderflow }

header ingress_intrinsic_metadata_t {
    bit<1>   resubmit_flag;
    @padding bit<1> _pad1;
    bit<2>   packet_version;
    @padding bit<3> _pad2;
    PortId_t ingress_port;
    bit<48>  ingress_mac_tstamp;
}

struct ingress_intrinsic_metadata_for_tm_t {
    PortId_t ucast_egress_port;
    bit<1>   bypass_egress;
    bit<1>   deflect_on_drop;
    bit<3>   ingress_cos;
    QueueId_t qid;
    bit<3>   icos_for_copy_to_cpu;
    bit<1>   copy_to_cpu;
    bit<2>   packet_color;
    bit<1>   disable_ucast_cutthru;
    bit<1>   enable_mcast_cutthru;
    MulticastGroupId_t mcast_grp_a;
    MulticastGroupId_t mcast_grp_b;
    bit<13>  level1_mcast_hash;
    bit<13>  level2_mcast_hash;
    bit<16>  level1_exclusion_id;
    bit<9>   level2_exclusion_id;
    bit<16>  rid;
}

struct ingress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;
    bit<32> global_ver;
    bit<16> parser_err;
}

struct ingress_intrinsic_metadata_for_deparser_t {
    bit<3>         drop_ctl;
    DigestType_t   digest_type;
    ResubmitType_t resubmit_type;
    MirrorType_t   mirror_type;
}

header egress_intrinsic_metadata_t {
    @padding bit<7> _pad0;
    PortId_t egress_port;
    @padding bit<5> _pad1;
    bit<19>  enq_qdepth;
    @padding bit<6> _pad2;
    bit<2>   enq_congest_stat;
    @padding bit<14> _pad3;
    bit<18>  enq_tstamp;
    @padding bit<5> _pad4;
    bit<19>  deq_qdepth;
    @padding bit<6> _pad5;
    bit<2>   deq_congest_stat;
    bit<8>   app_pool_congest_stat;
    @padding bit<14> _pad6;
    bit<18>  deq_timedelta;
    bit<16>  egress_rid;
    @padding bit<7> _pad7;
    bit<1>   egress_rid_first;
    @padding bit<3> _pad8;
    QueueId_t egress_qid;
    @padding bit<5> _pad9;
    bit<3>   egress_cos;
    @padding bit<7> _pad10;
    bit<1>   deflection_flag;
    bit<16>  pkt_length;
}

struct egress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;
    bit<32> global_ver;
    bit<16> parser_err;
}

struct egress_intrinsic_metadata_for_deparser_t {
    bit<3>       drop_ctl;
    MirrorType_t mirror_type;
    bit<1>       coalesce_flush;
    bit<7>       coalesce_length;
}

struct egress_intrinsic_metadata_for_output_port_t {
    bit<1> capture_tstamp_on_tx;
    bit<1> update_delay_on_tx;
    bit<1> force_tx_error;
}
`
