package ctrl

// The names of swordbox.p4's objects the controller uses: the contract with
// p4/swordbox.p4, documented in docs/swordbox-p4.md. They are resolved
// through the P4Info of the pipeline (full name, alias or unique dotted
// suffix), never turned into IDs here.
const (
	tForward      = "forward"
	aSetEgress    = "set_egress"
	fEthDst       = "hdr.ethernet.dst_addr"
	pPort         = "port"
	tTrackedKeys  = "tracked_keys"
	aTrack        = "track"
	fCloverKey    = "meta.clover_key"
	pSlot         = "slot"
	tConfig       = "config"
	aSetConfig    = "set_config"
	pMode         = "mode"
	pNodeSize     = "node_size"
	pTailTTL      = "tail_ttl"
	mEgressPort   = "egress_port" // field of the packet_out controller header
	cStats        = "stats"
	cKeyCAS       = "key_cas_steered"
	cKeyReads     = "key_reads_steered"
	cKeyMisses    = "key_read_misses"
	cKeyRetrans   = "key_retransmits"
	rTailValid    = "tail_valid"
	rSpecValid    = "spec_valid"
	rCASValid     = "cas_out_valid"
	rCASSrcMAC    = "cas_out_src_mac"
	rCASDstMAC    = "cas_out_dst_mac"
	rCASSrcIP     = "cas_out_src_ip"
	rCASDstIP     = "cas_out_dst_ip"
	rCASUDPSport  = "cas_out_udp_sport"
	rCASDstQP     = "cas_out_dst_qp"
	rCASPSN       = "cas_out_psn"
	rCASPKey      = "cas_out_pkey"
	rCASVA        = "cas_out_va"
	rCASRKey      = "cas_out_rkey"
	rCASSwap      = "cas_out_swap"
	rCASCompare   = "cas_out_compare"
	rCASTimestamp = "cas_out_ts"
)

// Steering modes, set_config's mode parameter (bit 0 write steering, bit 1
// read steering, bit 2 chain mode for write steering).
const (
	modeWrite = 1
	modeRead  = 2
	modeChain = 4
)

// casFields are the registers of one outstanding CAS besides cas_out_valid,
// in the order Outstanding's fields are filled.
var casFields = []string{
	rCASSrcMAC, rCASDstMAC, rCASSrcIP, rCASDstIP, rCASUDPSport, rCASDstQP,
	rCASPSN, rCASPKey, rCASVA, rCASRKey, rCASSwap, rCASCompare, rCASTimestamp,
}
