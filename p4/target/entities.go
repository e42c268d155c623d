package target

import (
	"fmt"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// P4Runtime entity semantics. Every error is a gRPC status error with the
// code P4Runtime prescribes. Read callbacks run after the Device's lock is
// released, on copies, so they may call back into the Device.

func errf(c codes.Code, format string, args ...any) error {
	return status.Errorf(c, format, args...)
}

// decodeBits reads a P4Runtime byte string (big-endian, canonical or
// padded) as a value of w bits.
func decodeBits(b []byte, w int, what string) (uint64, error) {
	if len(b) == 0 {
		// P4Runtime: "If the string's byte length is zero, the server
		// always rejects the string" with OUT_OF_RANGE (section 8.4).
		return 0, errf(codes.OutOfRange, "%s: empty byte string", what)
	}
	i := 0
	for i < len(b)-1 && b[i] == 0 {
		i++
	}
	b = b[i:]
	if len(b) > 8 {
		return 0, errf(codes.OutOfRange, "%s: value does not fit in %d bits", what, w)
	}
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	if v&^mask(w) != 0 {
		return 0, errf(codes.OutOfRange, "%s: value 0x%x does not fit in %d bits", what, v, w)
	}
	return v, nil
}

// encodeBits writes v in canonical form: the shortest big-endian byte
// string, at least one byte.
func encodeBits(v uint64) []byte {
	n := 1
	for x := v >> 8; x != 0; x >>= 8 {
		n++
	}
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

func (d *Device) tableByID(id uint32) (*tableRT, error) {
	for _, rt := range d.tables {
		if rt.c.id == id {
			return rt, nil
		}
	}
	return nil, errf(codes.NotFound, "no table with id %d", id)
}

// resolveAction checks a TableAction against the table and returns the
// action index and its data.
func (d *Device) resolveAction(t *tableC, ta *p4v1.TableAction, isDefault bool) (int, []uint64, error) {
	if ta == nil {
		return 0, nil, errf(codes.InvalidArgument, "table %s: entry has no action", t.name)
	}
	a := ta.GetAction()
	if a == nil {
		return 0, nil, errf(codes.InvalidArgument, "table %s has no action profile: give an action", t.name)
	}
	ai := -1
	for i, r := range t.actions {
		if r.act.id == a.ActionId {
			ai = i
		}
	}
	if ai < 0 {
		return 0, nil, errf(codes.InvalidArgument, "table %s: action id %d is not one of its actions", t.name, a.ActionId)
	}
	ref := t.actions[ai]
	if isDefault && ref.scope.String() == "TABLE_ONLY" {
		return 0, nil, errf(codes.InvalidArgument, "table %s: action %s is @tableonly", t.name, ref.act.name)
	}
	if !isDefault && ref.scope.String() == "DEFAULT_ONLY" {
		return 0, nil, errf(codes.InvalidArgument, "table %s: action %s is @defaultonly", t.name, ref.act.name)
	}
	dp := ref.act.dataParams()
	params := make([]uint64, len(dp))
	seen := make([]bool, len(dp))
	for _, p := range a.Params {
		i := int(p.ParamId) - 1
		if i < 0 || i >= len(dp) {
			return 0, nil, errf(codes.InvalidArgument, "action %s: no parameter with id %d", ref.act.name, p.ParamId)
		}
		if seen[i] {
			return 0, nil, errf(codes.InvalidArgument, "action %s: parameter %s given twice", ref.act.name, dp[i].name)
		}
		seen[i] = true
		v, err := decodeBits(p.Value, widthOf(dp[i].t), "action "+ref.act.name+" parameter "+dp[i].name)
		if err != nil {
			return 0, nil, err
		}
		params[i] = v
	}
	for i, ok := range seen {
		if !ok {
			return 0, nil, errf(codes.InvalidArgument, "action %s: parameter %s missing", ref.act.name, dp[i].name)
		}
	}
	return ai, params, nil
}

// matchEntry builds an entry's match part (values, masks, prefix length,
// priority) from P4Runtime match fields, with P4Runtime's validity rules.
func matchEntry(t *tableC, fms []*p4v1.FieldMatch, prio int32) (*entry, error) {
	e := &entry{vals: make([]uint64, len(t.keys)), masks: make([]uint64, len(t.keys)), prio: prio}
	if t.isRange != nil {
		e.his = make([]uint64, len(t.keys))
		for i, k := range t.keys {
			if t.isRange[i] {
				e.his[i] = mask(k.w) // omitted: the whole range
			}
		}
	}
	seen := make([]bool, len(t.keys))
	for _, fm := range fms {
		i := int(fm.FieldId) - 1
		if i < 0 || i >= len(t.keys) {
			return nil, errf(codes.InvalidArgument, "table %s: no match field with id %d", t.name, fm.FieldId)
		}
		if seen[i] {
			return nil, errf(codes.InvalidArgument, "table %s: match field %s given twice", t.name, t.keys[i].name)
		}
		seen[i] = true
		k := t.keys[i]
		what := fmt.Sprintf("table %s field %s", t.name, k.name)
		switch k.match {
		case "exact":
			x := fm.GetExact()
			if x == nil {
				return nil, errf(codes.InvalidArgument, "%s: expected an exact match", what)
			}
			v, err := decodeBits(x.Value, k.w, what)
			if err != nil {
				return nil, err
			}
			e.vals[i], e.masks[i] = v, mask(k.w)
		case "lpm":
			x := fm.GetLpm()
			if x == nil {
				return nil, errf(codes.InvalidArgument, "%s: expected an lpm match", what)
			}
			v, err := decodeBits(x.Value, k.w, what)
			if err != nil {
				return nil, err
			}
			if x.PrefixLen <= 0 || int(x.PrefixLen) > k.w {
				return nil, errf(codes.InvalidArgument, "%s: prefix length %d out of 1..%d (omit the field for a don't-care)", what, x.PrefixLen, k.w)
			}
			m := prefixMask(int(x.PrefixLen), k.w)
			if v&^m != 0 {
				return nil, errf(codes.InvalidArgument, "%s: value has bits set beyond the prefix", what)
			}
			e.vals[i], e.masks[i], e.plen = v, m, int(x.PrefixLen)
		case "ternary":
			x := fm.GetTernary()
			if x == nil {
				return nil, errf(codes.InvalidArgument, "%s: expected a ternary match", what)
			}
			v, err := decodeBits(x.Value, k.w, what)
			if err != nil {
				return nil, err
			}
			m, err := decodeBits(x.Mask, k.w, what+" mask")
			if err != nil {
				return nil, err
			}
			if m == 0 {
				return nil, errf(codes.InvalidArgument, "%s: all-zero mask (omit the field for a don't-care)", what)
			}
			if v&^m != 0 {
				return nil, errf(codes.InvalidArgument, "%s: value has bits set outside the mask", what)
			}
			e.vals[i], e.masks[i] = v, m
		case "range":
			x := fm.GetRange()
			if x == nil {
				return nil, errf(codes.InvalidArgument, "%s: expected a range match", what)
			}
			lo, err := decodeBits(x.Low, k.w, what+" low")
			if err != nil {
				return nil, err
			}
			hi, err := decodeBits(x.High, k.w, what+" high")
			if err != nil {
				return nil, err
			}
			if lo > hi {
				return nil, errf(codes.InvalidArgument, "%s: low 0x%x is above high 0x%x", what, lo, hi)
			}
			if lo == 0 && hi == mask(k.w) {
				return nil, errf(codes.InvalidArgument, "%s: the whole range (omit the field for a don't-care)", what)
			}
			e.vals[i], e.his[i] = lo, hi
		case "optional":
			x := fm.GetOptional()
			if x == nil {
				return nil, errf(codes.InvalidArgument, "%s: expected an optional match", what)
			}
			v, err := decodeBits(x.Value, k.w, what)
			if err != nil {
				return nil, err
			}
			e.vals[i], e.masks[i] = v, mask(k.w)
		}
	}
	for i, k := range t.keys {
		if !seen[i] && k.match == "exact" {
			return nil, errf(codes.InvalidArgument, "table %s: exact match field %s missing", t.name, k.name)
		}
	}
	if t.kind == tkTernary {
		if prio <= 0 {
			return nil, errf(codes.InvalidArgument, "table %s: entries need a priority > 0", t.name)
		}
	} else if prio != 0 {
		return nil, errf(codes.InvalidArgument, "table %s: priority must be 0 for a table without ternary fields", t.name)
	}
	return e, nil
}

// WriteTableEntry applies one P4Runtime update to a table: INSERT, MODIFY,
// DELETE of entries, and MODIFY of the default entry (is_default_action;
// a MODIFY without action restores the program's default).
func (d *Device) WriteTableEntry(ut p4v1.Update_Type, te *p4v1.TableEntry) error {
	if te == nil {
		return errf(codes.InvalidArgument, "no table entry")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rt, err := d.tableByID(te.TableId)
	if err != nil {
		return err
	}
	t := rt.c
	if te.IsConst {
		return errf(codes.InvalidArgument, "table %s: is_const must be false in a write", t.name)
	}
	if te.IdleTimeoutNs != 0 && !t.idle {
		return errf(codes.InvalidArgument, "table %s does not support idle timeouts (idle_timeout_ns is set)", t.name)
	}
	if te.IdleTimeoutNs < 0 {
		return errf(codes.InvalidArgument, "table %s: negative idle_timeout_ns", t.name)
	}
	if te.TimeSinceLastHit != nil {
		return errf(codes.InvalidArgument, "table %s: time_since_last_hit must be unset in a write", t.name)
	}
	if te.MeterConfig != nil {
		if t.meter == nil {
			return errf(codes.InvalidArgument, "table %s has no direct meter (meter_config is set)", t.name)
		}
		if err := checkMeterConfig(te.MeterConfig, "table "+t.name); err != nil {
			return err
		}
	}
	if te.IsDefaultAction {
		if ut != p4v1.Update_MODIFY {
			return errf(codes.InvalidArgument, "table %s: the default entry can only be modified", t.name)
		}
		if len(te.Match) > 0 || te.Priority != 0 {
			return errf(codes.InvalidArgument, "table %s: the default entry has no match or priority", t.name)
		}
		if te.IdleTimeoutNs != 0 {
			return errf(codes.InvalidArgument, "table %s: the default entry has no idle timeout", t.name)
		}
		if t.defConst {
			return errf(codes.PermissionDenied, "table %s: the default action is const", t.name)
		}
		if te.Action == nil {
			rt.defAI, rt.defParams = t.defAI, append([]uint64(nil), t.defParams...)
			return nil
		}
		ai, params, err := d.resolveAction(t, te.Action, true)
		if err != nil {
			return err
		}
		rt.defAI, rt.defParams = ai, params
		return nil
	}
	if t.isConst {
		return errf(codes.PermissionDenied, "table %s is const", t.name)
	}
	if t.kind == tkKeyless {
		return errf(codes.InvalidArgument, "table %s has no key: only its default entry can be written", t.name)
	}
	e, err := matchEntry(t, te.Match, te.Priority)
	if err != nil {
		return err
	}
	old := rt.byID[rt.identity(e)]
	switch ut {
	case p4v1.Update_INSERT:
		if old != nil {
			return errf(codes.AlreadyExists, "table %s: entry already exists", t.name)
		}
		if len(rt.byID) >= t.size {
			return errf(codes.ResourceExhausted, "table %s is full (%d entries)", t.name, t.size)
		}
		if t.prof != nil {
			e.indirect = true
			if err := d.indirectAction(t, te.Action, e); err != nil {
				return err
			}
		} else if e.ai, e.params, err = d.resolveAction(t, te.Action, false); err != nil {
			return err
		}
		if cd := te.CounterData; cd != nil && t.counter != nil {
			e.packets, e.bytes = uint64(cd.PacketCount), uint64(cd.ByteCount)
		}
		e.meta = te.ControllerMetadata
		e.metaBytes = append([]byte(nil), te.Metadata...)
		e.setMeter(te.MeterConfig, d.now())
		e.idleNs, e.lastHit = te.IdleTimeoutNs, d.now()
		rt.insert(e)
	case p4v1.Update_MODIFY:
		if old == nil {
			return errf(codes.NotFound, "table %s: no such entry", t.name)
		}
		if t.prof != nil {
			ne := &entry{indirect: true}
			if err := d.indirectAction(t, te.Action, ne); err != nil {
				return err
			}
			old.ref(-1)
			old.mem, old.grp, old.oneShot = ne.mem, ne.grp, ne.oneShot
		} else {
			ai, params, err := d.resolveAction(t, te.Action, false)
			if err != nil {
				return err
			}
			old.ai, old.params = ai, params
		}
		if cd := te.CounterData; cd != nil && t.counter != nil {
			old.packets, old.bytes = uint64(cd.PacketCount), uint64(cd.ByteCount)
		}
		old.meta = te.ControllerMetadata
		old.metaBytes = append([]byte(nil), te.Metadata...)
		if te.MeterConfig != nil {
			old.setMeter(te.MeterConfig, d.now())
		}
		old.idleNs = te.IdleTimeoutNs
	case p4v1.Update_DELETE:
		if old == nil {
			return errf(codes.NotFound, "table %s: no such entry", t.name)
		}
		old.ref(-1)
		rt.remove(old)
	default:
		return errf(codes.InvalidArgument, "unknown update type %v", ut)
	}
	return nil
}

func (rt *tableRT) entryProto(e *entry, counters bool) *p4v1.TableEntry {
	t := rt.c
	te := &p4v1.TableEntry{TableId: t.id, Priority: e.prio, ControllerMetadata: e.meta, IsConst: t.isConst, IdleTimeoutNs: e.idleNs}
	if len(e.metaBytes) > 0 {
		te.Metadata = append([]byte(nil), e.metaBytes...)
	}
	for i, k := range t.keys {
		fm := &p4v1.FieldMatch{FieldId: uint32(i + 1)}
		switch k.match {
		case "exact":
			fm.FieldMatchType = &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: encodeBits(e.vals[i])}}
		case "lpm":
			pl := prefixLen(e.masks[i], k.w)
			if pl == 0 {
				continue
			}
			fm.FieldMatchType = &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: encodeBits(e.vals[i]), PrefixLen: int32(pl)}}
		case "ternary":
			if e.masks[i] == 0 {
				continue
			}
			fm.FieldMatchType = &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: encodeBits(e.vals[i]), Mask: encodeBits(e.masks[i])}}
		case "range":
			if e.vals[i] == 0 && e.his[i] == mask(k.w) {
				continue
			}
			fm.FieldMatchType = &p4v1.FieldMatch_Range_{Range: &p4v1.FieldMatch_Range{Low: encodeBits(e.vals[i]), High: encodeBits(e.his[i])}}
		case "optional":
			if e.masks[i] == 0 {
				continue
			}
			fm.FieldMatchType = &p4v1.FieldMatch_Optional_{Optional: &p4v1.FieldMatch_Optional{Value: encodeBits(e.vals[i])}}
		}
		te.Match = append(te.Match, fm)
	}
	if e.indirect {
		te.Action = indirectProto(e)
	} else {
		te.Action = actionProto(t, e.ai, e.params)
	}
	if counters && t.counter != nil {
		te.CounterData = &p4v1.CounterData{PacketCount: int64(e.packets), ByteCount: int64(e.bytes)}
	}
	return te
}

