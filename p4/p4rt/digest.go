package p4rt

import (
	"encoding/binary"
	"sort"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/swordbox/swordbox/p4/target"
)

// digests is the P4Runtime side of digests (DigestEntry, DigestList,
// DigestListAck), as the specification's pseudo-code describes it: per
// digest, a buffer of distinct messages not in the cache, sent as a
// DigestList when it holds max_list_size messages or its oldest message
// has waited max_timeout_ns; a cache of the messages sent and not yet
// acknowledged, emptied per list by a matching DigestListAck or after
// ack_timeout_ns. It is deterministic: time comes in as an argument (now,
// nanoseconds), and the server's shell drives it.
type digests struct {
	known map[uint32]bool // digest IDs of the pipeline
	on    map[uint32]*digestState
	ready []*p4v1.DigestList // lists made by add, not yet taken by due
}

type digestState struct {
	cfg     *p4v1.DigestEntry_Config
	buf     []*p4v1.P4Data
	bufKeys map[string]bool
	first   int64 // when the first message entered the empty buffer
	cache   map[string]uint64
	lists   map[uint64]*sentList
	nextID  uint64
}

type sentList struct {
	keys []string
	at   int64
}

func newDigests(info *configv1.P4Info) *digests {
	d := &digests{known: map[uint32]bool{}, on: map[uint32]*digestState{}}
	for _, x := range info.GetDigests() {
		d.known[x.GetPreamble().GetId()] = true
	}
	return d
}

// write applies a DigestEntry update.
func (d *digests) write(ut p4v1.Update_Type, e *p4v1.DigestEntry) error {
	id := e.GetDigestId()
	if !d.known[id] {
		return grpcstatus.Errorf(codes.NotFound, "no digest with id %d", id)
	}
	st := d.on[id]
	switch ut {
	case p4v1.Update_INSERT, p4v1.Update_MODIFY:
		if ut == p4v1.Update_INSERT && st != nil {
			return grpcstatus.Errorf(codes.AlreadyExists, "digest %d is already enabled", id)
		}
		if ut == p4v1.Update_MODIFY && st == nil {
			return grpcstatus.Errorf(codes.NotFound, "digest %d is not enabled", id)
		}
		c := e.GetConfig()
		if c == nil {
			return grpcstatus.Errorf(codes.InvalidArgument, "digest %d: config is missing", id)
		}
		if c.GetMaxTimeoutNs() < 0 || c.GetMaxListSize() < 0 || c.GetAckTimeoutNs() < 0 {
			return grpcstatus.Errorf(codes.InvalidArgument, "digest %d: negative config value %v", id, c)
		}
		cfg := proto.Clone(c).(*p4v1.DigestEntry_Config)
		if st == nil {
			d.on[id] = &digestState{cfg: cfg, bufKeys: map[string]bool{}, cache: map[string]uint64{}, lists: map[uint64]*sentList{}}
		} else {
			st.cfg = cfg
		}
	case p4v1.Update_DELETE:
		if st == nil {
			return grpcstatus.Errorf(codes.NotFound, "digest %d is not enabled", id)
		}
		delete(d.on, id)
	default:
		return grpcstatus.Errorf(codes.InvalidArgument, "unknown update type %v", ut)
	}
	return nil
}

// read returns the enabled digests filter selects (digest_id 0: all).
func (d *digests) read(filter *p4v1.DigestEntry, out *[]*p4v1.Entity) error {
	id := filter.GetDigestId()
	if id != 0 && !d.known[id] {
		return grpcstatus.Errorf(codes.NotFound, "no digest with id %d", id)
	}
	if id != 0 && d.on[id] == nil {
		return grpcstatus.Errorf(codes.NotFound, "digest %d is not enabled", id)
	}
	for _, k := range sortedKeys(d.on) {
		if id == 0 || k == id {
			*out = append(*out, &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{
				DigestId: k, Config: proto.Clone(d.on[k].cfg).(*p4v1.DigestEntry_Config)}}})
		}
	}
	return nil
}

