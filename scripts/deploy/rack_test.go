package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOneHostRack runs rack-host.sh for real (not a dry run) on a one-host
// rack: three veth pairs stand for the cables, the Go target
// (`swordbox switch`) for the switch on their far ends, loopback for the
// management network. The script sets the data NICs up, starts the memory
// node and Clover's metadata server as daemons, and runs a client host
// through load, warmup and run; the controller programs the switch with
// write steering in chain mode from a rack file written as docs/deploy.md says (each
// host's own MAC, the memory node's printed region, tracked-keys.sh's
// keys). It needs root (veths, AF_PACKET). It runs once per switch
// program: the v1model one, and the Tofino one with chain mode.
func TestOneHostRack(t *testing.T) {
	if testing.Short() {
		t.Skip("a rack of processes on veths (about 10 s per program)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: veth pairs and AF_PACKET")
	}
	bin := swordbox(t)
	for _, arch := range []struct{ name, program, p4info string }{
		{"v1model", "p4/swordbox.p4", "p4/swordbox.p4info.txtpb"},
		{"tna", "p4/tna/swordbox.p4", "p4/tna/swordbox.p4info.txtpb"},
	} {
		t.Run(arch.name, func(t *testing.T) { oneHostRack(t, bin, arch.name, arch.program, arch.p4info) })
	}
}