// withMeter adds e's direct meter config to te when the read asked for it.
func withMeter(te *p4v1.TableEntry, e *entry, want bool) *p4v1.TableEntry {
	if want {
		te.MeterConfig = meterConfigProto(e.meter)
	}
	return te
}

func actionProto(t *tableC, ai int, params []uint64) *p4v1.TableAction {
	a := t.actions[ai].act
	pa := &p4v1.Action{ActionId: a.id}
	for i, v := range params {
		pa.Params = append(pa.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: encodeBits(v)})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: pa}}
}

// ReadTableEntries calls fn for every entry that filter selects:
// table_id 0 means all tables; with match fields (and priority) set, only
// that entry; with is_default_action, the default entries instead. Direct
// counter data is included when filter.counter_data is set.
func (d *Device) ReadTableEntries(filter *p4v1.TableEntry, fn func(*p4v1.TableEntry) error) error {
	if filter == nil {
		filter = &p4v1.TableEntry{}
	}
	var out []*p4v1.TableEntry
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		tables := d.tables
		if filter.TableId != 0 {
			rt, err := d.tableByID(filter.TableId)
			if err != nil {
				return err
			}
			tables = []*tableRT{rt}
		}
		counters := filter.CounterData != nil
		meters := filter.MeterConfig != nil
		since := filter.TimeSinceLastHit != nil
		if since && filter.TableId != 0 && !tables[0].c.idle {
			return errf(codes.InvalidArgument, "table %s does not support idle timeouts (time_since_last_hit is set)", tables[0].c.name)
		}
		now := d.now()
		hits := func(te *p4v1.TableEntry, e *entry, rt *tableRT) *p4v1.TableEntry {
			if since && rt.c.idle {
				te.TimeSinceLastHit = &p4v1.TableEntry_IdleTimeout{ElapsedNs: int64(now-min(e.lastHit, now)) * 1000}
			}
			return te
		}
		for _, rt := range tables {
			if filter.IsDefaultAction {
				out = append(out, &p4v1.TableEntry{TableId: rt.c.id, IsDefaultAction: true,
					Action: actionProto(rt.c, rt.defAI, rt.defParams)})
				continue
			}
			if len(filter.Match) > 0 {
				if filter.TableId == 0 {
					return errf(codes.InvalidArgument, "a match filter needs a table_id")
				}
				e, err := matchEntry(rt.c, filter.Match, filter.Priority)
				if err != nil {
					return err
				}
				if x := rt.byID[rt.identity(e)]; x != nil {
					out = append(out, hits(withMeter(rt.entryProto(x, counters), x, meters), x, rt))
				}
				continue
			}
			for _, e := range rt.sorted() {
				out = append(out, hits(withMeter(rt.entryProto(e, counters), e, meters), e, rt))
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	return each(out, fn)
}

// Registers.

func (d *Device) registerByID(id uint32) (*externC, error) {
	for _, r := range d.prog.registers {
		if r.id == id {
			return r, nil
		}
	}
	return nil, errf(codes.NotFound, "no register with id %d", id)
}

// indexRange turns an optional P4Runtime index into [lo, hi).
func indexRange(ix *p4v1.Index, size int, what string) (int, int, error) {
	if ix == nil {
		return 0, size, nil
	}
	if ix.Index < 0 {
		return 0, 0, errf(codes.InvalidArgument, "%s: negative index %d", what, ix.Index)
	}
	if ix.Index >= int64(size) {
		return 0, 0, errf(codes.OutOfRange, "%s: index %d out of range [0, %d)", what, ix.Index, size)
	}
	return int(ix.Index), int(ix.Index) + 1, nil
}

// WriteRegisterEntry sets one register cell (or every cell when index is
// unset) to data, a bitstring.
func (d *Device) WriteRegisterEntry(re *p4v1.RegisterEntry) error {
	if re == nil {
		return errf(codes.InvalidArgument, "no register entry")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	r, err := d.registerByID(re.RegisterId)
	if err != nil {
		return err
	}
	lo, hi, err := indexRange(re.Index, r.size, "register "+r.name)
	if err != nil {
		return err
	}
	v, err := registerValue(r, re.GetData())
	if err != nil {
		return err
	}
	cells := d.regs[r.idx]
	for i := lo; i < hi; i++ {
		cells[i] = v
	}
	return nil
}

// registerValue decodes a register cell from P4Runtime: a bitstring, or
// for a cell of struct type (tna's Register<pair, _>) a struct of one
// bitstring per field.
func registerValue(r *externC, d *p4v1.P4Data) (uint64, error) {
	if r.t.kind != kStruct {
		bs, ok := d.GetData().(*p4v1.P4Data_Bitstring)
		if !ok {
			return 0, errf(codes.InvalidArgument, "register %s: data must be a bitstring", r.name)
		}
		return decodeBits(bs.Bitstring, r.t.width, "register "+r.name)
	}
	st, ok := d.GetData().(*p4v1.P4Data_Struct)
	if !ok || len(st.Struct.GetMembers()) != len(r.t.fields) {
		return 0, errf(codes.InvalidArgument, "register %s: data must be a struct of %d bitstrings (%s)", r.name, len(r.t.fields), r.t)
	}
	slots := make([]uint64, len(r.t.fields))
	for i, f := range r.t.fields {
		bs, ok := st.Struct.Members[i].GetData().(*p4v1.P4Data_Bitstring)
		if !ok {
			return 0, errf(codes.InvalidArgument, "register %s: member %s must be a bitstring", r.name, f.name)
		}
		v, err := decodeBits(bs.Bitstring, widthOf(f.t), "register "+r.name+"."+f.name)
		if err != nil {
			return 0, err
		}
		slots[i] = v
	}
	return r.layout.pack(slots), nil
}

// registerData encodes a register cell for P4Runtime (see registerValue).
func registerData(r *externC, v uint64) *p4v1.P4Data {
	if r.t.kind != kStruct {
		return &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: encodeBits(v)}}
	}
	slots := make([]uint64, len(r.t.fields))
	r.layout.unpack(v, slots)
	st := &p4v1.P4StructLike{}
	for _, x := range slots {
		st.Members = append(st.Members, &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: encodeBits(x)}})
	}
	return &p4v1.P4Data{Data: &p4v1.P4Data_Struct{Struct: st}}
}

