package p4rtc

import (
	"fmt"
	"os"
	"strings"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// Schema resolves the names of a P4Info (tables, match fields, actions,
// action parameters, registers, counters, controller packet metadata) to
// their numeric IDs and bit widths. Every entity the controller builds goes
// through a Schema, so no ID is ever written in code: a renamed or missing
// object is an error that names it.
//
// A name may be given fully qualified ("SwordboxIngress.forward") or by its
// P4Info alias ("forward"); an alias shared by two objects is ambiguous and
// only the full name resolves.
type Schema struct {
	info     *p4cfg.P4Info
	tables   map[string]*p4cfg.Table
	actions  map[string]*p4cfg.Action
	regs     map[string]*p4cfg.Register
	counters map[string]*p4cfg.Counter
	pktMeta  map[string]*p4cfg.ControllerPacketMetadata
	byID     map[uint32]string
}

// LoadP4Info reads a P4Info file, in protobuf text format (.txt, .txtpb,
// .pb.txt: what p4c --p4runtime-files writes) or binary (.bin, .pb).
func LoadP4Info(path string) (*p4cfg.P4Info, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("p4info %s: %w", path, err)
	}
	info := &p4cfg.P4Info{}
	if strings.HasSuffix(path, ".bin") || (strings.HasSuffix(path, ".pb") && !strings.HasSuffix(path, ".txt.pb")) {
		err = proto.Unmarshal(b, info)
	} else {
		err = prototext.Unmarshal(b, info)
	}
	if err != nil {
		return nil, fmt.Errorf("p4info %s: %w", path, err)
	}
	return info, nil
}

// NewSchema indexes info. It fails if info is nil.
func NewSchema(info *p4cfg.P4Info) (*Schema, error) {
	if info == nil {
		return nil, fmt.Errorf("p4info: nil")
	}
	s := &Schema{
		info:     info,
		tables:   map[string]*p4cfg.Table{},
		actions:  map[string]*p4cfg.Action{},
		regs:     map[string]*p4cfg.Register{},
		counters: map[string]*p4cfg.Counter{},
		pktMeta:  map[string]*p4cfg.ControllerPacketMetadata{},
		byID:     map[uint32]string{},
	}
	for _, t := range info.GetTables() {
		index(s.tables, t.GetPreamble(), t)
		s.byID[t.GetPreamble().GetId()] = t.GetPreamble().GetName()
	}
	for _, a := range info.GetActions() {
		index(s.actions, a.GetPreamble(), a)
		s.byID[a.GetPreamble().GetId()] = a.GetPreamble().GetName()
	}
	for _, r := range info.GetRegisters() {
		index(s.regs, r.GetPreamble(), r)
		s.byID[r.GetPreamble().GetId()] = r.GetPreamble().GetName()
	}
	for _, c := range info.GetCounters() {
		index(s.counters, c.GetPreamble(), c)
		s.byID[c.GetPreamble().GetId()] = c.GetPreamble().GetName()
	}
	for _, m := range info.GetControllerPacketMetadata() {
		index(s.pktMeta, m.GetPreamble(), m)
	}
	return s, nil
}

// index records v under its full name and, unless that alias is already
// taken by another object, under its alias. A clashing alias maps to nil,
// which lookups report as ambiguous.
func index[T any](m map[string]*T, p *p4cfg.Preamble, v *T) {
	m[p.GetName()] = v
	if a := p.GetAlias(); a != "" && a != p.GetName() {
		if prev, ok := m[a]; ok && prev != v {
			m[a] = nil
			return
		}
		m[a] = v
	}
}

