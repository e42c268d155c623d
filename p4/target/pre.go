package target

import (
	"bytes"
	"fmt"
	"github.com/swordbox/swordbox/p4/target/frontend"
	"sort"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
)

// The packet replication engine (PRE): multicast groups and clone sessions,
// programmed through P4Runtime's PacketReplicationEngineEntry, and the
// v1model data path that uses them (standard_metadata.mcast_grp, clone,
// clone_preserving_field_list), with BMv2 simple_switch's semantics:
//
//   - At the end of ingress, a pending I2E clone makes one copy per replica
//     of its session: the packet as received, parsed again, with metadata
//     zeroed except the fields of the clone's field list (their values at
//     the end of ingress) and ingress_port; instance_type 1.
//   - Then, if mcast_grp is not 0, the packet is replicated to the group's
//     replicas (instance_type 5, egress_rid the replica's instance), each
//     with the headers and metadata as ingress left them; the unicast
//     egress_spec is ignored. A group that does not exist drops the packet.
//   - At the end of egress, a pending E2E clone makes one copy per replica
//     of its session: headers as egress left them, metadata zeroed except
//     the field list; instance_type 2; it runs egress again.
//   - A clone of a session that does not exist is not made. A clone call
//     of the other type than its control's (E2E in ingress, I2E in egress)
//     is ignored. The last clone call of a control wins.
//   - Clones carry the session's class_of_service in
//     standard_metadata.priority and are truncated to packet_length_bytes
//     when it is not 0.
//   - Limits: group and session ids 1..65535, instances 0..65535 (v1model's
//     mcast_grp and egress_rid are bit<16>), ports 0..510 (511 is the drop
//     port), at most maxReplicas replicas per entry, E2E clones of E2E
//     clones at most maxCloneDepth deep, at most maxCopies copies of one
//     received packet (further copies are dropped and counted).

const (
	maxReplicas   = 4096
	maxCloneDepth = 4
	maxCopies     = 8192
	maxPREID      = 0xFFFF
)

// Instance types of standard_metadata.instance_type (BMv2 simple_switch).
const (
	instanceI2E         = 1
	instanceE2E         = 2
	instanceRecirc      = 4
	instanceReplication = 5
	instanceResubmit    = 6
)

// Pending requests of a packet (pktState.pending).
const (
	pendClone  = 1 << iota // clone or clone_preserving_field_list
	pendResub              // resubmit_preserving_field_list (acted on at the end of ingress)
	pendRecirc             // recirculate_preserving_field_list (at the end of egress)
)

// maxReentry bounds how many times in a row a packet is resubmitted or
// recirculated (BMv2 has no bound; a program that always resubmits would
// loop for ever).
const maxReentry = 8

// reentry describes a packet that enters ingress again.
type reentry struct {
	instance uint64
	keep     []int
	from     []uint64
	depth    int
}

// reenter runs frame through the pipeline again as a new packet (called
// with d.mu held), with the preserved fields taken from from.
func (d *Device) reenter(frame []byte, in uint32, instance uint64, keep []int, from []uint64, emit func(uint32, []byte), depth int) {
	if depth > maxReentry {
		d.stats.Dropped++
		d.stats.ReentryLimit++
		return
	}
	s := d.pool.Get().(*pktState)
	re := reentry{instance: instance, keep: keep, from: from, depth: depth}
	if port, ok := d.pass(s, in, frame, emit, &re); ok && emit != nil {
		emit(port, s.out)
	}
	s.pkt = nil
	d.pool.Put(s)
}

// reentryCall compiles resubmit_preserving_field_list(index) and
// recirculate_preserving_field_list(index).
func (c *compiler) reentryCall(sc *scope, e *frontend.CallExpr, name string) stmtFn {
	if c.inParser {
		c.fail(e.P, "%s cannot be called from a parser", name)
	}
	if len(e.Args) != 1 {
		c.fail(e.P, "%s takes 1 argument (the field list index)", name)
	}
	ix := c.constInt(sc, e.Args[0])
	if ix < 0 || ix > 255 {
		c.fail(e.Args[0].ExprPos(), "field list index %d out of range (0 to 255)", ix)
	}
	keep := c.fieldList(uint64(ix))
	if name == "resubmit_preserving_field_list" {
		return func(s *pktState) flow {
			s.pending |= pendResub
			s.resubKeep = keep
			return flowNext
		}
	}
	return func(s *pktState) flow {
		s.pending |= pendRecirc
		s.recircKeep = keep
		return flowNext
	}
}

