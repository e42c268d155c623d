package target

import (
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// Action profiles and action selectors (v1model's action_profile and
// action_selector, a table's implementation property), programmed with
// P4Runtime's ActionProfileMember, ActionProfileGroup and the one-shot
// action_profile_action_set.
//
//   - An entry of an indirect table points at a member (its action) or, for
//     a selector, at a group; a group picks one member per packet:
//     hash(selector keys) mod the group's size counted with weights, the
//     hash being the selector's algorithm over the selector keys packed
//     MSB first (as hash()), truncated to its output width. An empty group
//     is a miss (the default action runs).
//   - Selector keys are not match fields (p4c leaves them out of the
//     P4Info); they are evaluated only when a group is used.
//   - A profile serves one table (a shared one is refused at compile
//     time). Its size bounds the members and the groups, each
//     (RESOURCE_EXHAUSTED). Weights must be >= 1; watch ports and backup
//     members are UNIMPLEMENTED.
//   - A one-shot action set makes a group (selector) or a member (profile,
//     exactly one action) that belongs to the entry: it is not visible as a
//     member or group and goes with the entry; the entry reads back with
//     the action set as written.
//   - Referential integrity as the specification says: deleting a member
//     in a group or used by an entry, or a group used by an entry, is
//     FAILED_PRECONDITION; members of a group and the member or group of an
//     entry must exist (NOT_FOUND).

// apMember is an action profile member.
type apMember struct {
	id     uint32
	ai     int
	params []uint64
	action *p4v1.Action // as written (read back)
	refs   int          // groups and entries using it
}

// apGroup is an action selector group.
type apGroup struct {
	id      uint32
	members []groupMember
	picks   []*apMember // members repeated by weight
	maxSize int32
	refs    int // entries using it
}

type groupMember struct {
	m      *apMember
	weight int32
}

// profRT is the runtime state of one action profile.
type profRT struct {
	c       *externC
	t       *tableC
	members map[uint32]*apMember
	groups  map[uint32]*apGroup
}

// pick chooses the member of a group for the packet in s.
func (t *tableC) pick(s *pktState, g *apGroup) *apMember {
	if len(g.picks) == 0 {
		return nil
	}
	h := t.prof.algo(packData(s, t.selKeys)) & mask(t.prof.outW)
	return g.picks[h%uint64(len(g.picks))]
}

// resolve returns the action of an indirect entry (ok false: a miss).
func (t *tableC) resolve(s *pktState, e *entry) (int, []uint64, bool) {
	if e.grp != nil {
		m := t.pick(s, e.grp)
		if m == nil {
			return 0, nil, false
		}
		return m.ai, m.params, true
	}
	return e.mem.ai, e.mem.params, true
}

func (d *Device) profByID(id uint32) (*profRT, error) {
	for _, p := range d.profs {
		if p.c.id == id {
			return p, nil
		}
	}
	return nil, errf(codes.NotFound, "no action profile with id %d", id)
}

// WriteActionProfileMember applies one update to a member.
func (d *Device) WriteActionProfileMember(ut p4v1.Update_Type, m *p4v1.ActionProfileMember) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.profByID(m.GetActionProfileId())
	if err != nil {
		return err
	}
	what := fmt.Sprintf("action profile %s member %d", p.c.name, m.GetMemberId())
	return writeByID(p.members, ut, m.GetMemberId(), what, func(old *apMember, exists bool) (*apMember, error) {
		if m.GetAction() == nil {
			return nil, errf(codes.InvalidArgument, "%s: no action", what)
		}
		if !exists && len(p.members) >= p.c.size {
			return nil, errf(codes.ResourceExhausted, "action profile %s is full (%d members)", p.c.name, p.c.size)
		}
		ai, params, err := d.resolveAction(p.t, &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: m.GetAction()}}, false)
		if err != nil {
			return nil, err
		}
		if !exists {
			old = &apMember{id: m.GetMemberId()}
		}
		// In place: groups and entries hold the member.
		old.ai, old.params, old.action = ai, params, proto.Clone(m.GetAction()).(*p4v1.Action)
		return old, nil
	}, func(old *apMember) error {
		if old.refs > 0 {
			return errf(codes.FailedPrecondition, "%s is used by %d groups or entries", what, old.refs)
		}
		return nil
	})
}