func lookup[T any](m map[string]*T, kind, name string) (*T, error) {
	v, ok := m[name]
	if !ok {
		// Not a full name nor an alias: accept a unique dotted suffix
		// ("forward" for "SwordboxIngress.forward") so that P4Info
		// generators that leave aliases empty resolve the same way.
		var found []string
		for k := range m {
			if strings.HasSuffix(k, "."+name) {
				found = append(found, k)
			}
		}
		switch len(found) {
		case 0:
			return nil, fmt.Errorf("p4info: no %s named %q", kind, name)
		case 1:
			v = m[found[0]]
		default:
			return nil, fmt.Errorf("p4info: %s name %q is ambiguous (%s)", kind, name, strings.Join(found, ", "))
		}
	}
	if v == nil {
		return nil, fmt.Errorf("p4info: %s alias %q is ambiguous; use the full name", kind, name)
	}
	return v, nil
}

// P4Info returns the indexed P4Info.
func (s *Schema) P4Info() *p4cfg.P4Info { return s.info }

// Name returns the full name of the table, action, register or counter
// with the given ID, or "" if there is none.
func (s *Schema) Name(id uint32) string { return s.byID[id] }

// Table resolves a table by name.
func (s *Schema) Table(name string) (*p4cfg.Table, error) { return lookup(s.tables, "table", name) }

// Action resolves an action by name.
func (s *Schema) Action(name string) (*p4cfg.Action, error) {
	return lookup(s.actions, "action", name)
}

// Register resolves a register array by name.
func (s *Schema) Register(name string) (*p4cfg.Register, error) {
	return lookup(s.regs, "register", name)
}

// Counter resolves an indirect counter array by name.
func (s *Schema) Counter(name string) (*p4cfg.Counter, error) {
	return lookup(s.counters, "counter", name)
}

// PacketMetadata resolves a controller packet header ("packet_out",
// "packet_in") by name.
func (s *Schema) PacketMetadata(name string) (*p4cfg.ControllerPacketMetadata, error) {
	return lookup(s.pktMeta, "controller packet metadata", name)
}

// Tables lists the full names of all tables, in P4Info order.
func (s *Schema) Tables() []string {
	var out []string
	for _, t := range s.info.GetTables() {
		out = append(out, t.GetPreamble().GetName())
	}
	return out
}

// Registers lists the full names of all registers, in P4Info order.
func (s *Schema) Registers() []string {
	var out []string
	for _, r := range s.info.GetRegisters() {
		out = append(out, r.GetPreamble().GetName())
	}
	return out
}

// Counters lists the full names of all indirect counters, in P4Info order.
func (s *Schema) Counters() []string {
	var out []string
	for _, c := range s.info.GetCounters() {
		out = append(out, c.GetPreamble().GetName())
	}
	return out
}

// RegisterWidth returns the bit width of a register's cells (0 if the type
// is not a plain bitstring).
func RegisterWidth(r *p4cfg.Register) int {
	bs := r.GetTypeSpec().GetBitstring()
	switch {
	case bs.GetBit() != nil:
		return int(bs.GetBit().GetBitwidth())
	case bs.GetInt() != nil:
		return int(bs.GetInt().GetBitwidth())
	case bs.GetVarbit() != nil:
		return int(bs.GetVarbit().GetMaxBitwidth())
	}
	return 0
}

// Match is one field of a table key, to be resolved against a table: use
// Exact, LPM, Ternary, Range or Optional to make one.
type Match struct {
	Field     string
	kind      p4cfg.MatchField_MatchType
	value     []byte
	mask      []byte // ternary mask or range high
	prefixLen int32
}

// Exact matches a field against value (big-endian bytes of any length).
func Exact(field string, value []byte) Match {
	return Match{Field: field, kind: p4cfg.MatchField_EXACT, value: value}
}

// LPM matches the first prefixLen bits of a field.
func LPM(field string, value []byte, prefixLen int) Match {
	return Match{Field: field, kind: p4cfg.MatchField_LPM, value: value, prefixLen: int32(prefixLen)}
}

// Ternary matches value under mask.
func Ternary(field string, value, mask []byte) Match {
	return Match{Field: field, kind: p4cfg.MatchField_TERNARY, value: value, mask: mask}
}

// Range matches low <= field <= high.
func Range(field string, low, high []byte) Match {
	return Match{Field: field, kind: p4cfg.MatchField_RANGE, value: low, mask: high}
}