// cloneReq is a pending clone: set by clone/clone_preserving_field_list.
type cloneReq struct {
	set     bool
	e2e     bool
	session uint32
	keep    []int // metadata slots preserved (the field list), may be nil
}

// replica is one copy the PRE makes.
type replica struct {
	port   uint32
	rid    uint32
	legacy bool // written with the deprecated egress_port field
}

type mcGroup struct {
	replicas []replica
	meta     []byte
}

type cloneSession struct {
	replicas []replica
	cos      uint32
	trunc    int32
}

// snap is a saved copy of a packet's working state.
type snap struct {
	slots []uint64
	hoff1 []int32
	dirty []bool
	off   int
}

// save copies the working state into saves[i] (allocated on first use).
func (s *pktState) save(i int) *snap {
	for len(s.saves) <= i {
		s.saves = append(s.saves, &snap{slots: make([]uint64, len(s.slots)), hoff1: make([]int32, len(s.hoff1)), dirty: make([]bool, len(s.dirty))})
	}
	sn := s.saves[i]
	copy(sn.slots, s.slots)
	copy(sn.hoff1, s.hoff1)
	copy(sn.dirty, s.dirty)
	sn.off = s.off
	return sn
}

func (s *pktState) restore(sn *snap) {
	copy(s.slots, sn.slots)
	copy(s.hoff1, sn.hoff1)
	copy(s.dirty, sn.dirty)
	s.off = sn.off
}

// resetMeta zeroes the user and standard metadata except the slots in keep
// (their values are those of from).
func (d *Device) resetMeta(s *pktState, keep []int, from []uint64) {
	p := d.prog
	clear(s.slots[p.metaBase : p.metaBase+p.metaT.size])
	in := s.slots[p.smIngressPort]
	clear(s.slots[p.smBase : p.smBase+p.smSize])
	s.slots[p.smIngressPort] = in
	for _, k := range keep {
		s.slots[k] = from[k]
	}
	s.pending &^= pendResub | pendRecirc
}

// cloneCall compiles clone(type, session) and
// clone_preserving_field_list(type, session, index).
func (c *compiler) cloneCall(sc *scope, e *frontend.CallExpr, preserving bool) stmtFn {
	name := "clone"
	want := 2
	if preserving {
		name, want = "clone_preserving_field_list", 3
	}
	if c.inParser {
		c.fail(e.P, "%s cannot be called from a parser", name)
	}
	if len(e.Args) != want {
		c.fail(e.P, "%s takes %d arguments", name, want)
	}
	ct := c.expr(sc, e.Args[0])
	if ct.t != c.global.m["CloneType"].t || !ct.isConst {
		c.fail(e.Args[0].ExprPos(), "%s: expected CloneType.I2E or CloneType.E2E", name)
	}
	e2e := ct.k == 1
	sv := c.typed(c.rvalue(sc, e.Args[1], bitT(32)), e.Args[1].ExprPos())
	sess := sv.fn
	var keep []int
	if preserving {
		ix := c.constInt(sc, e.Args[2])
		if ix < 0 || ix > 255 {
			c.fail(e.Args[2].ExprPos(), "field list index %d out of range (0 to 255)", ix)
		}
		keep = c.fieldList(uint64(ix))
	}
	return func(s *pktState) flow {
		s.clone = cloneReq{set: true, e2e: e2e, session: uint32(sess(s)), keep: keep}
		s.pending |= pendClone
		return flowNext
	}
}

// fieldList returns the metadata slots of the members of the user
// metadata struct annotated @field_list(..., index, ...).
func (c *compiler) fieldList(index uint64) []int {
	p := c.prog
	if l, ok := p.fieldLists[index]; ok {
		return l
	}
	var slots []int
	for _, f := range p.metaT.fields {
		for _, a := range f.anns {
			if a.Name != "field_list" {
				continue
			}
			for _, t := range a.Args {
				if t.Kind == frontend.TInt && t.Val != nil && t.Val.IsUint64() && t.Val.Uint64() == index {
					for i := 0; i < f.t.size; i++ {
						slots = append(slots, p.metaBase+f.off+i)
					}
				}
			}
		}
	}
	if p.fieldLists == nil {
		p.fieldLists = map[uint64][]int{}
	}
	p.fieldLists[index] = slots
	return slots
}

