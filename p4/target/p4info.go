package target

import (
	"github.com/swordbox/swordbox/p4/target/frontend"
	"sort"
	"strconv"
	"strings"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/proto"
)

// P4Info returns the program's P4Info, built with p4c's rules: fully
// qualified names ("Ingress.table"), the shortest unique suffix as alias,
// IDs made of the P4Runtime prefix of the entity type in the top byte and
// the Jenkins one-at-a-time hash of the name in the low 24 bits (probing
// upwards on collision; @id(n) overrides), match fields and action
// parameters numbered from 1. The result is a copy the caller may modify.
func (p *Program) P4Info() *configv1.P4Info {
	return proto.Clone(p.info).(*configv1.P4Info)
}

// jenkinsHash is Bob Jenkins' one-at-a-time hash, as p4c uses for IDs.
func jenkinsHash(s string) uint32 {
	var h uint32
	for i := 0; i < len(s); i++ {
		h += uint32(s[i])
		h += h << 10
		h ^= h >> 6
	}
	h += h << 3
	h ^= h >> 11
	h += h << 15
	return h
}

type infoEntity struct {
	prefix configv1.P4Ids_Prefix
	name   string
	anns   []frontend.Annotation
	p      frontend.Pos
	set    func(uint32)
}

// assignIDs gives every P4Info entity its ID: explicit @id first, then
// the prefix and Jenkins hash of the name, probing upwards on collision.
func (c *compiler) assignIDs(ents []infoEntity) {
	used := map[uint32]bool{}
	// explicit @id first
	for _, e := range ents {
		for _, a := range e.anns {
			if a.Name != "id" {
				continue
			}
			if len(a.Args) != 1 || a.Args[0].Kind != frontend.TInt || !a.Args[0].Val.IsUint64() {
				c.fail(a.P, "@id needs an integer")
			}
			v := a.Args[0].Val.Uint64()
			pre := uint64(e.prefix) << 24
			switch {
			case v < 1<<24:
				v |= pre
			case v>>24 != uint64(e.prefix):
				c.fail(a.P, "@id %d does not carry the prefix 0x%02x of its entity type", v, e.prefix)
			}
			if used[uint32(v)] {
				c.fail(a.P, "@id %d used twice", v)
			}
			used[uint32(v)] = true
			e.set(uint32(v))
			e.anns = nil
		}
	}
	for _, e := range ents {
		explicit := false
		for _, a := range e.anns {
			if a.Name == "id" {
				explicit = true
			}
		}
		if explicit {
			continue
		}
		h := jenkinsHash(e.name) & 0xffffff
		for {
			id := uint32(e.prefix)<<24 | h
			if !used[id] {
				used[id] = true
				e.set(id)
				break
			}
			h = (h + 1) & 0xffffff
		}
	}
}

// aliases computes p4c's aliases: the shortest suffix of each name (on '.'
// boundaries) that is not a suffix of any other name.
func aliases(names []string) map[string]string {
	out := map[string]string{}
	for _, n := range names {
		parts := strings.Split(n, ".")
		alias := n
		for k := 1; k <= len(parts); k++ {
			suf := strings.Join(parts[len(parts)-k:], ".")
			unique := true
			for _, o := range names {
				if o != n && (o == suf || strings.HasSuffix(o, "."+suf)) {
					unique = false
					break
				}
			}
			if unique {
				alias = suf
				break
			}
		}
		out[n] = alias
	}
	return out
}

func annStrings(anns []frontend.Annotation, skip ...string) []string {
	var out []string
outer:
	for _, a := range anns {
		for _, s := range skip {
			if a.Name == s {
				continue outer
			}
		}
		if a.Body == "" && a.Args == nil {
			out = append(out, "@"+a.Name)
		} else {
			out = append(out, "@"+a.Name+"("+a.Body+")")
		}
	}
	return out
}