// Optional matches a field exactly (an omitted optional field is a wildcard).
func Optional(field string, value []byte) Match {
	return Match{Field: field, kind: p4cfg.MatchField_OPTIONAL, value: value}
}

// Param is one action parameter by name.
type Param struct {
	Name  string
	Value []byte
}

// P is shorthand for a Param whose value is an unsigned integer.
func P(name string, v uint64) Param { return Param{Name: name, Value: Uint(v)} }

// ActionCall builds an Action message: action and parameter names resolved,
// values checked against their bit widths and canonicalized.
func (s *Schema) ActionCall(action string, params ...Param) (*p4.Action, error) {
	a, err := s.Action(action)
	if err != nil {
		return nil, err
	}
	out := &p4.Action{ActionId: a.GetPreamble().GetId()}
	seen := map[string]bool{}
	for _, p := range params {
		var spec *p4cfg.Action_Param
		for _, ap := range a.GetParams() {
			if ap.GetName() == p.Name {
				spec = ap
			}
		}
		if spec == nil {
			return nil, fmt.Errorf("p4info: action %s has no parameter %q", a.GetPreamble().GetName(), p.Name)
		}
		v, err := Canonical(p.Value, int(spec.GetBitwidth()))
		if err != nil {
			return nil, fmt.Errorf("action %s param %s: %w", a.GetPreamble().GetName(), p.Name, err)
		}
		seen[p.Name] = true
		out.Params = append(out.Params, &p4.Action_Param{ParamId: spec.GetId(), Value: v})
	}
	for _, ap := range a.GetParams() {
		if !seen[ap.GetName()] {
			return nil, fmt.Errorf("action %s: parameter %q not given", a.GetPreamble().GetName(), ap.GetName())
		}
	}
	return out, nil
}

// TableEntry builds a table entry. priority is required (>0) by tables with
// ternary, range or optional fields and must be 0 otherwise.
func (s *Schema) TableEntry(table string, matches []Match, action string, params ...Param) (*p4.TableEntry, error) {
	t, err := s.Table(table)
	if err != nil {
		return nil, err
	}
	e := &p4.TableEntry{TableId: t.GetPreamble().GetId()}
	for _, m := range matches {
		fm, err := s.fieldMatch(t, m)
		if err != nil {
			return nil, err
		}
		e.Match = append(e.Match, fm)
	}
	if action != "" {
		call, err := s.ActionCall(action, params...)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.GetPreamble().GetName(), err)
		}
		e.Action = &p4.TableAction{Type: &p4.TableAction_Action{Action: call}}
	}
	return e, nil
}

// NeedsPriority reports whether entries of t need a priority.
func NeedsPriority(t *p4cfg.Table) bool {
	for _, mf := range t.GetMatchFields() {
		switch mf.GetMatchType() {
		case p4cfg.MatchField_TERNARY, p4cfg.MatchField_RANGE, p4cfg.MatchField_OPTIONAL:
			return true
		}
	}
	return false
}

