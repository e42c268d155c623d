package rnic

import (
	"sync"
	"time"
)

// Timing is the optional NIC timing model: caps on the rate of atomic
// operations a responder executes, per 8-byte word (separately for host and
// device memory), per QP and in aggregate. A zero rate means no cap.
//
// The model is a virtual clock per capped resource (the virtual-scheduling
// form of GCRA): an atomic starts, in virtual time, when every resource it
// needs is free, and keeps each busy for 1/rate. A resource idle for a while
// lends at most Credit of past time, so a burst after idleness runs at once
// and a sleep that overshoots (time.Sleep on a loaded host is coarse) is
// made up afterwards instead of lowering the rate. The responder sleeps
// only when it runs more than Slack ahead of virtual time, so it sleeps
// rarely and never spins; over any long interval no cap is exceeded by
// more than Credit+Slack worth of operations. Because the responder worker
// sleeps, everything queued behind the atomic waits too, as on a NIC whose
// atomic unit stalls the pipeline.
//
// Per-address state lives in a fixed hash table of AddrSlots slots;
// addresses that collide share a slot and are capped together (an
// approximation that only ever slows down).
type Timing struct {
	// AtomicsPerAddr caps atomics on one word of host memory.
	AtomicsPerAddr float64
	// AtomicsPerAddrDM caps atomics on one word of device memory.
	AtomicsPerAddrDM float64
	// AtomicsPerQP caps atomics per QP.
	AtomicsPerQP float64
	// AtomicsAggregate caps atomics of the whole device.
	AtomicsAggregate float64
	// Credit is the most idle time a resource lends (default 1ms); Slack
	// is how far the responder may run ahead before it sleeps (default
	// 200us).
	Credit, Slack time.Duration
}

// ConnectX-5 figures from the SwordBox paper (Li et al.), section 3.2.
const (
	// CX5AtomicsPerQP: Figure 3, "ConnectX-5 NICs can support approximately
	// 2.7 MOPS per queue pair" for atomics on data-independent addresses.
	CX5AtomicsPerQP = 2.7e6
	// CX5AtomicsAggregate: Figure 3, "and 55 MOPS in aggregate".
	CX5AtomicsAggregate = 55e6
	// CX5CASSameAddrHost: Figure 4, serialized CAS on one address in host
	// memory, "approximately 3" MOPS.
	CX5CASSameAddrHost = 3e6
	// CX5CASSameAddrDM: Figure 4, serialized CAS on one address in NIC
	// device memory, "around 9 MOPS".
	CX5CASSameAddrDM = 9e6
)

// ConnectX5 returns the timing model of a ConnectX-5 NIC per the SwordBox
// paper's Figures 3 and 4. Section 3.3's "around 500k accesses per second"
// for a single-address lock counts lock/unlock round trips of clients, not
// the NIC's atomic rate, so it is not a cap here.
func ConnectX5() Timing {
	return Timing{
		AtomicsPerAddr:   CX5CASSameAddrHost,
		AtomicsPerAddrDM: CX5CASSameAddrDM,
		AtomicsPerQP:     CX5AtomicsPerQP,
		AtomicsAggregate: CX5AtomicsAggregate,
	}
}

// AddrSlots is the size of the per-address table.
const AddrSlots = 4096

type timingModel struct {
	d                         *Device
	credit, slack             int64
	iAddr, iAddrDM, iQP, iAgg int64 // intervals in 1/tick ns; 0 = uncapped
	mu                        sync.Mutex
	agg                       int64
	addr                      [AddrSlots]int64
	qp                        map[uint32]int64
	sleep                     func(time.Duration)
	throttled                 uint64
}

// The scheduler counts in 1/1024 ns, so that intervals such as 1/55e6 s
// (18.18 ns) do not lose a percent to rounding.
const tick = 1024

func interval(rate float64) int64 {
	if rate <= 0 {
		return 0
	}
	iv := int64(1e9 * tick / rate)
	if iv < 1 {
		iv = 1
	}
	return iv
}

