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
