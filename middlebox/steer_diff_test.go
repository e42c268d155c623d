package middlebox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/p4"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/roce"
)

// The differential test of the steering rules: one frame trace through
// the software steerer (steer.go) and through p4/swordbox.p4 executed by
// the Go v1model target (p4/target) with a clock the test sets, configured
// through the target's P4Runtime entity API as the controller does
// (forward, tracked_keys, and the config table's set_config). Every frame
// out of both, requests and the responses the rules rewrite (vouched
// ATOMIC ACKs, rule 13, and READ responses, rule 14), must be the same
// bytes but for the ICRC: the switch leaves it stale (its hosts run with
// ICRC checking off), the engine recomputes it, so a response rewritten by
// steer.go must carry a correct ICRC here; after every frame the stats
// counter must equal the steerer's stats, and periodically the cached
// tails (tail_* registers of every tracked key's slot) the steerer's.
// Collisions: the steerer hashes exactly as the program (CRC-32 of the
// same bytes, the same table sizes), so collisions of the random trace
// happen alike on both sides; TestSteerDiffCollisions makes some on
// purpose.

var swordboxProg struct {
	once sync.Once
	p    *target.Program
	err  error
}

func swordboxProgram(tb testing.TB) *target.Program {
	tb.Helper()
	swordboxProg.once.Do(func() {
		swordboxProg.p, swordboxProg.err = target.Compile(p4.SwordboxFile, p4.SwordboxSource)
	})
	if swordboxProg.err != nil {
		tb.Fatalf("compile %s: %v", p4.SwordboxFile, swordboxProg.err)
	}
	return swordboxProg.p
}

const (
	diffPortMem = 1 // the memory nodes' side of the switch
	diffPortCli = 2 // the clients' side
)

// dHost is a client or memory node of a steering trace.
type dHost struct {
	ip  [4]byte
	mac [6]byte
	qp  uint32
	psn uint32
}

// steerRig runs frames through a steerer and, when dev is set, through
// the switch program, comparing them.
type steerRig struct {
	t      testing.TB
	s      *steerer
	c      Counters
	now    uint64 // microseconds: the switch's clock; the steerer gets now * 1000 ns
	prog   *target.Program
	schema *p4rtc.Schema
	dev    *target.Device
	slots  map[uint64]int64 // tracked key -> slot
	// what the trace did
	frames, rewritten int
}

// steerModeBits is the switch's mode of cfg, as the controller sets it
// (ctrl.BuildPlan): bit 0 write, bit 1 read, bit 2 chain with write.
func steerModeBits(cfg *SteerConfig) uint64 {
	var m uint64
	switch cfg.Mode {
	case "write":
		m = 1
	case "read":
		m = 2
	default:
		m = 3
	}
	if cfg.chain() {
		m |= 4
	}
	return m
}

// chainOpt is a SteerConfig.Chain.
func chainOpt(on bool) *bool { return &on }

// newSteerRig makes a rig; withP4 adds the switch program (every frame is
// then compared).
func newSteerRig(t testing.TB, cfg SteerConfig, hosts []dHost, withP4 bool) *steerRig {
	t.Helper()
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	r := &steerRig{t: t, now: 1_000_000, slots: map[uint64]int64{}}
	r.s = newSteerer(&cfg, &r.c)
	for i, k := range cfg.Keys {
		r.slots[k] = int64(i)
	}
	if !withP4 {
		return r
	}
	r.prog = swordboxProgram(t)
	var err error
	if r.schema, err = p4rtc.NewSchema(r.prog.P4Info()); err != nil {
		t.Fatal(err)
	}
	r.dev = target.NewDevice(r.prog, target.Options{CPUPort: 255, Now: func() uint64 { return r.now }})
	for _, h := range hosts {
		port := uint64(diffPortCli)
		if h.qp == 0 {
			port = diffPortMem
		}
		r.insert("forward", h.mac[:], "set_egress", port)
	}
	for k, slot := range r.slots {
		var kb [8]byte
		binary.BigEndian.PutUint64(kb[:], k)
		r.insert("tracked_keys", kb[:], "track", uint64(slot))
	}
	ttl := cfg.TailTTL
	if ttl == 0 {
		ttl = DefaultTailTTL
	}
	r.setConfig(steerModeBits(&cfg), uint64(cfg.NodeSize), uint64(ttl/time.Microsecond))
	return r
}

// id resolves a SwordboxIngress object by name through the P4Info, as the
// controller does.
func (r *steerRig) id(kind, name string) uint32 {
	r.t.Helper()
	full := "SwordboxIngress." + name
	var id uint32
	var err error
	switch kind {
	case "table":
		var x *p4cfg.Table
		if x, err = r.schema.Table(full); err == nil {
			id = x.Preamble.Id
		}
	case "action":
		var x *p4cfg.Action
		if x, err = r.schema.Action(full); err == nil {
			id = x.Preamble.Id
		}
	case "register":
		var x *p4cfg.Register
		if x, err = r.schema.Register(full); err == nil {
			id = x.Preamble.Id
		}
	default:
		var x *p4cfg.Counter
		if x, err = r.schema.Counter(full); err == nil {
			id = x.Preamble.Id
		}
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return id
}

func (r *steerRig) insert(table string, match []byte, action string, param uint64) {
	r.t.Helper()
	err := r.dev.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: r.id("table", table),
		Match:   []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: match}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: r.id("action", action), Params: []*p4v1.Action_Param{{ParamId: 1, Value: p4rtc.Uint(param)}},
		}}},
	})
	if err != nil {
		r.t.Fatalf("insert %s: %v", table, err)
	}
}

