package ctrl

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
)

// Reader is the part of a P4Runtime client that Show needs.
type Reader interface {
	Read(ctx context.Context, entities ...*p4.Entity) ([]*p4.Entity, error)
}

// Show writes a human-readable dump of a live switch to w: what is
// "tables", "registers" or "counters"; names restricts it to some objects
// (full names or aliases), all of them when empty. Tables print their
// entries and their default entry; registers and counters print only
// their non-zero cells. A counter named here shows with its parts N_part2,
// N_part3, ... (see Controller.ReadCounter), each on its own.
func Show(ctx context.Context, r Reader, s *p4rtc.Schema, what string, names []string, w io.Writer) error {
	var all []string
	switch what {
	case "tables":
		all = s.Tables()
	case "registers":
		all = s.Registers()
	case "counters":
		all = s.Counters()
	default:
		return fmt.Errorf("show: %q is not tables, registers or counters", what)
	}
	if len(names) == 0 {
		names = all
	} else if what == "counters" {
		// A counter split into parts (ReadCounter) shows with its parts.
		var with []string
		for _, n := range names {
			with = append(append(with, n), counterParts(s, n)...)
		}
		names = with
	}
	for _, name := range names {
		var q *p4.Entity
		var err error
		switch what {
		case "tables":
			q, err = s.TableRead(name)
		case "registers":
			q, err = s.RegisterRead(name, -1)
		case "counters":
			q, err = s.CounterRead(name, -1)
		}
		if err != nil {
			return err
		}
		ents, err := r.Read(ctx, q)
		if err != nil {
			if what == "registers" && p4rtc.IsUnimplemented(err) {
				return fmt.Errorf("register %s: this P4Runtime server does not implement register reads (PI-based servers: BMv2, bf_switchd): %w", name, err)
			}
			return err
		}
		if what == "tables" {
			// The default entry is read only when asked for by itself.
			d, err := r.Read(ctx, p4rtc.TableEntity(&p4.TableEntry{TableId: q.GetTableEntry().GetTableId(), IsDefaultAction: true}))
			if err != nil {
				return err
			}
			ents = append(ents, d...)
		}
		switch what {
		case "tables":
			showTable(s, name, ents, w)
		case "registers":
			showCells(name, ents, w, func(e *p4.Entity) (int64, string, bool) {
				re := e.GetRegisterEntry()
				v := re.GetData().GetBitstring()
				return re.GetIndex().GetIndex(), fmt.Sprintf("0x%x", trim(v)), !isZero(v)
			})
		case "counters":
			showCells(name, ents, w, func(e *p4.Entity) (int64, string, bool) {
				ce := e.GetCounterEntry()
				d := ce.GetData()
				return ce.GetIndex().GetIndex(), fmt.Sprintf("%d packets %d bytes", d.GetPacketCount(), d.GetByteCount()),
					d.GetPacketCount() != 0 || d.GetByteCount() != 0
			})
		}
	}
	return nil
}

func showTable(s *p4rtc.Schema, name string, ents []*p4.Entity, w io.Writer) {
	t, _ := s.Table(name)
	var lines []string
	for _, e := range ents {
		te := e.GetTableEntry()
		if te == nil || te.GetIsDefaultAction() {
			continue
		}
		lines = append(lines, "  "+formatEntry(s, t, te))
	}
	slices.Sort(lines)
	fmt.Fprintf(w, "%s: %d entries\n", t.GetPreamble().GetName(), len(lines))
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	for _, e := range ents {
		if te := e.GetTableEntry(); te.GetIsDefaultAction() && te.GetAction() != nil {
			fmt.Fprintf(w, "  default%s\n", formatEntry(s, t, te))
		}
	}
}

// formatEntry renders a table entry with the P4Info's names.
func formatEntry(s *p4rtc.Schema, t *p4cfg.Table, te *p4.TableEntry) string {
	var b strings.Builder
	for i, m := range te.GetMatch() {
		if i > 0 {
			b.WriteString(" ")
		}
		field := fmt.Sprint(m.GetFieldId())
		for _, mf := range t.GetMatchFields() {
			if mf.GetId() == m.GetFieldId() {
				field = mf.GetName()
			}
		}
		switch {
		case m.GetExact() != nil:
			fmt.Fprintf(&b, "%s=0x%x", field, trim(m.GetExact().GetValue()))
		case m.GetLpm() != nil:
			fmt.Fprintf(&b, "%s=0x%x/%d", field, trim(m.GetLpm().GetValue()), m.GetLpm().GetPrefixLen())
		case m.GetTernary() != nil:
			fmt.Fprintf(&b, "%s=0x%x&&&0x%x", field, trim(m.GetTernary().GetValue()), trim(m.GetTernary().GetMask()))
		case m.GetRange() != nil:
			fmt.Fprintf(&b, "%s=0x%x..0x%x", field, trim(m.GetRange().GetLow()), trim(m.GetRange().GetHigh()))
		case m.GetOptional() != nil:
			fmt.Fprintf(&b, "%s=0x%x", field, trim(m.GetOptional().GetValue()))
		}
	}
	if te.GetPriority() != 0 {
		fmt.Fprintf(&b, " priority=%d", te.GetPriority())
	}
	if a := te.GetAction().GetAction(); a != nil {
		an := s.Name(a.GetActionId())
		var ps []string
		var spec []*p4cfg.Action_Param
		if act, err := s.Action(an); err == nil {
			spec = act.GetParams()
		}
		for _, p := range a.GetParams() {
			pn := fmt.Sprint(p.GetParamId())
			for _, sp := range spec {
				if sp.GetId() == p.GetParamId() {
					pn = sp.GetName()
				}
			}
			ps = append(ps, fmt.Sprintf("%s=0x%x", pn, trim(p.GetValue())))
		}
		fmt.Fprintf(&b, " -> %s(%s)", an, strings.Join(ps, ", "))
	}
	return b.String()
}

func showCells(name string, ents []*p4.Entity, w io.Writer, cell func(*p4.Entity) (int64, string, bool)) {
	type row struct {
		i int64
		v string
	}
	var rows []row
	for _, e := range ents {
		if i, v, ok := cell(e); ok {
			rows = append(rows, row{i, v})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(a.i - b.i) })
	fmt.Fprintf(w, "%s: %d of %d cells non-zero\n", name, len(rows), len(ents))
	for _, r := range rows {
		fmt.Fprintf(w, "  [%d] %s\n", r.i, r.v)
	}
}

func trim(b []byte) []byte {
	c, _ := p4rtc.Canonical(b, 0)
	return c
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