// ReadRegisterEntries calls fn for the cells filter selects: register_id 0
// means every register, an unset index every cell.
func (d *Device) ReadRegisterEntries(filter *p4v1.RegisterEntry, fn func(*p4v1.RegisterEntry) error) error {
	if filter == nil {
		filter = &p4v1.RegisterEntry{}
	}
	// The cells are copied under the lock and encoded after it, so that a
	// wildcard read of a large register holds the data plane up only for
	// the copy.
	type span struct {
		id     uint32
		r      *externC
		lo     int
		values []uint64
	}
	var spans []span
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		regs := d.prog.registers
		if filter.RegisterId != 0 {
			r, err := d.registerByID(filter.RegisterId)
			if err != nil {
				return err
			}
			regs = []*externC{r}
		}
		for _, r := range regs {
			lo, hi, err := indexRange(filter.Index, r.size, "register "+r.name)
			if err != nil {
				return err
			}
			spans = append(spans, span{id: r.id, r: r, lo: lo, values: append([]uint64(nil), d.regs[r.idx][lo:hi]...)})
		}
		return nil
	}()
	if err != nil {
		return err
	}
	var out []*p4v1.RegisterEntry
	for _, sp := range spans {
		for j, v := range sp.values {
			out = append(out, &p4v1.RegisterEntry{RegisterId: sp.id, Index: &p4v1.Index{Index: int64(sp.lo + j)},
				Data: registerData(sp.r, v)})
		}
	}
	return each(out, fn)
}

