package p4rt

import (
	"context"
	"fmt"
	"strings"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// readChunk is the number of entities per ReadResponse.
const readChunk = 512

// Write applies a batch of updates with the requested atomicity.
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	if err := s.arb.allow(req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	atomic := false
	switch a := req.GetAtomicity(); a {
	case p4v1.WriteRequest_CONTINUE_ON_ERROR:
	case p4v1.WriteRequest_ROLLBACK_ON_ERROR, p4v1.WriteRequest_DATAPLANE_ATOMIC:
		atomic = true
	default:
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "atomicity %v is not valid", a)
	}
	ups := req.GetUpdates()
	errs := make([]error, len(ups))
	failed := 0
	s.mu.Lock()
	if s.dev == nil {
		s.mu.Unlock()
		return nil, grpcstatus.Error(codes.FailedPrecondition, "no forwarding pipeline is set")
	}
	if !atomic {
		for i, u := range ups {
			if errs[i] = s.apply(u); errs[i] != nil {
				failed++
			}
		}
	} else {
		failed = s.applyAtomic(ups, errs)
	}
	s.mu.Unlock()
	if failed == 0 {
		return &p4v1.WriteResponse{}, nil
	}
	return nil, batchError(fmt.Sprintf("write: %d of %d updates failed", failed, len(errs)), "update", errs)
}

// applyAtomic applies the updates in order until one fails, then undoes
// the applied ones in reverse order (called with s.mu held). The data
// plane takes s.mu for every frame, so no packet sees the batch half
// done: this is both ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC. It returns
// the number of updates reported as failed: on failure every update of
// the batch, the one that failed with its own error and the others
// ABORTED (rolled back, or not attempted).
func (s *Server) applyAtomic(ups []*p4v1.Update, errs []error) int {
	undo := make([]func() error, 0, len(ups))
	bad := -1
	for i, u := range ups {
		un, err := s.undoFor(u)
		if err == nil {
			err = s.apply(u)
		}
		if err != nil {
			errs[i], bad = err, i
			break
		}
		undo = append(undo, un)
	}
	if bad < 0 {
		return 0
	}
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i](); err != nil {
			// The state is now neither before nor after the batch:
			// say so on every update.
			for j := range errs {
				if j != bad {
					errs[j] = grpcstatus.Errorf(codes.Internal, "rolling back update %d failed: %v", i, err)
				}
			}
			return len(errs)
		}
	}
	for j := range errs {
		switch {
		case j < bad:
			errs[j] = grpcstatus.Errorf(codes.Aborted, "rolled back: update %d failed", bad)
		case j > bad:
			errs[j] = grpcstatus.Errorf(codes.Aborted, "not attempted: update %d failed", bad)
		}
	}
	return len(errs)
}

