package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestMain lets a test run the swordbox command itself in a child process:
// the test binary, started with SWORDBOX_TEST_MAIN=1, is `swordbox ARGS...`
// (main, exit code included), so exit codes and signals are the real ones.
func TestMain(m *testing.M) {
	switch os.Getenv("SWORDBOX_TEST_MAIN") {
	case "1":
		main()
		os.Exit(0)
	case "check":
		// docs_test.go: check a command line without running it.
		if err := checkOnly(os.Args[1:]); err != nil && !errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "swordbox:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// swordboxProc is a child process running `swordbox args...`.
type swordboxProc struct {
	cmd            *exec.Cmd
	stdout, stderr *lockedBuffer
	done           chan struct{} // closed when the process has exited
	err            error         // its Wait error, once done
}

// startSwordbox starts `swordbox args...` as a child process with the
// given extra environment.
func startSwordbox(t *testing.T, env []string, args ...string) *swordboxProc {
	t.Helper()
	return startSwordboxMode(t, "1", env, args...)
}

// startSwordboxMode starts the test binary as swordbox (mode "1") or as
// the docs test's checker (mode "check").
func startSwordboxMode(t *testing.T, mode string, env []string, args ...string) *swordboxProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, args...)
	c.Env = append(append(os.Environ(), "SWORDBOX_TEST_MAIN="+mode), env...)
	p := &swordboxProc{cmd: c, stdout: &lockedBuffer{}, stderr: &lockedBuffer{}, done: make(chan struct{})}
	c.Stdout, c.Stderr = p.stdout, p.stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = c.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			c.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exited reports whether the process has ended.
func (p *swordboxProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait waits at most limit for the process to exit and returns its exit
// code (-1 when it had to be killed; 128 + the signal when a signal it did
// not catch ended it).
func (p *swordboxProc) wait(limit time.Duration) int {
	select {
	case <-p.done:
	case <-time.After(limit):
		p.cmd.Process.Kill()
		<-p.done
		return -1
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()) // killed by a signal it did not catch
		}
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// waitFor waits until the process's stderr or stdout holds s.
func (p *swordboxProc) waitFor(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(p.stderr.String()+p.stdout.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within %s\nstdout:\n%s\nstderr:\n%s", s, limit, p.stdout, p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeFile writes a file under dir and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBadInputIsRefused runs every command with bad input, as the user
// would, and checks that it exits with code 1 at once, before running
// anything, with a message that names the flag (or the file and the key's
// path) and the range.
func TestBadInputIsRefused(t *testing.T) {
	dir := t.TempDir()
	p4src, _ := filepath.Abs("../../p4/swordbox.p4")
	p4info, _ := filepath.Abs("../../p4/swordbox.p4info.txtpb")
	badSection := writeFile(t, dir, "bnech.yaml", "bnech:\n  threads: 4\n")
	badValue := writeFile(t, dir, "lots.yaml", "bench:\n  threads: lots\n")
	badRange := writeFile(t, dir, "zero.yaml", "bench:\n  threads: 0\n")
	badDur := writeFile(t, dir, "dur.yaml", "bench:\n  duration: soon\n")
	fraction := writeFile(t, dir, "frac.yaml", "bench:\n  threads: 2.5\n")
	wrapped := writeFile(t, dir, "wrap.yaml", "switch:\n  cpu-port: 4294967551\n")
	unitless := writeFile(t, dir, "unitless.yaml", "bench:\n  warmup: 5\n")
	rackTypo := writeFile(t, dir, "rack.yaml", `ctrl:
  p4info: `+p4info+`
  device-config: `+p4src+`
  hosts:
    - {name: c0, mac: "02:00:00:00:00:01", ip: 10.0.0.1, port: 1}
    - {name: m0, mca: "02:00:00:00:00:02", ip: 10.0.0.2, port: 2}
`)
	rackBadPort := writeFile(t, dir, "rackport.yaml", `ctrl:
  hosts:
    - {name: c0, mac: "02:00:00:00:00:01", ip: 10.0.0.1, port: one}
`)
	mboxRemap := writeFile(t, dir, "mbox1.yaml", `middlebox:
  servers:
    - ip: 10.0.0.2
      remapp: [{lo: 0, hi: 0}]
`)
	mboxCAS := writeFile(t, dir, "mbox2.yaml", `middlebox:
  servers:
    - ip: 10.0.0.2
      remap: [{lo: 0, hi: 0}]
      cas-to-wirte: [{lo: 4096, hi: 8192}]
`)
	mboxRing := writeFile(t, dir, "mbox3.yaml", "middlebox:\n  ring-size: many\n")
	mboxSteer := writeFile(t, dir, "mbox4.yaml", "middlebox:\n  steering:\n    mdoe: both\n")
	mboxList := writeFile(t, dir, "mbox5.yaml", "middlebox:\n  servers: 10.0.0.2\n")
	mboxHuge := writeFile(t, dir, "mbox6.yaml", "middlebox:\n  window: 1048576\n  conn-ring-size: 1048576\n  max-conns: 1048576\n")
	mboxHoldoff := writeFile(t, dir, "mbox7.yaml", "middlebox:\n  replay-holdoff: -1s\n")
	text := writeFile(t, dir, "notes.txt", "hello\n")
	empty := writeFile(t, dir, "empty.pcap", "")
	noBench := []string{"--duration", "1h", "--no-progress", "--results", ""}

	cases := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		// bench
		{"bench threads 0", append([]string{"bench", "--threads", "0"}, noBench...), nil, "bench: --threads 0: out of range 1..4096"},
		{"bench threads -3", append([]string{"bench", "--threads", "-3"}, noBench...), nil, "bench: --threads -3: out of range 1..4096"},
		{"bench threads lots", append([]string{"bench", "--threads", "lots"}, noBench...), nil, `invalid argument "lots" for "--threads"`},
		{"bench client-hosts 0", append([]string{"bench", "--client-hosts", "0"}, noBench...), nil, "bench: --client-hosts 0: out of range 1..64"},
		{"bench client-hosts over threads", append([]string{"bench", "--client-hosts", "8", "--threads", "4"}, noBench...), nil, "--client-hosts 8 is more than --threads 4"},
		{"bench more keys than the switch steers", append([]string{"bench", "--keys", "8192"}, noBench...), nil,
			"bench: testbed: cell c write: steers 8192 keys, the switch program has 4096 key slots (steer at most 4096: fewer keys, mode off, or the partial scenario with at most 4096 tracked)"},
		{"bench keys of values too large", append([]string{"bench", "--keys", "1048576", "--value-size", "4072"}, noBench...), nil,
			"bench: --keys 1048576 with --value-size 4072 and --threads 240: clover region: 1048576 keys of 4072-byte values (4096-byte slots) with 240 threads need 8269 MiB on the memory node, more than the 1024 MiB a Clover LH addresses (at most about 122895 keys of that size)"},
		{"bench keys 0", append([]string{"bench", "--keys", "0"}, noBench...), nil, "bench: --keys 0: out of range 1..1048576"},
		{"bench value-size 0", append([]string{"bench", "--value-size", "0"}, noBench...), nil, "bench: --value-size 0: out of range 1..4072"},
		{"bench zipf -1", append([]string{"bench", "--zipf", "-1"}, noBench...), nil, "bench: --zipf -1: out of range 0.01..5 or 0 (the scenario's default)"},
		{"bench duration -1s", []string{"bench", "--duration", "-1s", "--no-progress", "--results", ""}, nil, "bench: --duration -1s: out of range 10ms..24h"},
		{"bench warmup -1s", append([]string{"bench", "--warmup", "-1s"}, noBench...), nil, "bench: --warmup -1s: out of range 0s..1h"},
		{"bench memory-workers -1", append([]string{"bench", "--memory-workers", "-1"}, noBench...), nil, "bench: --memory-workers -1: out of range 0..64"},
		{"bench read-timeout 20s", append([]string{"bench", "--read-timeout", "20s"}, noBench...), nil, "bench: --read-timeout 20s: out of range 1ms..10s or 0 (Clover's default, 50ms)"},
		{"bench clock", append([]string{"bench", "--clock", "sundial"}, noBench...), nil, `bench: --clock "sundial": want wall or virtual`},
		{"bench virtual-duration", append([]string{"bench", "--clock", "virtual", "--virtual-duration", "5s"}, noBench...), nil, "bench: --virtual-duration 5s: out of range 100µs..1s"},
		{"bench virtual-warmup", append([]string{"bench", "--clock", "virtual", "--virtual-warmup", "2s"}, noBench...), nil, "bench: --virtual-warmup 2s: out of range 0s..1s"},
		{"bench system", append([]string{"bench", "--system", "redis"}, noBench...), nil, `bench: --system "redis": want clover, swarm or sherman`},
		{"bench sherman key-space", append([]string{"bench", "--system", "sherman", "--key-space", "10"}, noBench...), nil, "bench: --key-space 10: out of range 64..4194304"},
		{"bench sherman memory-nodes", append([]string{"bench", "--system", "sherman", "--memory-nodes", "0"}, noBench...), nil, "bench: --memory-nodes 0: out of range 1..16"},
		{"bench sherman read-ratios", append([]string{"bench", "--system", "sherman", "--read-ratios", "101"}, noBench...), nil, "bench: --read-ratios 101: want 0..100"},
		{"bench sherman dists", append([]string{"bench", "--system", "sherman", "--dists", "pareto"}, noBench...), nil, `bench: --dists "pareto": want uniform or zipf`},
		{"bench results unwritable", []string{"bench", "--duration", "1h", "--no-progress", "--results", "/proc/nope"}, nil, "bench: --results /proc/nope: cannot create it"},
		{"bench scenario", append([]string{"bench", "--scenario", "nope"}, noBench...), nil, "unknown scenario"},
		{"bench workloads", append([]string{"bench", "--workloads", "z"}, noBench...), nil, "bench: --workloads"},
		{"bench modes", append([]string{"bench", "--modes", "sideways"}, noBench...), nil, "sideways"},
		{"bench timing", append([]string{"bench", "--timing", "cx9"}, noBench...), nil, "timing model"},
		{"bench cas-mux sweep", append([]string{"bench", "--scenario", "cas-mux", "--sweep", "0"}, noBench...), nil, "client QPs"},
		// Swept values are checked as the flags they stand for, before the
		// first cell: NaN failed in cell 1, 100 and 1e-9 ran though --zipf
		// refuses them, a tracked count past --keys ran as all, the size
		// sweep stopped at 3000 while --value-size takes 4072, and the
		// default scenario ignored --sweep.
		{"bench zipf sweep NaN", append([]string{"bench", "--scenario", "zipf", "--sweep", "NaN"}, noBench...), nil, `bench: testbed: zipf: constant "NaN": want 0.01..5`},
		{"bench zipf sweep 100", append([]string{"bench", "--scenario", "zipf", "--sweep", "0.99,100"}, noBench...), nil, `bench: testbed: zipf: constant "100": want 0.01..5`},
		{"bench partial sweep past the keys", append([]string{"bench", "--scenario", "partial", "--keys", "1024", "--sweep", "0,1025"}, noBench...), nil, `bench: testbed: partial: tracked keys "1025": want 0..1024 (the keys) or all`},
		{"bench size sweep", append([]string{"bench", "--scenario", "size", "--sweep", "4073"}, noBench...), nil, `bench: testbed: size: object size "4073": want 1..4072 bytes`},
		{"bench zipf scenario with --zipf", append([]string{"bench", "--scenario", "zipf", "--zipf", "1.2"}, noBench...), nil,
			"bench: testbed: scenario zipf sweeps the zipfian constant: --zipf 1.2 would be ignored (give the constants with --sweep)"},
		{"bench default sweep", append([]string{"bench", "--sweep", "5"}, noBench...), nil, "bench: testbed: scenario default sweeps nothing (its cells are the workloads x the modes): --sweep 5 is for partial, zipf, size or cas-mux"},
		{"bench env", append([]string{"bench"}, noBench...), []string{"SWORDBOX_BENCH_THREADS=0"}, "bench: SWORDBOX_BENCH_THREADS=0: out of range 1..4096"},
		{"bench env not a number", append([]string{"bench"}, noBench...), []string{"SWORDBOX_BENCH_KEYS=many"}, `bench: SWORDBOX_BENCH_KEYS="many": "many" is not an integer`},
		{"bench unknown section", append([]string{"bench", "--config", badSection}, noBench...), nil, "config " + badSection + ": bnech: unknown section (known: "},
		{"bench bad value in file", append([]string{"bench", "--config", badValue}, noBench...), nil, "config " + badValue + `: bench.threads: "lots" is not an integer`},
		{"bench range in file", append([]string{"bench", "--config", badRange}, noBench...), nil, "config " + badRange + ": bench.threads: 0: out of range 1..4096"},
		// Numbers of a file are taken as written, as a flag takes them:
		// 2.5 ran as 2 threads, 4294967551 as CPU port 255, 5 as 5ns.
		{"bench fraction in file", append([]string{"bench", "--config", fraction}, noBench...), nil, "config " + fraction + ": bench.threads: 2.5 is not an integer"},
		{"switch wrapped number in file", []string{"switch", "--config", wrapped, "--grpc", "127.0.0.1:0"}, nil, "config " + wrapped + ": switch.cpu-port: 4294967551 is too large for a non-negative integer of 32 bits"},
		{"bench unitless duration in file", append([]string{"bench", "--config", unitless}, noBench...), nil, "config " + unitless + ": bench.warmup: 5 is not a duration (such as 250ms, 8s, 1m)"},
		{"bench duration in file", append([]string{"bench", "--config", badDur}, noBench...), nil, "config " + badDur + `: bench.duration: "soon" is not a duration`},
		{"bench env not a bool", append([]string{"bench"}, noBench...), []string{"SWORDBOX_BENCH_JSON=perhaps"}, `bench: SWORDBOX_BENCH_JSON="perhaps": "perhaps" is not true or false`},
		{"bench env not a duration", append([]string{"bench"}, noBench...), []string{"SWORDBOX_BENCH_WARMUP=soon"}, `bench: SWORDBOX_BENCH_WARMUP="soon": "soon" is not a duration`},
		{"bench env misspelled", append([]string{"bench"}, noBench...), []string{"SWORDBOX_BENCH_THRAEDS=4"}, "bench: SWORDBOX_BENCH_THRAEDS: unknown setting (the variables are SWORDBOX_BENCH_CHAIN, SWORDBOX_BENCH_CLIENT_HOSTS, "},
		{"middlebox bench env is not middlebox run's", []string{"middlebox", "run", "--cores", "0"}, []string{"SWORDBOX_MIDDLEBOX_BENCH_CLIENTS=4"}, "middlebox run: --cores 0: out of range 1..64"},
		{"bench missing config", append([]string{"bench", "--config", filepath.Join(dir, "nope.yaml")}, noBench...), nil, "nope.yaml"},
		// perf
		{"perf qps 0", []string{"perf", "write_bw", "--qps", "0"}, nil, "perf: --qps 0: out of range 1..1024"},
		{"perf qps 100000", []string{"perf", "write_bw", "--qps", "100000", "--duration", "1s"}, nil, "perf: --qps 100000: out of range 1..1024"},
		{"perf depth 0", []string{"perf", "write_bw", "--depth", "0"}, nil, "perf: --depth 0: out of range 1..1024"},
		{"perf outstanding", []string{"perf", "write_bw", "--qps", "1024", "--depth", "1024"}, nil, "--qps 1024 x --depth 1024 = 1048576 requests outstanding: at most 65536"},
		{"perf size -5", []string{"perf", "write_bw", "--size", "-5"}, nil, "perf: --size -5: out of range 1..1048576"},
		{"perf duration -1s", []string{"perf", "write_bw", "--duration", "-1s"}, nil, "perf: --duration -1s: out of range 10ms..24h"},
		{"perf mtu", []string{"perf", "write_bw", "--mtu", "1000"}, nil, "perf: --mtu 1000: want one of 256, 512, 1024, 2048, 4096"},
		{"perf drop", []string{"perf", "write_bw", "--drop", "2"}, nil, "perf: --drop 2: out of range 0..1"},
		// A link that loses every frame ran until the RNIC gave up
		// (RETRY_EXC_ERR), with no word of why.
		{"perf drop 1", []string{"perf", "write_bw", "--drop", "1"}, nil, "perf: --drop 1: every frame is lost, no operation can complete: want below 1"},
		{"perf corrupt 1", []string{"perf", "write_bw", "--corrupt", "1"}, nil, "perf: --corrupt 1: every frame is lost, no operation can complete: want below 1"},
		{"perf drop that RC gives up on", []string{"perf", "write_bw", "--drop", "0.9", "--duration", "10s"}, nil,
			"perf: qp 0: WRITE completed RETRY_EXC_ERR (the link loses frames, --drop 0.9 and --corrupt 0: the RNIC gave up on a request its retransmissions did not get through)"},
		{"perf mem-size", []string{"perf", "write_bw", "--mem-size", "1024GiB"}, nil, "perf: --mem-size 1024GiB: out of range 4KiB.."},
		{"perf mem-size text", []string{"perf", "write_bw", "--mem-size", "lots"}, nil, `perf: --mem-size lots: "lots" is not a byte count`},
		{"perf mem-size too small", []string{"perf", "write_bw", "--qps", "64", "--depth", "64", "--size", "4096", "--mem-size", "1MiB"}, nil, "need 16MiB of memory node, more than --mem-size 1MiB"},
		{"perf reorder-depth", []string{"perf", "write_bw", "--reorder-depth", "0"}, nil, "perf: --reorder-depth 0: out of range 1..1024"},
		{"perf delay", []string{"perf", "write_bw", "--delay", "2s"}, nil, "perf: --delay 2s: out of range 0s..1s"},
		{"perf workers", []string{"perf", "write_bw", "--workers", "65"}, nil, "perf: --workers 65: out of range 0..64"},
		{"perf test name", []string{"perf", "swim_bw"}, nil, "swim_bw"},
		// memnode
		// It panicked (nil listener) once the node was up.
		{"memnode listen empty", []string{"memnode", "--listen", ""}, nil, "memnode: --listen is empty: want the connection manager's host:port"},
		{"memnode regions 0", []string{"memnode", "--regions", "0", "--listen", ""}, nil, "memnode: --regions 0: out of range 1..1024"},
		// A nanosecond past 8760h rounded onto it as a float64 and was taken.
		{"memnode duration 8760h1ns", []string{"memnode", "--duration", "8760h0m0.000000001s", "--listen", ""}, nil, "memnode: --duration 8760h0m0.000000001s: out of range 1ms..8760h or 0 (run until interrupted)"},
		{"memnode duration -1s", []string{"memnode", "--duration", "-1s", "--listen", ""}, nil, "memnode: --duration -1s: out of range 1ms..8760h or 0 (run until interrupted)"},
		{"memnode size", []string{"memnode", "--size", "0", "--listen", ""}, nil, "memnode: --size 0: out of range 4KiB.."},
		{"memnode regions too small", []string{"memnode", "--size", "64KiB", "--regions", "64", "--listen", ""}, nil, "leaves regions under 4KiB"},
		{"memnode device memory", []string{"memnode", "--device-memory", "1MiB", "--listen", ""}, nil, "memnode: --device-memory 1MiB: out of range 0..256KiB"},
		{"memnode mtu", []string{"memnode", "--mtu", "9000", "--listen", ""}, nil, "memnode: --mtu 9000: want one of 256, 512, 1024, 2048, 4096"},
		{"memnode workers", []string{"memnode", "--workers", "65", "--listen", ""}, nil, "memnode: --workers 65: out of range 0..64"},
		{"memnode stats-period", []string{"memnode", "--stats-period", "-1s", "--listen", ""}, nil, "memnode: --stats-period -1s: out of range 10ms..24h or 0 (only at exit)"},
		// switch
		{"switch cpu-port 600", []string{"switch", "--cpu-port", "600", "--grpc", "127.0.0.1:0"}, nil, "switch: --cpu-port 600: out of range 1..511"},
		{"switch stats", []string{"switch", "--stats", "-1s", "--grpc", "127.0.0.1:0"}, nil, "switch: --stats -1s: out of range 10ms..24h or 0 (never)"},
		{"switch port number", []string{"switch", "--ports", "600=mem", "--grpc", "127.0.0.1:0"}, nil, `switch: --ports "600=mem": port number must be 0..510 (511 is v1model's drop port)`},
		{"switch port number tna", []string{"switch", "--arch", "tna", "--ports", "512=mem", "--grpc", "127.0.0.1:0"}, nil, `switch: --ports "512=mem": port number must be 0..511`},
		// v1model drops what is sent to port 511: a host there, or the CPU
		// port there, was accepted and never received a frame.
		{"switch port 511 v1model", []string{"switch", "--ports", "511=mem", "--grpc", "127.0.0.1:0"}, nil, `switch: --ports "511=mem": port number must be 0..510 (511 is v1model's drop port)`},
		{"switch cpu-port 511 v1model", []string{"switch", "--cpu-port", "511", "--grpc", "127.0.0.1:0"}, nil, "switch: --cpu-port 511 with --arch v1model: want 1..510 (511 is v1model's drop port: PacketIn would never leave)"},
		// 0 was printed as the CPU port while the target used 255.
		{"switch cpu-port 0", []string{"switch", "--cpu-port", "0", "--grpc", "127.0.0.1:0"}, nil, "switch: --cpu-port 0: out of range 1..511; "},
		{"switch arch", []string{"switch", "--arch", "bmv2", "--grpc", "127.0.0.1:0"}, nil, `switch: --arch: switch architecture "bmv2": want v1model or tna`},
		{"switch arch of the program", []string{"switch", "--arch", "v1model", "--p4", "../../p4/tna/swordbox.p4", "--grpc", "127.0.0.1:0"}, nil,
			"switch program ../../p4/tna/swordbox.p4 is a tna program, not v1model"},
		{"switch tna program of another arch", []string{"switch", "--arch", "tna", "--p4", "../../p4/swordbox.p4", "--grpc", "127.0.0.1:0"}, nil,
			"switch program ../../p4/swordbox.p4 is a v1model program, not tna"},
		{"bench switch arch", append([]string{"bench", "--switch-arch", "tofino"}, noBench...), nil, `bench: --switch-arch: switch architecture "tofino": want v1model or tna`},
		{"bench switch arch netns", append([]string{"bench", "--switch-arch", "tna", "--netns"}, noBench...), nil, "bench: --switch-arch tna: only --system clover on the in-process rack"},
		{"bench netns threads", append([]string{"bench", "--netns", "--threads", "2049"}, noBench...), nil, "--threads 2049 with --netns: the namespace rack holds at most 2048"},
		// The tna program has chain mode: --switch-arch tna --chain passes the
		// settings' checks, and the next check (the workloads) refuses.
		{"bench switch arch tna chain", append([]string{"bench", "--switch-arch", "tna", "--chain", "--workloads", "zz"}, noBench...), nil, `bench: --workloads: ycsb: unknown workload "zz"`},
		{"bench chain value", append([]string{"bench", "--chain=maybe"}, noBench...), nil, `invalid argument "maybe" for "--chain" flag`},
		{"ctrl run chain value", []string{"ctrl", "run", "--chain=2"}, nil, `invalid argument "2" for "--chain" flag`},
		{"bench swarm keys past the writers' logs", append([]string{"bench", "--system", "swarm", "--keys", "1000000"}, noBench...), nil,
			"bench: --keys 1000000 with --threads 8: want at most 221184 with --system swarm (a writer holds a log buffer for each key it wrote last, at most 31744, less the 32768 kept for workload d's inserts)"},
		{"bench swarm keys past the writers' logs, no inserts", append([]string{"bench", "--system", "swarm", "--keys", "253953", "--workloads", "a,c"}, noBench...), nil,
			"bench: --keys 253953 with --threads 8: want at most 253952 with --system swarm (a writer holds a log buffer for each key it wrote last, at most 31744)"},
		{"bench switch arch swarm", append([]string{"bench", "--switch-arch", "tna", "--system", "swarm"}, noBench...), nil, "bench: --switch-arch tna: only --system clover on the in-process rack"},
		// ctrl
		{"ctrl object-size", []string{"ctrl", "run", "--object-size", "0"}, nil, "ctrl run: --object-size 0: out of range 1..4072"},
		{"ctrl repair-period", []string{"ctrl", "run", "--repair-period", "0s"}, nil, "ctrl run: --repair-period 0s: out of range 1ms..1h"},
		{"ctrl tail-ttl", []string{"ctrl", "run", "--tail-ttl", "0s"}, nil, "ctrl run: --tail-ttl 0s: out of range 1µs..1h; keep it below half of Clover's T_r"},
		{"ctrl hot-key-probes", []string{"ctrl", "run", "--hot-key-probes", "5000"}, nil, "ctrl run: --hot-key-probes 5000: out of range 0..4096"},
		{"ctrl hot-keys-period", []string{"ctrl", "run", "--hot-keys-period", "0s"}, nil, "ctrl run: --hot-keys-period 0s: out of range 1ms..24h"},
		{"ctrl repair-threshold", []string{"ctrl", "run", "--repair-threshold", "0s"}, nil, "ctrl run: --repair-threshold 0s: out of range 1ms..1h"},
		{"ctrl hot-keys", []string{"ctrl", "run", "--hot-keys", "5000"}, nil, "ctrl run: --hot-keys 5000: out of range 0..4096"},
		// 0 was taken as 1.
		{"ctrl hot-keys-min-delta 0", []string{"ctrl", "run", "--hot-keys-min-delta", "0"}, nil, "ctrl run: --hot-keys-min-delta 0: out of range 1..4294967296"},
		{"ctrl hot-keys-min-delta env", []string{"ctrl", "run"}, []string{"SWORDBOX_CTRL_HOT_KEYS_MIN_DELTA=0"}, "ctrl run: SWORDBOX_CTRL_HOT_KEYS_MIN_DELTA=0: out of range 1..4294967296"},
		// Without probe slots no candidate is ever measured: the controller
		// ran and steered nothing.
		{"ctrl hot-keys without probes", []string{"ctrl", "run", "--p4info", p4info, "--device-config", p4src, "--steering", "off", "--hot-keys", "4", "--hot-key-range", "0-99", "--hot-key-probes", "0"}, nil,
			"--hot-key-probes: ctrl.hot-key-probes: 0 with hot-keys 4: want at least 1"},
		{"ctrl typo in a list entry", []string{"ctrl", "run", "--config", rackTypo}, nil, "config " + rackTypo + ": ctrl.hosts[1].mca: unknown setting (known: ip, mac, name, port)"},
		{"ctrl bad value in a list entry", []string{"ctrl", "run", "--config", rackBadPort}, nil, "config " + rackBadPort + `: ctrl.hosts[0].port: "one" is not an integer`},
		{"ctrl show with the run's typo", []string{"ctrl", "show", "tables", "--config", rackTypo}, nil, "ctrl.hosts[1].mca: unknown setting"},
		{"ctrl show what", []string{"ctrl", "show"}, nil, "requires at least 1 arg"},
		// middlebox
		{"middlebox remap typo", []string{"middlebox", "run", "--config", mboxRemap}, nil, "config " + mboxRemap + ": middlebox.servers[0].remapp: unknown setting (known: "},
		{"middlebox cas-to-write typo", []string{"middlebox", "run", "--config", mboxCAS}, nil, "config " + mboxCAS + ": middlebox.servers[0].cas-to-wirte: unknown setting"},
		{"middlebox ring-size text", []string{"middlebox", "run", "--config", mboxRing}, nil, "config " + mboxRing + `: middlebox.ring-size: "many" is not an integer`},
		{"middlebox nested section typo", []string{"middlebox", "run", "--config", mboxSteer}, nil, "config " + mboxSteer + ": middlebox.steering.mdoe: unknown setting (known: "},
		{"middlebox list given a scalar", []string{"middlebox", "run", "--config", mboxList}, nil, "config " + mboxList + `: middlebox.servers: want a list, got "10.0.0.2"`},
		{"middlebox cores", []string{"middlebox", "run", "--cores", "0"}, nil, "middlebox run: --cores 0: out of range 1..64"},
		// Tables that cannot fit ran until traffic filled them (out of
		// memory); a negative holdoff was taken.
		{"middlebox tables past memory", []string{"middlebox", "run", "--config", mboxHuge}, nil,
			"middlebox run: max-conns 1048576, window 1048576, conn-ring-size 1048576 with --cores 1: the engines' tables (connections, steering maps) may take "},
		{"middlebox replay-holdoff", []string{"middlebox", "run", "--config", mboxHoldoff}, nil, "config " + mboxHoldoff + ": middlebox config: replay-holdoff -1s: want 1µs..1s (0: default 1ms)"},
		{"middlebox burst", []string{"middlebox", "run", "--burst", "0"}, nil, "middlebox run: --burst 0: out of range 1..1024"},
		{"middlebox io", []string{"middlebox", "run", "--io", "sideways"}, nil, `middlebox run: --io "sideways": want afpacket or dpdk`},
		{"middlebox bench duration", []string{"middlebox", "bench", "--duration", "-1s"}, nil, "middlebox bench: --duration -1s: out of range 10ms..1h"},
		{"middlebox bench clients", []string{"middlebox", "bench", "--clients", "0"}, nil, "middlebox bench: --clients 0: out of range 1..1024"},
		{"middlebox bench pct", []string{"middlebox", "bench", "--cas-pct", "60", "--read-pct", "50"}, nil, "--cas-pct 60 + --read-pct 50 is more than 100"},
		{"middlebox bench coalesce", []string{"middlebox", "bench", "--coalesce", "0"}, nil, "middlebox bench: --coalesce 0: out of range 1..256"},
		// A round past the engine's per-client window: one client's requests
		// beyond 256 outstanding were dropped and counted as processed.
		{"middlebox bench coalesce past the window", []string{"middlebox", "bench", "--clients", "1", "--coalesce", "257"}, nil,
			"middlebox bench: --coalesce 257: out of range 1..256; the middlebox's per-client window: one client may have a whole round outstanding"},
		{"middlebox bench io", []string{"middlebox", "bench", "--io", "sideways"}, nil, `--io "sideways": want engine, ring or dpdk`},
		// clover
		{"clover ms keys", []string{"clover", "ms", "--keys", "0"}, nil, "clover ms: --keys 0: out of range 1..1048576"},
		{"clover ms mtu", []string{"clover", "ms", "--mtu", "7"}, nil, "clover ms: --mtu 7: want one of 256, 512, 1024, 2048, 4096"},
		{"clover ms ack-timeout", []string{"clover", "ms", "--ack-timeout", "1us"}, nil, "clover ms: --ack-timeout 1µs: out of range 10µs..10s or 0 (the RNIC's default, 8ms)"},
		{"clover ms chunks", []string{"clover", "ms", "--chunks", "0"}, nil, "clover ms: --chunks 0: out of range 1..1024; 1 MiB each, with the shortcuts within the 1 GiB a Clover LH addresses"},
		{"clover ms chunks past the region", []string{"clover", "ms", "--chunks", "1024", "--keys", "1048576"}, nil,
			"clover ms: --chunks 1024 with --keys 1048576: a region of 1041 MiB, more than the 1024 MiB a Clover LH addresses (at most 1007 chunks with these keys)"},
		{"clover ms threads", []string{"clover", "ms", "--threads", "0"}, nil, "clover ms: --threads 0: out of range 1..4096"},
		{"clover ms read-timeout", []string{"clover", "ms", "--read-timeout", "0s"}, nil, "clover ms: --read-timeout 0s: out of range 1µs..1m"},
		{"clover ms epoch-period", []string{"clover", "ms", "--epoch-period", "0s"}, nil, "clover ms: --epoch-period 0s: out of range 1µs..1h"},
		{"clover clients ack-timeout", []string{"clover", "clients", "--ack-timeout", "20s"}, nil, "clover clients: --ack-timeout 20s: out of range 10µs..10s or 0 (the RNIC's default, 8ms)"},
		{"clover clients hosts", []string{"clover", "clients", "--hosts", "0"}, nil, "clover clients: --hosts 0: out of range 1..64"},
		{"clover clients threads", []string{"clover", "clients", "--threads", "0"}, nil, "clover clients: --threads 0: out of range 1..4096"},
		{"clover clients keys", []string{"clover", "clients", "--keys", "0"}, nil, "clover clients: --keys 0: out of range 1..1048576"},
		{"clover clients value-size", []string{"clover", "clients", "--value-size", "5000"}, nil, "clover clients: --value-size 5000: out of range 1..4072"},
		{"clover clients warmup", []string{"clover", "clients", "--warmup", "2h"}, nil, "clover clients: --warmup 2h: out of range 0s..1h"},
		{"clover clients duration", []string{"clover", "clients", "--duration", "1ms"}, nil, "clover clients: --duration 1ms: out of range 10ms..24h"},
		{"clover clients read-timeout", []string{"clover", "clients", "--read-timeout", "2m"}, nil, "clover clients: --read-timeout 2m: out of range 1µs..1m"},
		{"clover clients host", []string{"clover", "clients", "--host", "2", "--hosts", "2"}, nil, "clover clients: --host 2: want 0..1 (--hosts 2)"},
		// Both were refused only after the RNIC started (the hosts), or
		// after connecting to the memory node and the metadata server (the
		// region), on three lines.
		{"clover clients hosts over threads", []string{"clover", "clients", "--hosts", "4", "--threads", "2", "--host", "3"}, nil,
			"clover clients: --hosts 4 is more than --threads 2: every client host needs a thread"},
		{"clover clients region", []string{"clover", "clients", "--keys", "1048576", "--value-size", "4072"}, nil,
			"clover clients: --keys 1048576 with --value-size 4072 and --threads 32: clover region: 1048576 keys of 4072-byte values (4096-byte slots) with 32 threads need "},
		{"clover clients zipf", []string{"clover", "clients", "--zipf", "0"}, nil, "clover clients: --zipf 0: out of range 0.01..5"},
		{"clover clients workload", []string{"clover", "clients", "--workload", "z"}, nil, "clover clients: --workload"},
		// decode, p4info
		{"decode text file", []string{"decode", text}, nil, `decode ` + text + `: not a pcap or pcapng capture (it starts with "hell"`},
		{"decode empty file", []string{"decode", empty}, nil, "empty file: not a pcap or pcapng capture"},
		{"decode missing file", []string{"decode", filepath.Join(dir, "nope.pcap")}, nil, "no such file"},
		{"p4info missing file", []string{"p4info", filepath.Join(dir, "nope.p4")}, nil, "no such file"},
		{"p4info not P4", []string{"p4info", text, "-o", "-"}, nil, "p4info: " + text},
		// any command
		{"unknown flag", []string{"bench", "--thraeds", "4"}, nil, "unknown flag: --thraeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startSwordbox(t, tc.env, tc.args...)
			code := p.wait(20 * time.Second)
			msg := p.stderr.String()
			if code != 1 {
				t.Fatalf("swordbox %s: exit code %d, want 1\nstderr: %s", strings.Join(tc.args, " "), code, msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("swordbox %s:\n got: %s\nwant: %s", strings.Join(tc.args, " "), msg, tc.want)
			}
			if !strings.HasPrefix(msg, "swordbox: ") || strings.Count(strings.TrimSpace(msg), "\n") > 0 {
				t.Errorf("swordbox %s: want one line starting \"swordbox: \", got:\n%s", strings.Join(tc.args, " "), msg)
			}
		})
	}
}

// TestHelpDocumentsRanges checks that --help shows each range the
// validation layer enforces, and that no help text carries a literal \n.
func TestHelpDocumentsRanges(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--help"}, "[range 1..4096]"},
		{[]string{"bench", "--help"}, "at most the switch's 4096 key slots when steered, and with --system swarm at most --threads x 31744 (docs/bench.md) [range 1..1048576]"},
		{[]string{"bench", "--help"}, "[range 100µs..1s] (default 2ms)"},
		{[]string{"bench", "--help"}, "as Sherman's benchmark) [range 64..4194304]"},
		{[]string{"bench", "--help"}, "sherman: memory nodes [range 1..16]"},
		{[]string{"bench", "--help"}, "[range 1ms..10s or 0 (Clover's default, 50ms)]"},
		{[]string{"clover", "ms", "--help"}, "[range 1..1024; 1 MiB each, with the shortcuts within the 1 GiB a Clover LH addresses]"},
		{[]string{"ctrl", "run", "--help"}, "[range 1µs..1h; keep it below half of Clover's T_r]"},
		{[]string{"perf", "--help"}, "[range 1..1024]"},
		{[]string{"memnode", "--help"}, "[range 1ms..8760h or 0 (run until interrupted)]"},
		{[]string{"switch", "--help"}, "[range 1..511; v1model's and TNA's 9-bit port numbers; at most 510 with --arch v1model, whose port 511 drops]"},
		{[]string{"ctrl", "show", "--help"}, "swordbox ctrl show tables --switch 127.0.0.1:9559\n"},
	} {
		p := startSwordbox(t, nil, tc.args...)
		if code := p.wait(10 * time.Second); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, p.stderr)
		}
		out := p.stdout.String()
		if !strings.Contains(out, tc.want) {
			t.Errorf("%v lacks %q:\n%s", tc.args, tc.want, out)
		}
		if strings.Contains(out, `\n`) {
			t.Errorf("%v prints a literal \\n:\n%s", tc.args, out)
		}
	}
}

