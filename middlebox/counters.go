package middlebox

import (
	"fmt"
	"sort"
	"strings"
)

// DropReason says why the engine dropped a frame.
type DropReason uint8

// Drop reasons.
const (
	DropMalformed        DropReason = iota // a RoCEv2 frame that does not parse
	DropBadICRC                            // a managed frame whose ICRC is wrong
	DropTableFull                          // a new connection did not fit in the table
	DropPSNGap                             // a request ahead of the client's expected PSN (lost or reordered before it)
	DropStaleRetransmit                    // a retransmission whose map entry has been overwritten
	DropBarrier                            // would move a client to another connection while it has operations outstanding
	DropRingFull                           // the outgoing connection's ring has no free entry
	DropWindowFull                         // the client has Window operations outstanding
	DropReadTooLarge                       // a READ needing more PSNs than half a ring
	DropSharedNotReady                     // a remapped operation while the shared connection is not yet known in both directions
	DropUnknownResponse                    // a response whose map entry is missing or belongs to nobody
	DropRespBlocked                        // a response that would implicitly acknowledge an earlier operation of the client that is not complete
	DropAmbiguousReverse                   // a response that several learned connections could own
	DropOutOverflow                        // the output arena was full
	DropUnsupported                        // an opcode the engine does not multiplex (e.g. a server-issued request on a managed connection)
	DropDupIgnored                         // a duplicate response for an operation still waiting on an earlier one of its client
	numDropReasons
)

var dropNames = [numDropReasons]string{
	"malformed", "bad-icrc", "table-full", "psn-gap", "stale-retransmit", "barrier", "ring-full",
	"window-full", "read-too-large", "shared-not-ready", "unknown-response", "response-blocked",
	"ambiguous-reverse", "out-overflow", "unsupported", "duplicate-ignored",
}

