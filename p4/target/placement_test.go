package target

import (
	"errors"
	"strings"
	"testing"
)

// The ingress declarations of the placement cases (one line, so that the
// apply body starts at line tnaLine+4): registers ra and rb, a counter,
// and a table whose two actions access ra and rb.
const placeDecls = `Register<bit<32>, bit<32>>(16) ra; Register<bit<32>, bit<32>>(16) rb; ` +
	`RegisterAction<bit<32>, bit<32>, bit<32>>(ra) ra_get = { void apply(inout bit<32> v, out bit<32> rv) { rv = v; } }; ` +
	`RegisterAction<bit<32>, bit<32>, bit<32>>(ra) ra_inc = { void apply(inout bit<32> v) { v = v + 1; } }; ` +
	`RegisterAction<bit<32>, bit<32>, bit<32>>(rb) rb_get = { void apply(inout bit<32> v, out bit<32> rv) { rv = v; } }; ` +
	`Counter<bit<64>, bit<32>>(4, CounterType_t.PACKETS) cnt; ` +
	`action use_a() { md.z = ra_get.execute(1); } action use_b() { md.z = rb_get.execute(1); } ` +
	`table t { key = { hdr.h.a: exact; } actions = { use_a; use_b; } default_action = use_a(); }`

// placeT2 is a table whose entries run use_a and whose default is use_b.
const placeT2 = `table t2 { key = { hdr.h.a: exact; } actions = { use_a; @defaultonly use_b; } const default_action = use_b(); }`

// placeTop declares a sub-control with a register of its own.
const placeTop = `control Sub(inout meta_t md) { Register<bit<32>, bit<32>>(16) rs; RegisterAction<bit<32>, bit<32>, bit<32>>(rs) rs_get = { void apply(inout bit<32> v, out bit<32> rv) { rv = v; } }; apply { md.z = rs_get.execute(0); } }`