// replicate finishes a packet whose ingress asked for a clone or for
// multicast (called with d.mu held; emits every copy itself).
func (d *Device) replicate(s *pktState, frame []byte, emit func(uint32, []byte)) {
	p := d.prog
	cl, pend, resubKeep := s.clone, s.pending, s.resubKeep
	post := s.save(0)
	if cl.set && !cl.e2e {
		if sess := d.sessions[cl.session]; sess != nil {
			for _, r := range sess.replicas {
				// The packet as received, with zeroed metadata but the
				// field list, parsed again (as BMv2: the parser may set
				// metadata of its own).
				clear(s.slots)
				clear(s.hoff1)
				s.off = 0
				for _, k := range cl.keep {
					s.slots[k] = post.slots[k]
				}
				s.slots[p.smIngressPort] = post.slots[p.smIngressPort]
				s.slots[p.smPacketLength] = uint64(len(frame)) & mask(32)
				s.slots[p.smInstanceType] = instanceI2E
				s.pending &^= pendResub | pendRecirc
				p.parser.run(s)
				d.toEgress(s, r, instanceI2E, uint64(sess.cos))
				d.egressPath(s, frame, emit, 1, sess.trunc)
			}
		}
	}
	if pend&pendResub != 0 {
		// The packet as received goes back to the start of ingress; it
		// is not forwarded.
		d.reenter(frame, uint32(post.slots[p.smIngressPort]), instanceResubmit, resubKeep, post.slots, emit, s.depth+1)
		return
	}
	if mg := post.slots[p.smMcastGrp]; mg != 0 {
		g := d.groups[uint32(mg)]
		if g == nil {
			d.stats.Dropped++
			return
		}
		for _, r := range g.replicas {
			s.restore(post)
			s.pending = pend
			d.toEgress(s, r, instanceReplication, s.slots[p.smPriority])
			d.egressPath(s, frame, emit, 1, 0)
		}
		return
	}
	s.restore(post)
	s.pending = pend
	if s.slots[p.smEgressSpec] == dropPort {
		d.stats.Dropped++
		return
	}
	s.slots[p.smEgressPort] = s.slots[p.smEgressSpec]
	d.egressPath(s, frame, emit, 1, 0)
}

func (d *Device) toEgress(s *pktState, r replica, instance uint64, prio uint64) {
	p := d.prog
	s.slots[p.smEgressPort] = uint64(r.port)
	s.slots[p.smEgressSpec] = uint64(r.port)
	s.slots[p.smEgressRid] = uint64(r.rid)
	s.slots[p.smInstanceType] = instance
	s.slots[p.smPriority] = prio & 7
}

// egressPath runs egress and the rest of the pipeline on one copy and
// emits it (called with d.mu held).
func (d *Device) egressPath(s *pktState, frame []byte, emit func(uint32, []byte), depth int, trunc int32) {
	s.clone = cloneReq{}
	s.pending &^= pendClone | pendResub
	d.prog.egress.run(s)
	d.finishEgress(s, frame, emit, depth, trunc)
}

// finishEgress takes a copy from the end of egress to the wire, then
// makes its E2E clones.
func (d *Device) finishEgress(s *pktState, frame []byte, emit func(uint32, []byte), depth int, trunc int32) {
	p := d.prog
	cl := s.clone
	var sess *cloneSession
	var sn *snap
	if cl.set && cl.e2e && depth <= maxCloneDepth {
		if sess = d.sessions[cl.session]; sess != nil {
			sn = s.save(depth)
		}
	}
	d.copies++
	switch {
	case d.copies > maxCopies:
		d.stats.Dropped++
		d.stats.CopyLimit++
	case s.slots[p.smEgressSpec] == dropPort:
		d.stats.Dropped++
	default:
		port := uint32(s.slots[p.smEgressPort])
		d.deparse(s, frame)
		if trunc > 0 && len(s.out) > int(trunc) {
			s.out = s.out[:trunc]
		}
		if s.pending&pendRecirc != 0 {
			// The deparsed packet goes back to the start of ingress
			// instead of leaving.
			d.reenter(s.out, uint32(s.slots[p.smIngressPort]), instanceRecirc, s.recircKeep, s.slots, emit, s.depth+1)
			break
		}
		d.stats.Out++
		if emit != nil {
			emit(port, s.out)
		}
	}
	if sn == nil {
		return
	}
	for _, r := range sess.replicas {
		s.restore(sn)
		d.resetMeta(s, cl.keep, sn.slots)
		d.toEgress(s, r, instanceE2E, uint64(sess.cos))
		d.egressPath(s, frame, emit, depth+1, sess.trunc)
	}
}