// setConfig sets the config table's default action, set_config(mode,
// node_size, tail_ttl), as the controller does.
func (r *steerRig) setConfig(mode, nodeSize, ttl uint64) {
	r.t.Helper()
	e, err := r.schema.TableEntry("SwordboxIngress.config", nil, "SwordboxIngress.set_config",
		p4rtc.P("mode", mode), p4rtc.P("node_size", nodeSize), p4rtc.P("tail_ttl", ttl))
	if err != nil {
		r.t.Fatal(err)
	}
	e.IsDefaultAction = true
	if err := r.dev.WriteTableEntry(p4v1.Update_MODIFY, e); err != nil {
		r.t.Fatalf("set config: %v", err)
	}
}

func (r *steerRig) register(name string, index int64) uint64 {
	r.t.Helper()
	var v uint64
	err := r.dev.ReadRegisterEntries(&p4v1.RegisterEntry{RegisterId: r.id("register", name), Index: &p4v1.Index{Index: index}},
		func(e *p4v1.RegisterEntry) error {
			var err error
			v, err = p4rtc.ToUint(e.GetData().GetBitstring())
			return err
		})
	if err != nil {
		r.t.Fatalf("read %s[%d]: %v", name, index, err)
	}
	return v
}

// switchFrame runs a copy of f through the switch and returns the one frame
// out.
func (r *steerRig) switchFrame(port uint32, f []byte) []byte {
	r.t.Helper()
	var out [][]byte
	r.dev.Process(port, append([]byte(nil), f...), func(_ uint32, g []byte) { out = append(out, append([]byte(nil), g...)) })
	if len(out) != 1 {
		r.t.Fatalf("frame %d: the switch sent %d frames, want 1", r.frames, len(out))
	}
	return out[0]
}

// describe names a frame's rewritable fields.
func describe(f []byte) string {
	p, err := roce.Parse(f)
	if err != nil {
		return fmt.Sprintf("unparsable (%v)", err)
	}
	s := fmt.Sprintf("%v PSN %d %v->%v", p.Opcode, p.BTH.PSN(), p.IP.Src(), p.IP.Dst())
	if p.AtomicETH != nil {
		s += fmt.Sprintf(" AtomicETH VA %#x compare %#x swap %#x", p.AtomicETH.VA(), p.AtomicETH.Compare(), p.AtomicETH.SwapAdd())
	}
	if p.RETH != nil {
		s += fmt.Sprintf(" RETH VA %#x len %d", p.RETH.VA(), p.RETH.DMALen())
	}
	if p.AtomicAckETH != nil {
		s += fmt.Sprintf(" orig %#x", p.AtomicAckETH.Orig())
	}
	if p.Opcode == roce.OpRCReadResponseOnly && len(p.Payload) >= NodePrefixLen {
		s += fmt.Sprintf(" header word %#x key %d LH %d", binary.LittleEndian.Uint64(p.Payload),
			binary.LittleEndian.Uint64(p.Payload[8:]), binary.LittleEndian.Uint32(p.Payload[16:]))
	}
	return s
}

// request sends a client's request through both sides at the rig's clock
// and returns the frame out (the steerer's).
func (r *steerRig) request(f []byte) []byte {
	r.t.Helper()
	r.frames++
	sf := append([]byte(nil), f...)
	p, err := roce.Parse(sf)
	if err != nil {
		r.t.Fatalf("frame %d: %v", r.frames, err)
	}
	r.s.request(int64(r.now)*1000, &p)
	if !bytes.Equal(sf, f) {
		r.rewritten++
	}
	if r.dev != nil {
		sw := r.switchFrame(diffPortCli, f)
		n := len(sf) - roce.ICRCLen
		if len(sw) != len(sf) || !bytes.Equal(sw[:n], sf[:n]) {
			r.t.Fatalf("frame %d at %d µs differs:\n client   %s\n steer.go %s\n switch   %s",
				r.frames, r.now, describe(f), describe(sf), describe(sw))
		}
		r.checkStats()
	}
	return sf
}

// response sends a memory node's frame (an ATOMIC ACK or a READ
// response) to a client through both sides and returns the frame out (the
// steerer's: the engine's rewrite, with the ICRC recomputed as the engine
// does when it rewrote it). Only the ICRC may differ from the switch's.
func (r *steerRig) response(f []byte) []byte {
	r.t.Helper()
	r.frames++
	sf := append([]byte(nil), f...)
	p, err := roce.Parse(sf)
	if err != nil {
		r.t.Fatalf("frame %d: %v", r.frames, err)
	}
	now := int64(r.now) * 1000
	switch {
	case p.AtomicAckETH != nil:
		if orig := r.s.atomicAck(now, p.IP.Dst(), p.IP.Src(), p.BTH.PSN(), p.AtomicAckETH.Orig()); orig != p.AtomicAckETH.Orig() {
			p.AtomicAckETH.SetOrig(orig)
		}
	case p.Opcode == roce.OpRCReadResponseOnly:
		r.s.readResponse(now, p.IP.Src(), int(p.UDP.Length()), p.Payload)
	}
	if !bytes.Equal(sf, f) {
		r.rewritten++
		p.SetICRC()
	}
	if r.dev != nil {
		sw := r.switchFrame(diffPortMem, f)
		n := len(sf) - roce.ICRCLen
		if len(sw) != len(sf) || !bytes.Equal(sw[:n], sf[:n]) {
			r.t.Fatalf("frame %d at %d µs differs:\n memory   %s\n steer.go %s\n switch   %s",
				r.frames, r.now, describe(f), describe(sf), describe(sw))
		}
		if !bytes.Equal(sw[n:], f[n:]) {
			r.t.Fatalf("frame %d: the switch changed the ICRC", r.frames)
		}
		r.checkStats()
	}
	if q, err := roce.Parse(sf); err != nil || !q.ICRCOK() {
		r.t.Fatalf("frame %d: steer.go's response has a bad ICRC (%v)", r.frames, err)
	}
	return sf
}

