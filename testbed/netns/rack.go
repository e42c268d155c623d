package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	swp4 "github.com/swordbox/swordbox/p4"
	"github.com/swordbox/swordbox/p4/target"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/report"
)

// Options configure the orchestrator.
type Options struct {
	// Binary is the swordbox executable every rack process runs (default:
	// os.Executable(), the running swordbox).
	Binary string
	// Prefix starts the name of every namespace the orchestrator creates
	// (default "sbx" and six random hex digits: unique per run).
	Prefix string
	// Log receives the rack processes' stderr, each line prefixed with the
	// process name (nil: kept only to explain failures).
	Log io.Writer
	// AckTimeout is the local ACK timeout of the metadata server's and the
	// client hosts' RNICs (default 67ms, a ConnectX's default timeout code
	// 14: the RNIC's own 8ms default is made for in-memory links, and a
	// rack of processes on a loaded machine sees scheduling delays of tens
	// of milliseconds).
	AckTimeout time.Duration
}

func (o *Options) defaults() error {
	if o.Binary == "" {
		b, err := os.Executable()
		if err != nil {
			return fmt.Errorf("netns: the swordbox binary: %w", err)
		}
		o.Binary = b
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = DefaultAckTimeout
	}
	if o.Prefix == "" {
		var b [3]byte
		rand.Read(b[:])
		o.Prefix = "sbx" + hex.EncodeToString(b[:])
	}
	return nil
}

// DefaultAckTimeout is Options.AckTimeout's default: 4.096us * 2^14.
const DefaultAckTimeout = 67 * time.Millisecond

// Management network addresses (kernel TCP for the connection managers and
// the controller's gRPC), inside the rack's namespaces only.
const (
	mgmtNet   = "10.99.0."
	mgmtCtrl  = mgmtNet + "254"
	grpcPort  = "9559"
	memCMPort = "7471"
	msCMPort  = "7472"
)

// Member m of the rack (0: memory node, 1: metadata server, 2...: client
// hosts) sits on switch port 1+m and has management address .1+1+m; the
// switch has .1.
func mgmtIP(member int) string { return mgmtNet + strconv.Itoa(member+2) }

