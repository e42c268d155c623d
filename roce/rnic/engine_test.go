package rnic

import (
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// Engine-level harness: two devices without ports or loops; the test moves
// packets between the requester of one QP and the responder of the other by
// hand, so every rule can be checked packet by packet, deterministically.

type capture struct{ pkts []txPkt }

func (c *capture) emit(_ *QP, p txPkt) {
	cp := p
	cp.payload = append([]byte(nil), p.payload...)
	c.pkts = append(c.pkts, cp)
}

func (c *capture) take() []txPkt {
	p := c.pkts
	c.pkts = nil
	return p
}

type engine struct {
	t          *testing.T
	cd, sd     *Device
	c, s       *QP
	ccq, scq   *CQ
	cmr, smr   *MR
	cbuf, sbuf []byte
	now        int64
	cOut, sOut capture // packets emitted by client and server
}

func engineDev(cfg Config, ip byte) *Device {
	if err := cfg.defaults(); err != nil {
		panic(err)
	}
	cfg.IP = [4]byte{10, 0, 0, ip}
	cfg.MAC = [6]byte{2, 0, 0, 0, 0, ip}
	d := &Device{cfg: cfg, epoch: time.Now()}
	d.batches.New = func() any { return newTxBatch(d, 1) }
	return d
}

func newEngine(t *testing.T, cfg Config, cpsn, spsn uint32) *engine {
	e := &engine{t: t, cd: engineDev(cfg, 1), sd: engineDev(cfg, 2)}
	e.ccq, e.scq = e.cd.NewCQ(64), e.sd.NewCQ(64)
	var err error
	if e.c, err = e.cd.NewQP(verbs.QPConfig{SendCQ: e.ccq, RecvCQ: e.ccq}); err != nil {
		t.Fatal(err)
	}
	if e.s, err = e.sd.NewQP(verbs.QPConfig{SendCQ: e.scq, RecvCQ: e.scq}); err != nil {
		t.Fatal(err)
	}
	if err := Connect(e.c, e.s, cpsn, spsn); err != nil {
		t.Fatal(err)
	}
	e.cbuf, e.sbuf = make([]byte, 1<<16), make([]byte, 1<<16)
	e.cmr, _ = e.cd.Register(e.cbuf, verbs.AccessAll)
	e.smr, _ = e.sd.Register(e.sbuf, verbs.AccessAll)
	return e
}

// post posts wrs on the client requester.
func (e *engine) post(wrs ...verbs.SendWR) {
	e.t.Helper()
	if err := e.c.sq.post(e.c, wrs, e.now, &e.cOut); err != nil {
		e.t.Fatal(err)
	}
}

// toServer delivers client packets to the server responder, then ends the
// burst (coalesced ACKs go out).
func (e *engine) toServer(pkts ...txPkt) {
	for i := range pkts {
		p := &pkts[i]
		r := rxReq{op: p.op, psn: p.psn, ackReq: p.ackReq, se: p.se, va: p.va, rkey: p.rkey, dmaLen: p.dmaLen,
			swapAdd: p.swapAdd, compare: p.compare, imm: p.imm, payload: p.payload}
		e.s.rq.onRequest(e.s, &r, &e.sOut)
	}
	e.s.rq.flushAck(e.s, &e.sOut)
}

// toClient delivers server packets to the client requester.
func (e *engine) toClient(pkts ...txPkt) {
	for i := range pkts {
		p := &pkts[i]
		r := rxResp{op: p.op, psn: p.psn, syndrome: p.syndrome, msn: p.msn, orig: p.orig, payload: p.payload}
		e.c.sq.onResponse(e.c, &r, e.now, &e.cOut)
	}
}

func (e *engine) tick(d time.Duration) {
	e.now += int64(d)
	e.c.sq.tick(e.c, e.now, &e.cOut)
}

func (e *engine) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: e.cmr.Addr() + uint64(off), Length: uint32(n), LKey: e.cmr.LKey()}}
}

func (e *engine) write(id uint64, loff, roff, n int) verbs.SendWR {
	return verbs.SendWR{ID: id, Op: verbs.OpWrite, SG: e.sge(loff, n), RemoteAddr: e.smr.Addr() + uint64(roff), RKey: e.smr.RKey(), Flags: verbs.Signaled}
}

func (e *engine) read(id uint64, loff, roff, n int) verbs.SendWR {
	return verbs.SendWR{ID: id, Op: verbs.OpRead, SG: e.sge(loff, n), RemoteAddr: e.smr.Addr() + uint64(roff), RKey: e.smr.RKey(), Flags: verbs.Signaled}
}

func (e *engine) fadd(id uint64, loff, roff int, add uint64) verbs.SendWR {
	return verbs.SendWR{ID: id, Op: verbs.OpFetchAdd, SG: e.sge(loff, 8), RemoteAddr: e.smr.Addr() + uint64(roff), RKey: e.smr.RKey(), SwapAdd: add, Flags: verbs.Signaled}
}

func (e *engine) wcs(cq *CQ) []verbs.WC {
	out := make([]verbs.WC, 64)
	return out[:cq.Poll(out)]
}

func ops(pkts []txPkt) []roce.Opcode {
	var o []roce.Opcode
	for _, p := range pkts {
		o = append(o, p.op)
	}
	return o
}

func psns(pkts []txPkt) []roce.PSN {
	var o []roce.PSN
	for _, p := range pkts {
		o = append(o, p.psn)
	}
	return o
}
