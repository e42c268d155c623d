package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchSwarmRefuses: --system and the SWARM-KV ranges are checked and
// refused with the flag's name and its values.
func TestBenchSwarmRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--system", "sherlock"}, "--system"},
		{[]string{"--system", "swarm", "--modes", "off"}, "--modes"},
		{[]string{"--system", "swarm", "--threads", "300"}, "--threads"},
		{[]string{"--system", "swarm", "--value-size", "8"}, "--value-size"},
		{[]string{"--system", "swarm", "--workloads", "f"}, "--workloads"},
		{[]string{"--system", "swarm", "--scenario", "zipf"}, "--scenario"},
		{[]string{"--system", "swarm", "--netns"}, "--netns"},
	} {
		_, _, err := runBenchCmd(t, append(tc.args, "--no-progress", "--results", "")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// TestBenchSwarmRun: a tiny real run prints the SWARM-KV table with round
// trips per operation and the kill cell's series, and writes swarm.md.
func TestBenchSwarmRun(t *testing.T) {
	dir := t.TempDir()
	out, errOut, err := runBenchCmd(t, "--system", "swarm", "--workloads", "b", "--modes", "direct,mux+cas-to-write", "--keys", "128",
		"--threads", "4", "--duration", "300ms", "--warmup", "50ms", "--no-progress", "--results", dir)
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, errOut)
	}
	for _, want := range []string{"get RTT", "put 1-RTT", "mux+cas-to-write", "memory node 0 killed at"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	md, _ := filepath.Glob(filepath.Join(dir, "*", "swarm.md"))
	if len(md) != 1 {
		t.Fatalf("results: %v", md)
	}
	if b, err := os.ReadFile(md[0]); err != nil || !strings.Contains(string(b), "get RTT") {
		t.Errorf("swarm.md: %v", err)
	}
}
