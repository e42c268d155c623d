package roce

import "fmt"

// Opcode is the BTH opcode: the top 3 bits name the transport (000 RC,
// 011 UD, 100 CNP), the low 5 bits the operation.
type Opcode uint8

// RC opcodes.
const (
	OpRCSendFirst          Opcode = 0x00
	OpRCSendMiddle         Opcode = 0x01
	OpRCSendLast           Opcode = 0x02
	OpRCSendLastImm        Opcode = 0x03
	OpRCSendOnly           Opcode = 0x04
	OpRCSendOnlyImm        Opcode = 0x05
	OpRCWriteFirst         Opcode = 0x06
	OpRCWriteMiddle        Opcode = 0x07
	OpRCWriteLast          Opcode = 0x08
	OpRCWriteLastImm       Opcode = 0x09
	OpRCWriteOnly          Opcode = 0x0A
	OpRCWriteOnlyImm       Opcode = 0x0B
	OpRCReadRequest        Opcode = 0x0C
	OpRCReadResponseFirst  Opcode = 0x0D
	OpRCReadResponseMiddle Opcode = 0x0E
	OpRCReadResponseLast   Opcode = 0x0F
	OpRCReadResponseOnly   Opcode = 0x10
	OpRCAcknowledge        Opcode = 0x11
	OpRCAtomicAcknowledge  Opcode = 0x12
	OpRCCompareSwap        Opcode = 0x13
	OpRCFetchAdd           Opcode = 0x14
	OpRCSendLastInvalidate Opcode = 0x16
	OpRCSendOnlyInvalidate Opcode = 0x17
	OpUDSendOnly           Opcode = 0x64
	OpUDSendOnlyImm        Opcode = 0x65
	OpCNP                  Opcode = 0x81
)

// Ext is a set of extension headers. On the wire they follow the BTH in the
// order of the constants below.
type Ext uint8

// Extension headers.
const (
	ExtDETH Ext = 1 << iota
	ExtRETH
	ExtAtomicETH
	ExtAETH
	ExtAtomicAckETH
	ExtImmDt
	ExtIETH
)

// ExtOrder lists every extension header in wire order.
var ExtOrder = [...]Ext{ExtDETH, ExtRETH, ExtAtomicETH, ExtAETH, ExtAtomicAckETH, ExtImmDt, ExtIETH}

// Len returns the length in bytes of one extension header (e must be a single
// header) or of all headers in the set.
func (e Ext) Len() int {
	n := 0
	if e&ExtDETH != 0 {
		n += DETHLen
	}
	if e&ExtRETH != 0 {
		n += RETHLen
	}
	if e&ExtAtomicETH != 0 {
		n += AtomicETHLen
	}
	if e&ExtAETH != 0 {
		n += AETHLen
	}
	if e&ExtAtomicAckETH != 0 {
		n += AtomicAckETHLen
	}
	if e&ExtImmDt != 0 {
		n += ImmDtLen
	}
	if e&ExtIETH != 0 {
		n += IETHLen
	}
	return n
}

// String names the headers in the set, in wire order, joined by '+'.
func (e Ext) String() string {
	if e == 0 {
		return "none"
	}
	s := ""
	for _, x := range ExtOrder {
		if e&x == 0 {
			continue
		}
		if s != "" {
			s += "+"
		}
		s += extNames[x]
	}
	return s
}

var extNames = map[Ext]string{
	ExtDETH: "DETH", ExtRETH: "RETH", ExtAtomicETH: "AtomicETH", ExtAETH: "AETH",
	ExtAtomicAckETH: "AtomicAckETH", ExtImmDt: "ImmDt", ExtIETH: "IETH",
}

// OpInfo describes an opcode: its name, its extension headers and whether a
// payload follows them.
type OpInfo struct {
	Name    string
	Ext     Ext
	Payload bool
	Known   bool
}

var opTable [256]OpInfo

func init() {
	def := func(op Opcode, name string, ext Ext, payload bool) {
		opTable[op] = OpInfo{Name: name, Ext: ext, Payload: payload, Known: true}
	}
	def(OpRCSendFirst, "RC_SEND_FIRST", 0, true)
	def(OpRCSendMiddle, "RC_SEND_MIDDLE", 0, true)
	def(OpRCSendLast, "RC_SEND_LAST", 0, true)
	def(OpRCSendLastImm, "RC_SEND_LAST_IMM", ExtImmDt, true)
	def(OpRCSendOnly, "RC_SEND_ONLY", 0, true)
	def(OpRCSendOnlyImm, "RC_SEND_ONLY_IMM", ExtImmDt, true)
	def(OpRCWriteFirst, "RC_WRITE_FIRST", ExtRETH, true)
	def(OpRCWriteMiddle, "RC_WRITE_MIDDLE", 0, true)
	def(OpRCWriteLast, "RC_WRITE_LAST", 0, true)
	def(OpRCWriteLastImm, "RC_WRITE_LAST_IMM", ExtImmDt, true)
	def(OpRCWriteOnly, "RC_WRITE_ONLY", ExtRETH, true)
	def(OpRCWriteOnlyImm, "RC_WRITE_ONLY_IMM", ExtRETH|ExtImmDt, true)
	def(OpRCReadRequest, "RC_READ_REQUEST", ExtRETH, false)
	def(OpRCReadResponseFirst, "RC_READ_RESPONSE_FIRST", ExtAETH, true)
	def(OpRCReadResponseMiddle, "RC_READ_RESPONSE_MIDDLE", 0, true)
	def(OpRCReadResponseLast, "RC_READ_RESPONSE_LAST", ExtAETH, true)
	def(OpRCReadResponseOnly, "RC_READ_RESPONSE_ONLY", ExtAETH, true)
	def(OpRCAcknowledge, "RC_ACK", ExtAETH, false)
	def(OpRCAtomicAcknowledge, "RC_ATOMIC_ACK", ExtAETH|ExtAtomicAckETH, false)
	def(OpRCCompareSwap, "RC_CMP_SWAP", ExtAtomicETH, false)
	def(OpRCFetchAdd, "RC_FETCH_ADD", ExtAtomicETH, false)
	def(OpRCSendLastInvalidate, "RC_SEND_LAST_INV", ExtIETH, true)
	def(OpRCSendOnlyInvalidate, "RC_SEND_ONLY_INV", ExtIETH, true)
	def(OpUDSendOnly, "UD_SEND_ONLY", ExtDETH, true)
	def(OpUDSendOnlyImm, "UD_SEND_ONLY_IMM", ExtDETH|ExtImmDt, true)
	def(OpCNP, "CNP", 0, true)
	for i := range opTable {
		if !opTable[i].Known {
			opTable[i].Name = fmt.Sprintf("OPCODE_0x%02x", i)
		}
	}
}

