package p4rt

import (
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// electionID is a 128-bit election ID.
type electionID struct{ hi, lo uint64 }

func (a electionID) less(b electionID) bool {
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo)
}

func electionOf(u *p4v1.Uint128) (electionID, bool) {
	if u == nil {
		return electionID{}, false
	}
	return electionID{u.GetHigh(), u.GetLow()}, true
}

// conn is one StreamChannel: its arbitration state and its outgoing queue.
type conn struct {
	role        string
	hasElection bool
	election    electionID
	initialized bool
	out         chan *p4v1.StreamMessageResponse // drained by the stream's sender goroutine
	done        chan struct{}                    // closed when the stream ends
}

// send queues m for the stream and reports whether it was queued. Arbitration updates must not be lost, so
// they wait for room; packets are dropped when the queue is full, as a NIC
// queue would.
func (c *conn) send(m *p4v1.StreamMessageResponse, mustDeliver bool) bool {
	if mustDeliver {
		select {
		case c.out <- m:
			return true
		case <-c.done:
			return false
		}
	}
	select {
	case c.out <- m:
		return true
	default:
		return false
	}
}

// arbiter implements P4Runtime client arbitration (spec section 5): per
// role, the highest election ID ever accepted is remembered; a stream whose
// ID is at least that high becomes primary; when the primary leaves, no one
// is primary until a client (re)announces an ID at least as high. Every
// change of primary is announced to every stream of the role.
type arbiter struct {
	mu       sync.Mutex
	deviceID uint64
	conns    map[*conn]struct{}
	highest  map[string]electionID // role -> highest election ID accepted
}

func newArbiter(deviceID uint64) *arbiter {
	return &arbiter{deviceID: deviceID, conns: map[*conn]struct{}{}, highest: map[string]electionID{}}
}

// update applies a MasterArbitrationUpdate from c. A non-nil error ends the
// stream with that status.
func (a *arbiter) update(c *conn, u *p4v1.MasterArbitrationUpdate) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	role := u.GetRole().GetName()
	if u.GetRole().GetConfig() != nil {
		return grpcstatus.Error(codes.Unimplemented, "role configs are not supported")
	}
	id, has := electionOf(u.GetElectionId())
	if !c.initialized {
		if u.GetDeviceId() != a.deviceID {
			return grpcstatus.Errorf(codes.NotFound, "arbitration for device %d: this switch is device %d", u.GetDeviceId(), a.deviceID)
		}
	} else {
		if u.GetDeviceId() != a.deviceID {
			return grpcstatus.Errorf(codes.FailedPrecondition, "arbitration cannot change the device id from %d to %d", a.deviceID, u.GetDeviceId())
		}
		if role != c.role {
			return grpcstatus.Errorf(codes.FailedPrecondition, "arbitration cannot change the role from %q to %q", c.role, role)
		}
	}
	if has {
		for o := range a.conns {
			if o != c && o.role == role && o.hasElection && o.election == id {
				return grpcstatus.Errorf(codes.InvalidArgument, "election id {high:%d low:%d} is already used by another client of role %q", id.hi, id.lo, role)
			}
		}
	}
	wasPrimary := c.initialized && a.isPrimaryLocked(c)
	c.role, c.hasElection, c.election = role, has, id
	if !c.initialized {
		c.initialized = true
		a.conns[c] = struct{}{}
	}
	high, seen := a.highest[role]
	if has && (!seen || !id.less(high)) {
		a.highest[role] = id
		a.announceLocked(role)
		return nil
	}
	if wasPrimary {
		a.announceLocked(role) // the primary stepped down: no primary now
		return nil
	}
	a.sendArbitrationLocked(c)
	return nil
}

// leave removes c; if it was primary, every remaining stream learns that
// there is no primary.
func (a *arbiter) leave(c *conn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !c.initialized {
		return
	}
	was := a.isPrimaryLocked(c)
	delete(a.conns, c)
	if was {
		a.announceLocked(c.role)
	}
}

func (a *arbiter) isPrimaryLocked(c *conn) bool {
	high, seen := a.highest[c.role]
	_, in := a.conns[c]
	return in && seen && c.hasElection && c.election == high
}

// primaryLocked returns the primary stream of role, or nil.
func (a *arbiter) primaryLocked(role string) *conn {
	for c := range a.conns {
		if c.role == role && a.isPrimaryLocked(c) {
			return c
		}
	}
	return nil
}

func (a *arbiter) announceLocked(role string) {
	for c := range a.conns {
		if c.role == role {
			a.sendArbitrationLocked(c)
		}
	}
}

func (a *arbiter) sendArbitrationLocked(c *conn) {
	m := &p4v1.MasterArbitrationUpdate{DeviceId: a.deviceID}
	if c.role != "" {
		m.Role = &p4v1.Role{Name: c.role}
	}
	if high, seen := a.highest[c.role]; seen {
		m.ElectionId = &p4v1.Uint128{High: high.hi, Low: high.lo}
	}
	switch p := a.primaryLocked(c.role); {
	case p == c:
		m.Status = &status.Status{Code: int32(code.Code_OK), Message: "you are the primary"}
	case p != nil:
		m.Status = &status.Status{Code: int32(code.Code_ALREADY_EXISTS), Message: "you are a backup; a primary exists"}
	default:
		m.Status = &status.Status{Code: int32(code.Code_NOT_FOUND), Message: "you are a backup; there is no primary"}
	}
	c.send(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: m}}, true)
}

// allow checks that a mutating request (Write, SetForwardingPipelineConfig)
// comes from the primary of its role: its election ID must be the role's
// highest and belong to a live stream.
func (a *arbiter) allow(role string, u *p4v1.Uint128) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, has := electionOf(u)
	if !has {
		return grpcstatus.Error(codes.PermissionDenied, "request has no election id; only the primary may write")
	}
	high, seen := a.highest[role]
	if !seen {
		return grpcstatus.Errorf(codes.PermissionDenied, "no primary client for role %q", role)
	}
	if id != high {
		return grpcstatus.Errorf(codes.PermissionDenied, "election id {high:%d low:%d} is not the primary's", id.hi, id.lo)
	}
	for c := range a.conns {
		if c.role == role && c.hasElection && c.election == id {
			return nil
		}
	}
	return grpcstatus.Errorf(codes.PermissionDenied, "the client with election id {high:%d low:%d} has no open stream", id.hi, id.lo)
}

// isPrimary reports whether c is currently the primary of its role.
func (a *arbiter) isPrimary(c *conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.isPrimaryLocked(c)
}

// primaries returns the primary stream of every role (PacketIn goes to them).
func (a *arbiter) primaries(dst []*conn) []*conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	for c := range a.conns {
		if a.isPrimaryLocked(c) {
			dst = append(dst, c)
		}
	}
	return dst
}