func newTimingModel(d *Device, t Timing) *timingModel {
	if t.Credit <= 0 {
		t.Credit = time.Millisecond
	}
	if t.Slack <= 0 {
		t.Slack = 200 * time.Microsecond
	}
	return &timingModel{
		d: d, credit: int64(t.Credit) * tick, slack: int64(t.Slack) * tick,
		iAddr: interval(t.AtomicsPerAddr), iAddrDM: interval(t.AtomicsPerAddrDM),
		iQP: interval(t.AtomicsPerQP), iAgg: interval(t.AtomicsAggregate),
		qp:    make(map[uint32]int64),
		sleep: time.Sleep,
	}
}

// schedule books an atomic on (key, va) of QP qpn offered at time now (ns)
// and returns how far in the future its virtual start lies (0 if it may
// start now or lies in the past).
func (t *timingModel) schedule(now int64, qpn uint32, dm bool, key uint32, va uint64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now *= tick
	floor := now - t.credit
	ia := t.iAddr
	if dm {
		ia = t.iAddrDM
	}
	slot := (uint64(key)*0x9e3779b97f4a7c15 ^ va>>3*0xff51afd7ed558ccd) % AddrSlots
	qtat := t.qp[qpn]
	// The virtual start: when every capped resource is free, but no
	// earlier than the credit allows.
	start := floor
	if t.iAgg > 0 && t.agg > start {
		start = t.agg
	}
	if ia > 0 && t.addr[slot] > start {
		start = t.addr[slot]
	}
	if t.iQP > 0 && qtat > start {
		start = qtat
	}
	if t.iAgg > 0 {
		t.agg = start + t.iAgg
	}
	if ia > 0 {
		t.addr[slot] = start + ia
	}
	if t.iQP > 0 {
		t.qp[qpn] = start + t.iQP
	}
	if start <= now {
		return 0
	}
	t.throttled++
	return time.Duration((start - now) / tick)
}

func (t *timingModel) throttleAtomic(q *QP, m *MR, va uint64) {
	if w := t.schedule(t.d.now(), q.qpn, m.device, m.key, va); w > time.Duration(t.slack/tick) {
		t.sleep(w)
	}
}

// VirtualTiming is the NIC timing model of a device driven in virtual time
// (NewVirtual, testbed/sim): every verb costs exact service times, nothing
// sleeps. Rates are per second; zero rates are uncapped, zero latencies
// free. docs/sim.md lists every constant with its source.
//
// A request that arrives at the responder at time t passes, in order,
// through FIFO servers: the device's request unit (MsgRate), its QP's
// (QPMsgRate), then, ProcLatency later, an atomic also through the
// device's atomic budget (AtomicsAggregate), its QP's (AtomicsPerQP) and
// its word's (AtomicsPerAddr, AtomicsPerAddrDM for device memory). Tandem
// servers, not one booking of all resources at once: a backlogged QP or
// word delays only the requests that need it. The engine executes the
// request when it leaves the last server, so memory changes in that order.
// Its response leaves after the memory access:
// PCIeRTT for a READ or atomic on host memory (a DMA read crosses PCIe and
// back), DMLatency on device memory, nothing for a WRITE or SEND (posted
// PCIe writes: the ACK does not wait). Requests of one QP execute, and its
// responses leave, in order.
//
// A work request posted at t leaves at t+TxLatency (doorbell, WQE and
// payload fetch), one packet per 1/MsgRate at most. A response reaches the
// requester's completion queue RxLatency after it arrived (processing and
// the CQE's DMA write).
type VirtualTiming struct {
	Timing
	// MsgRate caps the requests a device processes per second, received
	// (responder) and sent (requester) separately.
	MsgRate float64
	// QPMsgRate caps the requests one responder QP processes per second.
	QPMsgRate float64
	// ProcLatency is the responder's per-request processing latency.
	ProcLatency time.Duration
	// PCIeRTT is a DMA read of host memory: the round trip over PCIe.
	PCIeRTT time.Duration
	// DMLatency is an access to NIC device memory.
	DMLatency time.Duration
	// TxLatency is doorbell to first packet on the wire at the requester.
	TxLatency time.Duration
	// RxLatency is response arrival to completion at the requester.
	RxLatency time.Duration
	// AtomicsStallAccess makes a READ or WRITE that touches a word with
	// atomics queued wait until they have completed (SwordBox section
	// 3.2: "concurrent read and write operations with a data dependency
	// on the atomic address must stall until the atomic completes").
	AtomicsStallAccess bool
}