// Counters.

func (d *Device) counterByID(id uint32) (*externC, error) {
	for _, c := range d.prog.counters {
		if c.id == id {
			return c, nil
		}
	}
	return nil, errf(codes.NotFound, "no counter with id %d", id)
}

// WriteCounterEntry sets one counter cell (every cell when index is unset).
func (d *Device) WriteCounterEntry(ce *p4v1.CounterEntry) error {
	if ce == nil {
		return errf(codes.InvalidArgument, "no counter entry")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c, err := d.counterByID(ce.CounterId)
	if err != nil {
		return err
	}
	lo, hi, err := indexRange(ce.Index, c.size, "counter "+c.name)
	if err != nil {
		return err
	}
	if ce.Data == nil {
		return nil // P4Runtime: without data the counter is not modified
	}
	if ce.Data.PacketCount < 0 || ce.Data.ByteCount < 0 {
		return errf(codes.InvalidArgument, "counter %s: negative count", c.name)
	}
	ct := &d.counters[c.idx]
	for i := lo; i < hi; i++ {
		ct.packets[i], ct.bytes[i] = uint64(ce.Data.PacketCount), uint64(ce.Data.ByteCount)
	}
	return nil
}

func counterData(unit string, packets, bytes uint64) *p4v1.CounterData {
	cd := &p4v1.CounterData{}
	if unit != "BYTES" {
		cd.PacketCount = int64(packets)
	}
	if unit != "PACKETS" {
		cd.ByteCount = int64(bytes)
	}
	return cd
}

// ReadCounterEntries calls fn for the cells filter selects (counter_id 0:
// all counters; unset index: all cells). Only the counted unit is filled.
func (d *Device) ReadCounterEntries(filter *p4v1.CounterEntry, fn func(*p4v1.CounterEntry) error) error {
	if filter == nil {
		filter = &p4v1.CounterEntry{}
	}
	var out []*p4v1.CounterEntry
	err := func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		cs := d.prog.counters
		if filter.CounterId != 0 {
			c, err := d.counterByID(filter.CounterId)
			if err != nil {
				return err
			}
			cs = []*externC{c}
		}
		for _, c := range cs {
			lo, hi, err := indexRange(filter.Index, c.size, "counter "+c.name)
			if err != nil {
				return err
			}
			ct := &d.counters[c.idx]
			for i := lo; i < hi; i++ {
				out = append(out, &p4v1.CounterEntry{CounterId: c.id, Index: &p4v1.Index{Index: int64(i)},
					Data: counterData(c.unit.String(), ct.packets[i], ct.bytes[i])})
			}
		}
		return nil
	}()
	if err != nil {
		return err
	}
	return each(out, fn)
}

