package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// A tiny real Sherman run: two modes, one thread count, JSON cells titled
// for Sherman with the tree checked after each cell.
func TestBenchSherman(t *testing.T) {
	out, errOut, err := runBenchCmd(t, "--system", "sherman", "--read-ratios", "50", "--dists", "zipf", "--sweep", "4",
		"--modes", "plain,cas-to-write", "--key-space", "512", "--client-hosts", "2", "--duration", "300ms", "--warmup", "100ms",
		"--json", "--no-progress", "--results", "")
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, errOut)
	}
	var cells []map[string]any
	if err := json.Unmarshal([]byte(out), &cells); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, out)
	}
	if len(cells) != 2 {
		t.Fatalf("%d cells, want 2", len(cells))
	}
	for i, mode := range []string{"plain", "cas-to-write"} {
		c := cells[i]
		if c["system"] != "sherman" || c["mode"] != mode || c["workload"] != "read50-zipf0.99" || c["param"] != "threads=4" {
			t.Errorf("cell %d: %v", i, c)
		}
		if ops, _ := c["ops_per_sec"].(float64); ops <= 0 {
			t.Errorf("cell %d: ops_per_sec %v", i, c["ops_per_sec"])
		}
		if note, _ := c["note"].(string); !strings.Contains(note, "invariants hold") {
			t.Errorf("cell %d: note %q", i, note)
		}
	}
	st, _ := cells[1]["steering"].(map[string]any)
	if v, _ := st["mbox_cas_to_write"].(float64); v <= 0 {
		t.Errorf("cas-to-write cell: the middlebox converted no CAS: %v", st)
	}
}

func TestBenchShermanRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system", "nope"}, "--system"},
		{[]string{"--system", "sherman", "--read-ratios", "101"}, "--read-ratios"},
		{[]string{"--system", "sherman", "--dists", "pareto"}, "--dists"},
		{[]string{"--system", "sherman", "--key-space", "10"}, "--key-space"},
		{[]string{"--system", "sherman", "--sweep", "0"}, "--sweep"},
		{[]string{"--system", "sherman", "--modes", "sideways"}, "--modes"},
		{[]string{"--system", "sherman", "--memory-nodes", "0"}, "--memory-nodes"},
		{[]string{"--system", "sherman", "--timing", "cx9"}, "--timing"},
		{[]string{"--system", "sherman", "--scenario", "zipf"}, "--scenario"},
	} {
		_, _, err := runBenchCmd(t, append(tc.args, "--no-progress", "--results", "")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchShermanVirtual: --system sherman --clock virtual runs the cells
// on the virtual-time rack with the tree checked after each, one seed
// gives the same output twice, and the combinations the rack cannot run
// are refused by name.
func TestBenchShermanVirtual(t *testing.T) {
	run := func() string {
		out, errOut, err := runBenchCmd(t, "--system", "sherman", "--clock", "virtual", "--read-ratios", "50", "--dists", "zipf",
			"--sweep", "4", "--modes", "plain,cas-to-write", "--key-space", "512", "--client-hosts", "2",
			"--virtual-duration", "200us", "--virtual-warmup", "100us", "--json", "--no-progress", "--results", "")
		if err != nil {
			t.Fatalf("bench: %v\n%s", err, errOut)
		}
		return out
	}
	out := run()
	var cells []map[string]any
	if err := json.Unmarshal([]byte(out), &cells); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, out)
	}
	if len(cells) != 2 || cells[0]["mode"] != "plain" || cells[1]["mode"] != "cas-to-write" {
		t.Fatalf("cells: %v", cells)
	}
	for i, c := range cells {
		if ops, _ := c["ops"].(float64); ops <= 0 {
			t.Errorf("cell %d: ops %v", i, c["ops"])
		}
		if note, _ := c["note"].(string); !strings.Contains(note, "invariants hold") {
			t.Errorf("cell %d: note %q", i, note)
		}
	}
	if again := run(); again != out {
		t.Errorf("one seed, two outputs:\n%s\n%s", out, again)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory-nodes", "2"}, "--memory-nodes"},
		{[]string{"--memory-workers", "2"}, "--memory-workers"},
		{[]string{"--netns"}, "--netns"},
		{[]string{"--sweep", "0"}, "--sweep"},
		{[]string{"--timing", "cx9"}, "--timing"},
	} {
		_, _, err := runBenchCmd(t, append([]string{"--system", "sherman", "--clock", "virtual", "--no-progress", "--results", ""}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
