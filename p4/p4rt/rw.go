package p4rt

import (
	"context"
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// readChunk is the number of entities per ReadResponse.
const readChunk = 512

// Write applies a batch of updates (CONTINUE_ON_ERROR).
func (s *Server) Write(_ context.Context, req *p4v1.WriteRequest) (*p4v1.WriteResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	if err := s.arb.allow(req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	if a := req.GetAtomicity(); a != p4v1.WriteRequest_CONTINUE_ON_ERROR {
		return nil, grpcstatus.Errorf(codes.Unimplemented, "atomicity %v is not supported (CONTINUE_ON_ERROR only)", a)
	}
	s.mu.Lock()
	if s.dev == nil {
		s.mu.Unlock()
		return nil, grpcstatus.Error(codes.FailedPrecondition, "no forwarding pipeline is set")
	}
	errs := make([]error, len(req.GetUpdates()))
	failed := 0
	for i, u := range req.GetUpdates() {
		if errs[i] = s.apply(u); errs[i] != nil {
			failed++
		}
	}
	s.mu.Unlock()
	if failed == 0 {
		return &p4v1.WriteResponse{}, nil
	}
	st := grpcstatus.New(codes.Unknown, fmt.Sprintf("write: %d of %d updates failed", failed, len(errs)))
	details := make([]*p4v1.Error, len(errs))
	for i, err := range errs {
		details[i] = &p4v1.Error{CanonicalCode: int32(codes.OK)}
		if err != nil {
			es := grpcstatus.Convert(err)
			details[i] = &p4v1.Error{CanonicalCode: int32(es.Code()), Message: es.Message()}
		}
	}
	withDetails, err := st.WithDetails(protoV1(details)...)
	if err != nil {
		return nil, st.Err()
	}
	return nil, withDetails.Err()
}

// apply applies one update (called with s.mu held).
func (s *Server) apply(u *p4v1.Update) error {
	if u.GetType() == p4v1.Update_UNSPECIFIED {
		return grpcstatus.Error(codes.InvalidArgument, "update type is unspecified")
	}
	switch e := u.GetEntity().GetEntity().(type) {
	case *p4v1.Entity_TableEntry:
		return s.dev.WriteTableEntry(u.GetType(), e.TableEntry)
	case *p4v1.Entity_RegisterEntry:
		if u.GetType() != p4v1.Update_MODIFY {
			return grpcstatus.Errorf(codes.InvalidArgument, "register entries can only be modified, not %v", u.GetType())
		}
		return s.dev.WriteRegisterEntry(e.RegisterEntry)
	case *p4v1.Entity_CounterEntry:
		if u.GetType() != p4v1.Update_MODIFY {
			return grpcstatus.Errorf(codes.InvalidArgument, "counter entries can only be modified, not %v", u.GetType())
		}
		return s.dev.WriteCounterEntry(e.CounterEntry)
	case *p4v1.Entity_DirectCounterEntry:
		if u.GetType() != p4v1.Update_MODIFY {
			return grpcstatus.Errorf(codes.InvalidArgument, "direct counter entries can only be modified, not %v", u.GetType())
		}
		return s.dev.WriteDirectCounterEntry(e.DirectCounterEntry)
	case nil:
		return grpcstatus.Error(codes.InvalidArgument, "update has no entity")
	default:
		return grpcstatus.Errorf(codes.Unimplemented, "writing %T is not supported", e)
	}
}

// Read streams every entity matching the (possibly wildcard) request.
func (s *Server) Read(req *p4v1.ReadRequest, st p4v1.P4Runtime_ReadServer) error {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return err
	}
	var out []*p4v1.Entity
	s.mu.Lock()
	if s.dev == nil {
		s.mu.Unlock()
		return grpcstatus.Error(codes.FailedPrecondition, "no forwarding pipeline is set")
	}
	var err error
	for _, e := range req.GetEntities() {
		if err = s.read(e, &out); err != nil {
			break
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for len(out) > 0 {
		n := min(len(out), readChunk)
		if err := st.Send(&p4v1.ReadResponse{Entities: out[:n]}); err != nil {
			return err
		}
		out = out[n:]
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
	case nil:
		return grpcstatus.Error(codes.InvalidArgument, "read entity is empty")
	default:
		return grpcstatus.Errorf(codes.Unimplemented, "reading %T is not supported", f)
	}
}