// ConnectX-5 figures of the virtual-time model beyond Figures 3 and 4's
// atomic caps (docs/sim.md gives the source of each).
const (
	// CX5MsgRate: Figure 3, WRITEs on data-independent addresses plateau at
	// 92.6 Mops: the device's request rate.
	CX5MsgRate = 92.6e6
	// CX5QPMsgRate: Figure 4, serialized WRITEs on one QP reach 6.2x the
	// 3 Mops of same-address CAS in host memory: 18.6 Mops per QP.
	CX5QPMsgRate = 6.2 * CX5CASSameAddrHost
	// CX5PCIeRTT: a DMA read over PCIe Gen3 x16 and back; our assumption.
	CX5PCIeRTT = 500 * time.Nanosecond
	// CX5DMLatency: an access to on-NIC memory; our assumption.
	CX5DMLatency = 50 * time.Nanosecond
	// CX5ProcLatency: the responder's pipeline per request; our assumption.
	CX5ProcLatency = 100 * time.Nanosecond
	// CX5TxLatency: MMIO doorbell, then the WQE fetched by DMA (one PCIe
	// round trip) and the request built; our assumption.
	CX5TxLatency = CX5PCIeRTT + 100*time.Nanosecond
	// CX5RxLatency: response processing plus the CQE's DMA write (half a
	// round trip); our assumption.
	CX5RxLatency = 100*time.Nanosecond + CX5PCIeRTT/2
)

// VirtualConnectX5 is the virtual-time model of a ConnectX-5.
func VirtualConnectX5() VirtualTiming {
	return VirtualTiming{
		Timing:      ConnectX5(),
		MsgRate:     CX5MsgRate,
		QPMsgRate:   CX5QPMsgRate,
		ProcLatency: CX5ProcLatency,
		PCIeRTT:     CX5PCIeRTT,
		DMLatency:   CX5DMLatency,
		TxLatency:   CX5TxLatency,
		RxLatency:   CX5RxLatency,

		AtomicsStallAccess: true,
	}
}

// vclock is the virtual-time scheduler of VirtualTiming. It counts in
// picoseconds so that intervals such as 1/92.6e6 s (10.8 ns) keep their
// precision, and answers in nanoseconds (rounded up).
type vclock struct {
	iMsg, iQPMsg, iAddr, iAddrDM, iQPAt, iAgg int64 // ps; 0 = uncapped
	proc, pcie, dm, tx, rx                    int64 // ps
	stall                                     bool

	rxFree, txFree, aggFree int64
	qp                      []vqp   // by QPN - qpnBase
	words                   []vword // allocated at the first atomic
	lastResp                int64
}

type vqp struct {
	msgFree, atFree, lastExec, lastOut int64
}

// vword is one 8-byte word's atomic unit: busy until free. The table is
// set-associative: a word lives in one of the vWays slots of its set, and
// takes a slot whose word is idle (free in the past). It is exact as long
// as no more than vWays words of one set are busy at once (then a word
// shares a slot: only ever slower).
type vword struct {
	key  uint32
	va   uint64
	free int64
}

const (
	vWordSlots = 1 << 16
	vWays      = 4
)

func psOf(rate float64) int64 {
	if rate <= 0 {
		return 0
	}
	return int64(1e12/rate + 0.5)
}

func newVClock(t VirtualTiming) *vclock {
	return &vclock{
		iMsg: psOf(t.MsgRate), iQPMsg: psOf(t.QPMsgRate),
		iAddr: psOf(t.AtomicsPerAddr), iAddrDM: psOf(t.AtomicsPerAddrDM),
		iQPAt: psOf(t.AtomicsPerQP), iAgg: psOf(t.AtomicsAggregate),
		proc: int64(t.ProcLatency) * 1000, pcie: int64(t.PCIeRTT) * 1000, dm: int64(t.DMLatency) * 1000,
		tx: int64(t.TxLatency) * 1000, rx: int64(t.RxLatency) * 1000,
		stall: t.AtomicsStallAccess,
	}
}