// The long-running commands stop promptly on SIGTERM and SIGINT.
func TestSignalsStopLongRunningCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes that run for seconds")
	}
	for _, tc := range []struct {
		name  string
		args  []string
		ready string
		sig   syscall.Signal
		code  int
		want  string
	}{
		{"memnode", []string{"memnode", "--listen", "127.0.0.1:0", "--size", "1MiB"}, "memnode: listening", syscall.SIGTERM, 0, "memnode: rx-frames="},
		{"switch", []string{"switch", "--grpc", "127.0.0.1:0", "--ports", "1=mem"}, "P4Runtime on", syscall.SIGINT, 0, ""},
		{"perf", []string{"perf", "write_bw", "--duration", "1h"}, "", syscall.SIGTERM, 1, "perf write_bw: interrupted before the end of the measurement: no result"},
		{"middlebox bench", []string{"middlebox", "bench", "--duration", "1h"}, "", syscall.SIGTERM, 1, "middlebox bench: interrupted"},
		{"ctrl run, no switch", []string{"ctrl", "run", "--switch", "127.0.0.1:1", "--p4info", "../../p4/swordbox.p4info.txtpb", "--device-config", "../../p4/swordbox.p4", "--steering", "off"}, "cannot reach the switch, retrying", syscall.SIGTERM, 0, "switch=127.0.0.1:1 backoff="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startSwordbox(t, nil, tc.args...)
			if tc.ready != "" {
				p.waitFor(t, tc.ready, 10*time.Second)
			} else {
				time.Sleep(700 * time.Millisecond)
			}
			sent := time.Now()
			p.cmd.Process.Signal(tc.sig)
			code := p.wait(5 * time.Second)
			if code == -1 {
				t.Fatalf("still running 5s after %v\nstderr: %s", tc.sig, p.stderr)
			}
			if code != tc.code || !strings.Contains(p.stdout.String()+p.stderr.String(), tc.want) {
				t.Fatalf("exit %d after %v (want %d, output with %q)\nstdout: %s\nstderr: %s", code, time.Since(sent), tc.code, tc.want, p.stdout, p.stderr)
			}
		})
	}
}

