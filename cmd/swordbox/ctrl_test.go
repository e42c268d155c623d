package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
)

// runCtrl runs `swordbox ctrl ARGS...` with fresh flags and returns its output.
func runCtrl(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd(new(cpuProfile))
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"ctrl"}, args...))
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// testSwitch serves the Go target over P4Runtime on 127.0.0.1:0, with
// swordbox.p4 loaded (as `swordbox switch --p4` does).
func testSwitch(t *testing.T) (*p4rt.Server, string) {
	t.Helper()
	return newTestSwitch(t, true)
}

// newTestSwitch serves the Go target on 127.0.0.1:0, with swordbox.p4
// loaded or (load false) with no pipeline, as `swordbox switch` without --p4.
func newTestSwitch(t *testing.T, load bool) (*p4rt.Server, string) {
	t.Helper()
	ports := map[uint32]netio.Port{}
	for _, n := range []uint32{1, 2} {
		a, b := netio.Pipe()
		ports[n] = a
		t.Cleanup(func() { b.Close() })
	}
	srv := p4rt.New(p4rt.Options{DeviceID: 1, Ports: ports})
	if load {
		src, err := os.ReadFile("../../p4/swordbox.p4")
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.LoadPipeline("swordbox.p4", src); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	srv.Register(gs)
	srv.Start()
	go gs.Serve(lis)
	t.Cleanup(func() { gs.Stop(); srv.Close() })
	return srv, lis.Addr().String()
}

const rackYAML = `ctrl:
  switch: SWITCH
  election-id: 5
  p4info: P4INFO
  device-config: P4SRC
  steering: write
  object-size: 48
  hosts:
    - {name: client0, mac: "02:00:00:00:00:01", ip: 10.0.0.1, port: 1}
    - {name: mem0, mac: "MEMMAC", ip: 10.0.0.2, port: 2}
  memory-nodes:
    - host: mem0
      regions: [{base: "0x7f0000000000", length: "0x100000"}]
  tracked-keys: TRACKED
  repair-period: 10ms
  repair-threshold: 20ms
`

func writeRack(t *testing.T, addr, memMAC, tracked string) string {
	t.Helper()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	y := strings.NewReplacer("SWITCH", addr, "P4INFO", abs("../../p4/swordbox.p4info.txtpb"),
		"P4SRC", abs("../../p4/swordbox.p4"), "MEMMAC", memMAC, "TRACKED", tracked).Replace(rackYAML)
	path := filepath.Join(t.TempDir(), "rack.yaml")
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// switchWrites counts the entries in the switch's forward and tracked_keys
// tables, read by an observer client.
func switchEntries(t *testing.T, addr string) int {
	t.Helper()
	cli, err := p4rtc.Dial(p4rtc.Options{Addr: addr, DeviceID: 1, Observer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := cli.GetP4Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := p4rtc.NewSchema(info)
	n := 0
	for _, tb := range []string{"forward", "tracked_keys"} {
		q, err := s.TableRead(tb)
		if err != nil {
			t.Fatal(err)
		}
		ents, err := cli.Read(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		n += len(ents)
	}
	return n
}

func TestCtrlRefusesABrokenConfigNamingTheFieldAndWritesNothing(t *testing.T) {
	srv, addr := testSwitch(t)
	commits := srv.Stats().PipelineCommit
	ctx := context.Background()
	cases := []struct {
		name  string
		path  string
		env   map[string]string
		flags []string
		want  string
	}{
		{"bad MAC in the file", writeRack(t, addr, "02:00:00:zz:00:02", "[7]"), nil, nil, "config FILE: ctrl.hosts[1].mac: "},
		{"too many keys for the switch", writeRack(t, addr, "02:00:00:00:00:02", "["+keys(4097)+"]"), nil, nil,
			"config FILE: ctrl.tracked-keys: 4097 keys, the switch has 4096 key slots"},
		{"bad steering from the environment", writeRack(t, addr, "02:00:00:00:00:02", "[7]"),
			map[string]string{"SWORDBOX_CTRL_STEERING": "sideways"}, nil, "SWORDBOX_CTRL_STEERING: ctrl.steering: "},
		{"bad object size from a flag", writeRack(t, addr, "02:00:00:00:00:02", "[7]"), nil,
			[]string{"--object-size", "0"}, "ctrl run: --object-size 0: out of range 1..4072"},
	}
	for _, tc := range cases {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		_, err := runCtrl(t, ctx, append([]string{"run", "--config", tc.path}, tc.flags...)...)
		want := strings.Replace(tc.want, "FILE", tc.path, 1)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want an error starting %q", tc.name, err, want)
		}
		for k := range tc.env {
			os.Unsetenv(k)
		}
		if n := switchEntries(t, addr); n != 0 {
			t.Fatalf("%s: the switch holds %d entries after a refused config", tc.name, n)
		}
		if srv.Stats().PipelineCommit != commits {
			t.Fatalf("%s: a refused config pushed a pipeline", tc.name)
		}
	}
}

func keys(n int) string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = strconv.Itoa(i)
	}
	return strings.Join(ks, ",")
}

func TestCtrlRunProgramsTheSwitchAndShowReadsIt(t *testing.T) {
	_, addr := testSwitch(t)
	path := writeRack(t, addr, "02:00:00:00:00:02", "[7, 9]")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runCtrl(t, ctx, "run", "--config", path)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for switchEntries(t, addr) != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("the switch holds %d entries, want 2 forward + 2 tracked", switchEntries(t, addr))
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out, err := runCtrl(t, context.Background(), "show", "tables", "--switch", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"SwordboxIngress.forward: 2 entries",
		"hdr.ethernet.dst_addr=0x020000000002 -> SwordboxIngress.set_egress(port=0x02)",
		"SwordboxIngress.tracked_keys: 2 entries",
		"meta.clover_key=0x09 -> SwordboxIngress.track(slot=0x01)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show tables lacks %q:\n%s", want, out)
		}
	}
	out, err = runCtrl(t, context.Background(), "show", "tables", "--switch", addr, "config")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "SwordboxIngress.config: 0 entries\n  default -> SwordboxIngress.set_config(mode=0x05, node_size=0x48, tail_ttl=") {
		t.Errorf("show tables config:\n%s", out)
	}
	out, err = runCtrl(t, context.Background(), "show", "registers", "--switch", addr, "tail_valid")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "tail_valid: 0 of 4096 cells non-zero") {
		t.Errorf("show registers:\n%s", out)
	}
	if _, err := runCtrl(t, context.Background(), "show", "widgets", "--switch", addr); err == nil {
		t.Error("show widgets accepted")
	}
}