func TestTofinoPlacement(t *testing.T) {
	cases := []struct {
		name, top, decls, body string
		want                   []string // problems, each a prefix (nil: placeable)
	}{
		{name: "same order on both paths", body: `
if (hdr.h.a == 1) { md.z = ra_get.execute(0); md.z = rb_get.execute(0); } else { ra_inc.execute(2); md.z = rb_get.execute(3); }`},
		{name: "one register in exclusive branches", body: `
if (hdr.h.a == 1) { md.z = ra_get.execute(0); } else { ra_inc.execute(0); }`},
		{name: "exit ends the path", body: `
if (hdr.h.a == 1) { md.z = ra_get.execute(0); exit; }
ra_inc.execute(1);`},
		{name: "switch pairs each action with its case", body: `
switch (t.apply().action_run) { use_a: { md.z = rb_get.execute(0); } use_b: { } }`},
		{name: "if on hit pairs the actions with the branches", decls: placeT2, body: `
if (!t2.apply().hit) { md.z = ra_get.execute(0); }`},
		{name: "if on miss: the default action then the branch", decls: placeT2, body: `
if (t2.apply().miss) { md.z = rb_get.execute(0); }`,
			want: []string{"p.p4:21:31: register Ing.rb is accessed twice on one path through Ing: first at p.p4:16:"}},
		{name: "count once per path", body: `
if (hdr.h.a == 1) { cnt.count(0); } else { cnt.count(1); }`},
		{name: "cycle", body: `
if (hdr.h.a == 1) { md.z = ra_get.execute(0); md.z = rb_get.execute(0); }
else { md.z = rb_get.execute(1); md.z = ra_get.execute(1); }`,
			want: []string{"p.p4:21:28: no stage order of Ing's stateful objects serves every path (cycle Ing.ra -> Ing.rb -> Ing.ra): " +
				"register Ing.ra at p.p4:21:28 is accessed before register Ing.rb at p.p4:21:54 on one path; " +
				"register Ing.rb at p.p4:22:15 is accessed before register Ing.ra at p.p4:22:41 on one path;"}},
		{name: "cycle through a table's action and a switch case", body: `
switch (t.apply().action_run) { use_a: { md.z = rb_get.execute(0); } use_b: { md.z = ra_get.execute(0); } }`,
			want: []string{"p.p4:16:", "cycle Ing.ra -> Ing.rb -> Ing.ra"}},
		{name: "cycle through a sub-control", top: placeTop, decls: "Sub() sub;", body: `
if (hdr.h.a == 1) { md.z = ra_get.execute(0); sub.apply(md); } else { sub.apply(md); md.z = ra_get.execute(1); }`,
			want: []string{"cycle Ing.ra -> Ing.sub.rs -> Ing.ra"}},
		{name: "register twice on one path", body: `
if (hdr.h.a == 1) { md.z = ra_get.execute(0); }
if (hdr.h.b == 1) { ra_inc.execute(0); }`,
			want: []string{"p.p4:22:21: register Ing.ra is accessed twice on one path through Ing: first at p.p4:21:28, again here"}},
		{name: "counter twice on one path", body: `
cnt.count(0);
if (hdr.h.a == 1) { cnt.count(1); }`,
			want: []string{"p.p4:22:21: counter Ing.cnt is counted twice on one path through Ing: first at p.p4:21:1, again here (a Tofino counter counts at most once per packet)"}},
		{name: "table applied twice", body: `
t.apply();
t.apply();`,
			want: []string{"p.p4:22:1: table Ing.t is applied twice on one path through Ing: first at p.p4:21:1", "register Ing.ra is accessed twice"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			decls := placeDecls
			if tc.decls != "" {
				decls += " " + tc.decls
			}
			src := tnaCase{top: tc.top, igDecls: decls, igBody: tc.body}.src()
			p, err := Compile("p.p4", []byte(src))
			if err != nil {
				t.Fatalf("compile without the check: %v", err)
			}
			_, strict := CompileWith("p.p4", []byte(src), CompileOptions{TofinoPlacement: true})
			if tc.want == nil {
				if err := p.TofinoPlacement(); err != nil {
					t.Fatalf("refused: %v", err)
				}
				if strict != nil {
					t.Fatalf("CompileOptions.TofinoPlacement refused: %v", strict)
				}
				return
			}
			var pe *PlacementError
			if !errors.As(p.TofinoPlacement(), &pe) {
				t.Fatalf("not refused: %v", p.TofinoPlacement())
			}
			if strict == nil || strict.Error() != pe.Error() {
				t.Fatalf("CompileOptions.TofinoPlacement: %v, want %v", strict, pe)
			}
			for _, w := range tc.want {
				found := false
				for _, pr := range pe.Problems {
					if strings.HasPrefix(pr, w) || (!strings.HasPrefix(w, "p.p4") && strings.Contains(pr, w)) {
						found = true
					}
				}
				if !found {
					t.Errorf("no problem %q in:\n%s", w, strings.Join(pe.Problems, "\n"))
				}
			}
		})
	}
}

// Public programs (open-p4studio's tna_register and tna_custom_hash) and
// our tna router pass the check.
func TestTofinoPlacementPublicPrograms(t *testing.T) {
	for _, path := range []string{
		openP4Studio + "/tna_register/tna_register.p4",
		openP4Studio + "/tna_custom_hash/tna_custom_hash.p4",
		"testdata/tna/l3/l3.p4",
	} {
		if _, err := CompileFile(path, CompileOptions{IncludeDirs: []string{openP4Studio}, TofinoPlacement: true}); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

func TestTofinoPlacementRefusesV1model(t *testing.T) {
	_, err := CompileFile("../swordbox.p4", CompileOptions{TofinoPlacement: true})
	if err == nil || !strings.Contains(err.Error(), "applies to tna programs") {
		t.Fatalf("got %v", err)
	}
}
