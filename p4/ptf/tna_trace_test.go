package ptf

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/testbed"
)

// rackTracePath is a trace recorded at the switch of a software rack by
// TestRecordRackTrace (go test ./p4/ptf -run TestRecordRackTrace
// -record-rack-trace): Clover clients putting and getting hot keys under
// read-write steering, with drops and duplicates on the host links. One
// pcapng interface per switch port, named port<N>; timestamps in
// microseconds; the section comment is the switch's configuration in JSON
// (rackTraceConfig).
const rackTracePath = "testdata/rack-trace.pcapng"

var recordRackTrace = flag.Bool("record-rack-trace", false, "record "+rackTracePath+" from a short steering run on the software rack")

// rackTraceConfig is the entries and registers the controller installed
// on the recorded switch.
type rackTraceConfig struct {
	Forward   map[string]uint32 `json:"forward"`      // destination MAC -> switch port
	Tracked   map[string]uint16 `json:"tracked_keys"` // Clover key (decimal) -> slot
	SteerMode uint64            `json:"steer_mode"`
	NodeSize  uint64            `json:"node_size"`
	TailTTLus uint64            `json:"tail_ttl_us"`
}

type traceFrame struct {
	at    uint64 // microseconds since the first frame
	port  uint32
	frame []byte
}

// readRackTrace reads the trace and its configuration.
func readRackTrace(t *testing.T) (rackTraceConfig, []traceFrame) {
	t.Helper()
	f, err := os.Open(rackTracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatalf("%s: %v", rackTracePath, err)
	}
	var cfg rackTraceConfig
	if err := json.Unmarshal([]byte(r.SectionInfo().Comment), &cfg); err != nil {
		t.Fatalf("%s: section comment: %v", rackTracePath, err)
	}
	var frames []traceFrame
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: frame %d: %v", rackTracePath, len(frames)+1, err)
		}
		intf, err := r.Interface(ci.InterfaceIndex)
		if err != nil {
			t.Fatalf("%s: frame %d: %v", rackTracePath, len(frames)+1, err)
		}
		port, err := strconv.ParseUint(strings.TrimPrefix(intf.Name, "port"), 10, 32)
		if err != nil {
			t.Fatalf("%s: interface %q is not port<N>", rackTracePath, intf.Name)
		}
		frames = append(frames, traceFrame{at: uint64(ci.Timestamp.UnixMicro()), port: uint32(port), frame: data})
	}
	return cfg, frames
}

// TestTNADifferentialRackTrace replays the recorded rack trace through
// both programs on one clock (the recorded times, shifted so that the
// first frame comes at 1000µs), configured as the recorded switch was:
// every frame out must be the same, the stats after every frame, all
// state halfway and at the end. The trace must steer CASes and
// READs and confirm tails on both, or it proves little.
func TestTNADifferentialRackTrace(t *testing.T) {
	cfg, frames := readRackTrace(t)
	if len(frames) < 1000 {
		t.Fatalf("%s: %d frames; want a trace of at least 1000", rackTracePath, len(frames))
	}
	// As recorded, and with chain mode on (docs/swordbox-p4.md, "Chain
	// mode"): the same client frames and the memory nodes' recorded ACKs,
	// which now answer CASes the switch chained.
	for _, c := range []struct {
		name  string
		mode  uint64
		stats []int
	}{
		{"as recorded", cfg.SteerMode, []int{statCASSteered, statReadsSteered, statTailConfirmed, statRetransmits}},
		{"in chain mode", cfg.SteerMode | modeChain, []int{statCASChained, statTailConfirmed}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := newDevPair(t)
			for mac, port := range cfg.Forward {
				hw, err := net.ParseMAC(mac)
				if err != nil || len(hw) != 6 {
					t.Fatalf("%s: forward MAC %q: %v", rackTracePath, mac, err)
				}
				d.forward([6]byte(hw), port)
			}
			for key, slot := range cfg.Tracked {
				k, err := strconv.ParseUint(key, 10, 64)
				if err != nil {
					t.Fatalf("%s: tracked key %q: %v", rackTracePath, key, err)
				}
				d.write(p4v1.Update_INSERT, d.trackEntry(k, slot))
			}
			d.setConfig("node_size", cfg.NodeSize)
			d.setConfig("tail_ttl", cfg.TailTTLus)
			d.setConfig("mode", c.mode)
			for i, f := range frames {
				d.process(1000+f.at, f.port, f.frame)
				if i == len(frames)/2 {
					d.checkState(fmt.Sprintf("after frame %d of %s", i+1, rackTracePath))
				}
			}
			s := d.checkState("at the end of " + rackTracePath)
			for _, i := range c.stats {
				want := fmt.Sprintf("counter %sstats[%d] = ", prefix, i)
				found := false
				for _, l := range s {
					found = found || strings.HasPrefix(l, want)
				}
				if !found {
					t.Errorf("%s: stats[%d] stayed 0 over the trace", rackTracePath, i)
				}
			}
			t.Logf("%s", strings.Join(slices.DeleteFunc(slices.Clone(s), func(l string) bool {
				return !strings.HasPrefix(l, "counter "+prefix+"stats[")
			}), "; "))
		})
	}
}