// An interrupted bench saves the cells it completed, marked partial.
func TestBenchInterruptedIsPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a bench cell")
	}
	dir := t.TempDir()
	p := startSwordbox(t, nil, "bench", "--workloads", "a", "--modes", "off,write", "--keys", "64", "--threads", "2", "--client-hosts", "1",
		"--duration", "500ms", "--warmup", "0s", "--results", dir)
	p.waitFor(t, "bench: cell 1/2 done", 30*time.Second)
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(5 * time.Second); code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", code, p.stderr)
	}
	errOut := p.stderr.String()
	for _, want := range []string{"PARTIAL RESULTS: 1 cells completed", "bench: interrupted", "results in " + dir} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "\r") {
		t.Errorf("progress wrote carriage returns into a non-terminal stderr:\n%q", errOut)
	}
	md, err := os.ReadFile(filepath.Join(dir, "latest", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "**Partial run: it stopped after 1 cells") {
		t.Errorf("report.md does not say partial:\n%s", md)
	}
	js, _ := os.ReadFile(filepath.Join(dir, "latest", "results.json"))
	if !strings.Contains(string(js), `"partial": true`) {
		t.Errorf("results.json does not say partial")
	}
	link, _ := os.Readlink(filepath.Join(dir, "latest"))
	if !strings.HasSuffix(link, "-default") {
		t.Errorf("results/latest -> %q, want <time>-default", link)
	}
}
