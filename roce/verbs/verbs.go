// Package verbs is the RDMA verbs interface the memory systems program against:
// memory regions, queue pairs, completion queues and the work requests that
// move between them, with the semantics of libibverbs for RC transport.
//
// It also defines the Clock a device provides: the time its users run in,
// and the only timers and wake-ups they may block on besides CQ.Wait (see
// Clock), so that the memory systems run unchanged in wall-clock time and
// in the virtual time of a simulated rack.
//
// It owns types and interfaces only. The software RNIC (roce/rnic) implements
// it over netio ports; an ibverbs implementation can be added behind the same
// interface for hosts with an RDMA NIC. Clover, Sherman and SWARM-KV import
// this package and never the RNIC, so they run unchanged on either.
//
// Byte order: like a NIC on an x86 host, atomics operate on 8-byte words in
// little-endian (host) order in registered memory, and the original value an
// atomic returns is written little-endian into the requester's local buffer.
package verbs

import (
	"context"
	"fmt"
)

// Access is a set of memory-region access rights (ibv_access_flags).
type Access uint32

// Access rights. Remote rights are checked by the responder; a violation is
// answered with NAK remote access error.
const (
	AccessLocalWrite Access = 1 << iota
	AccessRemoteWrite
	AccessRemoteRead
	AccessRemoteAtomic
)

// AccessAll grants every right; convenient for memory nodes.
const AccessAll = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic

// Opcode names a work request or a completion (ibv_wr_opcode / ibv_wc_opcode).
type Opcode uint8

// Work request and completion opcodes.
const (
	OpSend Opcode = iota + 1
	OpSendImm
	OpWrite
	OpWriteImm
	OpRead
	OpCompareSwap
	OpFetchAdd
	// OpRecv completes a posted receive consumed by a SEND.
	OpRecv
	// OpRecvImm completes a posted receive consumed by a WRITE with immediate.
	OpRecvImm
)

var opcodeNames = [...]string{"", "SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "CMP_SWAP", "FETCH_ADD", "RECV", "RECV_IMM"}

func (o Opcode) String() string {
	if int(o) < len(opcodeNames) && o != 0 {
		return opcodeNames[o]
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// Status is a completion status (ibv_wc_status).
type Status uint8

// Completion statuses.
const (
	StatusSuccess Status = iota
	StatusLocalLengthError
	StatusLocalProtectionError
	StatusRemoteInvalidRequest
	StatusRemoteAccessError
	StatusRemoteOperationalError
	StatusRetryExceeded
	StatusRNRRetryExceeded
	// StatusFlushed completes work that was outstanding when the QP entered ERR.
	StatusFlushed
)

var statusNames = [...]string{"SUCCESS", "LOC_LEN_ERR", "LOC_PROT_ERR", "REM_INV_REQ_ERR", "REM_ACCESS_ERR", "REM_OP_ERR", "RETRY_EXC_ERR", "RNR_RETRY_EXC_ERR", "WR_FLUSH_ERR"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// QPState is the IB queue-pair state machine.
type QPState uint8

// Queue-pair states.
const (
	StateReset QPState = iota
	StateInit
	StateRTR
	StateRTS
	StateErr
)

var stateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "ERR"}

func (s QPState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// SGE is one scatter/gather element: Length bytes at address Addr of the
// local memory region whose lkey is LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendFlags modify a send work request.
type SendFlags uint8

// Send flags.
const (
	// Signaled asks for a completion on success (errors always complete).
	Signaled SendFlags = 1 << iota
	// Fence waits for outstanding READ and atomic requests before this one.
	Fence
	// Solicited sets the SE bit.
	Solicited
)

// SendWR is a send-queue work request (ibv_send_wr for RC).
type SendWR struct {
	ID uint64
	Op Opcode
	// SG lists the local buffers: the data source for SEND and WRITE, the
	// destination for READ, and the 8-byte destination of an atomic's
	// original value.
	SG []SGE
	// RemoteAddr and RKey address remote memory for WRITE, READ and atomics.
	RemoteAddr uint64
	RKey       uint32
	// Compare is CMP_SWAP's compare value; SwapAdd is CMP_SWAP's swap value
	// or FETCH_ADD's addend.
	Compare uint64
	SwapAdd uint64
	// Imm is the immediate data of SEND_IMM and WRITE_IMM.
	Imm   uint32
	Flags SendFlags
}

// RecvWR is a receive-queue work request.
type RecvWR struct {
	ID uint64
	SG []SGE
}

// WC is a work completion (ibv_wc).
type WC struct {
	ID     uint64
	Status Status
	Op     Opcode
	// ByteLen is the number of bytes transferred (received, for receives).
	ByteLen uint32
	// Orig is the original value of the remote word, for atomics.
	Orig uint64
	// Imm is the immediate data, valid when HasImm.
	Imm    uint32
	HasImm bool
	// QPN is the local queue pair the work belonged to.
	QPN uint32
}

// MemoryRegion is registered memory.
type MemoryRegion interface {
	// Bytes is the registered memory itself. Local code may read and write
	// it; it must not do so concurrently with remote access to the same bytes.
	Bytes() []byte
	// Addr is the virtual address of Bytes()[0] as remote peers and SGEs see it.
	Addr() uint64
	LKey() uint32
	RKey() uint32
}

// RemoteRegion describes a peer's memory region: what a client needs to
// address it with one-sided verbs.
type RemoteRegion struct {
	Addr uint64
	RKey uint32
	Len  uint64
}

// CQ is a completion queue.
type CQ interface {
	// Poll copies up to len(wcs) completions into wcs without blocking.
	Poll(wcs []WC) int
	// Wait blocks until at least one completion is available or ctx is
	// done, then behaves like Poll.
	Wait(ctx context.Context, wcs []WC) (int, error)
}

// QP is a reliable-connected queue pair.
type QP interface {
	QPN() uint32
	State() QPState
	// PostSend posts a batch of work requests with one doorbell.
	PostSend(wrs []SendWR) error
	// PostRecv posts receive buffers.
	PostRecv(wrs []RecvWR) error
}

// QPConfig configures a new RC queue pair (ibv_qp_init_attr).
type QPConfig struct {
	// SendCQ receives the completions of send work requests, RecvCQ those of
	// receives. They may be the same CQ. Both are required.
	SendCQ, RecvCQ CQ
	// MaxSendWR and MaxRecvWR bound the work requests outstanding on each
	// queue; zero selects the device default.
	MaxSendWR, MaxRecvWR int
	// SignalAll completes every send work request, as if each had Signaled.
	SignalAll bool
}

// Device is an RDMA device: it registers memory and creates completion
// queues and queue pairs (ibv_reg_mr, ibv_create_cq, ibv_create_qp), and it
// tells the time its users run in (Clock).
type Device interface {
	Registrar
	CreateCQ(depth int) (CQ, error)
	CreateQP(cfg QPConfig) (QP, error)
	Clocked
}

// Registrar registers local memory (ibv_reg_mr). Servers that only need
// buffers for their queue pairs take this part of a Device.
type Registrar interface {
	RegisterMR(buf []byte, access Access) (MemoryRegion, error)
}

// Conn is an RC queue pair connected to a remote memory node, with the
// regions the node exposed when it accepted the connection.
type Conn struct {
	QP     QP
	Remote []RemoteRegion
}

// Dialer connects queue pairs to memory nodes the way rdma_cm's
// rdma_connect does: it creates a QP on the local device, exchanges QPN,
// starting PSN, addresses and MTU with the node at addr, and returns the QP
// in RTS.
type Dialer interface {
	Dial(ctx context.Context, addr string, cfg QPConfig) (Conn, error)
}
