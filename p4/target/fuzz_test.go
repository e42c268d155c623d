package target

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// FuzzCompile: the front end never panics and never fails internally; it
// either compiles or refuses with "file:line:col: reason".
func FuzzCompile(f *testing.F) {
	for _, path := range []string{"../testdata/basic_router.p4", "../swordbox.p4", "../testdata/pre.p4"} {
		if src, err := os.ReadFile(path); err == nil {
			f.Add(string(src))
		}
	}
	f.Add(infoProg)
	f.Add(fmt.Sprintf(featureTmpl, tableDecls, "tern.apply(); hdr.h.a = hdr.h.b ++ 4w1 ++ 4w2;"))
	f.Add(fmt.Sprintf(featureTmpl, "register<bit<32>>(4) r;", "bit<32> v; r.read(v, 1); hash(v, HashAlgorithm.crc16, 32w0, {hdr.h.a}, 32w7);"))
	f.Add(tnaCase{igDecls: placeDecls, igBody: "switch (t.apply().action_run) { use_a: { md.z = rb_get.execute(0); } use_b: { md.z = ra_get.execute(0); } } if (hdr.h.a == 1) { cnt.count(0); exit; } cnt.count(1);"}.src())
	f.Add("#define X 5\nconst bit<8> A = X;")
	f.Add("#if defined(X) || 1 + 2 == 3\n#define Y 1\n#elif 0\n#else\n#endif\nconst bit<8> A = Y;")
	f.Add(tnaCase{top: "control X(inout h_t h) { apply { h.a = 9; } }",
		igDecls: `X() x; Register<pair_t, bit<32>>(16, {1, 2}) r;
    RegisterAction<pair_t, bit<32>, bit<32>>(r) ra = { void apply(inout pair_t v, out bit<32> rv) { rv = v.hi; v.lo = v.lo + 1; } };
    CRCPolynomial<bit<16>>(16w0x1021, false, false, false, 16w0xffff, 16w0) poly;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, poly) hs; Checksum() ck;`,
		igBody: "x.apply(hdr.h); hdr.h.d = ra.execute(hdr.h.d); hdr.h.c = hs.get({hdr.h.a}) ^ ck.update({hdr.h});",
		egBody: "eg_dprsr_md.drop_ctl = (bit<3>)hdr.h.a;"}.src())
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile("fuzz.p4", []byte(src))
		if err != nil {
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("internal error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "fuzz.p4:") {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		// The placement check reports every problem at a position.
		var pe *PlacementError
		if errors.As(p.TofinoPlacement(), &pe) {
			for _, pr := range pe.Problems {
				if !strings.HasPrefix(pr, "fuzz.p4:") {
					t.Fatalf("placement problem without position: %s", pr)
				}
			}
		}
		// A program that compiles must run on a frame without panicking.
		d := NewDevice(p, Options{})
		d.Process(1, []byte(src), func(uint32, []byte) {})
		d.Process(2, nil, func(uint32, []byte) {})
	})
}

