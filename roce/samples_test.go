package roce

// sample is a named frame description used by the table-driven, oracle and
// property tests.
type sample struct {
	name string
	f    Fields
}

func seq(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*13 + 7)
	}
	return b
}

// samples returns one frame per supported opcode, plus a padded SEND, a
// three-packet WRITE, a three-packet READ response, every AETH syndrome kind
// and congestion bits.
func samples() []sample {
	base := func(op Opcode, psn uint32) Fields {
		f := baseFields(op)
		f.PSN = psn
		return f
	}
	var out []sample
	add := func(name string, f Fields) { out = append(out, sample{name, f}) }

	f := base(OpRCSendOnly, 1)
	f.Payload = seq(13)
	f.PadCnt = 3
	f.SE = true
	add("send only padded", f)
	f = base(OpRCSendFirst, 2)
	f.Payload = seq(64)
	add("send first", f)
	f = base(OpRCSendMiddle, 3)
	f.Payload = seq(64)
	add("send middle", f)
	f = base(OpRCSendLast, 4)
	f.Payload = seq(6)
	f.PadCnt = 2
	add("send last padded", f)
	f = base(OpRCSendLastImm, 5)
	f.Payload = seq(8)
	f.Imm = 0xfeedface
	add("send last imm", f)
	f = base(OpRCSendOnlyImm, 6)
	f.Payload = seq(4)
	f.Imm = 0x01020304
	add("send only imm", f)
	f = base(OpRCSendLastInvalidate, 7)
	f.Payload = seq(4)
	f.RKey = 0x4455
	add("send last inv", f)
	f = base(OpRCSendOnlyInvalidate, 8)
	f.Payload = seq(8)
	f.RKey = 0x6677
	add("send only inv", f)

	f = base(OpRCWriteFirst, 100)
	f.VA, f.RKey, f.DMALen = 0x7f0000010000, 0xabcd, 2*256+40
	f.Payload = seq(256)
	add("write first", f)
	f = base(OpRCWriteMiddle, 101)
	f.Payload = seq(256)
	add("write middle", f)
	f = base(OpRCWriteLast, 102)
	f.Payload = seq(40)
	add("write last", f)
	f = base(OpRCWriteLastImm, 103)
	f.Payload = seq(12)
	f.Imm = 0xa5a5a5a5
	add("write last imm", f)
	f = base(OpRCWriteOnly, 104)
	f.VA, f.RKey, f.DMALen = 0x7f0000001000, 0x1234, 128
	f.Payload = seq(128)
	add("write only", f)
	f = base(OpRCWriteOnlyImm, 105)
	f.VA, f.RKey, f.DMALen = 0x7f0000002000, 0x1235, 16
	f.Payload = seq(16)
	f.Imm = 0x11223344
	add("write only imm", f)

	f = base(OpRCReadRequest, 200)
	f.VA, f.RKey, f.DMALen = 0x7f0000003000, 0x99, 600
	add("read request", f)
	f = base(OpRCReadResponseFirst, 200)
	f.AckReq = false
	f.Syndrome, f.MSN = ACKSyndrome(CreditInvalid), 3
	f.Payload = seq(256)
	add("read response first", f)
	f = base(OpRCReadResponseMiddle, 201)
	f.AckReq = false
	f.Payload = seq(256)
	add("read response middle", f)
	f = base(OpRCReadResponseLast, 202)
	f.AckReq = false
	f.Syndrome, f.MSN = ACKSyndrome(CreditInvalid), 3
	f.Payload = seq(88)
	add("read response last", f)
	f = base(OpRCReadResponseOnly, 203)
	f.AckReq = false
	f.Syndrome, f.MSN = ACKSyndrome(5), 4
	f.Payload = seq(8)
	add("read response only", f)

	f = base(OpRCAcknowledge, 300)
	f.AckReq = false
	f.Syndrome, f.MSN = ACKSyndrome(CreditInvalid), 5
	add("ack", f)
	f = base(OpRCAcknowledge, 301)
	f.AckReq = false
	f.Syndrome, f.MSN = RNRNAKSyndrome(14), 5
	add("rnr nak", f)
	for _, c := range []uint8{NAKPSNSequenceError, NAKInvalidRequest, NAKRemoteAccessError, NAKRemoteOperationalError} {
		f = base(OpRCAcknowledge, 302+uint32(c))
		f.AckReq = false
		f.Syndrome, f.MSN = NAKSyndrome(c), 6
		add("nak "+NAKSyndrome(c).String(), f)
	}
	f = base(OpRCAtomicAcknowledge, 310)
	f.AckReq = false
	f.Syndrome, f.MSN, f.Orig = ACKSyndrome(CreditInvalid), 7, 0x0123456789abcdef
	add("atomic ack", f)
	f = base(OpRCCompareSwap, 320)
	f.VA, f.RKey, f.SwapAdd, f.Compare = 0x7f0000004008, 0x77, 0xdeadbeefcafe, 0x1122
	add("cmp swap", f)
	f = base(OpRCFetchAdd, 321)
	f.VA, f.RKey, f.SwapAdd = 0x7f0000004010, 0x78, 1
	add("fetch add", f)

	f = base(OpUDSendOnly, 400)
	f.DestQP = 1
	f.PKey = 0x8001
	f.QKey, f.SrcQP = 0x80010000, 0x42
	f.Payload = seq(32)
	add("ud send only", f)
	f = base(OpUDSendOnlyImm, 401)
	f.QKey, f.SrcQP = 0x11111111, 0x43
	f.Imm = 0x55667788
	f.Payload = seq(20)
	add("ud send only imm", f)

	f = base(OpCNP, 0)
	f.AckReq = false
	f.BECN = true
	f.Payload = make([]byte, CNPPayloadLen)
	add("cnp", f)

	f = base(OpRCReadResponseOnly, 204)
	f.VLAN, f.VLANTCI = true, 5<<13|42
	f.Syndrome, f.MSN = ACKSyndrome(CreditInvalid), 9
	f.Payload = seq(16)
	add("read response only, 802.1Q tag", f)

	f = base(OpRCWriteOnly, MaxPSN)
	f.VA, f.RKey, f.DMALen = 0xffffffffffffffff, 0xffffffff, 8
	f.DestQP = MaxQP
	f.FECN, f.MigReq, f.TVer, f.TOS = true, true, 0, 0x03
	f.Payload = seq(8)
	add("write only extremes", f)
	return out
}
