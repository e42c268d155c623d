package ctrl

import (
	"fmt"
	"time"

	"github.com/swordbox/swordbox/roce"
)

// Outstanding is one outstanding CAS as the switch recorded it at a
// link slot (the cas_out_* registers), with the values as forwarded.
type Outstanding struct {
	Slot           int
	SrcMAC, DstMAC [6]byte
	SrcIP, DstIP   [4]byte
	SrcPort        uint16
	DestQP, PSN    uint32
	PKey           uint16
	VA             uint64
	RKey           uint32
	Swap, Compare  uint64
	Timestamp      uint64 // switch clock (ingress_global_timestamp) when forwarded
}

// RepairPolicy says when an outstanding CAS is repaired.
type RepairPolicy struct {
	// Threshold is how long the controller must have seen the very same
	// outstanding CAS (every field equal, timestamp included) before it
	// retransmits it, and how long it waits between two retransmissions of it.
	Threshold time.Duration
	// MaxAttempts bounds the retransmissions of one CAS (then it is
	// abandoned and counted); 0 means 8.
	MaxAttempts int
}

type seenCAS struct {
	o         Outstanding
	firstSeen time.Time
	lastSent  time.Time
	attempts  int
}

// RepairTracker is the deterministic core of CAS repair: fed a snapshot of
// the outstanding CAS at every poll, it says which ones are due for
// retransmission.
//
// Age is measured on the controller's clock from the first poll that saw
// the entry, not from the switch's timestamp: the switch's clock is not
// comparable with ours (it counts from the switch's start, and a controller
// cannot read "now" on it through P4Runtime). The timestamp is part of the
// entry's identity instead, so a client's own retransmission (which the
// switch records anew) restarts the age, and a CAS is repaired only after it
// stayed unchanged for Threshold. A repair is thus sent between Threshold
// and Threshold + one poll period after the controller first saw the CAS.
// The same identity check protects against torn reads: the registers of a
// slot are read one after another, and a mix of two CAS would have to be
// read identically across polls spanning Threshold to be acted on.
type RepairTracker struct {
	policy  RepairPolicy
	seen    map[int]*seenCAS
	present map[int]bool // scratch of Observe
	due     []Outstanding
	// Abandoned counts CAS given up after MaxAttempts.
	Abandoned int
}

// NewRepairTracker returns a tracker with the given policy.
func NewRepairTracker(p RepairPolicy) *RepairTracker {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 8
	}
	return &RepairTracker{policy: p, seen: map[int]*seenCAS{}, present: map[int]bool{}}
}

// Observe records the snapshot taken at now and returns the entries due
// for a retransmission, in slot order of the snapshot. Entries absent from
// the snapshot (acknowledged, overwritten) are forgotten. The returned
// slice is valid until the next call; in the steady state (the same
// entries poll after poll) Observe does not allocate.
func (t *RepairTracker) Observe(now time.Time, snapshot []Outstanding) []Outstanding {
	present := t.present
	clear(present)
	due := t.due[:0]
	for _, o := range snapshot {
		present[o.Slot] = true
		s, ok := t.seen[o.Slot]
		if !ok || s.o != o {
			s = &seenCAS{o: o, firstSeen: now}
			t.seen[o.Slot] = s
		}
		if now.Sub(s.firstSeen) < t.policy.Threshold || s.attempts >= t.policy.MaxAttempts {
			continue
		}
		if s.attempts > 0 && now.Sub(s.lastSent) < t.policy.Threshold {
			continue
		}
		due = append(due, o)
	}
	for slot := range t.seen {
		if !present[slot] {
			delete(t.seen, slot)
		}
	}
	t.due = due
	return due
}

// Sent records that the entry at slot was retransmitted at now.
func (t *RepairTracker) Sent(slot int, now time.Time) {
	if s, ok := t.seen[slot]; ok {
		s.attempts++
		s.lastSent = now
		if s.attempts == t.policy.MaxAttempts {
			t.Abandoned++
		}
	}
}

// Pending returns the number of outstanding CAS the tracker currently follows.
func (t *RepairTracker) Pending() int { return len(t.seen) }

// CASFrame rebuilds the CAS frame of o into buf (which needs
// roce.FrameLen bytes; 90 suffice) and returns the frame: BTH opcode
// COMPARE_SWAP with AckReq and MigReq set, TVer 0; IPv4 TTL 64 with DF; UDP
// checksum 0; ICRC computed over the rebuilt frame.
func CASFrame(buf []byte, o *Outstanding) ([]byte, error) {
	f := roce.Fields{
		DstMAC: o.DstMAC, SrcMAC: o.SrcMAC,
		SrcIP: o.SrcIP, DstIP: o.DstIP,
		DontFragment: true, TTL: 64,
		SrcPort: o.SrcPort,
		Opcode:  roce.OpRCCompareSwap,
		MigReq:  true, AckReq: true,
		PKey:   o.PKey,
		DestQP: o.DestQP & roce.MaxQP, PSN: o.PSN & roce.MaxPSN,
		VA: o.VA, RKey: o.RKey, SwapAdd: o.Swap, Compare: o.Compare,
	}
	n, err := roce.Build(buf, &f)
	if err != nil {
		return nil, fmt.Errorf("rebuild CAS of slot %d: %w", o.Slot, err)
	}
	return buf[:n], nil
}
