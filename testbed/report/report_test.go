package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sampleCells() []Cell {
	mk := func(w, m string, ops, bpo, rp99, wp99, cas float64) Cell {
		return Cell{System: "clover", Scenario: "default", Mode: m, Workload: w, OpsPerSec: ops, P50us: 10, P99us: rp99,
			P999us: 2 * rp99, ReadP99us: rp99, WriteP99us: wp99, BytesPerOp: bpo, CASSuccessRate: cas, RetriesPerOp: 0.5, Ops: 100, Seconds: 1}
	}
	return []Cell{
		mk("A", "off", 1000, 800, 400, 900, 0.4),
		mk("A", "write", 2000, 400, 200, 300, 0.9),
		mk("A", "write+read", 4000, 200, 100, 150, 0.99),
		mk("C", "off", 5000, 200, 20, math.NaN(), math.NaN()),
		mk("C", "write+read", 5000, 200, 20, math.NaN(), math.NaN()),
	}
}

func TestRatios(t *testing.T) {
	rs := Ratios(sampleCells(), "off")
	if len(rs) != 3 {
		t.Fatalf("got %d ratios, want 3: %+v", len(rs), rs)
	}
	want := Ratio{Workload: "A", Mode: "write+read", Throughput: 4, BytesReduction: 4, ReadP99Reduction: 4, WriteP99Reduction: 6}
	if rs[1] != want {
		t.Errorf("ratio = %+v, want %+v", rs[1], want)
	}
	if !math.IsNaN(rs[2].WriteP99Reduction) {
		t.Errorf("write p99 of a read-only workload: got %v, want NaN", rs[2].WriteP99Reduction)
	}
}

func TestJSONCarriesNaNAsNull(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sampleCells()); err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, buf.String())
	}
	if len(got) != 5 {
		t.Fatalf("%d objects, want 5", len(got))
	}
	for _, k := range []string{"system", "scenario", "mode", "workload", "ops_per_sec", "p50_us", "p99_us", "p999_us", "bytes_per_op", "cas_success_rate", "retries_per_op"} {
		if _, ok := got[0][k]; !ok {
			t.Errorf("cell lacks key %q", k)
		}
	}
	if v, ok := got[3]["cas_success_rate"]; !ok || v != nil {
		t.Errorf("cas_success_rate of read-only cell = %v (present %v), want null", v, ok)
	}
	if got[0]["ops_per_sec"].(float64) != 1000 {
		t.Errorf("ops_per_sec = %v", got[0]["ops_per_sec"])
	}
}

func TestSaveWritesEverything(t *testing.T) {
	dir := t.TempDir()
	r := &Run{ID: "test", Started: time.Unix(0, 0), Scenario: "default", Config: [][2]string{{"seed", "1"}}, Cells: sampleCells(), Notes: []string{"a note"}}
	files, err := Save(dir, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"results.json", "cells.json", "results.csv", "report.md", "throughput.png", "bytes_per_op.png", "p99_latency.png"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty (%v); wrote %v", name, err, files)
		}
	}
	png, _ := os.ReadFile(filepath.Join(dir, "throughput.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("throughput.png is not a PNG")
	}
	f, _ := os.Open(filepath.Join(dir, "results.csv"))
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 6 {
		t.Fatalf("csv: %d rows, err %v", len(rows), err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| seed | 1 |", "4.00×", "a note", "throughput.png"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func TestTable(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteTable(&buf, sampleCells()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 || !strings.Contains(lines[3], "4.0k") || !strings.Contains(lines[4], "n/a") {
		t.Errorf("table:\n%s", buf.String())
	}
}