// TestRecordRackTrace records rackTracePath when -record-rack-trace is
// given: the frames entering the switch of a software rack (the v1model
// program, read-write steering, a tail TTL of 5ms, frames dropped and
// duplicated on the host links) while 6 Clover threads put and get 4 hot
// keys, each pausing up to 0.5ms between operations, until 5000 frames
// (under 1 MiB). Without the flag there is nothing to record and it says
// so.
func TestRecordRackTrace(t *testing.T) {
	if !*recordRackTrace {
		t.Skip("records " + rackTracePath + " only with -record-rack-trace")
	}
	const (
		maxFrames = 5000
		keys      = 4
		valueSize = 32
		tailTTL   = 5 * time.Millisecond
	)
	var (
		mu     sync.Mutex
		frames []traceFrame
		start  time.Time
		full   = make(chan struct{})
	)
	tap := func(port uint32, f []byte) {
		mu.Lock()
		defer mu.Unlock()
		if len(frames) == 0 {
			start = time.Now()
		}
		if len(frames) < maxFrames {
			frames = append(frames, traceFrame{uint64(time.Since(start) / time.Microsecond), port, append([]byte(nil), f...)})
			if len(frames) == maxFrames {
				close(full)
			}
		}
	}
	var tracked []uint64
	for k := uint64(1); k <= keys; k++ {
		tracked = append(tracked, k)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cr, err := testbed.NewCloverRack(ctx, testbed.CloverConfig{Rack: testbed.Config{Steering: testbed.SteerReadWrite,
		TrackedKeys: tracked, SwitchTap: tap, TailTTL: tailTTL, HostFaults: netio.Faults{Drop: 0.005, Duplicate: 0.01, Seed: 7}},
		ClientHosts: 2, Threads: 6, Keys: keys, ValueSize: valueSize})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	for k := uint64(1); k <= keys; k++ {
		if err := cr.Clients[0].Create(ctx, k, make([]byte, valueSize)); err != nil {
			t.Fatal(err)
		}
	}
	octx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, c := range cr.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			buf := make([]byte, valueSize)
			for octx.Err() == nil {
				time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				k := uint64(1 + rng.IntN(keys))
				if rng.IntN(2) == 0 {
					buf[0] = byte(rng.Uint32())
					_ = c.Put(octx, k, buf)
				} else {
					_ = c.Get(octx, k, buf)
				}
			}
		}()
	}
	select {
	case <-full:
	case <-ctx.Done():
	}
	stop()
	wg.Wait()

	cfg := rackTraceConfig{Forward: map[string]uint32{}, Tracked: map[string]uint16{}, NodeSize: uint64(24 + valueSize),
		TailTTLus: uint64(tailTTL / time.Microsecond)}
	if cfg.SteerMode, err = testbed.SteerModeValue(testbed.SteerReadWrite); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= len(cr.Hosts); i++ {
		cfg.Forward[net.HardwareAddr(func() []byte { m := testbed.HostMAC(i); return m[:] }()).String()] = uint32(testbed.MemoryPort + i)
	}
	for i, k := range tracked { // the controller gives tracked key i slot i (ctrl/plan.go)
		cfg.Tracked[fmt.Sprint(k)] = uint16(i)
	}
	comment, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(rackTracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	intf := func(port int) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: fmt.Sprintf("port%d", port), LinkType: layers.LinkTypeEthernet, TimestampResolution: 6}
	}
	w, err := pcapgo.NewNgWriterInterface(f, intf(testbed.MemoryPort), pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
		Application: "swordbox p4/ptf TestRecordRackTrace", Comment: string(comment)}})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]int{testbed.MemoryPort: 0}
	for p := testbed.MemoryPort + 1; p <= testbed.MemoryPort+len(cr.Hosts); p++ {
		if ids[uint32(p)], err = w.AddInterface(intf(p)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.UnixMicro(int64(r.at)), CaptureLength: len(r.frame), Length: len(r.frame),
			InterfaceIndex: ids[r.port]}
		if err := w.WritePacket(ci, r.frame); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, _ := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	t.Logf("recorded %d frames into %s; switch stats %v", len(frames), rackTracePath, st)
}