// Info returns the opcode's description; Known is false for opcodes this
// package does not support.
func (op Opcode) Info() OpInfo { return opTable[op] }

// String returns the opcode's name, e.g. RC_CMP_SWAP, or OPCODE_0xNN.
func (op Opcode) String() string { return opTable[op].Name }

// Known reports whether the package supports the opcode.
func (op Opcode) Known() bool { return opTable[op].Known }

// Ext returns the extension headers the opcode carries.
func (op Opcode) Ext() Ext { return opTable[op].Ext }

// HasPayload reports whether the opcode carries a payload after its
// extension headers.
func (op Opcode) HasPayload() bool { return opTable[op].Payload }

// Opcodes returns every supported opcode in ascending order.
func Opcodes() []Opcode {
	var ops []Opcode
	for i := range opTable {
		if opTable[i].Known {
			ops = append(ops, Opcode(i))
		}
	}
	return ops
}

// Syndrome is the AETH syndrome byte: bit 7 reserved, bits 6-5 the kind,
// bits 4-0 the credit count, RNR timer or NAK code.
type Syndrome uint8

// SyndromeKind is the kind of an AETH syndrome.
type SyndromeKind uint8

// Syndrome kinds.
const (
	KindACK      SyndromeKind = 0
	KindRNRNAK   SyndromeKind = 1
	KindReserved SyndromeKind = 2
	KindNAK      SyndromeKind = 3
)

// NAK codes.
const (
	NAKPSNSequenceError       uint8 = 0
	NAKInvalidRequest         uint8 = 1
	NAKRemoteAccessError      uint8 = 2
	NAKRemoteOperationalError uint8 = 3
	NAKInvalidRDRequest       uint8 = 4
)

// CreditInvalid is the ACK credit count meaning "no credit information".
const CreditInvalid uint8 = 0x1f

// ACKSyndrome returns an ACK syndrome with the given credit count (0-31).
func ACKSyndrome(credit uint8) Syndrome { return Syndrome(credit & 0x1f) }

// RNRNAKSyndrome returns an RNR NAK syndrome with the given timer code (0-31).
func RNRNAKSyndrome(timer uint8) Syndrome { return Syndrome(1<<5 | timer&0x1f) }

// NAKSyndrome returns a NAK syndrome with the given code.
func NAKSyndrome(code uint8) Syndrome { return Syndrome(3<<5 | code&0x1f) }

// Kind returns the syndrome kind.
func (s Syndrome) Kind() SyndromeKind { return SyndromeKind(s >> 5 & 3) }

// Value returns the low 5 bits: credit count, RNR timer or NAK code.
func (s Syndrome) Value() uint8 { return uint8(s) & 0x1f }

// IsACK reports an ACK syndrome.
func (s Syndrome) IsACK() bool { return s.Kind() == KindACK }

// Credit returns the credit count of an ACK.
func (s Syndrome) Credit() uint8 { return s.Value() }

// RNRTimer returns the timer code of an RNR NAK.
func (s Syndrome) RNRTimer() uint8 { return s.Value() }

// NAKCode returns the code of a NAK.
func (s Syndrome) NAKCode() uint8 { return s.Value() }

// String describes the syndrome, e.g. "ACK credit=31", "NAK PSN_SEQUENCE_ERROR".
func (s Syndrome) String() string {
	switch s.Kind() {
	case KindACK:
		return fmt.Sprintf("ACK credit=%d", s.Credit())
	case KindRNRNAK:
		return fmt.Sprintf("RNR_NAK timer=%d", s.RNRTimer())
	case KindNAK:
		switch s.NAKCode() {
		case NAKPSNSequenceError:
			return "NAK PSN_SEQUENCE_ERROR"
		case NAKInvalidRequest:
			return "NAK INVALID_REQUEST"
		case NAKRemoteAccessError:
			return "NAK REMOTE_ACCESS_ERROR"
		case NAKRemoteOperationalError:
			return "NAK REMOTE_OPERATIONAL_ERROR"
		case NAKInvalidRDRequest:
			return "NAK INVALID_RD_REQUEST"
		}
		return fmt.Sprintf("NAK code=%d", s.NAKCode())
	}
	return fmt.Sprintf("RESERVED 0x%02x", uint8(s))
}
