package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
)

// runBenchCmd runs `swordbox bench args...` on a fresh command tree (flag
// state does not leak between runs) and returns stdout and stderr.
func runBenchCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := &cobra.Command{Use: "swordbox", SilenceUsage: true, SilenceErrors: true}
	root.PersistentFlags().String("config", "", "")
	root.AddCommand(newBenchCmd())
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"bench"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

// A tiny real run: one Clover cell per mode on the in-process rack, JSON on
// stdout with the keys the issue names, and the results directory.
func TestBenchJSONAndResults(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := runBenchCmd(t, "--workloads", "a", "--modes", "off,write+read", "--keys", "64", "--threads", "4",
		"--client-hosts", "2", "--duration", "400ms", "--warmup", "100ms", "--json", "--no-progress", "--results", dir)
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
	for _, k := range []string{"system", "scenario", "mode", "workload", "ops_per_sec", "p50_us", "p99_us", "p999_us", "bytes_per_op", "cas_success_rate", "retries_per_op"} {
		if _, ok := cells[0][k]; !ok {
			t.Errorf("cell lacks %q", k)
		}
	}
	if cells[0]["mode"] != "off" || cells[1]["mode"] != "write+read" || cells[0]["system"] != "clover" {
		t.Errorf("cells: %v", cells)
	}
	if ops, _ := cells[1]["ops_per_sec"].(float64); ops <= 0 {
		t.Errorf("ops_per_sec = %v", cells[1]["ops_per_sec"])
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "*-default", "report.md"))
	if len(runs) != 1 {
		t.Fatalf("results: %v", runs)
	}
	if l, err := os.Readlink(filepath.Join(dir, "latest")); err != nil || l != filepath.Base(filepath.Dir(runs[0])) {
		t.Errorf("results/latest -> %q (%v), want %s", l, err, filepath.Base(filepath.Dir(runs[0])))
	}
	for _, f := range []string{"results.json", "cells.json", "results.csv", "throughput.png", "bytes_per_op.png", "p99_latency.png"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(runs[0]), f)); err != nil {
			t.Errorf("results lack %s", f)
		}
	}
}