var steerStatNames = [stCount]string{"roce", "node writes", "linking CAS", "CAS steered", "node READs", "READs steered",
	"read misses", "retransmits", "ACKs cleared", "takeovers", "tails dropped", "unresolved", "tails confirmed",
	"tails expired", "stale confirmations", "ambiguous CAS", "CAS chained", "chains ended", "chains refused",
	"READs to chain end", "ACKs vouched", "ended: predecessor unconfirmed", "ended: chained failure", "READs vouched"}

func (r *steerRig) checkStats() {
	r.t.Helper()
	var sw [stCount]uint64
	err := r.dev.ReadCounterEntries(&p4v1.CounterEntry{CounterId: r.id("counter", "stats")}, func(e *p4v1.CounterEntry) error {
		sw[e.GetIndex().GetIndex()] = uint64(e.GetData().GetPacketCount())
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	if sw != r.s.stats {
		for i := range sw {
			if sw[i] != r.s.stats[i] {
				r.t.Errorf("stats %d (%s): switch %d, steer.go %d", i, steerStatNames[i], sw[i], r.s.stats[i])
			}
		}
		r.t.Fatalf("after frame %d at %d µs: stats differ", r.frames, r.now)
	}
}

// checkTails compares the cached tail (tail_* registers) and the chain's
// end (spec_* registers) of every tracked key.
func (r *steerRig) checkTails() {
	r.t.Helper()
	r.checkTailRegs("tail", "tail", r.s.tails)
	r.checkTailRegs("spec", "chain end", r.s.ends)
}

// checkTailRegs compares the registers prefix_valid, _key, _va_hi, _va_lo,
// _ver, _lh, _dst_ip and _ts of every tracked key with tails.
func (r *steerRig) checkTailRegs(prefix, what string, tails map[uint64]tail) {
	r.t.Helper()
	for k, slot := range r.slots {
		reg := func(n string) uint64 { return r.register(prefix+"_"+n, slot) }
		swOK := reg("valid") == 1 && reg("key") == k
		t, ok := tails[k]
		ok = ok && t.valid
		if swOK != ok {
			r.t.Fatalf("after frame %d: key %d: %s on the switch %v, in steer.go %v", r.frames, k, what, swOK, ok)
		}
		if !ok {
			continue
		}
		va := reg("va_hi")<<32 | reg("va_lo")
		var ip [4]byte
		binary.BigEndian.PutUint32(ip[:], uint32(reg("dst_ip")))
		if va != t.va || uint8(reg("ver")) != t.ver || ip != t.srv || int64(reg("ts"))*1000 != t.ts || uint32(reg("lh")) != t.lh {
			r.t.Fatalf("after frame %d: key %d: switch %s VA %#x ver %d LH %d on %v at %d µs; steer.go %#x ver %d LH %d on %v at %d ns",
				r.frames, k, what, va, reg("ver"), reg("lh"), ip, reg("ts"), t.va, t.ver, t.lh, t.srv, t.ts)
		}
	}
}

// ---- frames ----

func steerFields(c, m *dHost, op roce.Opcode, psn uint32) roce.Fields {
	return roce.Fields{DstMAC: m.mac, SrcMAC: c.mac, SrcIP: c.ip, DstIP: m.ip, TTL: 64, DontFragment: true,
		SrcPort: 49152, Opcode: op, MigReq: true, PKey: 0xffff, DestQP: c.qp, AckReq: true, PSN: psn}
}

func mustBuild(tb testing.TB, f *roce.Fields) []byte {
	tb.Helper()
	buf := make([]byte, roce.FrameLen(f))
	n, err := roce.Build(buf, f)
	if err != nil {
		tb.Fatal(err)
	}
	return buf[:n]
}

// nodeBytes is a Clover node (docs/clover-layout.md): header word with
// entry version ver (next 0), key and own LH, little-endian; size bytes.
func nodeBytes(key uint64, lh uint32, ver uint8, size uint32) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint64(b[0:], uint64(ver)<<11)
	binary.LittleEndian.PutUint64(b[8:], key)
	binary.LittleEndian.PutUint32(b[16:], lh)
	return b
}

// tailWord and linkWord are the compare and swap of a CAS linking node
// (lh, ver) after a tail of entry version tver.
func tailWord(tver uint8) uint64 { return uint64(tver) << 11 }
func linkWord(tver uint8, lh uint32, ver uint8) uint64 {
	return uint64(lh)<<28 | uint64(ver)<<19 | uint64(tver)<<11
}

func (c *dHost) next() uint32 {
	p := c.psn
	c.psn = (c.psn + 1) & roce.MaxPSN
	return p
}

func nodeWrite(tb testing.TB, c, m *dHost, va uint64, node []byte) []byte {
	f := steerFields(c, m, roce.OpRCWriteOnly, c.next())
	f.VA, f.RKey, f.DMALen, f.Payload = va, 0x77, uint32(len(node)), node
	return mustBuild(tb, &f)
}

func casFrame(tb testing.TB, c, m *dHost, psn uint32, va, cmp, swap uint64) []byte {
	f := steerFields(c, m, roce.OpRCCompareSwap, psn)
	f.VA, f.RKey, f.Compare, f.SwapAdd = va, 0x77, cmp, swap
	return mustBuild(tb, &f)
}

func faFrame(tb testing.TB, c, m *dHost, va, add uint64) []byte {
	f := steerFields(c, m, roce.OpRCFetchAdd, c.next())
	f.VA, f.RKey, f.SwapAdd = va, 0x77, add
	return mustBuild(tb, &f)
}

func readFrame(tb testing.TB, c, m *dHost, va uint64, n uint32) []byte {
	f := steerFields(c, m, roce.OpRCReadRequest, c.next())
	f.VA, f.RKey, f.DMALen = va, 0x77, n
	return mustBuild(tb, &f)
}

// readRespFrame is memory node m's READ_RESPONSE_ONLY to client c's READ
// with PSN psn, carrying payload.
func readRespFrame(tb testing.TB, c, m *dHost, psn uint32, payload []byte) []byte {
	f := roce.Fields{DstMAC: c.mac, SrcMAC: m.mac, SrcIP: m.ip, DstIP: c.ip, TTL: 64, DontFragment: true,
		SrcPort: 49152, Opcode: roce.OpRCReadResponseOnly, PKey: 0xffff, DestQP: c.qp + 1, PSN: psn,
		Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Payload: payload, PadCnt: uint8(-len(payload) & 3)}
	return mustBuild(tb, &f)
}

func atomicAckFrame(tb testing.TB, c, m *dHost, psn uint32, orig uint64) []byte {
	f := roce.Fields{DstMAC: c.mac, SrcMAC: m.mac, SrcIP: m.ip, DstIP: c.ip, TTL: 64, DontFragment: true,
		SrcPort: 49152, Opcode: roce.OpRCAtomicAcknowledge, PKey: 0xffff, DestQP: c.qp + 1, PSN: psn,
		Syndrome: roce.ACKSyndrome(roce.CreditInvalid), MSN: 1, Orig: orig}
	return mustBuild(tb, &f)
}

// ---- the random trace: Clover-like clients on memory nodes that execute
// the CAS frames they receive ----

type dNode struct {
	va  uint64
	lh  uint32
	ver uint8
}

type dKey struct {
	key   uint64
	mem   int
	chain []dNode // linked nodes, the last is the tail
}

type dCAS struct {
	cli, mem int
	psn      uint32
	frame    []byte // as the client sent it
}

type dAck struct {
	cli, mem int
	psn      uint32
	orig     uint64
}

// dRead is a READ as forwarded, whose response is on its way.
type dRead struct {
	cli, mem int
	psn      uint32
	va       uint64
	n        uint32
}

// dOwner is the key and LH of the node written at a VA.
type dOwner struct {
	key uint64
	lh  uint32
}

type steerWorld struct {
	r        *steerRig
	rng      *rand.Rand
	size     uint32
	ttl      uint64 // µs
	clis     []dHost
	mems     []dHost
	words    []map[uint64]uint64 // per memory node: VA -> header word
	owners   []map[uint64]dOwner // per memory node: VA -> the node's key and LH
	reads    []dRead             // READ responses on their way (delivered in any order)
	keys     []dKey
	nextLH   uint32
	nextVA   []uint64
	sent     []dCAS               // recent CAS, for retransmissions
	acks     []dAck               // ATOMIC ACKs on their way (delivered in any order)
	executed map[[2]uint32]uint64 // (client, PSN) -> orig: a memory node executes a PSN once
	pending  map[uint64][]dNode   // nodes written per key, linked or not
	vers     int                  // entry versions drawn from 0..vers-1
}

func steerHosts(nc, nm int) (clis, mems []dHost) {
	for i := 0; i < nc; i++ {
		clis = append(clis, dHost{ip: [4]byte{10, 1, 0, byte(1 + i)}, mac: [6]byte{2, 0, 0, 1, 0, byte(1 + i)},
			qp: uint32(0x100 + i), psn: uint32(1000 * (i + 1))})
	}
	// The last two clients are further QPs of the first client's host,
	// starting at its PSN: CASes of one host sharing (client IP, server IP,
	// PSN), which neither side can confirm.
	if nc >= 4 {
		for i := nc - 2; i < nc; i++ {
			clis[i].ip, clis[i].psn = clis[0].ip, clis[0].psn
		}
	}
	for j := 0; j < nm; j++ {
		mems = append(mems, dHost{ip: [4]byte{10, 2, 0, byte(1 + j)}, mac: [6]byte{2, 0, 0, 2, 0, byte(1 + j)}})
	}
	return
}

// newSteerWorld makes a random world. In chain mode entry versions are
// drawn from 0..7 rather than 0..255, so that a chain's end often has the
// version a client compares (rule 10's refusal).
func newSteerWorld(t testing.TB, seed uint64, mode string, chain, withP4 bool) *steerWorld {
	const size = 24 + 40
	clis, mems := steerHosts(6, 2)
	// Keys 1..6 tracked, 7 and 8 not.
	keys := []uint64{1, 2, 3, 4, 5, 6}
	cfg := SteerConfig{Mode: mode, NodeSize: size, Keys: keys, TailTTL: 2 * time.Millisecond, Chain: chainOpt(chain)}
	w := &steerWorld{vers: 256,
		r: newSteerRig(t, cfg, append(append([]dHost{}, clis...), mems...), withP4), rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		size: size, ttl: 2000, clis: clis, mems: mems, nextLH: 0x100, executed: map[[2]uint32]uint64{}, pending: map[uint64][]dNode{},
	}
	if chain {
		w.vers = 8
	}
	for j := range mems {
		w.words = append(w.words, map[uint64]uint64{})
		w.owners = append(w.owners, map[uint64]dOwner{})
		w.nextVA = append(w.nextVA, 0x7f0000000000+uint64(j)<<32)
	}
	for k := uint64(1); k <= 8; k++ {
		w.keys = append(w.keys, dKey{key: k, mem: int(k % 2)})
		dk := &w.keys[len(w.keys)-1]
		n := w.newNode(dk)
		w.r.request(nodeWrite(t, &w.clis[0], &w.mems[dk.mem], n.va, nodeBytes(dk.key, n.lh, n.ver, size)))
		w.words[dk.mem][n.va] = uint64(n.ver) << 11
		w.owners[dk.mem][n.va] = dOwner{dk.key, n.lh}
		dk.chain = append(dk.chain, n)
	}
	return w
}

func (w *steerWorld) newNode(k *dKey) dNode {
	w.nextLH++
	va := w.nextVA[k.mem]
	w.nextVA[k.mem] += uint64(w.size)
	return dNode{va: va, lh: w.nextLH, ver: uint8(w.rng.IntN(w.vers))}
}

// deliver executes a CAS frame as forwarded at its memory node (at most
// once per client PSN, as RC duplicate detection does) and queues its
// ATOMIC ACK, which may be lost.
func (w *steerWorld) deliver(cas dCAS, fwd []byte) {
	if w.rng.IntN(12) == 0 {
		return // lost before the memory node
	}
	id := [2]uint32{uint32(cas.cli), cas.psn}
	orig, done := w.executed[id]
	if !done {
		p, err := roce.Parse(fwd)
		if err != nil {
			w.r.t.Fatal(err)
		}
		a := p.AtomicETH
		words := w.words[cas.mem]
		orig = words[a.VA()]
		if orig == a.Compare() {
			words[a.VA()] = a.SwapAdd()
			w.linked(cas.mem, a.VA(), a.SwapAdd())
		}
		w.executed[id] = orig
	}
	if w.rng.IntN(8) != 0 {
		w.acks = append(w.acks, dAck{cli: cas.cli, mem: cas.mem, psn: cas.psn, orig: orig})
	}
}

// linked extends the chain whose tail is at va with the node a successful
// CAS swapped in.
func (w *steerWorld) linked(mem int, va, swap uint64) {
	lh := uint32(swap >> 28)
	for i := range w.keys {
		k := &w.keys[i]
		if k.mem == mem && k.chain[len(k.chain)-1].va == va {
			for _, n := range w.pending[k.key] {
				if n.lh == lh {
					k.chain = append(k.chain, n)
					return
				}
			}
		}
	}
}

func (w *steerWorld) step() {
	t := w.r.t
	rng := w.rng
	if rng.IntN(150) == 0 {
		w.r.now += w.ttl + uint64(rng.IntN(int(w.ttl))) // across the TTL
	} else {
		w.r.now += uint64(rng.IntN(40))
	}
	cj := rng.IntN(len(w.clis))
	c := &w.clis[cj]
	ci := int(c.ip[3] - 1)
	switch x := rng.IntN(100); {
	case x < 30 && len(w.acks)+len(w.reads) > 0: // an ATOMIC ACK or a READ response, in any order
		if i := rng.IntN(len(w.acks) + len(w.reads)); i < len(w.acks) {
			a := w.acks[i]
			w.acks = append(w.acks[:i], w.acks[i+1:]...)
			w.r.response(atomicAckFrame(t, &w.clis[a.cli], &w.mems[a.mem], a.psn, a.orig))
		} else {
			rd := w.reads[i-len(w.acks)]
			w.reads = append(w.reads[:i-len(w.acks)], w.reads[i-len(w.acks)+1:]...)
			w.r.response(readRespFrame(t, &w.clis[rd.cli], &w.mems[rd.mem], rd.psn, w.readBytes(rd)))
		}
	case x < 60: // a put: node WRITE, then the linking CAS after the tail this client believes
		k := &w.keys[rng.IntN(len(w.keys))]
		m := &w.mems[k.mem]
		n := w.newNode(k)
		w.pending[k.key] = append(w.pending[k.key], n)
		w.r.request(nodeWrite(t, c, m, n.va, nodeBytes(k.key, n.lh, n.ver, w.size)))
		w.words[k.mem][n.va] = uint64(n.ver) << 11
		w.owners[k.mem][n.va] = dOwner{k.key, n.lh}
		view := k.chain[len(k.chain)-1]
		if rng.IntN(2) == 0 { // stale
			view = k.chain[rng.IntN(len(k.chain))]
		}
		cas := dCAS{cli: ci, mem: k.mem, psn: c.next()}
		cas.frame = casFrame(t, c, m, cas.psn, view.va, tailWord(view.ver), linkWord(view.ver, n.lh, n.ver))
		w.sent = append(w.sent, cas)
		if len(w.sent) > 24 {
			w.sent = w.sent[1:]
		}
		w.deliver(cas, w.r.request(cas.frame))
	case x < 68 && len(w.sent) > 0: // a retransmission, as the client sent it
		cas := w.sent[rng.IntN(len(w.sent))]
		w.deliver(cas, w.r.request(cas.frame))
	case x < 88: // a node READ of a node of the chain (often a stale one), or of an unknown address
		k := &w.keys[rng.IntN(len(w.keys))]
		va := k.chain[rng.IntN(len(k.chain))].va
		if rng.IntN(10) == 0 {
			va = 0x1000 + uint64(rng.IntN(1<<20))
		}
		mi := k.mem
		if rng.IntN(10) == 0 {
			mi = 1 - k.mem // another memory node: never steered
		}
		w.read(cj, mi, va, w.size)
	case x < 91: // a READ of another size
		k := &w.keys[rng.IntN(len(w.keys))]
		w.read(cj, k.mem, k.chain[0].va, 8)
	case x < 94: // a delete-mark CAS on a tail (never steered, never learned)
		k := &w.keys[rng.IntN(len(w.keys))]
		tl := k.chain[0]
		w.r.request(casFrame(t, c, &w.mems[k.mem], c.next(), tl.va, tailWord(tl.ver), uint64(lhDeleted)<<28|tailWord(tl.ver)))
	case x < 96: // FETCH_ADD
		k := &w.keys[rng.IntN(len(w.keys))]
		w.r.request(faFrame(t, c, &w.mems[k.mem], k.chain[0].va, 1))
	default: // a CAS whose node was never written (unresolved)
		k := &w.keys[rng.IntN(len(w.keys))]
		tl := k.chain[len(k.chain)-1]
		w.r.request(casFrame(t, c, &w.mems[k.mem], c.next(), tl.va, tailWord(tl.ver), linkWord(tl.ver, 0xABCDE, 9)))
	}
}

// read sends client ci's READ of n bytes at va to memory node mi and
// queues its response (which may be lost) from the VA as forwarded.
func (w *steerWorld) read(ci, mi int, va uint64, n uint32) {
	p, err := roce.Parse(w.r.request(readFrame(w.r.t, &w.clis[ci], &w.mems[mi], va, n)))
	if err != nil {
		w.r.t.Fatal(err)
	}
	if w.rng.IntN(10) != 0 {
		w.reads = append(w.reads, dRead{cli: ci, mem: mi, psn: p.BTH.PSN(), va: p.RETH.VA(), n: n})
	}
}

// readBytes is what memory node rd.mem holds at rd.va (zeros where no
// node was written), rd.n bytes.
func (w *steerWorld) readBytes(rd dRead) []byte {
	o, ok := w.owners[rd.mem][rd.va]
	if !ok {
		return make([]byte, rd.n)
	}
	b := nodeBytes(o.key, o.lh, 0, w.size)
	binary.LittleEndian.PutUint64(b, w.words[rd.mem][rd.va])
	return b[:rd.n]
}

func TestSteerDiffRandom(t *testing.T) {
	steps := 4000
	if testing.Short() {
		steps = 1000
	}
	// The switch's modes 1, 2, 3 (chain off) and 5, 7 (chain on; the
	// controller never sets chain without write steering).
	var total, chainTotal [stCount]uint64
	for _, m := range []struct {
		mode  string
		chain bool
	}{{"both", false}, {"write", false}, {"read", false}, {"both", true}, {"write", true}} {
		for seed := uint64(1); seed <= 2; seed++ {
			t.Run(fmt.Sprintf("%s/chain=%v/seed%d", m.mode, m.chain, seed), func(t *testing.T) {
				w := newSteerWorld(t, seed, m.mode, m.chain, true)
				for i := 0; i < steps; i++ {
					w.step()
					if i%200 == 0 {
						w.r.checkTails()
					}
				}
				w.r.checkTails()
				t.Logf("%d frames, %d rewritten; stats %v", w.r.frames, w.r.rewritten, w.r.s.stats)
				if m.mode == "both" {
					for i, v := range w.r.s.stats {
						if m.chain {
							chainTotal[i] += v
						} else {
							total[i] += v
						}
					}
				}
			})
		}
	}
	// The trace exercised every rule (otherwise it proves little).
	for _, i := range []int{stNodeWrites, stCAS, stCASSteered, stReads, stReadsSteered, stReadMisses, stRetransmits,
		stAcksCleared, stTailDropped, stLinkUnresolved, stTailConfirmed, stTailExpired, stReadsVouched} {
		if total[i] == 0 {
			t.Errorf("the random traces without chain mode never hit stats %d (%s)", i, steerStatNames[i])
		}
	}
	for _, i := range []int{stCASSteered, stReadsSteered, stTailDropped, stTailConfirmed, stTailExpired,
		stCASChained, stChainBroken, stChainRefused, stReadsChainEnd, stVouched, stEndPredUnconfirmed,
		stEndChainedFail, stReadsVouched} {
		if chainTotal[i] == 0 {
			t.Errorf("the random traces in chain mode never hit stats %d (%s)", i, steerStatNames[i])
		}
	}
}

// collide finds a value after from whose slot (by slot) equals target's.
func collide(from uint32, slot func(uint32) uint32, target uint32) uint32 {
	for v := from; ; v++ {
		if slot(v) == target {
			return v
		}
	}
}

// newTwoClientRig is a rig with the switch: clients a and b, memory node
// m, keys 1 and 2 tracked, nodes of size bytes.
func newTwoClientRig(t *testing.T, mode string, chain bool, size uint32) (*steerRig, *dHost, *dHost, *dHost) {
	clis, mems := steerHosts(2, 1)
	r := newSteerRig(t, SteerConfig{Mode: mode, NodeSize: size, Keys: []uint64{1, 2}, Chain: chainOpt(chain)}, append(append([]dHost{}, clis...), mems...), true)
	return r, &clis[0], &clis[1], &mems[0]
}

// The nodes linkHX writes for key 1: the head H (LH 10, version 3) and X
// (LH 11, version 4).
const twoClientH, twoClientX = 0x10000, 0x20000

// linkHX writes H and X and links X after H, confirmed by its ACK.
func (r *steerRig) linkHX(a, m *dHost, size uint32) {
	t := r.t
	r.request(nodeWrite(t, a, m, twoClientH, nodeBytes(1, 10, 3, size)))
	r.request(nodeWrite(t, a, m, twoClientX, nodeBytes(1, 11, 4, size)))
	psn := a.next()
	r.request(casFrame(t, a, m, psn, twoClientH, tailWord(3), linkWord(3, 11, 4)))
	r.response(atomicAckFrame(t, a, m, psn, tailWord(3)))
}

// Collisions in the node map, the address map and the CAS records happen
// alike in steer.go and on the switch.
func TestSteerDiffCollisions(t *testing.T) {
	const size = 64
	r, a, b, m := newTwoClientRig(t, "both", false, size)
	s := r.s
	nodeIdx := s.nodeIdx
	addrIdx := func(v uint32) uint32 { return s.addrIdx(uint64(v) << 6) }

	// Key 1: head H, then X linked and confirmed.
	const H, X = twoClientH, twoClientX
	r.linkHX(a, m, size)

	// Node map: a node of key 2 whose LH collides with Y's evicts Y, so the
	// CAS linking Y is not learned.
	r.request(nodeWrite(t, a, m, 0x30000, nodeBytes(1, 12, 5, size)))
	lh2 := collide(13, nodeIdx, nodeIdx(12))
	r.request(nodeWrite(t, b, m, 0x40000, nodeBytes(2, lh2, 6, size)))
	unresolved := s.stats[stLinkUnresolved]
	r.request(casFrame(t, a, m, a.next(), X, tailWord(4), linkWord(4, 12, 5)))
	if s.stats[stLinkUnresolved] != unresolved+1 {
		t.Fatal("a CAS linking an evicted node was learned")
	}

	// CAS records: b's CAS takes over a's record; a's ACK then confirms
	// nothing, b's does.
	r.request(nodeWrite(t, a, m, 0x50000, nodeBytes(1, 20, 7, size)))
	r.request(nodeWrite(t, b, m, 0x60000, nodeBytes(1, 21, 8, size)))
	pa := a.next()
	casIdx := func(p uint32) uint32 { return s.casIdx(b.ip, m.ip, p&roce.MaxPSN) }
	pb := collide(b.psn, casIdx, s.casIdx(a.ip, m.ip, pa)) & roce.MaxPSN
	b.psn = pb
	pb = b.next()
	r.request(casFrame(t, a, m, pa, X, tailWord(4), linkWord(4, 20, 7)))
	r.request(casFrame(t, b, m, pb, X, tailWord(4), linkWord(4, 21, 8)))
	if s.stats[stLinkTakeover] != 1 {
		t.Fatalf("takeovers %d, want 1", s.stats[stLinkTakeover])
	}
	r.response(atomicAckFrame(t, a, m, pa, tailWord(4)))
	r.response(atomicAckFrame(t, b, m, pb, tailWord(4)))
	r.checkTails()
	if tl := s.tails[1]; tl.va != 0x60000 {
		t.Fatalf("tail %#x, want b's node 0x60000", tl.va)
	}

	// Address map: a node of key 2 at a colliding VA evicts H's entry, so
	// a READ of H misses.
	hv := uint32(H >> 6)
	v2 := collide(hv+1, addrIdx, addrIdx(hv))
	r.request(nodeWrite(t, b, m, uint64(v2)<<6, nodeBytes(2, 30, 1, size)))
	misses := s.stats[stReadMisses]
	r.request(readFrame(t, a, m, H, size))
	if s.stats[stReadMisses] != misses+1 {
		t.Fatal("a READ of an evicted address was steered")
	}
	r.checkTails()
}

// The hand-written cases of steer_test.go, through the switch as well.
func TestSteerDiffRules(t *testing.T) {
	for _, c := range steerCases {
		t.Run(c.name, func(t *testing.T) {
			f := newSteerFix(t, c.mode, c.chain, true)
			c.run(f)
			f.r.checkTails()
		})
	}
}

// FuzzSteerDiff runs fuzzed traces over a small universe (3 clients, 2
// memory nodes, keys 1..4 of which 1..3 tracked, 8 nodes, entry versions
// 0..3, so that stale, repeated and mismatched fields are common; READs
// answered with the node written at the VA as forwarded) through
// steer.go and the switch, comparing them frame by frame, with chain mode
// off (switch mode 3) and on (mode 7). Each op is 4 bytes: kind, and three
// parameters.
func FuzzSteerDiff(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0x10, 0, 3, 0, 1, 0, 0, 1, 0x21, 0, 1, 2, 0, 0, 4, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0x10, 0, 3, 0, 0, 0, 0, 1, 0x21, 0, 6, 9, 0, 0, 1, 1, 0x10, 0, 2, 1, 0, 0, 4, 1, 0, 0})
	f.Add([]byte{0, 1, 0x32, 3, 1, 2, 0x03, 0x13, 3, 0, 0, 1, 2, 0, 0, 0, 5, 2, 0, 1, 4, 0, 7, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4*200 {
			return
		}
		for _, chain := range []bool{false, true} {
			fuzzSteerDiff(t, ops, chain)
		}
	})
}