func (r DropReason) String() string {
	if r < numDropReasons {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", uint8(r))
}

// Counters counts everything the engine does. Plain fields: the engine is
// single-threaded; read them through Engine.Counters (a copy).
type Counters struct {
	RxClient, RxServer  uint64 // frames in, per side
	TxClient, TxServer  uint64 // frames out, per side
	Passthrough         uint64 // frames forwarded untouched (not RoCEv2, or not a managed server)
	Requests            uint64 // new client requests forwarded
	Remapped            uint64 // requests moved onto another connection
	Retransmits         uint64 // client retransmissions mapped to their original outgoing PSN
	Replayed            uint64 // requests resent by the middlebox from its own copies (NAKReplay)
	ReplayLost          uint64 // copies a replay skipped: overwritten in the replay log (the client resends)
	RetransmitsAnswered uint64 // retransmissions of completed operations answered by the middlebox
	ForgottenAnswered   uint64 // of those, answered after their map entries were reused (answerForgotten)
	ReadsReissued       uint64 // completed READs sent to the server again: their map entries were gone (reissueRead)
	RetransmitsAbsorbed uint64 // retransmissions of operations the server acknowledged, still waiting in order
	CASToWrite          uint64 // CMP_SWAP replaced by WRITE
	FAToWrite           uint64 // FETCH_ADD replaced by WRITE
	AtomicPassthrough   uint64 // atomics on tracked words sent unchanged (value unknown)
	CASAnsweredLocally  uint64 // CMP_SWAP on a known word that would fail, answered by the engine (answerFailedCAS)
	CASWaited           uint64 // CMP_SWAP on a known word that would fail, held until the word changes (waitOnWord)
	CASWoken            uint64 // of those, sent once the word changed (wakeWaiters)
	CASWaitAnswered     uint64 // of those, answered as failed at their retransmission (answerFailedCAS)
	CASAnsweredAtSend   uint64 // converted CMP_SWAP answered when its WRITE was sent, not at the server's ACK (answerAtSend)
	AtSendStoreFull     uint64 // converted CMP_SWAP answered at the server's ACK because every copy slot was taken (answerAtSend)
	AtSendResent        uint64 // copies of WRITEs answered at sending, resent by the engine (replayFrom)
	AtSendFailed        uint64 // WRITEs answered at sending that the server refused with a fatal NAK (otherNAK)
	AtSendBehindData    uint64 // converted CMP_SWAP answered at the server's ACK because a data operation was unacknowledged on the shared connection (answerAtSend)
	Parked              uint64 // requests held behind the barrier instead of dropped (parkBehindBarrier)
	ParkedSent          uint64 // parked requests sent (releaseParked): at the barrier once their client's operations completed, or waiting CMP_SWAPs woken
	ParkedDuplicates    uint64 // retransmissions of a parked request, dropped (the parked copy goes)
	ParkedDiscarded     uint64 // parked requests discarded: a fatal NAK put their client's QP in error
	WordsLearned        uint64 // tracked words whose value was learned from an ATOMIC ACK
	ServerACKs          uint64 // ACK frames from servers
	ServerNAKs          uint64 // NAK frames from servers (any code)
	ServerSeqNAKs       uint64 // of which PSN sequence error
	ACKsOut             uint64 // ACKs generated towards clients
	AtomicACKsOut       uint64 // ATOMIC ACKs generated towards clients (converted or translated)
	ReadRespOut         uint64 // READ response packets forwarded to clients
	NAKsOut             uint64 // NAKs sent to clients (broadcast, forwarded or generated)
	GapNAKs             uint64 // of which generated by the middlebox for a client PSN gap
	DupResponses        uint64 // server responses to duplicate requests, re-sent to their owner
	Learned             uint64 // connections learned from traffic
	Bound               uint64 // learned connections whose reverse direction was found
	RangeUnbound        uint64 // operations on a remap range sent on the client's own connection because it is not yet bound
	RangeMultiPacket    uint64 // multi-packet messages on a remap range, kept on the client's own connection
	Steered             uint64 // Clover CAS or READ addresses rewritten
	SteerNodeWrites     uint64 // Clover node WRITEs learned (any key: steer.go)
	SteerReadMisses     uint64 // Clover node READs not steered (address unknown, key untracked or no fresh tail)
	SteerVouched        uint64 // Clover ATOMIC ACKs and node READ responses vouched for (steer.go, rules 13 and 14)
	Drops               [numDropReasons]uint64
}

// TotalDrops sums the drops of every reason.
func (c *Counters) TotalDrops() uint64 {
	var n uint64
	for _, d := range c.Drops {
		n += d
	}
	return n
}

// Map returns every non-zero counter by name (drops as "drop.<reason>").
func (c *Counters) Map() map[string]uint64 {
	m := map[string]uint64{}
	add := func(k string, v uint64) {
		if v != 0 {
			m[k] = v
		}
	}
	add("rx.client", c.RxClient)
	add("rx.server", c.RxServer)
	add("tx.client", c.TxClient)
	add("tx.server", c.TxServer)
	add("passthrough", c.Passthrough)
	add("requests", c.Requests)
	add("remapped", c.Remapped)
	add("retransmits", c.Retransmits)
	add("replayed", c.Replayed)
	add("replay-lost", c.ReplayLost)
	add("retransmits-answered", c.RetransmitsAnswered)
	add("forgotten-answered", c.ForgottenAnswered)
	add("reads-reissued", c.ReadsReissued)
	add("retransmits-absorbed", c.RetransmitsAbsorbed)
	add("cas-to-write", c.CASToWrite)
	add("fa-to-write", c.FAToWrite)
	add("atomic-passthrough", c.AtomicPassthrough)
	add("cas-answered-locally", c.CASAnsweredLocally)
	add("cas-waited", c.CASWaited)
	add("cas-woken", c.CASWoken)
	add("cas-wait-answered", c.CASWaitAnswered)
	add("cas-answered-at-send", c.CASAnsweredAtSend)
	add("at-send-store-full", c.AtSendStoreFull)
	add("at-send-resent", c.AtSendResent)
	add("at-send-failed", c.AtSendFailed)
	add("at-send-behind-data", c.AtSendBehindData)
	add("parked", c.Parked)
	add("parked-sent", c.ParkedSent)
	add("parked-duplicates", c.ParkedDuplicates)
	add("parked-discarded", c.ParkedDiscarded)
	add("words-learned", c.WordsLearned)
	add("server-acks", c.ServerACKs)
	add("server-naks", c.ServerNAKs)
	add("server-seq-naks", c.ServerSeqNAKs)
	add("acks-out", c.ACKsOut)
	add("atomic-acks-out", c.AtomicACKsOut)
	add("read-resp-out", c.ReadRespOut)
	add("naks-out", c.NAKsOut)
	add("gap-naks", c.GapNAKs)
	add("dup-responses", c.DupResponses)
	add("learned", c.Learned)
	add("bound", c.Bound)
	add("range-unbound", c.RangeUnbound)
	add("range-multi-packet", c.RangeMultiPacket)
	add("steered", c.Steered)
	add("steer-node-writes", c.SteerNodeWrites)
	add("steer-read-misses", c.SteerReadMisses)
	add("steer-vouched", c.SteerVouched)
	for i, d := range c.Drops {
		add("drop."+DropReason(i).String(), d)
	}
	return m
}

// String lists the non-zero counters, sorted by name.
func (c *Counters) String() string {
	m := c.Map()
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// Add adds o to c (to sum the counters of several shards).
func (c *Counters) Add(o *Counters) {
	c.RxClient += o.RxClient
	c.RxServer += o.RxServer
	c.TxClient += o.TxClient
	c.TxServer += o.TxServer
	c.Passthrough += o.Passthrough
	c.Requests += o.Requests
	c.Remapped += o.Remapped
	c.Retransmits += o.Retransmits
	c.Replayed += o.Replayed
	c.RetransmitsAnswered += o.RetransmitsAnswered
	c.ForgottenAnswered += o.ForgottenAnswered
	c.ReadsReissued += o.ReadsReissued
	c.RetransmitsAbsorbed += o.RetransmitsAbsorbed
	c.CASToWrite += o.CASToWrite
	c.FAToWrite += o.FAToWrite
	c.AtomicPassthrough += o.AtomicPassthrough
	c.CASAnsweredLocally += o.CASAnsweredLocally
	c.CASWaited += o.CASWaited
	c.CASWoken += o.CASWoken
	c.CASWaitAnswered += o.CASWaitAnswered
	c.CASAnsweredAtSend += o.CASAnsweredAtSend
	c.AtSendStoreFull += o.AtSendStoreFull
	c.AtSendResent += o.AtSendResent
	c.AtSendFailed += o.AtSendFailed
	c.AtSendBehindData += o.AtSendBehindData
	c.Parked += o.Parked
	c.ParkedSent += o.ParkedSent
	c.ParkedDuplicates += o.ParkedDuplicates
	c.ParkedDiscarded += o.ParkedDiscarded
	c.WordsLearned += o.WordsLearned
	c.ServerACKs += o.ServerACKs
	c.ServerNAKs += o.ServerNAKs
	c.ServerSeqNAKs += o.ServerSeqNAKs
	c.ACKsOut += o.ACKsOut
	c.AtomicACKsOut += o.AtomicACKsOut
	c.ReadRespOut += o.ReadRespOut
	c.NAKsOut += o.NAKsOut
	c.GapNAKs += o.GapNAKs
	c.DupResponses += o.DupResponses
	c.Learned += o.Learned
	c.Bound += o.Bound
	c.RangeUnbound += o.RangeUnbound
	c.RangeMultiPacket += o.RangeMultiPacket
	c.Steered += o.Steered
	c.SteerNodeWrites += o.SteerNodeWrites
	c.SteerReadMisses += o.SteerReadMisses
	c.SteerVouched += o.SteerVouched
	for i := range c.Drops {
		c.Drops[i] += o.Drops[i]
	}
}
