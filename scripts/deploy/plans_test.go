package deploy

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/swordbox/swordbox/testbed/ycsb"
)

// abs is the repository's root as an absolute path.
func abs(t *testing.T) string {
	t.Helper()
	a, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func checkAllFlags(t *testing.T, script string, p plan) [][]string {
	t.Helper()
	calls := swordboxCalls(p)
	if len(calls) == 0 {
		t.Fatalf("%s: the plan runs no swordbox command:\n%s", script, strings.Join(p.commands, "\n"))
	}
	for _, c := range calls {
		checkFlags(t, script, c)
	}
	return calls
}

func findCall(t *testing.T, calls [][]string, path ...string) []string {
	t.Helper()
	for _, c := range calls {
		if len(c) >= len(path) && slices.Equal(c[:len(path)], path) {
			return c
		}
	}
	t.Fatalf("no swordbox %s in the plan: %q", strings.Join(path, " "), calls)
	return nil
}

func flagValue(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

func wantSeq(t *testing.T, w []string, seq ...string) {
	t.Helper()
	for i := 0; i+len(seq) <= len(w); i++ {
		if slices.Equal(w[i:i+len(seq)], seq) {
			return
		}
	}
	t.Errorf("%q: no %q", strings.Join(w, " "), strings.Join(seq, " "))
}

func TestBMv2Plan(t *testing.T) {
	build := filepath.Join(t.TempDir(), "build")
	p := dryRun(t, "bmv2.sh", "--port", "1=veth1", "--port", "2=veth2", "--port", "11=veth11", "--port", "12=veth12",
		"--veths", "--build-dir", build, "--steering", "read-write", "--grpc-addr", "0.0.0.0:9559")
	if _, err := os.Stat(build); !os.IsNotExist(err) {
		t.Errorf("the dry run created %s (err %v): it must run nothing", build, err)
	}
	json, p4info := filepath.Join(build, "swordbox.json"), filepath.Join(build, "swordbox.p4info.txt")
	cc := p.has(t, "p4c-bm2-ss")
	wantSeq(t, cc, "--arch", "v1model")
	wantSeq(t, cc, "--p4runtime-files", p4info)
	wantSeq(t, cc, "-o", json, "p4/swordbox.p4")
	p.has(t, "scripts/veths.sh", "up", "veth1", "veth2", "veth11", "veth12")
	sw := p.has(t, "simple_switch_grpc")
	for _, s := range [][]string{{"--no-p4"}, {"-i", "1@veth1"}, {"-i", "12@veth12"}, {"--", "--grpc-server-addr", "0.0.0.0:9559"}, {"--cpu-port", "255"}} {
		wantSeq(t, sw, s...)
	}
	calls := checkAllFlags(t, "bmv2.sh", p)
	run := findCall(t, calls, "ctrl", "run")
	for flag, want := range map[string]string{"--p4info": p4info, "--device-config": json, "--switch": "127.0.0.1:9559",
		"--steering": "read-write", "--config": "docs/examples/rack.yaml", "--device-id": "1"} {
		if got := flagValue(run, flag); got != want {
			t.Errorf("ctrl run %s %q, want %q", flag, got, want)
		}
	}
	findCall(t, calls, "ctrl", "show", "tables")
	wantPINote(t, p, "simple_switch_grpc")

	// The controller's command as planned loads the rack file and builds
	// its plan against the committed P4Info (the names p4c's P4Info
	// carries too); the switch's address is a closed port here.
	args := setFlag(run, "--p4info", "p4/swordbox.p4info.txtpb")
	args = setFlag(args, "--device-config", "p4/swordbox.p4")
	args = setFlag(args, "--switch", freeAddr(t))
	args = setFlag(args, "--metrics", freeAddr(t))
	runUntil(t, args, "swordbox ctrl: switch")
}

// wantPINote checks that the plan says what a PI-based P4Runtime server
// (server) means for the controller: steering configured through the
// config table, repair off; and no longer that configuration fails.
func wantPINote(t *testing.T, p plan, server string) {
	t.Helper()
	all := strings.Join(p.comments, "\n")
	if !strings.Contains(all, server+"'s P4Runtime server is PI's") || !strings.Contains(all, "steering is configured through the config table and works") ||
		!strings.Contains(all, "'repair is off'") {
		t.Errorf("the plan does not say that steering works and repair is off on %s:\n%s", server, all)
	}
	if strings.Contains(all, "Register writes are not supported yet") || strings.Contains(all, "steering is not") {
		t.Errorf("the plan still says configuration fails on %s:\n%s", server, all)
	}
}

func TestTofinoPlan(t *testing.T) {
	build := filepath.Join(t.TempDir(), "build")
	p := dryRun(t, "tofino.sh", "--port", "1/0", "--port", "2/0:25G:FC", "--port", "3/-:40G:NONE", "--autoneg", "off",
		"--build-dir", build, "--steering", "write", "--cpu-port", "192")
	if _, err := os.Stat(build); !os.IsNotExist(err) {
		t.Errorf("the dry run created %s (err %v): it must run nothing", build, err)
	}
	missing := strings.Join(p.comments, "\n")
	for _, want := range []string{"$SDE:", "$SDE_INSTALL:"} {
		if !strings.Contains(missing, want) {
			t.Errorf("the plan does not say that %s is missing:\n%s", want, missing)
		}
	}
	cm := p.has(t, "cmake", "-S", "$SDE/p4studio", "-B", build)
	for _, w := range []string{"-DP4_LANG=p4-16", "-DTOFINO=ON", "-DP4_NAME=swordbox",
		"-DP4_PATH=" + filepath.Join(abs(t), "p4/tna/swordbox.p4"), "-DCMAKE_INSTALL_PREFIX=$SDE_INSTALL"} {
		if !slices.Contains(cm, w) {
			t.Errorf("cmake: no %s in %q", w, cm)
		}
	}
	p4info := filepath.Join(build, "swordbox.p4info.txt")
	if want := "-DP4FLAGS=--p4runtime-files " + p4info + " --p4runtime-force-std-externs"; !slices.Contains(cm, want) {
		t.Errorf("cmake: no %s in %q", want, cm)
	}
	if want := "-DP4PPFLAGS=-DSWORDBOX_CPU_PORT=192"; !slices.Contains(cm, want) {
		t.Errorf("cmake: no %s in %q (the program's CPU port, for PacketIn/Out)", want, cm)
	}
	p.has(t, "make", "-C", build, "swordbox")
	out := filepath.Join(build, "swordbox/tofino")
	devcfg := filepath.Join(build, "swordbox.devconfig")
	p.has(t, "scripts/deploy/tofino-devconfig.sh", "-o", devcfg, "swordbox", out+"/pipe/tofino.bin", out+"/pipe/context.json", "pipe", out+"/bf-rt.json")
	var switchd []string
	for _, c := range p.commands {
		if w := words(c); slices.Contains(w, "$SDE_INSTALL/bin/bf_switchd") {
			switchd = w
		}
	}
	if switchd == nil {
		t.Fatalf("no bf_switchd in the plan:\n%s", strings.Join(p.commands, "\n"))
	}
	wantSeq(t, switchd, "--p4rt-server", "0.0.0.0:9559")
	wantSeq(t, switchd, "--skip-p4")
	wantSeq(t, switchd, "--conf-file", "$SDE_INSTALL/share/p4/targets/tofino/tofino_skip_p4.conf")
	ucli := p.files[filepath.Join(build, "run/ports.ucli")]
	want := "ucli\npm\nport-add 1/0 100G RS\nan-set 1/0 2\nport-enb 1/0\nport-add 2/0 25G FC\nan-set 2/0 2\nport-enb 2/0\n" +
		"port-add 3/- 40G NONE\nan-set 3/- 2\nport-enb 3/-\nshow\nexit\nexit\n"
	if ucli != want {
		t.Errorf("ports.ucli:\n%s\nwant:\n%s", ucli, want)
	}
	calls := checkAllFlags(t, "tofino.sh", p)
	run := findCall(t, calls, "ctrl", "run")
	for flag, want := range map[string]string{"--p4info": p4info, "--device-config": devcfg, "--device-id": "0", "--steering": "write"} {
		if got := flagValue(run, flag); got != want {
			t.Errorf("ctrl run %s %q, want %q", flag, got, want)
		}
	}
	wantPINote(t, p, "bf_switchd")
}

// TestTofinoDevconfig packs small stand-ins for the compiler's outputs and
// reads the five chunks back as the SDE's PI back end does: a
// little-endian 32-bit length, then the bytes.
func TestTofinoDevconfig(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"tofino.bin": "\x00\x01binary\xff", "context.json": `{"program_name":"swordbox"}`, "bf-rt.json": `{"tables":[]}`}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "dev.cfg")
	_, errOut, code := runScript(t, "tofino-devconfig.sh", "-o", out, "swordbox",
		filepath.Join(dir, "tofino.bin"), filepath.Join(dir, "context.json"), "pipe", filepath.Join(dir, "bf-rt.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"swordbox", files["tofino.bin"], files["context.json"], "pipe", files["bf-rt.json"]}
	for i, w := range want {
		if len(b) < 4 {
			t.Fatalf("chunk %d: %d bytes left", i, len(b))
		}
		n := binary.LittleEndian.Uint32(b)
		if int(n) > len(b)-4 {
			t.Fatalf("chunk %d: length %d, %d bytes left", i, n, len(b)-4)
		}
		if got := string(b[4 : 4+n]); got != w {
			t.Errorf("chunk %d: %q, want %q", i, got, w)
		}
		b = b[4+n:]
	}
	if len(b) != 0 {
		t.Errorf("%d bytes after the last chunk", len(b))
	}
	if _, _, code := runScript(t, "tofino-devconfig.sh", "-o", out, strings.Repeat("n", 101),
		filepath.Join(dir, "tofino.bin"), filepath.Join(dir, "context.json"), "pipe", filepath.Join(dir, "bf-rt.json")); code != 2 {
		t.Errorf("a 101-byte program name: exit %d, want 2 (the PI back end reads at most 100)", code)
	}
}

func TestDPDKPlan(t *testing.T) {
	rundir := filepath.Join(t.TempDir(), "run")
	p := dryRun(t, "dpdk-host.sh", "--client-pci", "0000:3b:00.0", "--server-pci", "0000:3b:00.1",
		"--server", "10.0.1.1", "--server", "10.0.1.2", "--cas-to-write", "10.0.1.1=0x7f0000000000-0x7f0000001000",
		"--lcore", "1", "--run-dir", rundir, "--pmtu", "1024")
	if _, err := os.Stat(rundir); !os.IsNotExist(err) {
		t.Errorf("the dry run created %s (err %v): it must run nothing", rundir, err)
	}
	p.has(t, "go", "build", "-tags", "dpdk")
	p.has(t, "modprobe", "vfio-pci")
	p.has(t, "dpdk-devbind.py", "-b", "vfio-pci", "0000:3b:00.0", "0000:3b:00.1")
	plan := strings.Join(p.commands, "\n")
	for _, want := range []string{"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "mount -t hugetlbfs nodev /dev/hugepages"} {
		if !strings.Contains(plan, want) {
			t.Errorf("the plan has no %q", want)
		}
	}
	cfgPath := filepath.Join(rundir, "mbox.yaml")
	cfg, ok := p.files[cfgPath]
	if !ok {
		t.Fatalf("the plan writes no %s: %v", cfgPath, p.files)
	}
	for _, want := range []string{`"-a", "0000:3b:00.0", "-a", "0000:3b:00.1"`, `"--file-prefix", "swordbox-mbox"`, `"-l", "1"`,
		"io: dpdk", "cas-to-write: [{lo: 0x00007f0000000000, hi: 0x00007f0000001000}]", "- ip: 10.0.1.2"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("mbox.yaml has no %q:\n%s", want, cfg)
		}
	}
	calls := checkAllFlags(t, "dpdk-host.sh", p)
	run := findCall(t, calls, "middlebox", "run")
	if got := flagValue(run, "--config"); got != cfgPath {
		t.Errorf("middlebox run --config %q, want %q", got, cfgPath)
	}
	// The generated file passes everything middlebox run checks before it
	// opens a port: the file's keys and types, the ranges, the engine's
	// validation. Only then does it look at --io, which this run makes
	// one it does not know.
	f := filepath.Join(t.TempDir(), "mbox.yaml")
	if err := os.WriteFile(f, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(swordbox(t), "middlebox", "run", "--config", f, "--io", "none").CombinedOutput()
	if want := `--io "none": want afpacket or dpdk`; err == nil || !strings.Contains(string(out), want) {
		t.Errorf("middlebox run --config (the plan's file) --io none: %v, %s; want the refusal %q (every check before it passed)", err, out, want)
	}

	m := dryRun(t, "dpdk-host.sh", "--client-pci", "0000:3b:00.0", "--server-pci", "0000:3b:00.1", "--server", "10.0.1.1",
		"--driver", "mlx5", "--run-dir", rundir)
	if m.command("dpdk-devbind.py", "-b") != nil {
		t.Errorf("--driver mlx5 binds the ports:\n%s", strings.Join(m.commands, "\n"))
	}
}

func TestRackHostPlans(t *testing.T) {
	rundir := filepath.Join(t.TempDir(), "run")
	mem := dryRun(t, "rack-host.sh", "memnode", "--iface", "ens1f0", "--ip", "10.0.1.1", "--mac", "02:00:00:00:01:01",
		"--size", "1GiB", "--regions", "2", "--run-dir", rundir)
	mem.has(t, "ip", "link", "set", "dev", "ens1f0", "mtu", "9000", "up")
	calls := checkAllFlags(t, "rack-host.sh memnode", mem)
	node := findCall(t, calls, "memnode")
	if !slices.Contains(node, "--skip-icrc") {
		t.Errorf("memnode behind a steering switch without --skip-icrc: %q", node)
	}
	// The planned memory node runs: on an in-memory port instead of the
	// NIC, with less memory, on a free port.
	args := setFlag(node, "--iface", "")
	args = setFlag(args, "--size", "1MiB")
	args = setFlag(args, "--listen", "127.0.0.1:0")
	runUntil(t, args, "memnode: listening")

	ms := dryRun(t, "rack-host.sh", "clover-ms", "--iface", "ens1f0", "--ip", "10.0.0.9", "--mac", "02:00:00:00:00:09",
		"--memnode", "192.168.0.11:7471", "--keys", "1024", "--threads", "64", "--run-dir", rundir)
	findCall(t, checkAllFlags(t, "rack-host.sh clover-ms", ms), "clover", "ms")

	cl := dryRun(t, "rack-host.sh", "clover-clients", "--iface", "ens1f0", "--ip", "10.0.0.1", "--mac", "02:00:00:00:00:01",
		"--memnode", "192.168.0.11:7471", "--ms", "192.168.0.12:7472", "--host", "1", "--hosts", "4", "--threads", "64",
		"--workload", "write-only", "--steps", "load,warmup,run,quit", "--run-dir", rundir)
	c := findCall(t, checkAllFlags(t, "rack-host.sh clover-clients", cl), "clover", "clients")
	for flag, want := range map[string]string{"--host": "1", "--hosts": "4", "--workload": "write-only", "--ms": "192.168.0.12:7472"} {
		if got := flagValue(c, flag); got != want {
			t.Errorf("clover clients %s %q, want %q", flag, got, want)
		}
	}
	if cl.command("printf", "%s\\n", "load", "warmup", "run", "quit") == nil {
		t.Errorf("--steps: no printf of the steps into the clients:\n%s", strings.Join(cl.commands, "\n"))
	}
}

// TestRefusals: every number is checked, in a dry run too, and refused
// with the option's name and its range (exit 2).
func TestRefusals(t *testing.T) {
	bm := []string{"--port", "1=veth1", "--port", "2=veth2", "--port", "11=veth11", "--port", "12=veth12"}
	dp := []string{"--client-pci", "0000:3b:00.0", "--server-pci", "0000:3b:00.1", "--server", "10.0.1.1"}
	rh := []string{"clover-clients", "--iface", "ens1f0", "--ip", "10.0.0.1", "--memnode", "a:1", "--ms", "b:2"}
	for _, c := range []struct {
		script string
		args   []string
		want   string
	}{
		{"bmv2.sh", []string{"--port", "600=veth1"}, "--port 600=veth1: port number 600: out of range 0..510"},
		{"bmv2.sh", append(slices.Clone(bm), "--cpu-port", "1"), "--port 1=veth1: 1 is the CPU port"},
		{"bmv2.sh", append(slices.Clone(bm), "--cpu-port", "200"), "--cpu-port 200: p4/swordbox.p4 declares CPU_PORT = 255"},
		{"bmv2.sh", append(slices.Clone(bm), "--mtu", "99999"), "--mtu 99999: out of range 1280..9216"},
		{"bmv2.sh", append(slices.Clone(bm), "--grpc-addr", "0.0.0.0:70000"), "--grpc-addr 0.0.0.0:70000: port 70000 out of range 1..65535"},
		{"bmv2.sh", append(slices.Clone(bm), "--steering", "sideways"), "--steering sideways: want one of off write read-write"},
		{"bmv2.sh", []string{"--port", "1=veth1"}, "--rack docs/examples/rack.yaml: a host is on port 2, which no --port gives"},
		{"bmv2.sh", append(slices.Clone(bm), "--wait", "0"), "--wait 0: out of range 1..600"},
		{"tofino.sh", []string{"--cpu-port", "192", "--port", "70/0"}, "--port 70/0: front-panel port 70: out of range 1..65"},
		{"tofino.sh", []string{"--cpu-port", "192", "--port", "1/9"}, "--port 1/9: channel 9: out of range 0..7"},
		{"tofino.sh", []string{"--cpu-port", "192", "--port", "1/0:7G"}, "--port 1/0:7G: speed 7G: want one of"},
		{"tofino.sh", []string{"--cpu-port", "192", "--port", "1/0", "--fec", "XX"}, "--fec XX: want one of NONE FC RS"},
		{"tofino.sh", []string{"--cpu-port", "192", "--port", "1/0", "--hugepages", "10"}, "--hugepages 10: out of range 64..65536"},
		{"tofino.sh", []string{"--cpu-port", "192", "--port", "1/0", "--device-id", "300"}, "--device-id 300: out of range 0..255"},
		{"tofino.sh", []string{"--port", "1/0"}, "--cpu-port: required to build the program"},
		{"tofino.sh", []string{"--port", "1/0", "--cpu-port", "512"}, "--cpu-port 512: out of range 0..511"},
		{"dpdk-host.sh", append(slices.Clone(dp), "--ring-size", "1000"), "--ring-size 1000: want a power of two in 64..1048576"},
		{"dpdk-host.sh", append(slices.Clone(dp), "--burst", "513"), "--burst 513: out of range 1..512"},
		{"dpdk-host.sh", append(slices.Clone(dp), "--lcore", "100000"), "--lcore 100000: out of range 0.."},
		{"dpdk-host.sh", append(slices.Clone(dp), "--pmtu", "1500"), "--pmtu 1500: want one of 256 512 1024 2048 4096"},
		{"dpdk-host.sh", append(slices.Clone(dp), "--cas-to-write", "10.0.1.1=0x2000-0x1000"), "empty range (want LO < HI)"},
		{"dpdk-host.sh", append(slices.Clone(dp), "--cas-to-write", "10.9.9.9=0-8"), "10.9.9.9 is not a --server"},
		{"dpdk-host.sh", []string{"--client-pci", "3b:00.0", "--server-pci", "0000:3b:00.1", "--server", "10.0.1.1"}, "want a full PCI address"},
		{"dpdk-host.sh", append(slices.Clone(dp), "--stats-period", "5"), "--stats-period 5: not a duration"},
		{"rack-host.sh", append(slices.Clone(rh), "--zipf", "7"), "--zipf 7: out of range 0.01..5"},
		{"rack-host.sh", append(slices.Clone(rh), "--hosts", "2", "--host", "2"), "--host 2: out of range 0..1"},
		{"rack-host.sh", append(slices.Clone(rh), "--value-size", "5000"), "--value-size 5000: out of range 1..4072"},
		{"rack-host.sh", append(slices.Clone(rh), "--mtu", "9000"), "--mtu 9000: want one of 256 512 1024 2048 4096"},
		{"rack-host.sh", append(slices.Clone(rh), "--mtu", "4096", "--link-mtu", "4100"), "--link-mtu 4100: below --mtu 4096 + 78"},
		{"rack-host.sh", append(slices.Clone(rh), "--steps", "load,jump"), "step jump: want one of load warmup run quit"},
		{"rack-host.sh", []string{"memnode", "--iface", "x", "--ip", "10.0.0.1", "--regions", "2000"}, "--regions 2000: out of range 1..1024"},
		{"rack-host.sh", []string{"memnode", "--iface", "x", "--ip", "10.0.0.300"}, "--ip 10.0.0.300: not an IPv4 address"},
		{"rack-host.sh", []string{"memnode", "--iface", "x", "--ip", "10.0.0.1", "--mac", "01:00:00:00:00:01"}, "a multicast address"},
	} {
		out, errOut, code := runScript(t, c.script, append([]string{"--dry-run"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s %s: exit %d, stderr %q; want exit 2 and %q", c.script, strings.Join(c.args, " "), code, errOut, c.want)
		}
		if out != "" {
			t.Errorf("%s %s: refused, yet printed a plan:\n%s", c.script, strings.Join(c.args, " "), out)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, s := range []string{"bmv2.sh", "tofino.sh", "dpdk-host.sh", "rack-host.sh", "tofino-devconfig.sh"} {
		out, errOut, code := runScript(t, s, "--help")
		if code != 0 || !strings.Contains(out, "usage:") {
			t.Errorf("%s --help: exit %d, stdout %q, stderr %q", s, code, out, errOut)
		}
		if s != "tofino-devconfig.sh" && !strings.Contains(out, "--dry-run") {
			t.Errorf("%s --help does not mention --dry-run", s)
		}
	}
}

// TestShellcheck keeps the scripts clean of what shellcheck finds.
func TestShellcheck(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		msg := "shellcheck not installed (apt-get install shellcheck; scripts/test.sh installs it as root)"
		if os.Getenv("SWORDBOX_REQUIRE_ORACLES") != "" {
			t.Fatal(msg + ": FAILED because SWORDBOX_REQUIRE_ORACLES is set")
		}
		t.Skip(msg + ": test skipped")
	}
	scripts, _ := filepath.Glob(filepath.Join(repo, "scripts/deploy/*.sh"))
	for i, s := range scripts {
		scripts[i] = strings.TrimPrefix(s, repo+"/")
	}
	c := exec.Command("shellcheck", append([]string{"-x"}, scripts...)...)
	c.Dir = repo
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// TestDeployDoc runs every deploy script line of docs/deploy.md as a dry
// run, and holds every swordbox line of it to the binary's flags.
func TestDeployDoc(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "docs/deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "```") {
			in = !in
			continue
		}
		if !in {
			continue
		}
		if i := regexp.MustCompile(`(^|\s)#`).FindStringIndex(l); i != nil {
			l = l[:i[0]]
		}
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		if cur+l != "" {
			lines = append(lines, cur+l)
		}
		cur = ""
	}
	scripts, cmds := 0, 0
	for _, l := range lines {
		w := words(l)
		switch {
		case w[0] == "scripts/deploy/tracked-keys.sh":
			if _, errOut, code := runScript(t, "tracked-keys.sh", w[1:]...); code != 0 {
				t.Errorf("docs/deploy.md: %s: exit %d: %s", l, code, errOut)
			}
		case strings.HasPrefix(w[0], "scripts/deploy/") && strings.HasSuffix(w[0], ".sh"):
			if slices.Contains(w, "--help") || slices.Contains(w, "--stop") {
				continue
			}
			scripts++
			out, errOut, code := runScript(t, strings.TrimPrefix(w[0], "scripts/deploy/"), append([]string{"--dry-run"}, w[1:]...)...)
			if code != 0 {
				t.Errorf("docs/deploy.md: %s: dry run exit %d\n%s%s", l, code, out, errOut)
			}
		case w[0] == "swordbox" || w[0] == "./swordbox":
			cmds++
			checkFlags(t, "docs/deploy.md", w[1:])
		}
	}
	// The rack file of section 2 loads, and the controller builds its plan
	// from it against the program's P4Info (names as p4c writes them).
	m := regexp.MustCompile("(?s)```yaml\n(ctrl:\n.*?)```").FindSubmatch(data)
	if m == nil {
		t.Fatal("docs/deploy.md: no yaml block of a ctrl section")
	}
	rack := filepath.Join(t.TempDir(), "rack.yaml")
	if err := os.WriteFile(rack, m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	runUntil(t, []string{"ctrl", "run", "--config", rack, "--p4info", "p4/swordbox.p4info.txtpb", "--device-config", "p4/swordbox.p4",
		"--switch", freeAddr(t), "--metrics", freeAddr(t)}, "swordbox ctrl: switch")
	if scripts < 4 || cmds < 3 {
		t.Errorf("docs/deploy.md: %d script lines and %d swordbox lines found: the extraction is broken", scripts, cmds)
	}
}

// TestTrackedKeys holds tracked-keys.sh to the clients' own key names.
func TestTrackedKeys(t *testing.T) {
	out, errOut, code := runScript(t, "tracked-keys.sh", "1024")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	list, ok := strings.CutPrefix(strings.TrimSpace(out), "tracked-keys: [")
	if !ok || !strings.HasSuffix(list, "]") {
		t.Fatalf("not a tracked-keys line: %q", out)
	}
	keys := strings.Split(strings.TrimSuffix(list, "]"), ", ")
	if len(keys) != 1024 {
		t.Fatalf("%d keys, want 1024", len(keys))
	}
	for i, k := range keys {
		if want := strconv.FormatUint(uint64(ycsb.FNVHash64(int64(i))), 10); k != want {
			t.Fatalf("key %d: %s, want %s (ycsb.FNVHash64)", i, k, want)
		}
	}
	if _, errOut, code := runScript(t, "tracked-keys.sh", "5000"); code != 2 || !strings.Contains(errOut, "N 5000: out of range 1..4096") {
		t.Errorf("5000 keys: exit %d, %q; want the refusal", code, errOut)
	}
}
