package ctrl

import (
	"fmt"
	"time"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
)

// Plan is everything the controller installs from the configuration,
// computed in full (every name resolved through the P4Info, every value
// checked against its width, every capacity checked) before anything is
// written: a plan that cannot be built writes nothing.
type Plan struct {
	Forward []*p4.TableEntry // one per host: dst MAC -> port
	// Config is the config table's default entry, set_config(mode,
	// node_size, tail_ttl), written with a MODIFY (P4Runtime's only update
	// of a default entry).
	Config *p4.TableEntry
	// Tracked is the initial tracked-keys table (key -> slot): the fixed
	// tracked-keys list, or empty under hot-key steering.
	Tracked map[uint64]uint16
	// KeySlots is the number of key slots the program offers (the smaller
	// of the tracked_keys table size and the per-key counter size).
	KeySlots int
	// NoChain: the rack asks for chain mode and the program has none (no
	// spec_valid register); write steering then steers to confirmed tails
	// only.
	NoChain bool
}

// KeySlots is the number of keys the pipeline s can steer at once: the
// smaller of its tracked_keys table's size and its per-key counter's.
func KeySlots(s *p4rtc.Schema) (int, error) {
	t, err := s.Table(tTrackedKeys)
	if err != nil {
		return 0, err
	}
	c, err := s.Counter(cKeyCAS)
	if err != nil {
		return 0, err
	}
	return int(min(t.GetSize(), c.GetSize())), nil
}

