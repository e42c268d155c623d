package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

func TestLocalThreads(t *testing.T) {
	for _, tc := range []struct {
		host, hosts, threads int
		want                 []int
	}{
		{0, 1, 3, []int{0, 1, 2}},
		{0, 4, 10, []int{0, 4, 8}},
		{3, 4, 10, []int{3, 7}},
		{1, 2, 2, []int{1}},
	} {
		got := ClientsConfig{Host: tc.host, Hosts: tc.hosts, Threads: tc.threads}.Local()
		if strings.Join(strs(got), ",") != strings.Join(strs(tc.want), ",") {
			t.Errorf("host %d of %d, %d threads: %v, want %v", tc.host, tc.hosts, tc.threads, got, tc.want)
		}
	}
	// Every thread on exactly one host.
	seen := map[int]int{}
	for h := 0; h < 4; h++ {
		for _, g := range (ClientsConfig{Host: h, Hosts: 4, Threads: 32}).Local() {
			seen[g]++
		}
	}
	for g := 0; g < 32; g++ {
		if seen[g] != 1 {
			t.Errorf("thread %d on %d hosts", g, seen[g])
		}
	}
}

func strs(v []int) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strconv.Itoa(x)
	}
	return out
}

func TestHostSeed(t *testing.T) {
	if HostSeed(7, 0) != 7 {
		t.Errorf("host 0 seed %d, want the seed itself", HostSeed(7, 0))
	}
	seen := map[uint64]bool{}
	for h := 0; h < 64; h++ {
		s := HostSeed(1, h)
		if seen[s] {
			t.Fatalf("host %d repeats seed %d", h, s)
		}
		seen[s] = true
	}
}

func TestCloverLayoutMatchesTestbed(t *testing.T) {
	l := CloverLayout(1024, 0)
	if l.Shortcuts != 2*1024+64 || l.Chunks != DefaultChunks || l.Validate() != nil {
		t.Fatalf("layout %+v", l)
	}
}

func hist(vals ...int64) *hdrhistogram.Snapshot {
	h := hdrhistogram.New(100, int64(60*time.Second), 3)
	for _, v := range vals {
		h.RecordValue(v)
	}
	return h.Export()
}

// TestMerge: the client hosts' results add up (operations, errors,
// Clover's counters), the elapsed time is the longest host's, the
// histograms merge and the first error is kept.
func TestMerge(t *testing.T) {
	rs := []*ClientResult{
		{Ops: 100, Reads: 50, Writes: 50, ElapsedNs: int64(2 * time.Second), All: hist(1000, 2000), Read: hist(1000), Write: hist(2000),
			Metrics: clover.Metrics{Verbs: 300, CAS: 50, CASFailures: 5, Retries: 4, ChaseHops: 3, Recoveries: 1, MaxChase: 2}},
		{Ops: 300, Reads: 150, Writes: 150, Errors: 2, FirstErr: "boom", ElapsedNs: int64(1 * time.Second), All: hist(4000), Read: hist(4000), Write: hist(),
			Metrics: clover.Metrics{Verbs: 900, CAS: 50, CASFailures: 5, MaxChase: 1}},
	}
	m := merge(rs)
	l := m.Load
	if l.Ops != 400 || l.Reads != 200 || l.Writes != 200 || l.Errors != 2 || l.Elapsed != 2*time.Second {
		t.Errorf("load %+v", l)
	}
	if l.FirstErr == nil || l.FirstErr.Error() != "boom" {
		t.Errorf("first error %v, want boom", l.FirstErr)
	}
	if l.All.TotalCount() != 3 || l.Read.TotalCount() != 2 || l.Write.TotalCount() != 1 || l.Read.Max() < 4000 {
		t.Errorf("histograms: %d all, %d read (max %d), %d write", l.All.TotalCount(), l.Read.TotalCount(), l.Read.Max(), l.Write.TotalCount())
	}
	want := clover.Metrics{Verbs: 1200, CAS: 100, CASFailures: 10, Retries: 4, ChaseHops: 3, Recoveries: 1, MaxChase: 2}
	if m.Metrics != want {
		t.Errorf("metrics %+v, want %+v", m.Metrics, want)
	}
}

// --- root only: real namespaces, real processes ---

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("namespace rack: needs root")
	}
	for _, tool := range []string{"ip", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("namespace rack: %s not found", tool)
		}
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// swordboxBinary builds cmd/swordbox once per test binary run.
func swordboxBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "swordbox-netns-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "swordbox")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/swordbox/swordbox/cmd/swordbox").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("go build: %s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build swordbox: %v", buildErr)
	}
	return binPath
}

func testPrefix(t *testing.T) string {
	var b [3]byte
	rand.Read(b[:])
	p := "sbxt" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		left, err := Namespaces(p)
		if err != nil {
			t.Errorf("list namespaces: %v", err)
		}
		if len(left) > 0 {
			t.Errorf("namespaces left behind: %v", left)
			for _, ns := range left {
				exec.Command("ip", "netns", "del", ns).Run()
			}
		}
	})
	return p
}