func macString(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

func ipString(ip [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", ip[0], ip[1], ip[2], ip[3]) }

var rackSeq atomic.Uint32

// cellRack is one rack in namespaces.
type cellRack struct {
	opts   Options
	id     string
	topo   topo
	procs  []*proc
	dir    string
	proxy  *proxy
	swNS   string
	mgmtNS string

	// set once the rack runs
	spec   testbed.CellSpec
	obs    *p4rtc.Client
	schema *p4rtc.Schema
	hosts  []*proc
}

func (r *cellRack) ns(role string) string { return r.id + "-" + role }

// close stops every process (clients first, the switch last) and removes
// the namespaces and the temporary directory.
func (r *cellRack) close() error {
	for i := len(r.procs) - 1; i >= 0; i-- {
		r.procs[i].stop(3 * time.Second)
	}
	r.procs = nil
	if r.proxy != nil {
		r.proxy.Close()
	}
	err := r.topo.remove()
	if r.dir != "" {
		os.RemoveAll(r.dir)
	}
	return err
}

func (r *cellRack) start(role, name string, args ...string) (*proc, error) {
	p, err := startProc(r.ns(role), name, r.opts.Binary, r.opts.Log, args...)
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	return p, nil
}

// build creates the namespaces: the switch, the memory node, the metadata
// server and the client hosts, each joined to a switch port by a data veth
// (d0 in the host, pN on the switch), and a management namespace whose
// bridge joins every member's m0 (and holds the controller).
func (r *cellRack) build(ctx context.Context, clientHosts int) error {
	r.swNS, r.mgmtNS = r.ns("sw"), r.ns("mgmt")
	if err := r.topo.addNS(ctx, r.mgmtNS); err != nil {
		return err
	}
	for _, c := range [][]string{
		{"link", "add", "br0", "type", "bridge"},
		{"link", "set", "br0", "up"},
		{"addr", "add", mgmtCtrl + "/24", "dev", "br0"},
	} {
		if _, err := run(ctx, "ip", append([]string{"-n", r.mgmtNS}, c...)...); err != nil {
			return err
		}
	}
	if err := r.topo.addNS(ctx, r.swNS); err != nil {
		return err
	}
	join := func(ns, ip string, i int) error {
		br := "v" + strconv.Itoa(i)
		if err := r.topo.veth(ctx, ns, "m0", r.mgmtNS, br); err != nil {
			return err
		}
		if _, err := run(ctx, "ip", "-n", r.mgmtNS, "link", "set", br, "master", "br0"); err != nil {
			return err
		}
		_, err := run(ctx, "ip", "-n", ns, "addr", "add", ip+"/24", "dev", "m0")
		return err
	}
	if err := join(r.swNS, mgmtNet+"1", 0); err != nil {
		return err
	}
	for m := 0; m < 2+clientHosts; m++ {
		ns := r.ns(memberRole(m))
		if err := r.topo.addNS(ctx, ns); err != nil {
			return err
		}
		if err := r.topo.veth(ctx, r.swNS, "p"+strconv.Itoa(1+m), ns, "d0"); err != nil {
			return err
		}
		if err := join(ns, mgmtIP(m), 1+m); err != nil {
			return err
		}
	}
	return nil
}

func memberRole(m int) string {
	switch m {
	case 0:
		return "mem"
	case 1:
		return "ms"
	}
	return "c" + strconv.Itoa(m-1)
}

var regionLine = regexp.MustCompile(`^memnode: region addr (0x[0-9a-f]+) rkey 0x[0-9a-f]+ len (\d+)`)

// RunCell runs one cell on a fresh rack in namespaces (testbed.RunCellOn
// over NewCellRack): it builds the namespaces, starts the switch, the
// memory node, the controller, the metadata server and the client hosts as
// processes, loads the keys, warms up, measures, and removes everything
// before it returns (also on error and when ctx ends).
func RunCell(ctx context.Context, spec testbed.CellSpec, opts Options) (report.Cell, error) {
	return testbed.RunCellOn(ctx, spec, func(ctx context.Context, spec testbed.CellSpec, setup testbed.CellSetup) (testbed.CellRack, error) {
		return NewCellRack(ctx, spec, setup, opts)
	})
}

// NewCellRack builds a rack in namespaces for spec and starts every
// process, up to client hosts whose threads are connected and ready. Each
// client host drives its share of the threads with its own seed
// (HostSeed). Close removes the processes, the namespaces and the files.
func NewCellRack(ctx context.Context, spec testbed.CellSpec, setup testbed.CellSetup, opts Options) (_ testbed.CellRack, err error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if spec.ClientHosts <= 0 || spec.Threads < spec.ClientHosts {
		return nil, fmt.Errorf("netns: %d threads on %d client hosts: need threads >= hosts >= 1", spec.Threads, spec.ClientHosts)
	}
	if spec.ClientHosts > 200 {
		return nil, fmt.Errorf("netns: %d client hosts: at most 200", spec.ClientHosts)
	}
	if spec.SwitchArch != "" && spec.SwitchArch != testbed.ArchV1Model {
		return nil, fmt.Errorf("netns: switch architecture %s: the namespace rack runs the v1model program only", spec.SwitchArch)
	}
	steer, tracked := setup.Steering, setup.Tracked

	r := &cellRack{opts: opts, id: fmt.Sprintf("%s-%d", opts.Prefix, rackSeq.Add(1)), spec: spec}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if r.dir, err = os.MkdirTemp("", "swordbox-netns-"); err != nil {
		return nil, err
	}
	if err := r.build(ctx, spec.ClientHosts); err != nil {
		return nil, fmt.Errorf("netns: build rack: %w", err)
	}
	members := 2 + spec.ClientHosts
	lineHas := func(s string) func(string) (bool, error) {
		return func(l string) (bool, error) { return strings.Contains(l, s), nil }
	}

	// Switch: no pipeline until the controller pushes it.
	var ports []string
	for m := 0; m < members; m++ {
		ports = append(ports, fmt.Sprintf("%d=p%d", 1+m, 1+m))
	}
	sw, err := r.start("sw", "switch", "switch", "--grpc", mgmtNet+"1:"+grpcPort, "--ports", strings.Join(ports, ","))
	if err != nil {
		return nil, err
	}
	if _, err := sw.expect(ctx, step, "P4Runtime server", lineHas("P4Runtime on")); err != nil {
		return nil, err
	}

	// Memory node: the region InitRegion would lay out, zeroed; the
	// metadata server writes its header.
	chunks, err := testbed.CloverChunks(spec.Keys, spec.ValueSize, spec.Threads)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	layout := CloverLayout(spec.Keys, chunks)
	timing := "off"
	if spec.Timing != nil {
		timing = "cx5"
	}
	mem, err := r.start("mem", "memnode", "memnode", "--listen", mgmtIP(0)+":"+memCMPort, "--iface", "d0",
		"--mac", macString(testbed.HostMAC(0)), "--ip", ipString(testbed.HostIP(0)), "--size", strconv.Itoa(layout.Size())+"B",
		"--skip-icrc", "--workers", strconv.Itoa(spec.MemoryWorkers), "--timing", timing)
	if err != nil {
		return nil, err
	}
	var base, length string
	if _, err := mem.expect(ctx, step, "region", func(l string) (bool, error) {
		m := regionLine.FindStringSubmatch(l)
		if m == nil {
			return false, nil
		}
		base, length = m[1], m[2]
		return true, nil
	}); err != nil {
		return nil, err
	}
	n, _ := strconv.ParseUint(length, 10, 64)

	// Controller, in the management namespace.
	cfgPath, err := r.writeCtrlConfig(steer, spec.Chain, spec.ValueSize, tracked, members, base, fmt.Sprintf("%#x", n))
	if err != nil {
		return nil, err
	}
	if _, err := r.start("mgmt", "ctrl", "ctrl", "run", "--config", cfgPath); err != nil {
		return nil, err
	}
	if r.proxy, err = newProxy(r.mgmtNS, mgmtNet+"1:"+grpcPort); err != nil {
		return nil, err
	}
	if r.obs, r.schema, err = r.waitProgrammed(ctx, steer, spec.Chain, members, len(tracked)); err != nil {
		return nil, err
	}

	// Metadata server and client hosts.
	common := []string{"--keys", strconv.Itoa(spec.Keys), "--threads", strconv.Itoa(spec.Threads), "--ack-timeout", opts.AckTimeout.String()}
	ms, err := r.start("ms", "clover-ms", append([]string{"clover", "ms", "--iface", "d0", "--chunks", strconv.Itoa(chunks),
		"--mac", macString(testbed.HostMAC(1)), "--ip", ipString(testbed.HostIP(1)),
		"--listen", mgmtIP(1) + ":" + msCMPort, "--memnode", mgmtIP(0) + ":" + memCMPort}, common...)...)
	if err != nil {
		return nil, err
	}
	if _, err := ms.expect(ctx, step, "ready", lineHas("clover ms: ready")); err != nil {
		return nil, err
	}
	hosts := make([]*proc, spec.ClientHosts)
	for h := range hosts {
		m := 2 + h
		// RNIC addresses as on testbed's rack: member m has HostMAC(m).
		hosts[h], err = r.start(memberRole(m), fmt.Sprintf("clients%d", h), append([]string{"clover", "clients", "--iface", "d0",
			"--mac", macString(testbed.HostMAC(m)), "--ip", ipString(testbed.HostIP(m)),
			"--host", strconv.Itoa(h), "--hosts", strconv.Itoa(spec.ClientHosts),
			"--memnode", mgmtIP(0) + ":" + memCMPort, "--ms", mgmtIP(1) + ":" + msCMPort,
			"--workload", string(spec.Workload), "--value-size", strconv.Itoa(spec.ValueSize),
			"--zipf", strconv.FormatFloat(spec.Zipf, 'g', -1, 64), "--seed", strconv.FormatUint(spec.Seed, 10),
			"--warmup", spec.Warmup.String(), "--duration", spec.Duration.String()}, common...)...)
		if err != nil {
			return nil, err
		}
		// One host at a time: the memory node and the metadata server
		// then number their QPs in the same order on every run, so the
		// switch's connection slots (a hash that includes the QPN) are the
		// same in every mode of a suite.
		if _, err := all(ctx, hosts[h:h+1], "", "ready", step); err != nil {
			return nil, err
		}
	}
	r.hosts = hosts
	return r, nil
}

// step bounds each step of the rack's processes beyond the time the step
// itself runs for.
const step = 30 * time.Second

// Load has every client host create its share of the keys, within
// loadTimeout.
func (r *cellRack) Load(ctx context.Context) error {
	_, err := all(ctx, r.hosts, CmdLoad, "loaded", loadTimeout(r.spec.Keys))
	return err
}

// MaxThreads is the most client threads the namespace rack runs: 2,048
// load and run here (8 hosts, 45 s in all); at 4,096 the one Clover
// metadata server process falls behind its RPCs and its connections end in
// WR_FLUSH_ERR during the load.
const MaxThreads = 2048

// loadTimeout bounds the load of keys: two minutes, and 300 µs a key
// beyond that (measured here: about 12k creates per second with 7 client
// hosts, 262,144 keys in 22 s; many hosts on few cores are slower).
func loadTimeout(keys int) time.Duration {
	return 2*time.Minute + time.Duration(keys)*300*time.Microsecond
}

// WarmUp has every client host drive its threads, unmeasured.
func (r *cellRack) WarmUp(ctx context.Context) error {
	_, err := all(ctx, r.hosts, CmdWarmup, "warm", r.spec.Warmup+step)
	return err
}

// Measure has every client host drive its threads for the measured
// duration and merges what they report.
func (r *cellRack) Measure(ctx context.Context) (*testbed.Measured, error) {
	evs, err := all(ctx, r.hosts, CmdRun, "result", r.spec.Duration+step)
	if err != nil {
		return nil, err
	}
	results := make([]*ClientResult, len(evs))
	for i, e := range evs {
		results[i] = e.Result
	}
	return merge(results), nil
}

// Counters reads the bytes the kernel counted at the switch's ports and
// the switch's steering counters (nil when they cannot be read).
func (r *cellRack) Counters(ctx context.Context) (testbed.RackCounters, error) {
	w, err := rxBytes(ctx, r.swNS, "p")
	if err != nil {
		return testbed.RackCounters{}, err
	}
	s, _ := readStats(ctx, r.obs, r.schema)
	return testbed.RackCounters{WireBytes: w, Switch: s}, nil
}

// Close asks the client hosts to quit, then stops every process (clients
// first, the switch last) and removes the namespaces and the temporary
// directory.
func (r *cellRack) Close() error {
	for _, h := range r.hosts {
		h.send(CmdQuit)
	}
	r.hosts = nil
	if r.obs != nil {
		r.obs.Close()
		r.obs = nil
	}
	if err := r.close(); err != nil {
		return fmt.Errorf("netns: tear down: %w", err)
	}
	return nil
}

// all sends cmd (if any) to every client host and waits for the event want
// from each.
func all(ctx context.Context, hosts []*proc, cmd, want string, timeout time.Duration) ([]Event, error) {
	if cmd != "" {
		for _, h := range hosts {
			if err := h.send(cmd); err != nil {
				return nil, err
			}
		}
	}
	evs := make([]Event, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func(i int, h *proc) {
			defer wg.Done()
			_, errs[i] = h.expect(ctx, timeout, want, func(l string) (bool, error) {
				var e Event
				if json.Unmarshal([]byte(l), &e) != nil {
					return false, nil
				}
				if e.Event == "error" {
					return false, errors.New(e.Error)
				}
				if e.Event != want {
					return false, nil
				}
				if want == "result" && e.Result == nil {
					return false, errors.New("result event without a result")
				}
				evs[i] = e
				return true, nil
			})
		}(i, h)
	}
	wg.Wait()
	return evs, errors.Join(errs...)
}

// merge sums the client hosts' results: operations, errors and Clover's
// counters (clover.Metrics.Add), the longest elapsed time, the merged
// latency histograms and the first error reported.
func merge(rs []*ClientResult) *testbed.Measured {
	l := &testbed.Load{All: newHist(), Read: newHist(), Write: newHist()}
	m := &testbed.Measured{Load: l}
	for _, r := range rs {
		l.Ops += r.Ops
		l.Reads += r.Reads
		l.Writes += r.Writes
		l.Errors += r.Errors
		l.Elapsed = max(l.Elapsed, time.Duration(r.ElapsedNs))
		l.All.Merge(hdrhistogram.Import(r.All))
		l.Read.Merge(hdrhistogram.Import(r.Read))
		l.Write.Merge(hdrhistogram.Import(r.Write))
		if l.FirstErr == nil && r.FirstErr != "" {
			l.FirstErr = errors.New(r.FirstErr)
		}
		m.Metrics.Add(r.Metrics)
	}
	return m
}

// newHist is the harness's histogram range: 100 ns .. 60 s, three
// significant digits.
func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(100, int64(60*time.Second), 3) }

// ctrlFile is the controller's configuration file (JSON, which viper
// reads like the YAML of docs/examples/rack.yaml).
type ctrlFile struct {
	Ctrl ctrlSection `json:"ctrl"`
}

type ctrlSection struct {
	Switch       string       `json:"switch"`
	DeviceID     uint64       `json:"device-id"`
	ElectionID   uint64       `json:"election-id"`
	P4Info       string       `json:"p4info"`
	DeviceConfig string       `json:"device-config"`
	Push         bool         `json:"push-pipeline"`
	Metrics      string       `json:"metrics"`
	Steering     string       `json:"steering"`
	Chain        bool         `json:"chain"`
	ObjectSize   int          `json:"object-size"`
	Hosts        []ctrlHost   `json:"hosts"`
	MemoryNodes  []ctrlMemory `json:"memory-nodes"`
	// TrackedKeys are decimal strings: viper reads JSON numbers as
	// float64, which would round 64-bit keys.
	TrackedKeys     []string `json:"tracked-keys,omitempty"`
	RepairPeriod    string   `json:"repair-period"`
	RepairThreshold string   `json:"repair-threshold"`
}

type ctrlHost struct {
	Name string `json:"name"`
	MAC  string `json:"mac"`
	IP   string `json:"ip"`
	Port int    `json:"port"`
}

type ctrlMemory struct {
	Host    string              `json:"host"`
	Regions []map[string]string `json:"regions"`
}

// writeCtrlConfig writes the P4 program, its P4Info and the rack file the
// controller runs with, and returns the rack file's path.
func (r *cellRack) writeCtrlConfig(steer string, chain bool, objectSize int, tracked []uint64, members int, base, length string) (string, error) {
	prog, err := target.Compile(swp4.SwordboxFile, swp4.SwordboxSource)
	if err != nil {
		return "", fmt.Errorf("netns: switch program: %w", err)
	}
	p4Path, infoPath := filepath.Join(r.dir, "swordbox.p4"), filepath.Join(r.dir, "swordbox.p4info.txtpb")
	if err := os.WriteFile(p4Path, swp4.SwordboxSource, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(infoPath, target.FormatText(prog.P4Info()), 0o644); err != nil {
		return "", err
	}
	c := ctrlSection{Switch: mgmtNet + "1:" + grpcPort, DeviceID: 1, ElectionID: 10, P4Info: infoPath, DeviceConfig: p4Path,
		Push: true, Steering: steer, Chain: chain, ObjectSize: objectSize, RepairPeriod: "50ms", RepairThreshold: "200ms",
		MemoryNodes: []ctrlMemory{{Host: "mem0", Regions: []map[string]string{{"base": base, "length": length}}}}}
	for _, k := range tracked {
		c.TrackedKeys = append(c.TrackedKeys, strconv.FormatUint(k, 10))
	}
	for m := 0; m < members; m++ {
		name := memberRole(m)
		if m == 0 {
			name = "mem0"
		}
		c.Hosts = append(c.Hosts, ctrlHost{Name: name, MAC: macString(testbed.HostMAC(m)), IP: ipString(testbed.HostIP(m)), Port: 1 + m})
	}
	b, err := json.MarshalIndent(ctrlFile{Ctrl: c}, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(r.dir, "rack.json")
	return path, os.WriteFile(path, b, 0o644)
}

// waitProgrammed polls the switch as an observer (through the proxy into
// the management namespace) until the controller has installed a forward
// entry per member, the steering mode and the tracked keys.
func (r *cellRack) waitProgrammed(ctx context.Context, steer string, chain bool, members, tracked int) (*p4rtc.Client, *p4rtc.Schema, error) {
	obs, err := p4rtc.Dial(p4rtc.Options{Addr: r.proxy.Addr(), DeviceID: 1, Observer: true})
	if err != nil {
		return nil, nil, fmt.Errorf("netns: observer: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var schema *p4rtc.Schema
	var last error
	for {
		last = func() error {
			if schema == nil {
				info, err := obs.GetP4Info(ctx)
				if err != nil {
					return err
				}
				if schema, err = p4rtc.NewSchema(info); err != nil {
					schema = nil
					return err
				}
			}
			return testbed.SwitchProgrammed(ctx, obs, schema, steer, chain, members, tracked)
		}()
		if last == nil {
			return obs, schema, nil
		}
		select {
		case <-ctx.Done():
			obs.Close()
			return nil, nil, fmt.Errorf("netns: switch not programmed: %v (controller: %s)", last, r.procTail("ctrl"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (r *cellRack) procTail(name string) string {
	for _, p := range r.procs {
		if p.name == name {
			return p.tail.String()
		}
	}
	return ""
}

// readStats reads the switch's steering counters.
func readStats(ctx context.Context, obs *p4rtc.Client, schema *p4rtc.Schema) (map[int64]uint64, error) {
	q, err := schema.CounterRead("SwordboxIngress.stats", -1)
	if err != nil {
		return nil, err
	}
	ents, err := obs.Read(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]uint64, len(ents))
	for _, e := range ents {
		if ce := e.GetCounterEntry(); ce != nil {
			out[ce.GetIndex().GetIndex()] = uint64(ce.GetData().GetPacketCount())
		}
	}
	return out, nil
}