// ReadDirectCounterEntries calls fn with the direct counter data of the
// entries filter.table_entry selects (as ReadTableEntries; the table must
// have a direct counter; table_id 0 means every table that has one).
func (d *Device) ReadDirectCounterEntries(filter *p4v1.DirectCounterEntry, fn func(*p4v1.DirectCounterEntry) error) error {
	te := filter.GetTableEntry()
	if te == nil {
		te = &p4v1.TableEntry{}
	}
	if te.TableId != 0 {
		d.mu.Lock()
		rt, err := d.tableByID(te.TableId)
		d.mu.Unlock()
		if err != nil {
			return err
		}
		if rt.c.counter == nil {
			return errf(codes.InvalidArgument, "table %s has no direct counter", rt.c.name)
		}
	}
	if te.IsDefaultAction {
		return errf(codes.InvalidArgument, "direct counters do not count the default entry on this target")
	}
	f := &p4v1.TableEntry{TableId: te.TableId, Match: te.Match, Priority: te.Priority, CounterData: &p4v1.CounterData{}}
	found := 0
	err := d.ReadTableEntries(f, func(e *p4v1.TableEntry) error {
		rt, _ := d.tableByIDLocked(e.TableId)
		if rt == nil || rt.c.counter == nil {
			return nil
		}
		found++
		cd := counterData(rt.c.counter.unit.String(), uint64(e.CounterData.GetPacketCount()), uint64(e.CounterData.GetByteCount()))
		e.CounterData = nil
		return fn(&p4v1.DirectCounterEntry{TableEntry: e, Data: cd})
	})
	if err == nil && found == 0 && len(te.Match) > 0 {
		// P4Runtime (DirectCounterEntry): reading the counter of an
		// entry that does not exist is NOT_FOUND.
		return errf(codes.NotFound, "table id %d: no such entry", te.TableId)
	}
	return err
}

