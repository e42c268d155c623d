// Package report turns the cells of a benchmark run into what a researcher
// reads: a table on a terminal, and under results/<run>/ the JSON, a CSV, a
// Markdown report and PNG plots in the manner of the SwordBox paper's
// Figures 11 (throughput), 12 (bytes per operation) and 13 (p99 read and
// write latency).
//
// It owns formats only. It measures nothing and runs nothing: the numbers in
// a Cell are what the benchmark harness measured, and a Run carries the
// configuration (rack, RNIC timing model, machine, seed) a reader needs to
// judge them.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Cell is one measured configuration: one system, workload and mode.
// A metric that does not apply (CAS success rate of a read-only run, a
// latency of an operation type that never ran) is NaN, which JSON carries as
// null and the table as n/a.
type Cell struct {
	System   string `json:"system"`
	Scenario string `json:"scenario"`
	Mode     string `json:"mode"`
	Workload string `json:"workload"`
	// Param is the swept parameter of the scenario (tracked keys, zipf
	// constant, object size, client QPs), empty for the default scenario.
	Param string `json:"param,omitempty"`

	OpsPerSec float64 `json:"ops_per_sec"`
	P50us     float64 `json:"p50_us"`
	P99us     float64 `json:"p99_us"`
	P999us    float64 `json:"p999_us"`
	// ReadP99us and WriteP99us split p99 by operation type (Figure 13).
	ReadP99us  float64 `json:"read_p99_us"`
	WriteP99us float64 `json:"write_p99_us"`
	// BytesPerOp counts every byte of every frame (Ethernet to ICRC) that
	// crossed the switch's ports, divided by completed operations.
	BytesPerOp     float64 `json:"bytes_per_op"`
	VerbsPerOp     float64 `json:"verbs_per_op"`
	CASSuccessRate float64 `json:"cas_success_rate"`
	RetriesPerOp   float64 `json:"retries_per_op"`

	Ops      uint64            `json:"ops"`
	Errors   uint64            `json:"errors"`
	Seconds  float64           `json:"seconds"`
	Clients  int               `json:"clients"`
	Steering map[string]uint64 `json:"steering,omitempty"`
	// Mechanism holds the counters that show whether steering works, per
	// operation unless named otherwise (MechanismColumns lists them).
	Mechanism map[string]float64 `json:"mechanism,omitempty"`
	// Note says what went wrong in the cell, if anything.
	Note string `json:"note,omitempty"`
}

// MechanismColumns are the keys of Cell.Mechanism, in table order, with
// what each counts.
var MechanismColumns = []struct{ Key, Head, Doc string }{
	{"verbs_per_op", "verbs/op", "data-path verbs the clients posted, per operation"},
	{"precas_reads_per_op", "pre-CAS rd/op", "header READs a put made before or between its CASes beyond its one persistence READ"},
	{"recoveries_per_op", "recov/op", "recoveries through the shortcut or the metadata server"},
	{"read_timeouts_per_op", "T_r rd/op", "READs discarded and reissued because they took longer than Clover's T_r"},
	{"steered_reads_per_op", "steered rd/op", "node READs the switch steered that the clients recognised (another slot's node)"},
	{"steered_nontail_per_op", "non-tail/op", "steered READs whose node was no longer the tail (the switch's tail lagged)"},
	{"unproven_reads_per_op", "unproven rd/op", "node READs steered to a node the switch did not vouch for (a chain's end not yet confirmed), read again"},
	{"cas_vouched", "CAS vouched", "steered links the switch vouched for in the ATOMIC ACK (taken without a proof)"},
	{"cas_steered_ok", "CAS steered ok", "linking CASes that succeeded on a tail the switch steered them to"},
	{"cas_unlearned", "CAS unlearned", "linking CASes the switch could not tie to a node WRITE (node map miss)"},
	{"link_takeovers", "takeovers", "CAS records overwritten in the switch before their ACK (hash collision)"},
	{"tails_dropped", "tails dropped", "cached tails the switch forgot because a CAS steered to them failed"},
	{"retire_unknown", "retire-unknown", "steered links whose predecessor the client could not find (leaked slot)"},
	{"uncertain", "uncertain", "puts whose outcome the client could not establish"},
	{"cursor_misses_per_op", "cursor miss/op", "lookups at the metadata server for a key the thread held no cursor for (its first touch of the key): many mean the cell measured cold cursor caches, not the steady state of a long run"},
	{"first_try_per_op", "first-try/op", "operations that succeeded at their first attempt: gets whose first node READ was the tail, puts whose cursor was the tail and whose one CAS linked (SwordBox Figure 5's \"successful operations\", as we read it)"},
}