// add takes one data-plane record; the buffer becomes a list (handed out
// by the next due) when it holds max_list_size distinct messages. Records
// of a digest that is not enabled are dropped.
func (d *digests) add(id uint32, vals []uint64, now int64) {
	st := d.on[id]
	if st == nil {
		return
	}
	key := digestKey(vals)
	if _, sent := st.cache[key]; sent || st.bufKeys[key] {
		return
	}
	if len(st.buf) == 0 {
		st.first = now
	}
	st.buf = append(st.buf, target.DigestData(vals))
	st.bufKeys[key] = true
	if n := st.cfg.GetMaxListSize(); n > 0 && len(st.buf) >= int(n) {
		d.ready = append(d.ready, st.send(id, now))
	}
}

func digestKey(vals []uint64) string {
	b := make([]byte, 0, 8*len(vals))
	for _, v := range vals {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return string(b)
}

// send turns the buffer into a DigestList and moves its messages into the
// cache (unless ack_timeout_ns is 0: the cache stays empty).
func (st *digestState) send(id uint32, now int64) *p4v1.DigestList {
	st.nextID++
	l := &p4v1.DigestList{DigestId: id, ListId: st.nextID, Data: st.buf, Timestamp: now}
	keys := make([]string, 0, len(st.bufKeys))
	for k := range st.bufKeys {
		keys = append(keys, k)
	}
	if st.cfg.GetAckTimeoutNs() > 0 {
		for _, k := range keys {
			st.cache[k] = st.nextID
		}
		st.lists[st.nextID] = &sentList{keys: keys, at: now}
	}
	st.buf, st.bufKeys = nil, map[string]bool{}
	return l
}

// due returns the lists add made full and those whose oldest message has
// waited max_timeout_ns, and forgets the cached lists older than
// ack_timeout_ns.
func (d *digests) due(now int64) []*p4v1.DigestList {
	out := d.ready
	d.ready = nil
	for _, id := range sortedKeys(d.on) {
		st := d.on[id]
		for lid, l := range st.lists {
			if now-l.at >= st.cfg.GetAckTimeoutNs() {
				st.forget(lid)
			}
		}
		if len(st.buf) > 0 && now-st.first >= st.cfg.GetMaxTimeoutNs() {
			out = append(out, st.send(id, now))
		}
	}
	return out
}

func (st *digestState) forget(lid uint64) {
	l := st.lists[lid]
	if l == nil {
		return
	}
	for _, k := range l.keys {
		if st.cache[k] == lid {
			delete(st.cache, k)
		}
	}
	delete(st.lists, lid)
}

// ack handles a DigestListAck: the list's messages leave the cache.
func (d *digests) ack(a *p4v1.DigestListAck) error {
	st := d.on[a.GetDigestId()]
	if st == nil {
		return grpcstatus.Errorf(codes.NotFound, "digest %d is not enabled", a.GetDigestId())
	}
	st.forget(a.GetListId())
	return nil
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// digestUndo returns the update that restores a DigestEntry's state.
func (d *digests) undo(ut p4v1.Update_Type, e *p4v1.DigestEntry) (*p4v1.Update, error) {
	id := e.GetDigestId()
	st := d.on[id]
	ent := func(cfg *p4v1.DigestEntry_Config) *p4v1.Entity {
		return &p4v1.Entity{Entity: &p4v1.Entity_DigestEntry{DigestEntry: &p4v1.DigestEntry{DigestId: id, Config: cfg}}}
	}
	switch {
	case st == nil && ut == p4v1.Update_INSERT:
		return &p4v1.Update{Type: p4v1.Update_DELETE, Entity: ent(nil)}, nil
	case st != nil && ut == p4v1.Update_MODIFY:
		return &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: ent(proto.Clone(st.cfg).(*p4v1.DigestEntry_Config))}, nil
	case st != nil && ut == p4v1.Update_DELETE:
		return &p4v1.Update{Type: p4v1.Update_INSERT, Entity: ent(proto.Clone(st.cfg).(*p4v1.DigestEntry_Config))}, nil
	}
	// The update will fail: nothing to undo.
	return nil, nil
}
