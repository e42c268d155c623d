package clover

import (
	"encoding/binary"
	"fmt"
)

// Messages between clients and the metadata server travel as two-sided
// SEND/RECV on one RC queue pair per client, as in Clover (HERD-style
// RPC in the authors' code). Each message is one SEND of at most MsgMax
// bytes; every field is little-endian.
//
// Request:
//
//	0   u8   type (MsgAlloc, MsgCreate, MsgLookup, MsgRetire, MsgDelete)
//	1   u8   reserved
//	2   u16  entry count (ALLOC: slots wanted; RETIRE: entries)
//	4   u32  request id, echoed in the reply
//	8        body
//
// Reply (and the MS's epoch push, type MsgEpoch, request id 0):
//
//	0   u8   type | 0x80
//	1   u8   status (StatusOK, ...)
//	2   u16  entry count
//	4   u32  request id
//	8   u32  the MS's current epoch (on every reply)
//	12  u32  reserved
//	16       body
//
// Bodies:
//
//	ALLOC   req: u8 slab class, u8 memory node, u16 reserved
//	        rep: count x {u32 LH, u8 version, 3 reserved}
//	CREATE  req: u64 key, u32 first node LH, u8 version, u8 slab class
//	        rep: u32 shortcut ref, u32 latest LH, u8 latest version, u8 class (StatusExists: the existing key's)
//	LOOKUP  req: u64 key
//	        rep: as CREATE
//	RETIRE  req: count x {u64 key, u32 old LH (0: unknown), u8 old version, 3 reserved, u32 new LH, u8 new version, 3 reserved}
//	        rep: no body; count = entries that retired a slot
//	DELETE  req: u64 key, u32 tail LH, u8 tail version
//	        rep: no body
const (
	MsgAlloc  uint8 = 1
	MsgCreate uint8 = 2
	MsgLookup uint8 = 3
	MsgRetire uint8 = 4
	MsgDelete uint8 = 5
	MsgEpoch  uint8 = 6
	// MsgReply is or-ed into the type of a reply.
	MsgReply uint8 = 0x80
)

// Reply statuses.
const (
	StatusOK       uint8 = 0
	StatusExists   uint8 = 1
	StatusNotFound uint8 = 2
	StatusNoSpace  uint8 = 3
	StatusBadReq   uint8 = 4
)

// Message sizes.
const (
	ReqHeaderSize   = 8
	ReplyHeaderSize = 16
	AllocEntrySize  = 8
	RetireEntrySize = 24
	// MaxBatch bounds ALLOC and RETIRE entries per message.
	MaxBatch = 32
	// MsgMax is the largest message, the size of every receive buffer.
	MsgMax = ReqHeaderSize + MaxBatch*RetireEntrySize
)

// Offsets inside a request.
const (
	reqTypeOff  = 0
	reqCountOff = 2
	reqIDOff    = 4

	repTypeOff   = 0
	repStatusOff = 1
	repCountOff  = 2
	repIDOff     = 4
	repEpochOff  = 8
)

// Request is a view of a request message.
type Request []byte

// Type, Count and ID read the request header.
func (r Request) Type() uint8     { return r[reqTypeOff] }
func (r Request) Count() int      { return int(binary.LittleEndian.Uint16(r[reqCountOff:])) }
func (r Request) ID() uint32      { return binary.LittleEndian.Uint32(r[reqIDOff:]) }
func (r Request) Body() []byte    { return r[ReqHeaderSize:] }
func (r Request) SetType(t uint8) { r[reqTypeOff] = t; r[1] = 0 }
func (r Request) SetCount(n int)  { binary.LittleEndian.PutUint16(r[reqCountOff:], uint16(n)) }
func (r Request) SetID(id uint32) { binary.LittleEndian.PutUint32(r[reqIDOff:], id) }

// Reply is a view of a reply message.
type Reply []byte