// BuildPlan computes the plan of rack r against the pipeline s.
func BuildPlan(r *rack.Rack, s *p4rtc.Schema) (*Plan, error) {
	p := &Plan{Tracked: map[uint64]uint16{}}
	for i, h := range r.Hosts {
		e, err := s.TableEntry(tForward, []p4rtc.Match{p4rtc.Exact(fEthDst, h.MAC[:])}, aSetEgress, p4rtc.P(pPort, uint64(h.Port)))
		if err != nil {
			return nil, fmt.Errorf("ctrl.hosts[%d] (%s): %w", i, h.Name, err)
		}
		p.Forward = append(p.Forward, e)
	}
	mode := uint64(0)
	switch r.Steering {
	case rack.SteerWrite:
		mode = modeWrite
	case rack.SteerReadWrite:
		mode = modeWrite | modeRead
	}
	if r.Chain && mode&modeWrite != 0 {
		// Chain mode is the program's if it keeps a chain per key.
		if _, err := s.Register(rSpecValid); err == nil {
			mode |= modeChain
		} else {
			p.NoChain = true
		}
	}
	cfg, err := s.TableEntry(tConfig, nil, aSetConfig, p4rtc.P(pMode, mode),
		p4rtc.P(pNodeSize, uint64(rack.NodeOverhead+r.ObjectSize)), p4rtc.P(pTailTTL, uint64(r.TailTTL/time.Microsecond)))
	if err != nil {
		return nil, err
	}
	cfg.IsDefaultAction = true
	p.Config = cfg

	if p.KeySlots, err = KeySlots(s); err != nil {
		return nil, err
	}
	if len(r.TrackedKeys) > p.KeySlots {
		return nil, fmt.Errorf("ctrl.tracked-keys: %d keys, the switch has %d key slots", len(r.TrackedKeys), p.KeySlots)
	}
	if r.HotKeys > 0 && r.HotKeys+r.HotKeyProbes > p.KeySlots {
		return nil, fmt.Errorf("ctrl.hot-keys: %d hot keys + %d probes, the switch has %d key slots", r.HotKeys, r.HotKeyProbes, p.KeySlots)
	}
	for i, k := range r.TrackedKeys {
		p.Tracked[k] = uint16(i)
	}
	// Resolve every name the loops use now, so that a pipeline missing one
	// is refused before anything is written.
	for _, name := range append([]string{rCASValid, rTailValid}, casFields...) {
		if _, err := s.Register(name); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{cStats, cKeyCAS, cKeyReads, cKeyMisses, cKeyRetrans} {
		if _, err := s.Counter(name); err != nil {
			return nil, err
		}
	}
	if _, err := s.PacketOutMetadata(p4rtc.P(mEgressPort, 0)); err != nil {
		return nil, err
	}
	if _, err := trackEntry(s, 0, 0); err != nil {
		return nil, err
	}
	return p, nil
}

// registerCell builds the register entry name[index] = value.
func registerCell(s *p4rtc.Schema, name string, index int64, value uint64) (*p4.RegisterEntry, error) {
	reg, err := s.Register(name)
	if err != nil {
		return nil, err
	}
	v, err := p4rtc.Canonical(p4rtc.Uint(value), p4rtc.RegisterWidth(reg))
	if err != nil {
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	return &p4.RegisterEntry{
		RegisterId: reg.GetPreamble().GetId(),
		Index:      &p4.Index{Index: index},
		Data:       &p4.P4Data{Data: &p4.P4Data_Bitstring{Bitstring: v}},
	}, nil
}

// trackEntry builds the tracked_keys entry key -> track(slot).
func trackEntry(s *p4rtc.Schema, key uint64, slot uint16) (*p4.TableEntry, error) {
	return s.TableEntry(tTrackedKeys, []p4rtc.Match{p4rtc.Exact(fCloverKey, p4rtc.Uint(key))}, aTrack, p4rtc.P(pSlot, uint64(slot)))
}

// matchKey is a comparable identity of a table entry's match, with every
// bytestring canonical (servers may answer reads with padded values).
func matchKey(e *p4.TableEntry) string {
	k := &p4.TableEntry{TableId: e.GetTableId(), Priority: e.GetPriority()}
	for _, m := range e.GetMatch() {
		m = proto.Clone(m).(*p4.FieldMatch)
		switch v := m.GetFieldMatchType().(type) {
		case *p4.FieldMatch_Exact_:
			v.Exact.Value = canon(v.Exact.Value)
		case *p4.FieldMatch_Lpm:
			v.Lpm.Value = canon(v.Lpm.Value)
		case *p4.FieldMatch_Ternary_:
			v.Ternary.Value, v.Ternary.Mask = canon(v.Ternary.Value), canon(v.Ternary.Mask)
		case *p4.FieldMatch_Range_:
			v.Range.Low, v.Range.High = canon(v.Range.Low), canon(v.Range.High)
		case *p4.FieldMatch_Optional_:
			v.Optional.Value = canon(v.Optional.Value)
		}
		k.Match = append(k.Match, m)
	}
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(k)
	return string(b)
}

// actionKey is a comparable identity of a table entry's action.
func actionKey(e *p4.TableEntry) string {
	a := e.GetAction().GetAction()
	if a == nil {
		b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(e.GetAction())
		return string(b)
	}
	k := fmt.Sprint(a.GetActionId())
	for _, p := range a.GetParams() {
		k += fmt.Sprintf(",%d=%x", p.GetParamId(), canon(p.GetValue()))
	}
	return k
}

func canon(b []byte) []byte {
	c, _ := p4rtc.Canonical(b, 0)
	return c
}

// Reconcile returns the updates that turn the entries a table has into the
// entries it should have: inserts for missing ones, modifies for changed
// actions, deletes for extra ones (the controller owns these tables).
func Reconcile(have, want []*p4.TableEntry) []*p4.Update {
	haveBy := map[string]*p4.TableEntry{}
	for _, e := range have {
		haveBy[matchKey(e)] = e
	}
	var ups []*p4.Update
	seen := map[string]bool{}
	for _, e := range want {
		k := matchKey(e)
		seen[k] = true
		h, ok := haveBy[k]
		switch {
		case !ok:
			ups = append(ups, p4rtc.Insert(p4rtc.TableEntity(e)))
		case actionKey(h) != actionKey(e):
			ups = append(ups, p4rtc.Modify(p4rtc.TableEntity(e)))
		}
	}
	for _, e := range have {
		if !seen[matchKey(e)] {
			d := &p4.TableEntry{TableId: e.GetTableId(), Match: e.GetMatch(), Priority: e.GetPriority()}
			ups = append(ups, p4rtc.Delete(p4rtc.TableEntity(d)))
		}
	}
	return ups
}