// buildGroup checks a group's members and makes its picks.
func (p *profRT) buildGroup(g *p4v1.ActionProfileGroup, what string) ([]groupMember, []*apMember, error) {
	if g.GetMaxSize() < 0 {
		return nil, nil, errf(codes.InvalidArgument, "%s: negative max_size", what)
	}
	if ms := g.GetMaxSize(); ms > 0 && len(g.GetMembers()) > int(ms) {
		return nil, nil, errf(codes.ResourceExhausted, "%s: %d members, max_size %d", what, len(g.GetMembers()), ms)
	}
	var out []groupMember
	var picks []*apMember
	seen := map[uint32]bool{}
	for _, gm := range g.GetMembers() {
		if gm.GetWatchKind() != nil {
			return nil, nil, errf(codes.Unimplemented, "%s: watch ports are not supported", what)
		}
		if gm.GetWeight() < 1 {
			return nil, nil, errf(codes.InvalidArgument, "%s: member %d has weight %d (at least 1)", what, gm.GetMemberId(), gm.GetWeight())
		}
		if seen[gm.GetMemberId()] {
			return nil, nil, errf(codes.InvalidArgument, "%s: member %d given twice", what, gm.GetMemberId())
		}
		seen[gm.GetMemberId()] = true
		m := p.members[gm.GetMemberId()]
		if m == nil {
			return nil, nil, errf(codes.NotFound, "%s: member %d does not exist", what, gm.GetMemberId())
		}
		if len(picks)+int(gm.GetWeight()) > maxGroupPicks {
			return nil, nil, errf(codes.ResourceExhausted, "%s: weights add up to more than %d", what, maxGroupPicks)
		}
		out = append(out, groupMember{m: m, weight: gm.GetWeight()})
		for i := int32(0); i < gm.GetWeight(); i++ {
			picks = append(picks, m)
		}
	}
	return out, picks, nil
}

// maxGroupPicks bounds the sum of a group's weights.
const maxGroupPicks = 1 << 16

func (g *apGroup) setMembers(ms []groupMember, picks []*apMember) {
	for _, x := range g.members {
		x.m.refs--
	}
	g.members, g.picks = ms, picks
	for _, x := range g.members {
		x.m.refs++
	}
}

// WriteActionProfileGroup applies one update to a selector group.
func (d *Device) WriteActionProfileGroup(ut p4v1.Update_Type, g *p4v1.ActionProfileGroup) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, err := d.profByID(g.GetActionProfileId())
	if err != nil {
		return err
	}
	if !p.c.selector {
		return errf(codes.InvalidArgument, "action profile %s has no selector: it has no groups", p.c.name)
	}
	what := fmt.Sprintf("action selector %s group %d", p.c.name, g.GetGroupId())
	return writeByID(p.groups, ut, g.GetGroupId(), what, func(old *apGroup, exists bool) (*apGroup, error) {
		if exists && old.maxSize != g.GetMaxSize() {
			return nil, errf(codes.InvalidArgument, "%s: max_size cannot change (%d, was %d)", what, g.GetMaxSize(), old.maxSize)
		}
		if !exists && len(p.groups) >= p.c.size {
			return nil, errf(codes.ResourceExhausted, "action selector %s is full (%d groups)", p.c.name, p.c.size)
		}
		ms, picks, err := p.buildGroup(g, what)
		if err != nil {
			return nil, err
		}
		if !exists {
			old = &apGroup{id: g.GetGroupId(), maxSize: g.GetMaxSize()}
		}
		old.setMembers(ms, picks)
		return old, nil
	}, func(old *apGroup) error {
		if old.refs > 0 {
			return errf(codes.FailedPrecondition, "%s is used by %d entries", what, old.refs)
		}
		old.setMembers(nil, nil)
		return nil
	})
}