// undoFor returns the writes that restore what u changes, from the state
// before u (called with s.mu held). An error means u would fail: it is
// reported as u's error.
func (s *Server) undoFor(u *p4v1.Update) (func() error, error) {
	var entities []*p4v1.Entity
	ent := u.GetEntity()
	e := ent.GetEntity()
	if e == nil {
		return nil, grpcstatus.Error(codes.InvalidArgument, "update has no entity")
	}
	// restore writes back what a read of ent returned before u.
	restore := func(t p4v1.Update_Type) func() error {
		return func() error {
			for _, x := range entities {
				if err := s.apply(&p4v1.Update{Type: t, Entity: x}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	switch x := e.(type) {
	case *p4v1.Entity_TableEntry:
		te := x.TableEntry
		if te.GetIsDefaultAction() {
			if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: te.GetTableId(), IsDefaultAction: true}}}, &entities); err != nil {
				return nil, err
			}
			return restore(p4v1.Update_MODIFY), nil
		}
		if u.GetType() == p4v1.Update_INSERT {
			del := &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{TableId: te.GetTableId(), Match: te.GetMatch(), Priority: te.GetPriority()}}}
			return func() error { return s.apply(&p4v1.Update{Type: p4v1.Update_DELETE, Entity: del}) }, nil
		}
		f := &p4v1.TableEntry{TableId: te.GetTableId(), Match: te.GetMatch(), Priority: te.GetPriority(), CounterData: &p4v1.CounterData{}, MeterConfig: &p4v1.MeterConfig{}}
		if len(f.Match) == 0 {
			return nil, grpcstatus.Errorf(codes.InvalidArgument, "table id %d: %v of an entry without match fields", te.GetTableId(), u.GetType())
		}
		if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: f}}, &entities); err != nil {
			return nil, err
		}
		if u.GetType() == p4v1.Update_DELETE {
			return restore(p4v1.Update_INSERT), nil
		}
		if te.GetMeterConfig() != nil && len(entities) == 1 {
			// MODIFY restores the old meter config only when there was
			// one: clear it through the DirectMeterEntry.
			old := entities[0].GetTableEntry()
			meter := &p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: &p4v1.DirectMeterEntry{
				TableEntry: &p4v1.TableEntry{TableId: old.GetTableId(), Match: old.GetMatch(), Priority: old.GetPriority()}, Config: old.GetMeterConfig()}}}
			entities = append(entities, meter)
		}
		return restore(p4v1.Update_MODIFY), nil
	case *p4v1.Entity_PacketReplicationEngineEntry:
		pre := x.PacketReplicationEngineEntry
		key := proto.Clone(pre).(*p4v1.PacketReplicationEngineEntry)
		switch k := key.GetType().(type) {
		case *p4v1.PacketReplicationEngineEntry_MulticastGroupEntry:
			if k.MulticastGroupEntry.GetMulticastGroupId() == 0 {
				return nil, grpcstatus.Error(codes.InvalidArgument, "multicast_group_id 0 is reserved for wildcard reads")
			}
			k.MulticastGroupEntry.Replicas, k.MulticastGroupEntry.Metadata = nil, nil
		case *p4v1.PacketReplicationEngineEntry_CloneSessionEntry:
			if k.CloneSessionEntry.GetSessionId() == 0 {
				return nil, grpcstatus.Error(codes.InvalidArgument, "session_id 0 is reserved for wildcard reads")
			}
			k.CloneSessionEntry = &p4v1.CloneSessionEntry{SessionId: k.CloneSessionEntry.GetSessionId()}
		}
		keyEnt := &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: key}}
		return s.undoByKey(u.GetType(), keyEnt, &entities, restore)
	case *p4v1.Entity_RegisterEntry:
		f := proto.Clone(x.RegisterEntry).(*p4v1.RegisterEntry)
		f.Data = nil
		if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: f}}, &entities); err != nil {
			return nil, err
		}
	case *p4v1.Entity_CounterEntry:
		f := proto.Clone(x.CounterEntry).(*p4v1.CounterEntry)
		f.Data = nil
		if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: f}}, &entities); err != nil {
			return nil, err
		}
	case *p4v1.Entity_DirectCounterEntry:
		f := &p4v1.DirectCounterEntry{TableEntry: x.DirectCounterEntry.GetTableEntry()}
		if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: f}}, &entities); err != nil {
			return nil, err
		}
	case *p4v1.Entity_ActionProfileMember:
		m := x.ActionProfileMember
		key := &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: &p4v1.ActionProfileMember{ActionProfileId: m.GetActionProfileId(), MemberId: m.GetMemberId()}}}
		return s.undoByKey(u.GetType(), key, &entities, restore)
	case *p4v1.Entity_ActionProfileGroup:
		g := x.ActionProfileGroup
		key := &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: &p4v1.ActionProfileGroup{ActionProfileId: g.GetActionProfileId(), GroupId: g.GetGroupId()}}}
		return s.undoByKey(u.GetType(), key, &entities, restore)
	case *p4v1.Entity_DigestEntry:
		un, err := s.dg.undo(u.GetType(), x.DigestEntry)
		if err != nil || un == nil {
			return func() error { return nil }, err
		}
		return func() error { return s.apply(un) }, nil
	case *p4v1.Entity_MeterEntry:
		f := &p4v1.MeterEntry{MeterId: x.MeterEntry.GetMeterId(), Index: x.MeterEntry.GetIndex()}
		if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: f}}, &entities); err != nil {
			return nil, err
		}
	case *p4v1.Entity_DirectMeterEntry:
		te := x.DirectMeterEntry.GetTableEntry()
		if len(te.GetMatch()) == 0 {
			return nil, grpcstatus.Error(codes.InvalidArgument, "direct meter entry needs the table entry's match fields")
		}
		f := &p4v1.DirectMeterEntry{TableEntry: te}
		if err := s.read(&p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: f}}, &entities); err != nil {
			return nil, err
		}
	default:
		// Entities this target has no instances of: the update fails
		// and changes nothing.
		return func() error { return nil }, nil
	}
	return restore(p4v1.Update_MODIFY), nil
}