// Run is a whole benchmark run.
type Run struct {
	ID       string    `json:"id"`
	Started  time.Time `json:"started"`
	Scenario string    `json:"scenario"`
	// Baseline is the mode the others are compared with ("off" when empty).
	Baseline string `json:"baseline,omitempty"`
	// Config lists the settings that shaped the run, as name = value lines
	// for the report: rack, timing model, machine, seed, durations.
	Config [][2]string `json:"config"`
	Cells  []Cell      `json:"cells"`
	// Notes are free-text findings the harness wants in the report.
	Notes []string `json:"notes,omitempty"`
	// Partial marks a run that stopped before its last cell (interrupted,
	// or a cell failed): Cells holds the cells that completed.
	Partial bool `json:"partial,omitempty"`
}

// WriteTable prints the cells as an aligned table.
func WriteTable(w io.Writer, cells []Cell) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tparam\tmode\tops/s\tp50 us\tp99 us\tp99.9 us\tread p99\twrite p99\tbytes/op\tCAS ok\tretries/op\t")
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			c.Workload, dash(c.Param), c.Mode, human(c.OpsPerSec),
			f1(c.P50us), f1(c.P99us), f1(c.P999us), f1(c.ReadP99us), f1(c.WriteP99us),
			f0(c.BytesPerOp), pct(c.CASSuccessRate), f2(c.RetriesPerOp))
	}
	return tw.Flush()
}

// WriteMechanism prints the steering mechanism's counters of the cells
// that have them as an aligned table (nothing when none has).
func WriteMechanism(w io.Writer, cells []Cell) error {
	any := false
	for _, c := range cells {
		any = any || len(c.Mechanism) > 0
	}
	if !any {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "workload\tparam\tmode\t")
	for _, m := range MechanismColumns {
		fmt.Fprint(tw, m.Head, "\t")
	}
	fmt.Fprintln(tw)
	for _, c := range cells {
		fmt.Fprintf(tw, "%s\t%s\t%s\t", c.Workload, dash(c.Param), c.Mode)
		for _, m := range MechanismColumns {
			v, ok := c.Mechanism[m.Key]
			switch {
			case !ok:
				fmt.Fprint(tw, "-\t")
			case strings.HasSuffix(m.Key, "_per_op"):
				fmt.Fprint(tw, fnum(v, 3), "\t")
			default:
				fmt.Fprint(tw, fnum(v, 0), "\t")
			}
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// MarshalJSON writes NaN and infinite metrics as null.
func (c Cell) MarshalJSON() ([]byte, error) {
	n := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		System         string             `json:"system"`
		Scenario       string             `json:"scenario"`
		Mode           string             `json:"mode"`
		Workload       string             `json:"workload"`
		Param          string             `json:"param,omitempty"`
		OpsPerSec      *float64           `json:"ops_per_sec"`
		P50us          *float64           `json:"p50_us"`
		P99us          *float64           `json:"p99_us"`
		P999us         *float64           `json:"p999_us"`
		ReadP99us      *float64           `json:"read_p99_us"`
		WriteP99us     *float64           `json:"write_p99_us"`
		BytesPerOp     *float64           `json:"bytes_per_op"`
		VerbsPerOp     *float64           `json:"verbs_per_op"`
		CASSuccessRate *float64           `json:"cas_success_rate"`
		RetriesPerOp   *float64           `json:"retries_per_op"`
		Ops            uint64             `json:"ops"`
		Errors         uint64             `json:"errors"`
		Seconds        *float64           `json:"seconds"`
		Clients        int                `json:"clients"`
		Steering       map[string]uint64  `json:"steering,omitempty"`
		Mechanism      map[string]float64 `json:"mechanism,omitempty"`
		Note           string             `json:"note,omitempty"`
	}{c.System, c.Scenario, c.Mode, c.Workload, c.Param, n(c.OpsPerSec), n(c.P50us), n(c.P99us), n(c.P999us),
		n(c.ReadP99us), n(c.WriteP99us), n(c.BytesPerOp), n(c.VerbsPerOp), n(c.CASSuccessRate), n(c.RetriesPerOp),
		c.Ops, c.Errors, n(c.Seconds), c.Clients, c.Steering, c.Mechanism, c.Note})
}

// WriteJSON writes the cells as a JSON array (what `bench --json` prints).
func WriteJSON(w io.Writer, cells []Cell) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if cells == nil {
		cells = []Cell{}
	}
	return enc.Encode(cells)
}