func nsUp(ps int64) int64 { return (ps + 999) / 1000 }

func (c *vclock) qpState(qi int) *vqp {
	for qi >= len(c.qp) {
		c.qp = append(c.qp, vqp{})
	}
	return &c.qp[qi]
}

// set returns the first slot of the set of (key, va).
func wordSet(key uint32, va uint64) uint64 {
	return ((uint64(key)*0x9e3779b97f4a7c15 ^ (va>>3)*0xff51afd7ed558ccd) >> 48) &^ (vWays - 1)
}

// word returns the atomic unit of (key, va), taking an idle slot of its
// set if the word has none.
func (c *vclock) word(key uint32, va uint64, now int64) *vword {
	if c.words == nil {
		c.words = make([]vword, vWordSlots)
	}
	set := c.words[wordSet(key, va):][:vWays]
	for i := range set {
		if set[i].key == key && set[i].va == va {
			return &set[i]
		}
	}
	for i := range set {
		if set[i].free <= now {
			set[i] = vword{key: key, va: va, free: set[i].free}
			return &set[i]
		}
	}
	return &set[0]
}

// busyUntil is when the last atomic queued on a word of [va, va+n) of
// region key completes (or t if none is busy at t).
func (c *vclock) busyUntil(key uint32, va uint64, n uint32, t int64) int64 {
	end := t
	if c.words == nil {
		return end
	}
	if n > 4096 {
		n = 4096
	}
	for w := va &^ 7; w < va+uint64(n); w += 8 {
		set := c.words[wordSet(key, w):][:vWays]
		for i := range set {
			if set[i].key == key && set[i].va == w {
				end = max(end, set[i].free)
			}
		}
	}
	return end
}

// request books a request of kind op arriving at now (ns) on responder QP
// qi and returns when the engine executes it and how long after that its
// response leaves (ns).
func (c *vclock) request(now int64, qi int, op vop, dm bool, key uint32, va uint64, n uint32) (exec, outDelay int64) {
	t := now * 1000
	q := c.qpState(qi)
	// Tandem stages, each a FIFO server: the device's request unit, then
	// the QP's. A backlogged QP delays only itself.
	s := max(t, c.rxFree)
	if c.iMsg > 0 {
		c.rxFree = s + c.iMsg
	}
	s = max(s, q.msgFree)
	if c.iQPMsg > 0 {
		q.msgFree = s + c.iQPMsg
	}
	e := s + c.proc
	var out int64
	switch op {
	case vopAtomic:
		// The device's atomic budget, then the QP's, then the word's.
		e = max(e, c.aggFree)
		if c.iAgg > 0 {
			c.aggFree = e + c.iAgg
		}
		e = max(e, q.atFree)
		if c.iQPAt > 0 {
			q.atFree = e + c.iQPAt
		}
		w := c.word(key, va, e)
		ia := c.iAddr
		if dm {
			ia = c.iAddrDM
		}
		e = max(e, w.free)
		if ia > 0 {
			w.free = e + ia
		}
		out = c.pcie
		if dm {
			out = c.dm
		}
	case vopRead:
		out = c.pcie
		if dm {
			out = c.dm
		}
		fallthrough
	default:
		if c.stall {
			e = max(e, c.busyUntil(key, va, n, e))
		}
	}
	e = max(e, q.lastExec)
	q.lastExec = e
	return nsUp(e), nsUp(out)
}

// transmit books one packet the requester sends at now (ns) and returns
// when it leaves.
func (c *vclock) transmit(now int64) int64 {
	s := max(now*1000+c.tx, c.txFree)
	if c.iMsg > 0 {
		c.txFree = s + c.iMsg
	}
	return nsUp(s)
}

// response returns when the requester processes a response arriving at
// now: RxLatency later, in arrival order.
func (c *vclock) response(now int64) int64 {
	e := max(now*1000+c.rx, c.lastResp)
	c.lastResp = e
	return nsUp(e)
}

// vop classifies a request for the timing model.
type vop uint8

const (
	vopPosted vop = iota // WRITE, SEND: posted DMA writes
	vopRead
	vopAtomic
)