// undoByKey is the undo of an update of an entity with a key (key: the
// entity with its key fields only): INSERT is undone by a DELETE of the
// key, MODIFY and DELETE by writing back what a read of the key returns.
func (s *Server) undoByKey(ut p4v1.Update_Type, key *p4v1.Entity, entities *[]*p4v1.Entity, restore func(p4v1.Update_Type) func() error) (func() error, error) {
	if ut == p4v1.Update_INSERT {
		return func() error { return s.apply(&p4v1.Update{Type: p4v1.Update_DELETE, Entity: key}) }, nil
	}
	if err := s.read(key, entities); err != nil {
		return nil, err
	}
	if ut == p4v1.Update_DELETE {
		return restore(p4v1.Update_INSERT), nil
	}
	return restore(p4v1.Update_MODIFY), nil
}

// apply applies one update (called with s.mu held).
func (s *Server) apply(u *p4v1.Update) error {
	ut := u.GetType()
	if ut == p4v1.Update_UNSPECIFIED {
		return grpcstatus.Error(codes.InvalidArgument, "update type is unspecified")
	}
	modifyOnly := func(kind string) error {
		if ut != p4v1.Update_MODIFY {
			return grpcstatus.Errorf(codes.InvalidArgument, "%s can only be modified, not %v", kind, ut)
		}
		return nil
	}
	switch e := u.GetEntity().GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		if err := s.dev.WriteTableEntry(ut, e.TableEntry); err != nil {
			return err
		}
		if e.TableEntry.GetIdleTimeoutNs() > 0 {
			select {
			case s.idle <- struct{}{}:
			default:
			}
		}
		return nil
	case *p4v1.Entity_RegisterEntry:
		if err := modifyOnly("register entries"); err != nil {
			return err
		}
		return s.dev.WriteRegisterEntry(e.RegisterEntry)
	case *p4v1.Entity_CounterEntry:
		if err := modifyOnly("counter entries"); err != nil {
			return err
		}
		return s.dev.WriteCounterEntry(e.CounterEntry)
	case *p4v1.Entity_DirectCounterEntry:
		if err := modifyOnly("direct counter entries"); err != nil {
			return err
		}
		return s.dev.WriteDirectCounterEntry(e.DirectCounterEntry)
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return s.dev.WritePREEntry(ut, e.PacketReplicationEngineEntry)
	case *p4v1.Entity_ActionProfileMember:
		return s.dev.WriteActionProfileMember(ut, e.ActionProfileMember)
	case *p4v1.Entity_ActionProfileGroup:
		return s.dev.WriteActionProfileGroup(ut, e.ActionProfileGroup)
	case *p4v1.Entity_DigestEntry:
		// Records made before this update follow the old config (a
		// digest enabled now does not learn what came before).
		s.takeDigests(time.Now().UnixNano())
		if err := s.dg.write(ut, e.DigestEntry); err != nil {
			return err
		}
		if ut == p4v1.Update_INSERT {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
		return nil
	case *p4v1.Entity_MeterEntry:
		if err := modifyOnly("meter entries"); err != nil {
			return err
		}
		return s.dev.WriteMeterEntry(e.MeterEntry)
	case *p4v1.Entity_DirectMeterEntry:
		if err := modifyOnly("direct meter entries"); err != nil {
			return err
		}
		return s.dev.WriteDirectMeterEntry(e.DirectMeterEntry)
	case nil:
		return grpcstatus.Error(codes.InvalidArgument, "update has no entity")
	default:
		return absent(e, false)
	}
}

