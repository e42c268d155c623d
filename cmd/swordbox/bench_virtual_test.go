package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchVirtualClock: bench --clock virtual runs the cells on the
// virtual-time rack, its report names the clock, and one seed gives the
// same cells twice (virtual time does not depend on the machine).
func TestBenchVirtualClock(t *testing.T) {
	run := func() (string, string) {
		dir := t.TempDir()
		out, errOut, err := runBenchCmd(t, "--clock", "virtual", "--workloads", "a", "--modes", "off,write+read", "--keys", "64",
			"--threads", "8", "--client-hosts", "2", "--virtual-duration", "300us", "--virtual-warmup", "100us",
			"--json", "--no-progress", "--results", dir)
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, errOut)
		}
		reports, _ := filepath.Glob(filepath.Join(dir, "*-default", "report.md"))
		if len(reports) != 1 {
			t.Fatalf("results: %v", reports)
		}
		md, err := os.ReadFile(reports[0])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(md), "| clock | virtual") {
			t.Errorf("report.md does not name the virtual clock")
		}
		return out, string(md)
	}
	out, _ := run()
	var cells []map[string]any
	if err := json.Unmarshal([]byte(out), &cells); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, out)
	}
	if len(cells) != 2 || cells[0]["mode"] != "off" || cells[1]["mode"] != "write+read" {
		t.Fatalf("cells: %v", cells)
	}
	if ops, _ := cells[1]["ops"].(float64); ops <= 0 {
		t.Fatalf("ops = %v", cells[1]["ops"])
	}
	if again, _ := run(); again != out {
		t.Errorf("one seed, two outputs:\n%s\n%s", out, again)
	}
	for _, bad := range [][]string{
		{"--clock", "sim"},
		{"--clock", "virtual", "--netns"},
		{"--clock", "virtual", "--system", "swarm"},
		{"--clock", "virtual", "--virtual-duration", "5s"},
	} {
		if _, _, err := runBenchCmd(t, append(bad, "--results", "")...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