// FuzzProcess: the pipeline never panics on any frame from any port, and
// what comes out is the deparsed headers plus the unparsed payload.
func FuzzProcess(f *testing.F) {
	router := mustCompileFile(f, "../testdata/basic_router.p4")
	rd := NewDevice(router, Options{})
	if err := rd.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: tableID(f, router, "MyIngress.ipv4_lpm"),
		Match:   []*p4v1.FieldMatch{lpm(1, []byte{10, 0, 0, 0}, 8)},
		Action:  act(actionID(f, router, "MyIngress.ipv4_forward"), []byte{2, 0, 0, 0, 0, 9}, []byte{2}),
	}); err != nil {
		f.Fatal(err)
	}
	devs := []*Device{rd}
	if _, err := os.Stat("../swordbox.p4"); err == nil {
		sb := mustCompileFile(f, "../swordbox.p4")
		sd := NewDevice(sb, Options{CPUPort: 255})
		// config: set_config(mode 3, node_size 0, tail_ttl 0).
		if err := sd.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: tableID(f, sb, "SwordboxIngress.config"), IsDefaultAction: true,
			Action: act(actionID(f, sb, "SwordboxIngress.set_config"), []byte{3}, []byte{0}, []byte{0})}); err != nil {
			f.Fatal(err)
		}
		devs = append(devs, sd)
		f.Add(uint16(1), swordboxCASFrame(f, 7, 0x7f0000001000))
	}
	// pre.p4 with groups, sessions, members and a group programmed: the
	// frame's first byte picks multicast, clones, resubmit, recirculate,
	// meters, digests, selectors.
	pre := mustCompileFile(f, "../testdata/pre.p4")
	pd := NewDevice(pre, Options{})
	for _, e := range []*p4v1.PacketReplicationEngineEntry{
		mcastEntry(1, [2]uint32{2, 1}, [2]uint32{3, 2}), cloneEntry(2, 0, [2]uint32{4, 5}, [2]uint32{5, 6}), cloneEntry(3, 5, [2]uint32{6, 0}),
	} {
		if err := pd.WritePREEntry(p4v1.Update_INSERT, e); err != nil {
			f.Fatal(err)
		}
	}
	if err := pd.WriteMeterEntry(&p4v1.MeterEntry{MeterId: meterID(f, pre, "I.pm"), Config: &p4v1.MeterConfig{Cburst: 1, Pburst: 2}}); err != nil {
		f.Fatal(err)
	}
	sel := &p4v1.ActionProfileMember{ActionProfileId: idOf(f, "profile", pre.P4Info().ActionProfiles, "I.sel"), MemberId: 1,
		Action: &p4v1.Action{ActionId: actionID(f, pre, "I.to_port"), Params: []*p4v1.Action_Param{{ParamId: 1, Value: []byte{3}}}}}
	if err := pd.WriteActionProfileMember(p4v1.Update_INSERT, sel); err != nil {
		f.Fatal(err)
	}
	if err := pd.WriteActionProfileGroup(p4v1.Update_INSERT, &p4v1.ActionProfileGroup{ActionProfileId: sel.ActionProfileId, GroupId: 1,
		Members: []*p4v1.ActionProfileGroup_Member{{MemberId: 1, Weight: 3}}}); err != nil {
		f.Fatal(err)
	}
	if err := pd.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tableID(f, pre, "I.ecmp"), Match: []*p4v1.FieldMatch{exact(1, []byte{1})},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_ActionProfileGroupId{ActionProfileGroupId: 1}}}); err != nil {
		f.Fatal(err)
	}
	devs = append(devs, pd)
	// tna: the l3 router (egress, checksums, CPU port) and tna_custom_hash.
	l3, err := CompileFile("testdata/tna/l3/l3.p4", CompileOptions{})
	if err != nil {
		f.Fatal(err)
	}
	ld := NewDevice(l3, Options{CPUPort: 64})
	if err := ld.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{TableId: tableID(f, l3, "Ig.route"),
		Match: []*p4v1.FieldMatch{lpm(1, []byte{10, 0, 0, 0}, 8)}, Action: act(actionID(f, l3, "Ig.fwd"), []byte{4})}); err != nil {
		f.Fatal(err)
	}
	ch := compileOpenP4Studio(f, "tna_custom_hash")
	cd := NewDevice(ch, Options{})
	if err := cd.WriteTableEntry(p4v1.Update_MODIFY, &p4v1.TableEntry{TableId: tableID(f, ch, "SwitchIngress.output_port"), IsDefaultAction: true,
		Action: act(actionID(f, ch, "SwitchIngress.set_output_port"), []byte{5})}); err != nil {
		f.Fatal(err)
	}
	devs = append(devs, ld, cd)
	f.Add(uint16(5), l3Frame(f, 64, []byte{10, 2, 3, 4}, "x"))
	f.Add(uint16(64), []byte{0, 3, 2, 0, 0, 0, 0, 2})
	for op := byte(0); op <= 15; op++ {
		f.Add(uint16(1), []byte{op, 1, 0, 0, 0, 0, 0, 0, 0, 0xee})
		f.Add(uint16(2), []byte{op, 2, 0, 0, 0, 0, 0, 0, 0})
	}
	f.Add(uint16(1), ipv4Frame(f, "10.1.2.3", 64))
	f.Add(uint16(255), []byte{0x01, 0x00, 2, 0, 0, 0, 0, 2})
	f.Add(uint16(600), []byte{})
	f.Fuzz(func(t *testing.T, port uint16, frame []byte) {
		for _, d := range devs {
			d.Process(uint32(port), frame, func(eg uint32, out []byte) {
				if eg > 511 {
					t.Fatalf("egress port %d", eg)
				}
				if len(out) > len(frame)+d.prog.hdrBytes() {
					t.Fatalf("output of %d bytes from a %d-byte frame", len(out), len(frame))
				}
			})
		}
	})
}

