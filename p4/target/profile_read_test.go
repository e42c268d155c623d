package target

import (
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A read naming a member or group id with action_profile_id 0 (every
// profile) finds it in whichever profile holds it; NotFound only when no
// profile does, or when the one profile named lacks it.
func TestReadProfileEntriesAcrossProfiles(t *testing.T) {
	p := mustCompileFile(t, "../testdata/pre.p4")
	d := NewDevice(p, Options{})
	sel := idOf(t, "profile", p.P4Info().ActionProfiles, "I.sel")
	ap := idOf(t, "profile", p.P4Info().ActionProfiles, "I.ap")
	to := &p4v1.Action{ActionId: actionID(t, p, "I.to_port"), Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{3}}}}
	// Member 7 and group 9 live in the second profile only (sel is first).
	if err := d.WriteActionProfileMember(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: ap, MemberId: 7, Action: to}); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteActionProfileMember(p4v1.Update_INSERT, &p4v1.ActionProfileMember{ActionProfileId: sel, MemberId: 1, Action: to}); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteActionProfileGroup(p4v1.Update_INSERT, &p4v1.ActionProfileGroup{ActionProfileId: sel, GroupId: 9,
		Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1, Weight: 1}}}); err != nil {
		t.Fatal(err)
	}
	members := func(prof, id uint32) (int, error) {
		n := 0
		err := d.ReadActionProfileMembers(&p4v1.ActionProfileMember{ActionProfileId: prof, MemberId: id}, func(*p4v1.ActionProfileMember) error { n++; return nil })
		return n, err
	}
	groups := func(prof, id uint32) (int, error) {
		n := 0
		err := d.ReadActionProfileGroups(&p4v1.ActionProfileGroup{ActionProfileId: prof, GroupId: id}, func(*p4v1.ActionProfileGroup) error { n++; return nil })
		return n, err
	}
	for _, c := range []struct {
		name     string
		read     func(prof, id uint32) (int, error)
		prof, id uint32
		want     int
		notFound bool
	}{
		{"member in the second profile, any profile", members, 0, 7, 1, false},
		{"member in the first profile, any profile", members, 0, 1, 1, false},
		{"member in no profile", members, 0, 8, 0, true},
		{"member not in the profile named", members, sel, 7, 0, true},
		{"every member", members, 0, 0, 2, false},
		{"group, any profile", groups, 0, 9, 1, false},
		{"group in no profile", groups, 0, 10, 0, true},
	} {
		n, err := c.read(c.prof, c.id)
		if c.notFound {
			if status.Code(err) != codes.NotFound {
				t.Errorf("%s: err %v, want NotFound", c.name, err)
			}
			continue
		}
		if err != nil || n != c.want {
			t.Errorf("%s: %d entries, err %v; want %d", c.name, n, err, c.want)
		}
	}
}