func fuzzSteerDiff(t *testing.T, ops []byte, chain bool) {
	clis, mems := steerHosts(3, 2)
	cfg := SteerConfig{Mode: "both", NodeSize: 32, Keys: []uint64{1, 2, 3}, TailTTL: time.Millisecond, Chain: chainOpt(chain)}
	r := newSteerRig(t, cfg, append(append([]dHost{}, clis...), mems...), true)
	type sentCAS struct {
		c, m  int
		psn   uint32
		frame []byte
		cmp   uint64 // as forwarded
	}
	var sent []sentCAS
	written := map[[2]uint64][]byte{} // (memory node, VA) -> the node written there
	va := func(i byte) uint64 { return 0x1000 * uint64(i%8+1) }
	for len(ops) >= 4 {
		k, a, b, c := ops[0], ops[1], ops[2], ops[3]
		ops = ops[4:]
		cl, m := &clis[a%3], &mems[a>>4%2]
		switch k % 7 {
		case 0: // node WRITE: node b%8 of key c%4+1 with version b>>4%4
			n := nodeBytes(uint64(c%4+1), 100+uint32(b%8), b>>4%4, 32)
			r.request(nodeWrite(t, cl, m, va(b), n))
			written[[2]uint64{uint64(a >> 4 % 2), va(b)}] = n
		case 1: // CAS after node b%8 (entry version b>>4%4) linking node c%8 (version c>>4%4)
			psn := cl.next()
			fr := casFrame(t, cl, m, psn, va(b), tailWord(b>>4%4), linkWord(b>>4%4, 100+uint32(c%8), c>>4%4))
			p, _ := roce.Parse(r.request(fr))
			sent = append(sent, sentCAS{int(a % 3), int(a >> 4 % 2), psn, fr, p.AtomicETH.Compare()})
		case 2: // retransmission
			if len(sent) > 0 {
				r.request(sent[int(b)%len(sent)].frame)
			}
		case 3: // ATOMIC ACK: success if c is even
			if len(sent) > 0 {
				s := sent[int(b)%len(sent)]
				orig := s.cmp
				if c%2 == 1 {
					orig ^= 1 << 28
				}
				r.response(atomicAckFrame(t, &clis[s.c], &mems[s.m], s.psn, orig))
			}
		case 4: // READ of node b%8, node-sized unless c is odd; answered (the node at the VA as forwarded) unless c&2
			n := uint32(32)
			if c%2 == 1 {
				n = 8
			}
			p, _ := roce.Parse(r.request(readFrame(t, cl, m, va(b), n)))
			if c&2 == 0 {
				data := make([]byte, n)
				copy(data, written[[2]uint64{uint64(a >> 4 % 2), p.RETH.VA()}])
				r.response(readRespFrame(t, cl, m, p.BTH.PSN(), data))
			}
		case 5: // delete-mark CAS or FETCH_ADD
			if c%2 == 0 {
				r.request(casFrame(t, cl, m, cl.next(), va(b), 0, uint64(lhDeleted)<<28))
			} else {
				r.request(faFrame(t, cl, m, va(b), 1))
			}
		case 6: // time
			r.now += uint64(b) * 20
		}
	}
	r.checkTails()
}