func (r Reply) Type() uint8       { return r[repTypeOff] }
func (r Reply) Status() uint8     { return r[repStatusOff] }
func (r Reply) Count() int        { return int(binary.LittleEndian.Uint16(r[repCountOff:])) }
func (r Reply) ID() uint32        { return binary.LittleEndian.Uint32(r[repIDOff:]) }
func (r Reply) Epoch() uint32     { return binary.LittleEndian.Uint32(r[repEpochOff:]) }
func (r Reply) Body() []byte      { return r[ReplyHeaderSize:] }
func (r Reply) SetType(t uint8)   { r[repTypeOff] = t }
func (r Reply) SetStatus(s uint8) { r[repStatusOff] = s }
func (r Reply) SetCount(n int)    { binary.LittleEndian.PutUint16(r[repCountOff:], uint16(n)) }
func (r Reply) SetID(id uint32)   { binary.LittleEndian.PutUint32(r[repIDOff:], id) }
func (r Reply) SetEpoch(e uint32) { binary.LittleEndian.PutUint32(r[repEpochOff:], e) }

// Body field offsets.
const (
	allocClassOff = 0
	allocMNOff    = 1
	allocBodySize = 4

	keyBodyKeyOff   = 0 // CREATE, LOOKUP, DELETE
	keyBodyLHOff    = 8
	keyBodyVerOff   = 12
	keyBodyClassOff = 13
	keyBodySize     = 16

	keyRepShortcutOff = 0
	keyRepLHOff       = 4
	keyRepVerOff      = 8
	keyRepClassOff    = 9
	keyRepSize        = 12

	retKeyOff    = 0
	retOldLHOff  = 8
	retOldVerOff = 12
	retNewLHOff  = 16
	retNewVerOff = 20
)

// RetireEntry is one retired version: key, the retired node (LH 0 when the
// linker does not know it), and the node linked after it.
type RetireEntry struct {
	Key uint64
	Old Ptr
	New Ptr
}

func putRetire(b []byte, e RetireEntry) {
	binary.LittleEndian.PutUint64(b[retKeyOff:], e.Key)
	binary.LittleEndian.PutUint32(b[retOldLHOff:], uint32(e.Old.LH))
	b[retOldVerOff] = e.Old.Ver
	b[retOldVerOff+1], b[retOldVerOff+2], b[retOldVerOff+3] = 0, 0, 0
	binary.LittleEndian.PutUint32(b[retNewLHOff:], uint32(e.New.LH))
	b[retNewVerOff] = e.New.Ver
	b[retNewVerOff+1], b[retNewVerOff+2], b[retNewVerOff+3] = 0, 0, 0
}

func getRetire(b []byte) RetireEntry {
	return RetireEntry{
		Key: binary.LittleEndian.Uint64(b[retKeyOff:]),
		Old: Ptr{LH: LH(binary.LittleEndian.Uint32(b[retOldLHOff:])), Ver: b[retOldVerOff]},
		New: Ptr{LH: LH(binary.LittleEndian.Uint32(b[retNewLHOff:])), Ver: b[retNewVerOff]},
	}
}

// KeyInfo is what CREATE and LOOKUP return about a key.
type KeyInfo struct {
	Shortcut ShortcutRef
	Latest   Ptr
	Class    uint8
}

func putKeyInfo(b []byte, k KeyInfo) {
	binary.LittleEndian.PutUint32(b[keyRepShortcutOff:], uint32(k.Shortcut))
	binary.LittleEndian.PutUint32(b[keyRepLHOff:], uint32(k.Latest.LH))
	b[keyRepVerOff] = k.Latest.Ver
	b[keyRepClassOff] = k.Class
	b[keyRepClassOff+1], b[keyRepClassOff+2] = 0, 0
}

func getKeyInfo(b []byte) KeyInfo {
	return KeyInfo{
		Shortcut: ShortcutRef(binary.LittleEndian.Uint32(b[keyRepShortcutOff:])),
		Latest:   Ptr{LH: LH(binary.LittleEndian.Uint32(b[keyRepLHOff:])), Ver: b[keyRepVerOff]},
		Class:    b[keyRepClassOff],
	}
}

// reqSize returns the size a request of this type and count must have.
func reqSize(typ uint8, count int) (int, error) {
	switch typ {
	case MsgAlloc:
		return ReqHeaderSize + allocBodySize, nil
	case MsgCreate, MsgLookup, MsgDelete:
		return ReqHeaderSize + keyBodySize, nil
	case MsgRetire:
		if count > MaxBatch {
			return 0, fmt.Errorf("retire batch %d > %d", count, MaxBatch)
		}
		return ReqHeaderSize + count*RetireEntrySize, nil
	}
	return 0, fmt.Errorf("unknown request type %d", typ)
}