// absent answers a write or read of an entity kind the target cannot have
// instances of (the compiler refuses programs that declare them): a
// wildcard read finds nothing, anything naming an ID is NOT_FOUND.
func absent(e any, read bool) error {
	var id uint32
	kind := fmt.Sprintf("%T", e)
	switch x := e.(type) {
	case *p4v1.Entity_ExternEntry:
		kind, id = "extern instance", x.ExternEntry.GetExternId()
	case *p4v1.Entity_ValueSetEntry:
		kind, id = "value set", x.ValueSetEntry.GetValueSetId()
	default:
		return grpcstatus.Errorf(codes.Unimplemented, "entity %s is not supported", kind)
	}
	if read && id == 0 {
		return nil
	}
	return grpcstatus.Errorf(codes.NotFound, "no %s with id %d (this target supports none)", kind, id)
}

// Read streams every entity matching the (possibly wildcard) requests of
// the batch. A request that fails does not stop the others: their
// entities are sent, and the call ends with UNKNOWN and one p4.v1.Error
// per request (P4Runtime, Read RPC, batch processing).
func (s *Server) Read(req *p4v1.ReadRequest, st p4v1.P4Runtime_ReadServer) error {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return err
	}
	var out []*p4v1.Entity
	reqs := req.GetEntities()
	errs := make([]error, len(reqs))
	failed := 0
	s.mu.Lock()
	if s.dev == nil {
		s.mu.Unlock()
		return grpcstatus.Error(codes.FailedPrecondition, "no forwarding pipeline is set")
	}
	for i, e := range reqs {
		n := len(out)
		if errs[i] = s.read(e, &out); errs[i] != nil {
			out = out[:n]
			failed++
		}
	}
	s.mu.Unlock()
	for len(out) > 0 {
		n := min(len(out), readChunk)
		if err := st.Send(&p4v1.ReadResponse{Entities: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
	}
	if failed > 0 {
		return batchError(fmt.Sprintf("read: %d of %d requests failed", failed, len(errs)), "request", errs)
	}
	return nil
}

// read appends the entities matching e (called with s.mu held). Entities
// are cloned: the device may reuse what it hands to the callback.
func (s *Server) read(e *p4v1.Entity, out *[]*p4v1.Entity) error {
	switch f := e.GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.dev.ReadTableEntries(f.TableEntry, func(t *p4v1.TableEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: proto.Clone(t).(*p4v1.TableEntry)}})
			return nil
		})
	case *p4v1.Entity_RegisterEntry:
		return s.dev.ReadRegisterEntries(f.RegisterEntry, func(r *p4v1.RegisterEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: proto.Clone(r).(*p4v1.RegisterEntry)}})
			return nil
		})
	case *p4v1.Entity_CounterEntry:
		return s.dev.ReadCounterEntries(f.CounterEntry, func(c *p4v1.CounterEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: proto.Clone(c).(*p4v1.CounterEntry)}})
			return nil
		})
	case *p4v1.Entity_DirectCounterEntry:
		return s.dev.ReadDirectCounterEntries(f.DirectCounterEntry, func(c *p4v1.DirectCounterEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_DirectCounterEntry{DirectCounterEntry: proto.Clone(c).(*p4v1.DirectCounterEntry)}})
			return nil
		})
	case *p4v1.Entity_PacketReplicationEngineEntry:
		return s.dev.ReadPREEntries(f.PacketReplicationEngineEntry, func(p *p4v1.PacketReplicationEngineEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_PacketReplicationEngineEntry{PacketReplicationEngineEntry: p}})
			return nil
		})
	case *p4v1.Entity_DigestEntry:
		return s.dg.read(f.DigestEntry, out)
	case *p4v1.Entity_ActionProfileMember:
		return s.dev.ReadActionProfileMembers(f.ActionProfileMember, func(m *p4v1.ActionProfileMember) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileMember{ActionProfileMember: m}})
			return nil
		})
	case *p4v1.Entity_ActionProfileGroup:
		return s.dev.ReadActionProfileGroups(f.ActionProfileGroup, func(g *p4v1.ActionProfileGroup) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_ActionProfileGroup{ActionProfileGroup: g}})
			return nil
		})
	case *p4v1.Entity_MeterEntry:
		return s.dev.ReadMeterEntries(f.MeterEntry, func(m *p4v1.MeterEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_MeterEntry{MeterEntry: m}})
			return nil
		})
	case *p4v1.Entity_DirectMeterEntry:
		return s.dev.ReadDirectMeterEntries(f.DirectMeterEntry, func(m *p4v1.DirectMeterEntry) error {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_DirectMeterEntry{DirectMeterEntry: m}})
			return nil
		})
	case nil:
		return grpcstatus.Error(codes.InvalidArgument, "read entity is empty")
	default:
		return absent(f, true)
	}
}