func TestExampleRackParses(t *testing.T) {
	cmd := &cobra.Command{}
	cmd.Flags().String("config", "../../docs/examples/rack.yaml", "")
	cfg := rack.Defaults()
	if err := loadConfig(cmd, "ctrl", &cfg); err != nil {
		t.Fatal(err)
	}
	r, err := cfg.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Hosts) != 4 || len(r.Memory) != 2 || len(r.TrackedKeys) != 8 || r.Memory[1].Regions[0].Length != 0x40000000 {
		t.Fatalf("example rack: %d hosts, %d memory nodes, %d tracked keys", len(r.Hosts), len(r.Memory), len(r.TrackedKeys))
	}
}

// A healthy start against a switch that runs no pipeline yet (the README's
// order: switch first, the controller pushes the pipeline) counts no RPC
// error, and the log says when the controller connected.
func TestCtrlHealthyStartCountsNoErrors(t *testing.T) {
	srv, addr := newTestSwitch(t, false)
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := ml.Addr().String()
	ml.Close()
	path := writeRack(t, addr, "02:00:00:00:00:02", "[7]")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan string, 1)
	go func() {
		out, _ := runCtrl(t, ctx, "run", "--config", path, "--metrics", metrics)
		done <- out
	}()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().PipelineCommit == 0 || switchEntries(t, addr) != 3 {
		if time.Now().After(deadline) {
			t.Fatal("the controller did not program the switch")
		}
		time.Sleep(10 * time.Millisecond)
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	out := <-done
	if strings.Contains(string(body), "rpc_errors_total{") {
		t.Errorf("a healthy start counted RPC errors:\n%s", grepLines(string(body), "rpc_errors"))
	}
	if !strings.Contains(out, "connected to the switch") || !strings.Contains(out, "switch="+addr) {
		t.Errorf("the log does not say the controller connected:\n%s", out)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