// TestSteerDiffSecondWay: in chain mode a node whose first-way node map
// entry another node WRITE replaced is found in the second way, so the CAS
// linking it is learned and chained, in steer.go and on the switch alike;
// when both of its entries are replaced it is not learned.
func TestSteerDiffSecondWay(t *testing.T) {
	const size = 64
	r, a, b, m := newTwoClientRig(t, "write", true, size)
	s := r.s

	// Key 1: head H, then X linked and confirmed: a chain starts at X.
	const H, X = twoClientH, twoClientX
	r.linkHX(a, m, size)
	if e := s.ends[1]; !e.valid || e.va != X {
		t.Fatalf("chain end %+v, want X", e)
	}

	// Y (LH 12) is written, then a node of key 2 whose LH collides with
	// Y's in the first way evicts it there; the CAS linking Y is chained.
	r.request(nodeWrite(t, a, m, 0x30000, nodeBytes(1, 12, 5, size)))
	lh2 := collide(13, s.nodeIdx, s.nodeIdx(12))
	if s.nodeIdx2(lh2) == s.nodeIdx2(12) {
		t.Fatal("the colliding LH collides in the second way too")
	}
	r.request(nodeWrite(t, b, m, 0x40000, nodeBytes(2, lh2, 6, size)))
	unresolved, chained := s.stats[stLinkUnresolved], s.stats[stCASChained]
	r.request(casFrame(t, a, m, a.next(), H, tailWord(3), linkWord(3, 12, 5)))
	if s.stats[stLinkUnresolved] != unresolved || s.stats[stCASChained] != chained+1 {
		t.Fatalf("unresolved %d -> %d, chained %d -> %d: the node was not found in the second way",
			unresolved, s.stats[stLinkUnresolved], chained, s.stats[stCASChained])
	}
	if e := s.ends[1]; e.va != 0x30000 {
		t.Fatalf("chain end %#x, want Y's 0x30000", e.va)
	}

	// Z (LH 14): evicted in both ways, its CAS is not learned.
	r.request(nodeWrite(t, a, m, 0x50000, nodeBytes(1, 14, 7, size)))
	l1 := collide(15, s.nodeIdx, s.nodeIdx(14))
	l2 := collide(l1+1, s.nodeIdx2, s.nodeIdx2(14))
	r.request(nodeWrite(t, b, m, 0x60000, nodeBytes(2, l1, 1, size)))
	r.request(nodeWrite(t, b, m, 0x70000, nodeBytes(2, l2, 1, size)))
	unresolved = s.stats[stLinkUnresolved]
	r.request(casFrame(t, a, m, a.next(), H, tailWord(3), linkWord(3, 14, 7)))
	if s.stats[stLinkUnresolved] != unresolved+1 {
		t.Fatal("a CAS linking a node evicted from both ways was learned")
	}
	r.checkTails()
}