func (s *Schema) fieldMatch(t *p4cfg.Table, m Match) (*p4.FieldMatch, error) {
	tn := t.GetPreamble().GetName()
	var spec *p4cfg.MatchField
	for _, mf := range t.GetMatchFields() {
		if mf.GetName() == m.Field {
			spec = mf
		}
	}
	if spec == nil {
		return nil, fmt.Errorf("p4info: table %s has no match field %q", tn, m.Field)
	}
	if spec.GetMatchType() != m.kind {
		return nil, fmt.Errorf("table %s field %s: match kind is %s, not %s", tn, m.Field, spec.GetMatchType(), m.kind)
	}
	w := int(spec.GetBitwidth())
	v, err := Canonical(m.value, w)
	if err != nil {
		return nil, fmt.Errorf("table %s field %s: %w", tn, m.Field, err)
	}
	fm := &p4.FieldMatch{FieldId: spec.GetId()}
	switch m.kind {
	case p4cfg.MatchField_EXACT:
		fm.FieldMatchType = &p4.FieldMatch_Exact_{Exact: &p4.FieldMatch_Exact{Value: v}}
	case p4cfg.MatchField_OPTIONAL:
		fm.FieldMatchType = &p4.FieldMatch_Optional_{Optional: &p4.FieldMatch_Optional{Value: v}}
	case p4cfg.MatchField_LPM:
		if m.prefixLen < 0 || int(m.prefixLen) > w {
			return nil, fmt.Errorf("table %s field %s: prefix length %d out of 0..%d", tn, m.Field, m.prefixLen, w)
		}
		fm.FieldMatchType = &p4.FieldMatch_Lpm{Lpm: &p4.FieldMatch_LPM{Value: v, PrefixLen: m.prefixLen}}
	case p4cfg.MatchField_TERNARY:
		mask, err := Canonical(m.mask, w)
		if err != nil {
			return nil, fmt.Errorf("table %s field %s mask: %w", tn, m.Field, err)
		}
		fm.FieldMatchType = &p4.FieldMatch_Ternary_{Ternary: &p4.FieldMatch_Ternary{Value: v, Mask: mask}}
	case p4cfg.MatchField_RANGE:
		hi, err := Canonical(m.mask, w)
		if err != nil {
			return nil, fmt.Errorf("table %s field %s high: %w", tn, m.Field, err)
		}
		fm.FieldMatchType = &p4.FieldMatch_Range_{Range: &p4.FieldMatch_Range{Low: v, High: hi}}
	default:
		return nil, fmt.Errorf("table %s field %s: unsupported match kind %s", tn, m.Field, m.kind)
	}
	return fm, nil
}

// RegisterRead builds a read of register name: one cell, or every cell when
// index < 0.
func (s *Schema) RegisterRead(name string, index int64) (*p4.Entity, error) {
	r, err := s.Register(name)
	if err != nil {
		return nil, err
	}
	re := &p4.RegisterEntry{RegisterId: r.GetPreamble().GetId()}
	if index >= 0 {
		re.Index = &p4.Index{Index: index}
	}
	return &p4.Entity{Entity: &p4.Entity_RegisterEntry{RegisterEntry: re}}, nil
}

// CounterRead builds a read of counter name: one cell, or every cell when
// index < 0.
func (s *Schema) CounterRead(name string, index int64) (*p4.Entity, error) {
	c, err := s.Counter(name)
	if err != nil {
		return nil, err
	}
	ce := &p4.CounterEntry{CounterId: c.GetPreamble().GetId()}
	if index >= 0 {
		ce.Index = &p4.Index{Index: index}
	}
	return &p4.Entity{Entity: &p4.Entity_CounterEntry{CounterEntry: ce}}, nil
}

// TableRead builds a wildcard read of every entry of table name.
func (s *Schema) TableRead(name string) (*p4.Entity, error) {
	t, err := s.Table(name)
	if err != nil {
		return nil, err
	}
	return &p4.Entity{Entity: &p4.Entity_TableEntry{TableEntry: &p4.TableEntry{TableId: t.GetPreamble().GetId()}}}, nil
}

// PacketOutMetadata builds the metadata of a PacketOut from field names of
// the "packet_out" controller header.
func (s *Schema) PacketOutMetadata(fields ...Param) ([]*p4.PacketMetadata, error) {
	m, err := s.PacketMetadata("packet_out")
	if err != nil {
		return nil, err
	}
	var out []*p4.PacketMetadata
	for _, f := range fields {
		var spec *p4cfg.ControllerPacketMetadata_Metadata
		for _, md := range m.GetMetadata() {
			if md.GetName() == f.Name {
				spec = md
			}
		}
		if spec == nil {
			return nil, fmt.Errorf("p4info: packet_out has no field %q", f.Name)
		}
		v, err := Canonical(f.Value, int(spec.GetBitwidth()))
		if err != nil {
			return nil, fmt.Errorf("packet_out field %s: %w", f.Name, err)
		}
		out = append(out, &p4.PacketMetadata{MetadataId: spec.GetId(), Value: v})
	}
	return out, nil
}
