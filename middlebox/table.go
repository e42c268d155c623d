package middlebox

import "github.com/swordbox/swordbox/roce"

// reqKey identifies a connection by its requests (paper section 4.1):
// client IP, server IP, the client's UDP source port and the server's QP.
type reqKey struct {
	cli, srv [4]byte
	port     uint16
	qp       uint32
}

// revKey identifies a connection by its responses: server IP, client IP
// and the client's QP (the destination QP of responses).
type revKey struct {
	srv, cli [4]byte
	qp       uint32
}

type entryKind uint8

const (
	kPlain      entryKind = iota + 1 // WRITE/SEND packet: completed by a (coalesced) ACK
	kRead                            // first PSN of a READ: completed by its last response packet
	kReadCont                        // a later PSN of a READ
	kAtomicPass                      // CMP_SWAP/FETCH_ADD sent unchanged: completed by its ATOMIC ACK
	kAtomicConv                      // CMP_SWAP/FETCH_ADD sent as WRITE: completed by the WRITE's ACK
	kAtomicSent                      // CMP_SWAP sent as WRITE and answered at sending (answerAtSend): in no client's FIFO, its copy in Engine.sent[npkts], completed by the WRITE's ACK
)

// entry is a map entry (paper Figure 7), stored in the ring of its
// outgoing connection at index outPSN mod N.
type entry struct {
	client  int32    // incoming connection
	inPSN   roce.PSN // the client's PSN
	outPSN  roce.PSN // the PSN on the outgoing connection (validates the slot)
	word    int32
	wordSeq uint32
	fsrv    int32
	npkts   uint32 // kRead: response packets; kAtomicSent: its copy's slot in Engine.sent

	kind     entryKind
	valid    bool
	done     bool   // acknowledged to the client
	srvAcked bool   // acknowledged by the server (ACK, implicitly or explicitly)
	msgEnd   bool   // the last packet of a message (counts for the MSN)
	respSeen bool   // kAtomicPass: the ATOMIC ACK arrived
	fa       bool   // the atomic is a FETCH_ADD
	foreign  bool   // counted in servers[fsrv].foreign
	reread   bool   // kRead: a completed READ sent again (reissueRead), in no client's FIFO
	flen     uint16 // NAKReplay: length of the request's copy in the replay log (0: none)

	fpos    uint64 // NAKReplay: the copy's position in the owning connection's replayLog
	prior   uint64 // kAtomicConv: the value before; kAtomicPass: from the ATOMIC ACK
	written uint64 // kAtomicConv: the value the WRITE stores
}

func (en *entry) converted() bool { return en.kind == kAtomicConv }

type inRef struct {
	out    int32
	outPSN roce.PSN
}

// conn is one RC connection: its request direction (client to server), its
// response direction once known, the client-facing state (incoming PSN,
// MSN, outstanding operations) and the server-facing state (outgoing PSN,
// ring of map entries).
type conn struct {
	srv            int32 // index into Engine.servers
	cliIP, srvIP   [4]byte
	cliMAC, srvMAC [6]byte
	macKnown       bool
	cliPort        uint16
	srvPort        uint16 // UDP source port of the server's responses (0: 4791)
	srvQP          uint32
	cliQP          uint32
	bound          bool // response direction known
	learned        bool
	pkey           uint16
	pkeyKnown      bool

	// Client side.
	inKnown    bool
	inNext     roce.PSN // next expected client PSN
	msn        uint32   // MSN the client has been told (messages completed)
	fifo       []roce.PSN
	fhead      int
	fcount     int
	outConn    int32 // outgoing connection of the outstanding operations
	inRing     []inRef
	nakSent    bool // a gap NAK for inNext was sent
	nakPending bool // a gap NAK waits for the outstanding operations
	msgOut     int32
	inMsg      bool // inside a multi-packet message
	mark       uint32

	// Server side.
	outKnown bool
	outNext  roce.PSN // next outgoing PSN
	ackedTo  roce.PSN // last outgoing PSN the server acknowledged
	ring     []entry
	rmask    uint32
	log      *replayLog // NAKReplay, shared connections only: copies of the requests sent
	// dataTo is the last outgoing PSN of a request that may change memory
	// other than the lock words (dataOut: one was sent), kept on a server's
	// shared connection when it answers at sending (noteSharedData).
	dataTo  roce.PSN
	dataOut bool

	tmpl       ackTemplate
	lastSeen   int64
	lastReplay int64 // when the middlebox last replayed this connection's requests
	replaying  bool

	// atomics are the client's last answered atomics (its PSN, the
	// original value returned), newest at atomicNext-1: the answers to
	// duplicates whose map entries are gone (answerForgotten). Last in
	// conn: read only for those, it keeps the per-packet fields together.
	atomicNext uint8
	atomics    [clientAtomics]answeredAtomic

	// park is a request held behind the barrier until the client's
	// outstanding operations complete (lockrules.go). Cold: last.
	park  parked
	wnext int32 // the next CMP_SWAP waiting on the same word (conn index + 1; 0: none)
}

// clientAtomics is how many answered atomics a client connection
// remembers: a requester has at most max_rd_atomic READs and atomics
// outstanding (16 on common RNICs, and roce/rnic's default).
const clientAtomics = 16

type answeredAtomic struct { // 16 bytes
	orig uint64
	psn  roce.PSN
	ok   bool
}

// rememberAtomic notes the answer sent for the client's atomic at psn.
func (c *conn) rememberAtomic(psn roce.PSN, orig uint64) {
	c.atomics[c.atomicNext%clientAtomics] = answeredAtomic{psn: psn, orig: orig, ok: true}
	c.atomicNext = (c.atomicNext + 1) % clientAtomics
}

// answeredAtomic returns the original value answered to the client's
// atomic at psn, if it is among the remembered ones.
func (c *conn) answeredAtomic(psn roce.PSN) (uint64, bool) {
	for i := range c.atomics {
		if a := &c.atomics[i]; a.ok && a.psn == psn {
			return a.orig, true
		}
	}
	return 0, false
}

func (c *conn) ready() bool { return c.bound && c.macKnown && c.outKnown }

func (c *conn) slot(psn roce.PSN) *entry { return &c.ring[uint32(psn)&c.rmask] }

func (c *conn) fifoHead() roce.PSN { return c.fifo[c.fhead] }

func (c *conn) fifoPush(outPSN roce.PSN) {
	c.fifo[(c.fhead+c.fcount)&(len(c.fifo)-1)] = outPSN
	c.fcount++
}

func (c *conn) fifoPop() {
	c.fhead = (c.fhead + 1) & (len(c.fifo) - 1)
	c.fcount--
}

type server struct {
	ip       [4]byte
	remap    []Range
	cas      []Range
	shared   int32 // -1 until chosen
	wantCli  [4]byte
	wantQP   uint32
	wantSet  bool
	steering bool
	// foreign counts operations on tracked words in flight on connections
	// other than the shared one (not yet bound): no word of this server is
	// learned meanwhile, since the server may order them anywhere.
	foreign int32
	// noLocal: an operation on the shared connection failed fatally, so
	// the word cache may hold a value the server never stored; failed
	// CMP_SWAPs are forwarded, not answered locally (answerFailedCAS).
	noLocal bool
	local   bool // ServerConfig.AnswerFailedCAS or WaitFailedCAS
	wait    bool // ServerConfig.WaitFailedCAS
	atSend  bool // ServerConfig.AnswerAtSend
}

func inRanges(rs []Range, va uint64) bool {
	for _, r := range rs {
		if r.contains(va) {
			return true
		}
	}
	return false
}