func (d *Device) tableByIDLocked(id uint32) (*tableRT, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.tableByID(id)
}

// WriteDirectCounterEntry sets the direct counter of one entry.
func (d *Device) WriteDirectCounterEntry(dce *p4v1.DirectCounterEntry) error {
	te := dce.GetTableEntry()
	if te == nil {
		return errf(codes.InvalidArgument, "direct counter entry needs a table entry")
	}
	if d := dce.Data; d != nil && (d.PacketCount < 0 || d.ByteCount < 0) {
		return errf(codes.InvalidArgument, "direct counter: negative count")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	rt, err := d.tableByID(te.TableId)
	if err != nil {
		return err
	}
	if rt.c.counter == nil {
		return errf(codes.InvalidArgument, "table %s has no direct counter", rt.c.name)
	}
	e, err := matchEntry(rt.c, te.Match, te.Priority)
	if err != nil {
		return err
	}
	x := rt.byID[rt.identity(e)]
	if x == nil {
		return errf(codes.NotFound, "table %s: no such entry", rt.c.name)
	}
	if dce.Data != nil { // without data the counter is not modified
		x.packets, x.bytes = uint64(dce.Data.PacketCount), uint64(dce.Data.ByteCount)
	}
	return nil
}

// each calls fn for every element of out, stopping at the first error.
func each[T any](out []T, fn func(T) error) error {
	for _, x := range out {
		if err := fn(x); err != nil {
			return err
		}
	}
	return nil
}