func oneHostRack(t *testing.T, bin, arch, program, p4info string) {
	run := t.TempDir()
	// Interface names of this test only (the machine's namespace is
	// shared): at most 13 characters, the peer gets "-p".
	tag := fmt.Sprintf("sbd%s%d", arch[:1], os.Getpid()%100000)
	cli, ms, mem := tag+"c", tag+"s", tag+"m"
	veths := func(op string) error {
		c := exec.Command("scripts/veths.sh", op, cli, ms, mem)
		c.Dir = repo
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("veths.sh %s: %v\n%s", op, err, out)
		}
		return nil
	}
	if err := veths("up"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := veths("down"); err != nil {
			t.Error(err)
		}
	}()

	// The switch: ports 1 (client), 3 (metadata server), 11 (memory node).
	grpc := freeAddr(t)
	sw := startDaemon(t, bin, "switch", "--arch", arch, "--p4", program, "--grpc", grpc, "--ports", fmt.Sprintf("1=%s,3=%s,11=%s", cli, ms, mem))
	defer sw.stop(t)
	sw.wait(t, "P4Runtime on")

	memCM, msCM := freeAddr(t), freeAddr(t)
	host := func(args ...string) (string, string, int) {
		return runScript(t, "rack-host.sh", append(args, "--swordbox", bin, "--run-dir", run, "--link-mtu", "1500")...)
	}
	stop := func(role string) {
		if _, errOut, code := host(role, "--stop"); code != 0 {
			t.Errorf("rack-host.sh %s --stop: exit %d: %s", role, code, errOut)
		}
	}
	if _, errOut, code := host("memnode", "--iface", mem+"-p", "--ip", "10.0.1.1", "--size", "128MiB", "--listen", memCM); code != 0 {
		t.Fatalf("rack-host.sh memnode: exit %d\n%s", code, errOut)
	}
	defer stop("memnode")
	log, err := os.ReadFile(filepath.Join(run, "memnode.log"))
	if err != nil {
		t.Fatal(err)
	}
	var base uint64
	var length int64
	for _, l := range strings.Split(string(log), "\n") {
		if _, err := fmt.Sscanf(l, "memnode: region addr %v rkey %v len %d", &base, new(uint64), &length); err == nil {
			break
		}
	}
	if length != 128<<20 {
		t.Fatalf("no region of 128MiB in the memory node's log:\n%s", log)
	}

	// The rack file, as docs/deploy.md section 2 writes it.
	macOf := func(iface string) string {
		b, err := os.ReadFile("/sys/class/net/" + iface + "/address")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	keys, errOut, code := runScript(t, "tracked-keys.sh", "64")
	if code != 0 {
		t.Fatalf("tracked-keys.sh: %s", errOut)
	}
	rack := fmt.Sprintf(`ctrl:
  switch: %s
  p4info: %s
  device-config: %s
  push-pipeline: true
  steering: write
  chain: true
  object-size: 128
  hosts:
    - {name: client0, mac: "%s", ip: 10.0.0.1, port: 1}
    - {name: ms,      mac: "%s", ip: 10.0.0.3, port: 3}
    - {name: mem0,    mac: "%s", ip: 10.0.1.1, port: 11}
  memory-nodes:
    - host: mem0
      regions:
        - {base: "%#x", length: "%#x"}
  %s`, grpc, p4info, program, macOf(cli+"-p"), macOf(ms+"-p"), macOf(mem+"-p"), base, length, keys)
	rackFile := filepath.Join(run, "rack.yaml")
	if err := os.WriteFile(rackFile, []byte(rack), 0o644); err != nil {
		t.Fatal(err)
	}
	ctrl := startDaemon(t, bin, "ctrl", "run", "--config", rackFile, "--metrics", "")
	defer ctrl.stop(t)
	ctrl.wait(t, "in charge")

	if _, errOut, code := host("clover-ms", "--iface", ms+"-p", "--ip", "10.0.0.3", "--memnode", memCM, "--listen", msCM,
		"--keys", "64", "--threads", "4"); code != 0 {
		t.Fatalf("rack-host.sh clover-ms: exit %d\n%s", code, errOut)
	}
	defer stop("clover-ms")

	out, errOut, code := host("clover-clients", "--iface", cli+"-p", "--ip", "10.0.0.1", "--memnode", memCM, "--ms", msCM,
		"--host", "0", "--hosts", "1", "--threads", "4", "--keys", "64", "--workload", "a",
		"--warmup", "200ms", "--duration", "1s", "--steps", "load,warmup,run,quit")
	if code != 0 {
		t.Fatalf("rack-host.sh clover-clients: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	events := map[string]int{}
	var res struct {
		Ops, Errors uint64
		Metrics     struct {
			CAS uint64 `json:"CAS"`
		} `json:"metrics"` // netns.ClientResult's clover.Metrics
	}
	f, err := os.Open(filepath.Join(run, "clients-0.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e struct {
			Event  string          `json:"event"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		events[e.Event]++
		if e.Event == "result" {
			if err := json.Unmarshal(e.Result, &res); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range []string{"ready", "loaded", "warm", "result"} {
		if events[e] != 1 {
			t.Errorf("event %s seen %d times in clients-0.jsonl, want 1 (events %v)", e, events[e], events)
		}
	}
	if res.Ops == 0 || res.Errors != 0 || res.Metrics.CAS == 0 {
		t.Errorf("the client host measured ops %d, errors %d, CAS %d: want ops and CAS, no errors", res.Ops, res.Errors, res.Metrics.CAS)
	}
	counters, err := exec.Command(bin, "ctrl", "show", "counters", "--switch", grpc, "stats").CombinedOutput()
	if err != nil {
		t.Fatalf("ctrl show counters: %v\n%s", err, counters)
	}
	t.Logf("client host: %d ops, %d CAS in 1s; the switch's stats:\n%s", res.Ops, res.Metrics.CAS, counters)
	// Write steering was configured through the rack file: the switch
	// saw the tracked keys' linking CAS (stats[2], STAT_CAS) and confirmed
	// tails at their ACKs (stats[12], STAT_TAIL_CONFIRMED).
	stat := map[int]uint64{}
	for _, l := range strings.Split(string(counters), "\n") {
		var i int
		var n uint64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "[%d] %d packets", &i, &n); err == nil {
			stat[i] = n
		}
	}
	if stat[2] == 0 || stat[12] == 0 {
		t.Errorf("the switch saw %d linking CAS and confirmed %d tails: steering is not configured", stat[2], stat[12])
	}
	// and chained CASes onto the keys' last forwarded links (stats[16],
	// chain mode, set by the rack file's chain: true).
	if stat[16] == 0 {
		t.Errorf("the switch chained no CAS: chain mode is not configured")
	}
}

// daemon is a swordbox process a test started.
type daemon struct {
	cmd  *exec.Cmd
	out  *lockedBuf
	done chan error
}

func startDaemon(t *testing.T, bin string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: exec.Command(bin, args...), out: &lockedBuf{}, done: make(chan error, 1)}
	d.cmd.Dir = repo
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	return d
}

// wait waits until the daemon's output holds want.
func (d *daemon) wait(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(d.out.String(), want) {
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("swordbox %s exited (%v) before %q:\n%s", strings.Join(d.cmd.Args[1:], " "), err, want, d.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("swordbox %s: no %q within 20s:\n%s", strings.Join(d.cmd.Args[1:], " "), want, d.out)
		}
	}
}

// stop interrupts the daemon and waits for it (killing it after 5 s).
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		t.Errorf("swordbox %s: still running 5s after SIGINT, killed", strings.Join(d.cmd.Args[1:], " "))
	}
}
