package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/middlebox/mbbench"
)

// The engine's configuration is read inline from the "middlebox" section.
func TestMiddleboxRunConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "mbox.yaml")
	os.WriteFile(good, []byte(`middlebox:
  io: afpacket
  ring-size: 1024
  servers:
    - ip: 10.0.0.2
      remap: [{lo: 0, hi: 0}]
      cas-to-write: [{lo: 4096, hi: 8192}]
  words:
    - {va: 4096, value: 0}
  conns:
    - {client-ip: 10.0.0.1, server-ip: 10.0.0.2, client-port: 49408, client-qp: 256, server-qp: 256, psn: 5, psn-known: true}
`), 0o644)
	var cfg mboxRunConfig
	c := newMiddleboxRunCmd()
	c.Flags().String("config", "", "")
	if err := c.ParseFlags([]string{"--config", good}); err != nil {
		t.Fatal(err)
	}
	if err := loadConfig(c, "middlebox", &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.IO != "afpacket" || cfg.Engine.RingSize != 1024 || len(cfg.Engine.Servers) != 1 ||
		len(cfg.Engine.Servers[0].CASToWrite) != 1 || cfg.Engine.Servers[0].CASToWrite[0].Hi != 8192 ||
		len(cfg.Engine.Conns) != 1 || cfg.Engine.Conns[0].ClientPort != 49408 || len(cfg.Engine.Words) != 1 {
		t.Fatalf("decoded %+v", cfg)
	}
	if err := cfg.Engine.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := middlebox.New(cfg.Engine); err != nil {
		t.Fatal(err)
	}
}

func TestMiddleboxBenchEngineJSON(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd(new(cpuProfile))
	root.SetOut(&out)
	root.SetArgs([]string{"middlebox", "bench", "--io", "engine", "--duration", "200ms", "--json"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var res mbbench.BenchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if res.IO != "engine" || len(res.PerCore) != 1 || res.PerCore[0].FramesIn == 0 || res.PerCore[0].Mpps <= 0 || res.PerCore[0].Drops != 0 {
		t.Fatalf("result %+v", res)
	}
	if !strings.Contains(res.PerCore[0].Counters, "cas-to-write=") {
		t.Fatalf("the mix did not replace any CAS: %s", res.PerCore[0].Counters)
	}
}

// --cpuprofile writes a profile pprof reads.
func TestCPUProfileFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	var out bytes.Buffer
	var prof cpuProfile
	root := newRootCmd(&prof)
	root.SetOut(&out)
	root.SetArgs([]string{"--cpuprofile", path, "middlebox", "bench", "--io", "engine", "--duration", "200ms", "--json"})
	err := root.Execute()
	if perr := prof.stop(); err == nil {
		err = perr
	}
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is a gzipped protocol buffer.
	zr, err := gzip.NewReader(bytes.NewReader(mustRead(t, path)))
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	if b, err := io.ReadAll(zr); err != nil || len(b) == 0 {
		t.Fatalf("profile: %d bytes, %v", len(b), err)
	}
	root = newRootCmd(&prof)
	root.SetArgs([]string{"--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir"), "middlebox", "bench", "--io", "engine", "--duration", "10ms"})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "cpuprofile") {
		t.Fatalf("unwritable profile path: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