// ---- P4Runtime ----

// decodePort reads a replica's port: the bytes port field or the
// deprecated egress_port.
func decodeReplica(r *p4v1.Replica, what string) (replica, error) {
	var out replica
	if len(r.GetBackupReplicas()) > 0 {
		return out, errf(codes.Unimplemented, "%s: backup replicas are not supported", what)
	}
	switch pk := r.GetPortKind().(type) {
	case *p4v1.Replica_Port:
		v, err := decodeBits(pk.Port, 9, what+" port")
		if err != nil {
			return out, err
		}
		out.port = uint32(v)
	case *p4v1.Replica_EgressPort:
		out.port, out.legacy = pk.EgressPort, true
	default:
		return out, errf(codes.InvalidArgument, "%s: replica has no port", what)
	}
	if out.port >= dropPort {
		return out, errf(codes.InvalidArgument, "%s: port %d out of range 0..510 (511 is v1model's drop port)", what, out.port)
	}
	if r.GetInstance() > maxPREID {
		return out, errf(codes.InvalidArgument, "%s: instance %d out of range 0..%d (egress_rid is bit<16>)", what, r.GetInstance(), maxPREID)
	}
	out.rid = r.GetInstance()
	return out, nil
}

func decodeReplicas(rs []*p4v1.Replica, what string) ([]replica, error) {
	if len(rs) > maxReplicas {
		return nil, errf(codes.ResourceExhausted, "%s: %d replicas, at most %d", what, len(rs), maxReplicas)
	}
	out := make([]replica, 0, len(rs))
	seen := make(map[[2]uint32]bool, len(rs))
	for _, r := range rs {
		x, err := decodeReplica(r, what)
		if err != nil {
			return nil, err
		}
		k := [2]uint32{x.port, x.rid}
		if seen[k] {
			return nil, errf(codes.InvalidArgument, "%s: replica (port %d, instance %d) given twice", what, x.port, x.rid)
		}
		seen[k] = true
		out = append(out, x)
	}
	return out, nil
}

func replicaProtos(rs []replica) []*p4v1.Replica {
	out := make([]*p4v1.Replica, len(rs))
	for i, r := range rs {
		out[i] = &p4v1.Replica{Instance: r.rid}
		if r.legacy {
			out[i].PortKind = &p4v1.Replica_EgressPort{EgressPort: r.port}
		} else {
			out[i].PortKind = &p4v1.Replica_Port{Port: encodeBits(uint64(r.port))}
		}
	}
	return out
}

func checkPREID(id uint32, what string) error {
	if id == 0 {
		return errf(codes.InvalidArgument, "%s 0 is reserved for wildcard reads", what)
	}
	if id > maxPREID {
		return errf(codes.InvalidArgument, "%s %d out of range 1..%d", what, id, maxPREID)
	}
	return nil
}

// WritePREEntry applies one update to a multicast group or clone session.
func (d *Device) WritePREEntry(ut p4v1.Update_Type, e *p4v1.PacketReplicationEngineEntry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch x := e.GetType().(type) {
	case *p4v1.PacketReplicationEngineEntry_MulticastGroupEntry:
		g := x.MulticastGroupEntry
		what := fmt.Sprintf("multicast group %d", g.GetMulticastGroupId())
		if err := checkPREID(g.GetMulticastGroupId(), "multicast_group_id"); err != nil {
			return err
		}
		return writeByID(d.groups, ut, g.GetMulticastGroupId(), what, func(*mcGroup, bool) (*mcGroup, error) {
			rs, err := decodeReplicas(g.GetReplicas(), what)
			if err != nil {
				return nil, err
			}
			return &mcGroup{replicas: rs, meta: bytes.Clone(g.GetMetadata())}, nil
		}, nil)
	case *p4v1.PacketReplicationEngineEntry_CloneSessionEntry:
		c := x.CloneSessionEntry
		what := fmt.Sprintf("clone session %d", c.GetSessionId())
		if err := checkPREID(c.GetSessionId(), "session_id"); err != nil {
			return err
		}
		return writeByID(d.sessions, ut, c.GetSessionId(), what, func(*cloneSession, bool) (*cloneSession, error) {
			if c.GetClassOfService() > 7 {
				return nil, errf(codes.InvalidArgument, "%s: class_of_service %d out of range 0..7 (v1model priority is bit<3>)", what, c.GetClassOfService())
			}
			if c.GetPacketLengthBytes() < 0 {
				return nil, errf(codes.InvalidArgument, "%s: negative packet_length_bytes %d", what, c.GetPacketLengthBytes())
			}
			rs, err := decodeReplicas(c.GetReplicas(), what)
			if err != nil {
				return nil, err
			}
			return &cloneSession{replicas: rs, cos: c.GetClassOfService(), trunc: c.GetPacketLengthBytes()}, nil
		}, nil)
	case nil:
		return errf(codes.InvalidArgument, "packet replication engine entry has no type")
	default:
		return errf(codes.Unimplemented, "packet replication engine entry %T is not supported", x)
	}
}