// buildP4Info builds the program's P4Info: entities in declaration order,
// IDs by assignIDs, aliases, match fields and parameters numbered from 1,
// and the architecture's name ("v1model" or "tna").
func (c *compiler) buildP4Info() *configv1.P4Info {
	p := c.prog
	for _, t := range p.tables {
		for _, r := range t.actions {
			if !r.act.inInfo {
				continue
			}
			found := false
			for _, a := range p.actions {
				if a == r.act {
					found = true
				}
			}
			if !found {
				p.actions = append(p.actions, r.act)
			}
		}
	}
	// Declaration order, as p4c: NoAction (core.p4) first.
	ordered := append([]*actionC(nil), p.actions...)
	sort.SliceStable(ordered, func(i, j int) bool {
		a, b := ordered[i].p, ordered[j].p
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	p.actions = ordered
	var ents []infoEntity
	for _, t := range p.tables {
		t := t
		ents = append(ents, infoEntity{configv1.P4Ids_TABLE, t.name, t.anns, t.p, func(id uint32) { t.id = id }})
	}
	for _, a := range p.actions {
		a := a
		ents = append(ents, infoEntity{configv1.P4Ids_ACTION, a.name, a.anns, a.p, func(id uint32) { a.id = id }})
	}
	externs := func(prefix configv1.P4Ids_Prefix, xs []*externC) {
		for _, x := range xs {
			x := x
			if x.kind == "direct_counter" || x.kind == "direct_meter" {
				if x.table == nil {
					c.fail(x.p, "%s %s is not attached to a table", x.kind, x.name)
				}
			}
			ents = append(ents, infoEntity{prefix, x.name, x.anns, x.p, func(id uint32) { x.id = id }})
		}
	}
	externs(configv1.P4Ids_COUNTER, p.counters)
	externs(configv1.P4Ids_DIRECT_COUNTER, p.directCounters)
	externs(configv1.P4Ids_METER, p.meters)
	externs(configv1.P4Ids_DIRECT_METER, p.directMeters)
	externs(configv1.P4Ids_REGISTER, p.registers)
	externs(configv1.P4Ids_ACTION_PROFILE, p.profiles)
	for _, dg := range p.digests {
		dg := dg
		ents = append(ents, infoEntity{configv1.P4Ids_DIGEST, dg.name, dg.anns, dg.p, func(id uint32) { dg.id = id }})
	}
	var cpmIDs = map[string]*uint32{}
	var cpmTypes []*ptype
	var cpmNames []string
	for _, t := range []*ptype{p.packetIn, p.packetOut} {
		if t == nil {
			continue
		}
		name := "packet_in"
		if t == p.packetOut {
			name = "packet_out"
		}
		id := new(uint32)
		cpmIDs[name] = id
		cpmTypes = append(cpmTypes, t)
		cpmNames = append(cpmNames, name)
		// p4c hashes the header type's name; the P4Info name is the
		// annotation's (e.g. packet_in_header_t -> 81826293 "packet_in").
		ents = append(ents, infoEntity{configv1.P4Ids_CONTROLLER_HEADER, t.name, t.anns, frontend.Pos{}, func(v uint32) { *id = v }})
	}
	c.assignIDs(ents)
	var names []string
	for _, e := range ents {
		if e.prefix != configv1.P4Ids_CONTROLLER_HEADER {
			names = append(names, e.name)
		}
	}
	names = append(names, cpmNames...)
	al := aliases(names)

	arch := "v1model"
	if p.tna != nil {
		arch = "tna"
	}
	info := &configv1.P4Info{PkgInfo: &configv1.PkgInfo{Arch: arch}}
	pre := func(id uint32, name string, anns []string) *configv1.Preamble {
		return &configv1.Preamble{Id: id, Name: name, Alias: al[name], Annotations: anns}
	}
	for _, t := range p.tables {
		ti := &configv1.Table{Preamble: pre(t.id, t.name, nil), Size: int64(t.size), IsConstTable: t.isConst,
			HasInitialEntries: len(t.entries) > 0}
		for i, k := range t.keys {
			mt := configv1.MatchField_EXACT
			switch k.match {
			case "lpm":
				mt = configv1.MatchField_LPM
			case "ternary":
				mt = configv1.MatchField_TERNARY
			case "range":
				mt = configv1.MatchField_RANGE
			case "optional":
				mt = configv1.MatchField_OPTIONAL
			}
			ti.MatchFields = append(ti.MatchFields, &configv1.MatchField{Id: uint32(i + 1), Name: k.name, Bitwidth: int32(k.w),
				Match: &configv1.MatchField_MatchType_{MatchType: mt}})
		}
		for _, r := range t.actions {
			ar := &configv1.ActionRef{Id: r.act.id, Scope: r.scope}
			switch r.scope {
			case configv1.ActionRef_DEFAULT_ONLY:
				ar.Annotations = []string{"@defaultonly"}
			case configv1.ActionRef_TABLE_ONLY:
				ar.Annotations = []string{"@tableonly"}
			}
			ti.ActionRefs = append(ti.ActionRefs, ar)
		}
		if t.defConst {
			ti.ConstDefaultActionId = t.actions[t.defAI].act.id
		}
		if t.counter != nil {
			ti.DirectResourceIds = append(ti.DirectResourceIds, t.counter.id)
		}
		if t.meter != nil {
			ti.DirectResourceIds = append(ti.DirectResourceIds, t.meter.id)
		}
		if t.prof != nil {
			ti.ImplementationId = t.prof.id
		}
		if t.idle {
			ti.IdleTimeoutBehavior = configv1.Table_NOTIFY_CONTROL
		}
		info.Tables = append(info.Tables, ti)
	}
	for _, a := range p.actions {
		ai := &configv1.Action{Preamble: pre(a.id, a.name, annStrings(a.anns, "name", "id"))}
		for i, pr := range a.dataParams() {
			ai.Params = append(ai.Params, &configv1.Action_Param{Id: uint32(i + 1), Name: pr.name, Bitwidth: int32(widthOf(pr.t))})
		}
		info.Actions = append(info.Actions, ai)
	}
	for _, x := range p.counters {
		info.Counters = append(info.Counters, &configv1.Counter{Preamble: pre(x.id, x.name, nil),
			Spec: &configv1.CounterSpec{Unit: x.unit}, Size: int64(x.size)})
	}
	for _, x := range p.directCounters {
		info.DirectCounters = append(info.DirectCounters, &configv1.DirectCounter{Preamble: pre(x.id, x.name, nil),
			Spec: &configv1.CounterSpec{Unit: x.unit}, DirectTableId: x.table.id})
	}
	for _, x := range p.meters {
		info.Meters = append(info.Meters, &configv1.Meter{Preamble: pre(x.id, x.name, nil),
			Spec: &configv1.MeterSpec{Unit: x.munit}, Size: int64(x.size)})
	}
	for _, x := range p.directMeters {
		info.DirectMeters = append(info.DirectMeters, &configv1.DirectMeter{Preamble: pre(x.id, x.name, nil),
			Spec: &configv1.MeterSpec{Unit: x.munit}, DirectTableId: x.table.id})
	}
	for _, x := range p.profiles {
		ap := &configv1.ActionProfile{Preamble: pre(x.id, x.name, nil), WithSelector: x.selector, Size: int64(x.size)}
		if x.table != nil {
			ap.TableIds = []uint32{x.table.id}
		}
		info.ActionProfiles = append(info.ActionProfiles, ap)
	}
	for _, x := range p.registers {
		spec := bitSpec(x.t.width)
		if x.t.kind == kStruct {
			// tna's Register<pair, _>: a struct type, as bf-p4c emits it.
			var names []string
			var widths []int
			for _, f := range x.t.fields {
				names, widths = append(names, f.name), append(widths, widthOf(f.t))
			}
			addStructType(info, x.t.name, names, widths)
			spec = &configv1.P4DataTypeSpec{TypeSpec: &configv1.P4DataTypeSpec_Struct{Struct: &configv1.P4NamedType{Name: x.t.name}}}
		}
		info.Registers = append(info.Registers, &configv1.Register{Preamble: pre(x.id, x.name, nil), TypeSpec: spec, Size: int32(x.size)})
	}
	for i, t := range cpmTypes {
		name := cpmNames[i]
		cm := &configv1.ControllerPacketMetadata{Preamble: pre(*cpmIDs[name], name,
			[]string{"@controller_header(" + strconv.Quote(name) + ")"})}
		for j, f := range t.fields {
			cm.Metadata = append(cm.Metadata, &configv1.ControllerPacketMetadata_Metadata{Id: uint32(j + 1), Name: f.name, Bitwidth: int32(widthOf(f.t))})
		}
		info.ControllerPacketMetadata = append(info.ControllerPacketMetadata, cm)
	}
	p.digestInfo(info, pre)
	return info
}