// maxStatusBytes bounds what a failed Write or Read puts in its trailers
// (grpc-status-details-bin, base64, and grpc-message): gRPC C core (grpcio,
// used by p4runtime-shell and finsy) accepts 8 KiB of metadata by default,
// and grpc-go is moving to the same limit; a status above the client's
// limit does not arrive at all (the stream is reset, the client sees
// INTERNAL). The spec's guideline is that clients raise the limit; this
// server instead keeps the answer readable at the default:
//
//  1. every per-update p4.v1.Error with its message, if that fits;
//  2. else every per-update code, with the message of the first failure
//     only, if that fits;
//  3. else no details: the status message names the number of failures,
//     the first failure's index, code and message, and the indexes and
//     codes of as many further failures as fit.
const maxStatusBytes = 7 << 10

// batchError builds the UNKNOWN status of a batch with per-item errors.
func batchError(summary, item string, errs []error) error {
	full := make([]*p4v1.Error, len(errs))
	short := make([]*p4v1.Error, len(errs))
	first := -1
	for i, err := range errs {
		full[i] = &p4v1.Error{CanonicalCode: int32(codes.OK)}
		short[i] = full[i]
		if err != nil {
			es := grpcstatus.Convert(err)
			full[i] = &p4v1.Error{CanonicalCode: int32(es.Code()), Message: es.Message()}
			short[i] = &p4v1.Error{CanonicalCode: int32(es.Code())}
			if first < 0 {
				first = i
				short[i] = full[i]
			}
		}
	}
	for _, details := range [][]*p4v1.Error{full, short} {
		st, err := grpcstatus.New(codes.Unknown, summary).WithDetails(protoV1(details)...)
		if err != nil {
			return grpcstatus.Error(codes.Internal, err.Error())
		}
		if statusSize(st) <= maxStatusBytes {
			return st.Err()
		}
	}
	var b strings.Builder
	fe := grpcstatus.Convert(errs[first])
	fmt.Fprintf(&b, "%s (per-%s errors do not fit the %d bytes of trailers a default gRPC client accepts: send smaller batches); first failure: %s %d: %s: %s",
		summary, item, maxStatusBytes, item, first, fe.Code(), truncate(fe.Message(), 512))
	more := 0
	for i := first + 1; i < len(errs); i++ {
		if errs[i] == nil {
			continue
		}
		if b.Len() > maxStatusBytes/2 {
			more++
			continue
		}
		fmt.Fprintf(&b, "; %s %d: %s", item, i, grpcstatus.Code(errs[i]))
	}
	if more > 0 {
		fmt.Fprintf(&b, "; and %d more", more)
	}
	return grpcstatus.Error(codes.Unknown, b.String())
}

// statusSize is what st takes in trailers: the details in base64 and the
// message (percent-encoding is ignored: messages are mostly ASCII).
func statusSize(st *grpcstatus.Status) int {
	n := proto.Size(st.Proto())
	return (n+2)/3*4 + len(st.Message())
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