// FuzzWriteTableEntry: a table update is P4Runtime input from the network.
// Whatever its bytes decode to, applying it never panics, a refusal carries
// a gRPC status code (never Unknown or Internal), and the device goes on
// forwarding and reading its tables back afterwards.
func FuzzWriteTableEntry(f *testing.F) {
	type dev struct {
		d    *Device
		port uint32
	}
	var devs []dev
	router := mustCompileFile(f, "../testdata/basic_router.p4")
	devs = append(devs, dev{NewDevice(router, Options{}), 1})
	seed := func(u *p4v1.Update) {
		b, err := proto.Marshal(u)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
		TableId: tableID(f, router, "MyIngress.ipv4_lpm"),
		Match:   []*p4v1.FieldMatch{lpm(1, []byte{10, 0, 0, 0}, 8)},
		Action:  act(actionID(f, router, "MyIngress.ipv4_forward"), []byte{2, 0, 0, 0, 0, 9}, []byte{2}),
	}}}})
	if _, err := os.Stat("../swordbox.p4"); err == nil {
		sb := mustCompileFile(f, "../swordbox.p4")
		devs = append(devs, dev{NewDevice(sb, Options{CPUPort: 255}), 2})
		seed(&p4v1.Update{Type: p4v1.Update_INSERT, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: tableID(f, sb, "SwordboxIngress.tracked_keys"),
			Match:   []*p4v1.FieldMatch{exact(1, []byte{0, 0, 0, 0, 0, 0, 0, 7})},
			Action:  act(actionID(f, sb, "SwordboxIngress.track"), []byte{0, 3}),
		}}}})
		seed(&p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_TableEntry{TableEntry: &p4v1.TableEntry{
			TableId: tableID(f, sb, "SwordboxIngress.forward"), IsDefaultAction: true,
			Action: act(actionID(f, sb, "SwordboxIngress.set_egress"), []byte{1}),
		}}}})
	}
	if _, err := os.Stat("../testdata/pre.p4"); err == nil {
		pre := mustCompileFile(f, "../testdata/pre.p4")
		devs = append(devs, dev{NewDevice(pre, Options{CPUPort: 255}), 1})
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var u p4v1.Update
		if proto.Unmarshal(b, &u) != nil {
			return
		}
		te := u.GetEntity().GetTableEntry()
		if te == nil {
			te = &p4v1.TableEntry{}
		}
		for _, d := range devs {
			err := d.d.WriteTableEntry(u.GetType(), te)
			if err != nil {
				switch c := status.Code(err); c {
				case codes.Unknown, codes.Internal, codes.OK:
					t.Fatalf("refused with code %v: %v", c, err)
				}
			}
			d.d.Process(d.port, make([]byte, 60), func(uint32, []byte) {})
			if err := d.d.ReadTableEntries(&p4v1.TableEntry{}, func(*p4v1.TableEntry) error { return nil }); err != nil {
				t.Fatalf("read back after the update: %v", err)
			}
		}
	})
}
