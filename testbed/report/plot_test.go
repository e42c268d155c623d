package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sweepCells is a swept scenario's run: one workload, a parameter per
// group, three modes, throughput spanning two decades.
func sweepCells(scenario, key string, vals ...string) []Cell {
	var cells []Cell
	for i, v := range vals {
		for k, m := range []string{"off", "write", "write+read"} {
			ops := 1000 * math.Pow(10, float64(k)) * float64(i+1)
			cells = append(cells, Cell{Scenario: scenario, Workload: "a", Param: key + "=" + v, Mode: m, OpsPerSec: ops,
				BytesPerOp: 300 - 50*float64(k), ReadP99us: 100, WriteP99us: 400, CASSuccessRate: 0.1 + 0.4*float64(k), Clients: 8})
		}
	}
	return cells
}

func TestPlotsPerScenario(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		cells    []Cell
		figures  map[string]string // file -> figure number in its title ("" none)
		xTitle   string
		groups   []string
	}{
		{"default", sampleCells(), map[string]string{"throughput.png": "11", "bytes_per_op.png": "12", "p99_latency.png": "13"}, "YCSB workload", []string{"A", "C"}},
		{"partial", sweepCells("partial", "tracked", "0", "8", "all"), map[string]string{"throughput.png": "14", "bytes_per_op.png": "", "p99_latency.png": "", "cas_success.png": ""}, "keys steered (hottest first)", []string{"0", "8", "all"}},
		{"zipf", sweepCells("zipf", "zipf", "0.6", "0.99"), map[string]string{"throughput.png": "16", "bytes_per_op.png": "16", "p99_latency.png": "16", "cas_success.png": ""}, "zipf constant", []string{"0.6", "0.99"}},
		{"size", sweepCells("size", "size", "64", "1024"), map[string]string{"throughput.png": "15", "bytes_per_op.png": "15", "p99_latency.png": "15"}, "object size (bytes)", []string{"64", "1024"}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			built := buildPlots(&Run{Scenario: tc.scenario, Cells: tc.cells})
			if len(built) != len(tc.figures) {
				var names []string
				for _, b := range built {
					names = append(names, b.file)
				}
				t.Fatalf("plots %v, want %d: %v", names, len(tc.figures), tc.figures)
			}
			groups, _, _ := arrange(tc.cells)
			if strings.Join(groups, ",") != strings.Join(tc.groups, ",") {
				t.Errorf("x groups %v, want %v", groups, tc.groups)
			}
			for _, b := range built {
				fig, ok := tc.figures[b.file]
				if !ok {
					t.Errorf("unexpected plot %s", b.file)
					continue
				}
				title := b.p.Title.Text
				switch {
				case fig != "" && !strings.Contains(title, "(paper Figure "+fig+")"):
					t.Errorf("%s: title %q lacks Figure %s", b.file, title, fig)
				case fig == "" && strings.Contains(title, "Figure"):
					t.Errorf("%s: title %q names a figure the paper does not have", b.file, title)
				}
				for _, other := range []string{"11", "12", "13", "14", "15", "16", "10"} {
					if other != fig && strings.Contains(title, "Figure "+other) {
						t.Errorf("%s: title %q names Figure %s", b.file, title, other)
					}
				}
				if b.p.X.Label.Text != tc.xTitle || b.p.Y.Label.Text == "" {
					t.Errorf("%s: axes %q / %q, want x %q", b.file, b.p.X.Label.Text, b.p.Y.Label.Text, tc.xTitle)
				}
				if b.caption == "" {
					t.Errorf("%s: no caption", b.file)
				}
				seen := map[string]bool{}
				for _, e := range b.legend {
					if e == "" || seen[e] {
						t.Errorf("%s: legend %q has an empty or repeated entry", b.file, b.legend)
					}
					seen[e] = true
					if strings.Contains(e, "write write") || strings.Contains(e, "off write") || strings.Contains(e, "off read") {
						t.Errorf("%s: legend entry %q mixes mode and operation", b.file, e)
					}
				}
			}
		})
	}
}

func TestPlotScales(t *testing.T) {
	// Throughput over two decades: log; bytes/op within one: linear.
	built := buildPlots(&Run{Scenario: "zipf", Cells: sweepCells("zipf", "zipf", "0.6", "0.99")})
	for _, b := range built {
		want := b.file == "throughput.png"
		if b.log != want {
			t.Errorf("%s: log scale %v, want %v", b.file, b.log, want)
		}
		if b.log != strings.Contains(b.p.Y.Label.Text, "(log)") {
			t.Errorf("%s: y label %q does not say its scale", b.file, b.p.Y.Label.Text)
		}
	}
	// Partial plots throughput per client thread (Figure 14).
	for _, b := range buildPlots(&Run{Scenario: "partial", Cells: sweepCells("partial", "tracked", "0", "8")}) {
		if b.file == "throughput.png" && !strings.Contains(b.p.Y.Label.Text, "per client thread") {
			t.Errorf("partial throughput: y label %q", b.p.Y.Label.Text)
		}
	}
}

// cas-mux cells have no read latency: its latency plot and legend carry
// write only, with no empty entries.
func TestPlotCASMuxLegend(t *testing.T) {
	var cells []Cell
	for _, q := range []string{"1", "8"} {
		for _, m := range []string{"cas", "cas-to-write"} {
			cells = append(cells, Cell{Scenario: "cas-mux", Workload: "lock", Param: "qps=" + q, Mode: m, OpsPerSec: 5000,
				BytesPerOp: 100, ReadP99us: math.NaN(), WriteP99us: 50, CASSuccessRate: math.NaN()})
		}
	}
	for _, b := range buildPlots(&Run{Scenario: "cas-mux", Cells: cells}) {
		if b.file == "p99_latency.png" {
			if strings.Join(b.legend, "|") != "CAS|CAS rewritten into WRITE" || !strings.Contains(b.p.Title.Text, "p99 latency, write") {
				t.Errorf("cas-mux latency: legend %q, title %q", b.legend, b.p.Title.Text)
			}
		}
		if !strings.Contains(b.p.Title.Text, "Figure 10") && b.file == "throughput.png" {
			t.Errorf("cas-mux throughput title %q", b.p.Title.Text)
		}
	}
}

func TestReportSaysWhatEachPlotShows(t *testing.T) {
	dir := t.TempDir()
	r := &Run{ID: "20260101-000000", Started: time.Unix(0, 0), Scenario: "partial", Cells: sweepCells("partial", "tracked", "0", "8"), Partial: true}
	got, err := SaveUnder(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(got) != "20260101-000000-partial" {
		t.Errorf("results in %s", got)
	}
	md, err := os.ReadFile(filepath.Join(dir, "latest", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "*What this shows:*"); n != 4 {
		t.Errorf("%d captions in report.md, want 4 (one per plot)", n)
	}
	if !strings.Contains(string(md), "![cas_success](cas_success.png)") || !strings.Contains(string(md), "**Partial run") {
		t.Errorf("report.md:\n%s", md)
	}
	// A second run moves latest.
	r2 := *r
	r2.ID = "20260101-000001"
	if _, err := SaveUnder(dir, &r2); err != nil {
		t.Fatal(err)
	}
	if l, _ := os.Readlink(filepath.Join(dir, "latest")); l != "20260101-000001-partial" {
		t.Errorf("latest -> %q", l)
	}
}