// ReadActionProfileMembers calls fn for the members filter selects
// (action_profile_id 0: every profile; member_id 0: every member).
func (d *Device) ReadActionProfileMembers(filter *p4v1.ActionProfileMember, fn func(*p4v1.ActionProfileMember) error) error {
	var out []*p4v1.ActionProfileMember
	err := d.eachProfile(filter.GetActionProfileId(), func(p *profRT) error {
		for _, id := range sortedIDs(p.members, filter.GetMemberId()) {
			m := p.members[id]
			out = append(out, &p4v1.ActionProfileMember{ActionProfileId: p.c.id, MemberId: id, Action: proto.Clone(m.action).(*p4v1.Action)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A named member that no profile read holds: with action_profile_id 0
	// it may be in any profile, so the check waits for all of them.
	if filter.GetMemberId() != 0 && len(out) == 0 {
		return errf(codes.NotFound, "action profile %s: member %d does not exist", d.profileName(filter.GetActionProfileId()), filter.GetMemberId())
	}
	return each(out, fn)
}

// ReadActionProfileGroups calls fn for the groups filter selects.
func (d *Device) ReadActionProfileGroups(filter *p4v1.ActionProfileGroup, fn func(*p4v1.ActionProfileGroup) error) error {
	var out []*p4v1.ActionProfileGroup
	err := d.eachProfile(filter.GetActionProfileId(), func(p *profRT) error {
		for _, id := range sortedIDs(p.groups, filter.GetGroupId()) {
			g := p.groups[id]
			pg := &p4v1.ActionProfileGroup{ActionProfileId: p.c.id, GroupId: id, MaxSize: g.maxSize}
			for _, x := range g.members {
				pg.Members = append(pg.Members, &p4v1.ActionProfileGroup_Member{MemberId: x.m.id, Weight: x.weight})
			}
			out = append(out, pg)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if filter.GetGroupId() != 0 && len(out) == 0 {
		return errf(codes.NotFound, "action selector %s: group %d does not exist", d.profileName(filter.GetActionProfileId()), filter.GetGroupId())
	}
	return each(out, fn)
}

// eachProfile calls fn, with d.mu held, for profile id (0: every one).
func (d *Device) eachProfile(id uint32, fn func(*profRT) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ps := d.profs
	if id != 0 {
		p, err := d.profByID(id)
		if err != nil {
			return err
		}
		ps = []*profRT{p}
	}
	for _, p := range ps {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// profileName names the profile a read filter selects: its P4Info name,
// or "(any)" for action_profile_id 0.
func (d *Device) profileName(id uint32) string {
	if id == 0 {
		return "(any)"
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, err := d.profByID(id); err == nil {
		return p.c.name
	}
	return fmt.Sprint(id)
}

// indirectAction resolves the action of an entry of an indirect table: a
// member, a group or a one-shot action set (called with d.mu held).
func (d *Device) indirectAction(t *tableC, ta *p4v1.TableAction, e *entry) error {
	p := d.profs[t.prof.idx]
	switch a := ta.GetType().(type) {
	case *p4v1.TableAction_ActionProfileMemberId:
		m := p.members[a.ActionProfileMemberId]
		if m == nil {
			return errf(codes.NotFound, "table %s: member %d does not exist", t.name, a.ActionProfileMemberId)
		}
		e.mem = m
	case *p4v1.TableAction_ActionProfileGroupId:
		if !t.prof.selector {
			return errf(codes.InvalidArgument, "table %s: its action profile has no groups", t.name)
		}
		g := p.groups[a.ActionProfileGroupId]
		if g == nil {
			return errf(codes.NotFound, "table %s: group %d does not exist", t.name, a.ActionProfileGroupId)
		}
		e.grp = g
	case *p4v1.TableAction_ActionProfileActionSet:
		acts := a.ActionProfileActionSet.GetActionProfileActions()
		if len(acts) == 0 {
			return errf(codes.InvalidArgument, "table %s: empty action set", t.name)
		}
		if !t.prof.selector && len(acts) != 1 {
			return errf(codes.InvalidArgument, "table %s: an action profile without selector takes one action, got %d", t.name, len(acts))
		}
		g := &apGroup{}
		var ms []groupMember
		var picks []*apMember
		for _, x := range acts {
			if x.GetWatchKind() != nil {
				return errf(codes.Unimplemented, "table %s: watch ports are not supported", t.name)
			}
			w := x.GetWeight()
			if t.prof.selector && w < 1 {
				return errf(codes.InvalidArgument, "table %s: action set weight %d (at least 1)", t.name, w)
			}
			if len(picks)+int(max(w, 1)) > maxGroupPicks {
				return errf(codes.ResourceExhausted, "table %s: weights add up to more than %d", t.name, maxGroupPicks)
			}
			ai, params, err := d.resolveAction(t, &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: x.GetAction()}}, false)
			if err != nil {
				return err
			}
			m := &apMember{ai: ai, params: params}
			ms = append(ms, groupMember{m: m, weight: w})
			for i := int32(0); i < max(w, 1); i++ {
				picks = append(picks, m)
			}
		}
		if t.prof.selector {
			g.setMembers(ms, picks)
			e.grp = g
		} else {
			e.mem = ms[0].m
		}
		e.oneShot = proto.Clone(a.ActionProfileActionSet).(*p4v1.ActionProfileActionSet)
		return nil
	case *p4v1.TableAction_Action:
		return errf(codes.InvalidArgument, "table %s has an action profile: give a member, a group or an action set, not an action", t.name)
	default:
		return errf(codes.InvalidArgument, "table %s: entry has no action", t.name)
	}
	e.ref(1)
	return nil
}

// ref adds n to the reference count of the member or group an entry
// uses (one-shot sets are the entry's own).
func (e *entry) ref(n int) {
	if e.oneShot != nil {
		return
	}
	switch {
	case e.grp != nil:
		e.grp.refs += n
	case e.mem != nil:
		e.mem.refs += n
	}
}

// indirectProto is the table action of an indirect entry as written.
func indirectProto(e *entry) *p4v1.TableAction {
	switch {
	case e.oneShot != nil:
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileActionSet{ActionProfileActionSet: proto.Clone(e.oneShot).(*p4v1.ActionProfileActionSet)}}
	case e.grp != nil:
		return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: e.grp.id}}
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileMemberId{ActionProfileMemberId: e.mem.id}}
}