// writeByID applies INSERT, MODIFY or DELETE to the entry id of m, with
// P4Runtime's codes (ALREADY_EXISTS, NOT_FOUND). build makes the new
// entry (old is the current one on MODIFY); del, if set, may refuse a
// DELETE.
func writeByID[V any](m map[uint32]V, ut p4v1.Update_Type, id uint32, what string, build func(old V, exists bool) (V, error), del func(old V) error) error {
	old, exists := m[id]
	switch ut {
	case p4v1.Update_INSERT, p4v1.Update_MODIFY:
		if ut == p4v1.Update_INSERT && exists {
			return errf(codes.AlreadyExists, "%s already exists", what)
		}
		if ut == p4v1.Update_MODIFY && !exists {
			return errf(codes.NotFound, "%s does not exist", what)
		}
		v, err := build(old, exists)
		if err != nil {
			return err
		}
		m[id] = v
	case p4v1.Update_DELETE:
		if !exists {
			return errf(codes.NotFound, "%s does not exist", what)
		}
		if del != nil {
			if err := del(old); err != nil {
				return err
			}
		}
		delete(m, id)
	default:
		return errf(codes.InvalidArgument, "unknown update type %v", ut)
	}
	return nil
}

// ReadPREEntries calls fn for the multicast groups or clone sessions the
// filter selects (id 0: all, in id order).
func (d *Device) ReadPREEntries(filter *p4v1.PacketReplicationEngineEntry, fn func(*p4v1.PacketReplicationEngineEntry) error) error {
	var out []*p4v1.PacketReplicationEngineEntry
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch x := filter.GetType().(type) {
		case *p4v1.PacketReplicationEngineEntry_MulticastGroupEntry:
			id := x.MulticastGroupEntry.GetMulticastGroupId()
			for _, k := range sortedIDs(d.groups, id) {
				g := d.groups[k]
				out = append(out, &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_MulticastGroupEntry{
					MulticastGroupEntry: &p4v1.MulticastGroupEntry{MulticastGroupId: k, Replicas: replicaProtos(g.replicas), Metadata: bytes.Clone(g.meta)}}})
			}
			if id != 0 && len(out) == 0 {
				return errf(codes.NotFound, "multicast group %d does not exist", id)
			}
		case *p4v1.PacketReplicationEngineEntry_CloneSessionEntry:
			id := x.CloneSessionEntry.GetSessionId()
			for _, k := range sortedIDs(d.sessions, id) {
				c := d.sessions[k]
				out = append(out, &p4v1.PacketReplicationEngineEntry{Type: &p4v1.PacketReplicationEngineEntry_CloneSessionEntry{
					CloneSessionEntry: &p4v1.CloneSessionEntry{SessionId: k, Replicas: replicaProtos(c.replicas), ClassOfService: c.cos, PacketLengthBytes: c.trunc}}})
			}
			if id != 0 && len(out) == 0 {
				return errf(codes.NotFound, "clone session %d does not exist", id)
			}
		case nil:
			return errf(codes.InvalidArgument, "packet replication engine entry has no type")
		default:
			return errf(codes.Unimplemented, "packet replication engine entry %T is not supported", x)
		}
		return nil
	}()
	if err != nil {
		return err
	}
	return each(out, fn)
}

// sortedIDs returns id if it is in m (or every key when id is 0), sorted.
func sortedIDs[V any](m map[uint32]V, id uint32) []uint32 {
	if id != 0 {
		if _, ok := m[id]; ok {
			return []uint32{id}
		}
		return nil
	}
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}