func shortSpec(mode string) testbed.CellSpec {
	return testbed.CellSpec{Scenario: testbed.ScenarioDefault, Mode: mode, Workload: ycsb.WorkloadA, Keys: 1024, ValueSize: 128,
		Zipf: 0.99, Tracked: -1, Threads: 4, ClientHosts: 2, Warmup: 300 * time.Millisecond, Duration: 2 * time.Second, Seed: 1}
}

func TestRackEndToEnd(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("namespace rack: not in -short")
	}
	opts := Options{Binary: swordboxBinary(t), Prefix: testPrefix(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, mode := range []string{testbed.ModeOff, testbed.ModeWriteRead} {
		cell, err := RunCell(ctx, shortSpec(mode), opts)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Logf("%s: %.0f ops/s, p99 %.0f us, %.0f bytes/op, %.2f verbs/op, steering %v", mode, cell.OpsPerSec, cell.P99us, cell.BytesPerOp, cell.VerbsPerOp, cell.Steering)
		if cell.Ops == 0 || cell.Errors != 0 || cell.Note != "" {
			t.Errorf("%s: %d ops, %d errors, note %q", mode, cell.Ops, cell.Errors, cell.Note)
		}
		if cell.BytesPerOp <= 0 || math.IsNaN(cell.P99us) {
			t.Errorf("%s: bytes/op %v, p99 %v", mode, cell.BytesPerOp, cell.P99us)
		}
		switch mode {
		case testbed.ModeOff:
			if cell.Steering["requests"] != 0 || cell.Steering["cas_steered"] != 0 {
				t.Errorf("off: the switch steered: %v", cell.Steering)
			}
		case testbed.ModeWriteRead:
			// With 4 threads few CASes meet a stale cursor (about 1 in
			// 700 is steered), so steered READs are what must show.
			if cell.Steering["node_writes"] == 0 || cell.Steering["tails_confirmed"] == 0 || cell.Steering["reads_steered"] == 0 {
				t.Errorf("write+read: the switch learned %d node WRITEs, confirmed %d tails, steered %d READs and %d CAS",
					cell.Steering["node_writes"], cell.Steering["tails_confirmed"], cell.Steering["reads_steered"], cell.Steering["cas_steered"])
			}
		}
		if left, _ := Namespaces(opts.Prefix); len(left) != 0 {
			t.Errorf("%s: namespaces left after the cell: %v", mode, left)
		}
	}
}

func TestRackCancelTearsDown(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("namespace rack: not in -short")
	}
	opts := Options{Binary: swordboxBinary(t), Prefix: testPrefix(t)}
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel 8 s after the rack's namespaces exist: the processes run and
	// the one-minute measured phase is under way.
	go func() {
		for ctx.Err() == nil {
			if ns, _ := Namespaces(opts.Prefix); len(ns) >= 5 {
				time.Sleep(8 * time.Second)
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	spec := shortSpec(testbed.ModeWrite)
	spec.Duration = time.Minute
	start := time.Now()
	_, err := RunCell(ctx, spec, opts)
	t.Logf("returned %s after the start, %v", time.Since(start), err)
	cancel()
	if err == nil {
		t.Fatal("a cancelled cell returned no error")
	}
	if d := time.Since(start); d < 8*time.Second || d > 40*time.Second {
		t.Errorf("cancel took %s to tear the rack down", d)
	}
	if left, _ := Namespaces(opts.Prefix); len(left) != 0 {
		t.Errorf("namespaces left after cancel: %v", left)
	}
}

// TestBenchSIGINT interrupts `swordbox bench --netns` as a terminal's Ctrl-C
// would and checks that it exits and leaves no namespace or process.
func TestBenchSIGINT(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("namespace rack: not in -short")
	}
	bin := swordboxBinary(t)
	prefix := testPrefix(t)
	cmd := exec.Command(bin, "bench", "--netns", "--workloads", "a", "--modes", "write", "--threads", "2", "--client-hosts", "1",
		"--duration", "1m", "--warmup", "0s", "--results", "", "--no-progress")
	cmd.Env = append(os.Environ(), "SWORDBOX_NETNS_PREFIX="+prefix)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ns, _ := Namespaces(prefix); len(ns) >= 4 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the rack's namespaces never appeared")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(6 * time.Second)
	pids := rackPIDs(t, prefix)
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("an interrupted bench exited 0")
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bench did not exit within 30s of SIGINT")
	}
	if left, _ := Namespaces(prefix); len(left) != 0 {
		t.Errorf("namespaces left after SIGINT: %v", left)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("rack process %d still alive after SIGINT", pid)
		}
	}
}

// rackPIDs lists the processes running in the namespaces named prefix*.
func rackPIDs(t *testing.T, prefix string) []int {
	ns, _ := Namespaces(prefix)
	var pids []int
	for _, n := range ns {
		out, err := exec.Command("ip", "netns", "pids", n).Output()
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no processes in the rack's namespaces %v", ns)
	}
	return pids
}