var csvHeader = []string{"system", "scenario", "mode", "workload", "param", "ops_per_sec", "p50_us", "p99_us", "p999_us",
	"read_p99_us", "write_p99_us", "bytes_per_op", "verbs_per_op", "cas_success_rate", "retries_per_op", "ops", "errors", "seconds", "clients"}

// WriteCSV writes one row per cell.
func WriteCSV(w io.Writer, cells []Cell) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }
	for _, c := range cells {
		row := []string{c.System, c.Scenario, c.Mode, c.Workload, c.Param, g(c.OpsPerSec), g(c.P50us), g(c.P99us), g(c.P999us),
			g(c.ReadP99us), g(c.WriteP99us), g(c.BytesPerOp), g(c.VerbsPerOp), g(c.CASSuccessRate), g(c.RetriesPerOp),
			strconv.FormatUint(c.Ops, 10), strconv.FormatUint(c.Errors, 10), g(c.Seconds), strconv.Itoa(c.Clients)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteMarkdown writes the human report: configuration, table, ratios
// against the "off" mode, plots and notes.
func WriteMarkdown(w io.Writer, r *Run, plots []Figure) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# swordbox bench: %s\n\n", r.ID)
	if r.Partial {
		fmt.Fprintf(&b, "**Partial run: it stopped after %d cells (see the notes); the missing cells were not measured.**\n\n", len(r.Cells))
	}
	fmt.Fprintf(&b, "Started %s, scenario `%s`.\n\n## Configuration\n\n| setting | value |\n|---|---|\n", r.Started.UTC().Format(time.RFC3339), r.Scenario)
	for _, kv := range r.Config {
		fmt.Fprintf(&b, "| %s | %s |\n", kv[0], strings.ReplaceAll(kv[1], "|", "\\|"))
	}
	b.WriteString("\n## Results\n\n| workload | param | mode | ops/s | p50 µs | p99 µs | p99.9 µs | read p99 µs | write p99 µs | bytes/op | verbs/op | CAS success | retries/op | errors |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range r.Cells {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			c.Workload, dash(c.Param), c.Mode, human(c.OpsPerSec), f1(c.P50us), f1(c.P99us), f1(c.P999us),
			f1(c.ReadP99us), f1(c.WriteP99us), f0(c.BytesPerOp), f2(c.VerbsPerOp), pct(c.CASSuccessRate), f2(c.RetriesPerOp), c.Errors)
	}
	if rows := Ratios(r.Cells, r.BaselineMode()); len(rows) > 0 {
		fmt.Fprintf(&b, "\n## Against %s (same workload, same seed)\n\n", r.BaselineMode())
		b.WriteString("| workload | param | mode | throughput | bytes/op | p99 read | p99 write |\n|---|---|---|---:|---:|---:|---:|\n")
		for _, q := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", q.Workload, dash(q.Param), q.Mode,
				ratio(q.Throughput), ratio(q.BytesReduction), ratio(q.ReadP99Reduction), ratio(q.WriteP99Reduction))
		}
		fmt.Fprintf(&b, "\nThroughput is mode ÷ %[1]s; the other columns are %[1]s ÷ mode (how many times smaller).\n", r.BaselineMode())
	}
	if len(plots) > 0 {
		b.WriteString("\n## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(&b, "![%s](%s)\n\n*What this shows:* %s\n\n", strings.TrimSuffix(p.File, ".png"), p.File, p.Caption)
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// BaselineMode is the mode the run's other modes are compared with.
func (r *Run) BaselineMode() string {
	if r.Baseline == "" {
		return "off"
	}
	return r.Baseline
}

// Ratio compares one mode's cell with the baseline cell of the same
// workload and parameter.
type Ratio struct {
	Workload, Param, Mode string
	Throughput            float64 // mode ops/s ÷ baseline ops/s
	BytesReduction        float64 // baseline bytes/op ÷ mode bytes/op
	ReadP99Reduction      float64 // baseline read p99 ÷ mode read p99
	WriteP99Reduction     float64 // baseline write p99 ÷ mode write p99
}

// Ratios pairs every non-baseline cell with its baseline cell.
func Ratios(cells []Cell, baseline string) []Ratio {
	type k struct{ w, p string }
	base := map[k]Cell{}
	for _, c := range cells {
		if c.Mode == baseline {
			base[k{c.Workload, c.Param}] = c
		}
	}
	var out []Ratio
	for _, c := range cells {
		b, ok := base[k{c.Workload, c.Param}]
		if !ok || c.Mode == baseline {
			continue
		}
		out = append(out, Ratio{Workload: c.Workload, Param: c.Param, Mode: c.Mode,
			Throughput: div(c.OpsPerSec, b.OpsPerSec), BytesReduction: div(b.BytesPerOp, c.BytesPerOp),
			ReadP99Reduction: div(b.ReadP99us, c.ReadP99us), WriteP99Reduction: div(b.WriteP99us, c.WriteP99us)})
	}
	return out
}

// SaveUnder saves the run in root/<id>-<scenario>/ (Save) and points
// root/latest at it. It returns the directory.
func SaveUnder(root string, r *Run) (string, error) {
	name := r.ID
	if r.Scenario != "" {
		name += "-" + r.Scenario
	}
	dir := filepath.Join(root, name)
	if _, err := Save(dir, r); err != nil {
		return dir, err
	}
	tmp := filepath.Join(root, ".latest-"+name)
	os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return dir, fmt.Errorf("report: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(root, "latest")); err != nil {
		os.Remove(tmp)
		return dir, fmt.Errorf("report: %w", err)
	}
	return dir, nil
}

// Save writes results.json (the run), cells.json, results.csv, report.md and
// the plots into dir, creating it. It returns the files written.
func Save(dir string, r *Run) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var written []string
	create := func(name string, fn func(io.Writer) error) error {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("report: write %s: %w", p, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		written = append(written, p)
		return nil
	}
	if err := create("results.json", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}); err != nil {
		return written, err
	}
	if err := create("cells.json", func(w io.Writer) error { return WriteJSON(w, r.Cells) }); err != nil {
		return written, err
	}
	if err := create("results.csv", func(w io.Writer) error { return WriteCSV(w, r.Cells) }); err != nil {
		return written, err
	}
	plots, err := Plot(dir, r)
	if err != nil {
		return written, err
	}
	for _, p := range plots {
		written = append(written, filepath.Join(dir, p.File))
	}
	if err := create("report.md", func(w io.Writer) error { return WriteMarkdown(w, r, plots) }); err != nil {
		return written, err
	}
	return written, nil
}

func div(a, b float64) float64 {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return math.NaN()
	}
	return a / b
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func human(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func f0(v float64) string { return fnum(v, 0) }
func f1(v float64) string { return fnum(v, 1) }
func f2(v float64) string { return fnum(v, 2) }

func fnum(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func pct(v float64) string {
	if math.IsNaN(v) || v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func ratio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", v)
}
