package testbed

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/swordbox/swordbox/netio"
)

// TestLinRackTNA: linearizability on the software rack whose switch runs
// p4/tna/swordbox.p4 (the Tofino program on the target's TNA model) under
// the same controller, in every steering mode, on 64 hot keys; the modes
// that steer must steer (runLin's checks).
func TestLinRackTNA(t *testing.T) {
	for i, mode := range linModes {
		t.Run(mode, func(t *testing.T) {
			o := hot(linBase(t), mode, uint64(40+i))
			o.SwitchArch = ArchTNA
			res := runLin(t, "tna", o)
			const statTailsConfirmed = 12 // docs/swordbox-p4.md, "Counters"
			if mode != SteerOff && res.Stats[statTailsConfirmed] == 0 {
				t.Errorf("the TNA program confirmed no tail")
			}
		})
	}
}

// TestSwitchProgram: the architectures' programs compile, a program is
// refused under the other architecture's name, and an unknown
// architecture is refused with the accepted ones.
func TestSwitchProgram(t *testing.T) {
	for _, c := range []struct {
		arch, path, want string
	}{
		{"", "", ""},
		{ArchV1Model, "", ""},
		{ArchTNA, "", ""},
		{ArchTNA, "../p4/tna/swordbox.p4", ""},
		{ArchV1Model, "../p4/swordbox.p4", ""},
		{ArchTNA, "../p4/swordbox.p4", "is a v1model program, not tna"},
		{ArchV1Model, "../p4/tna/swordbox.p4", "is a tna program, not v1model"},
		{"psa", "", `switch architecture "psa": want v1model or tna`},
		{ArchTNA, "no-such-file.p4", "no-such-file.p4"},
	} {
		prog, file, src, err := SwitchProgram(c.arch, c.path)
		if c.want == "" {
			if err != nil || prog == nil || len(src) == 0 || file == "" {
				t.Errorf("SwitchProgram(%q, %q): %v", c.arch, c.path, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SwitchProgram(%q, %q): error %v, want one saying %q", c.arch, c.path, err, c.want)
		}
	}
	o := LinOptions{Steering: SteerWrite, Keys: 64, Threads: 8, ClientHosts: 2, ValueSize: 64, Duration: time.Second, SwitchArch: "bmv2"}
	if err := o.validate(); err == nil || !strings.Contains(err.Error(), "switch architecture") {
		t.Errorf("LinOptions with switch architecture bmv2: %v, want a refusal naming it", err)
	}
}

var recordTrace = flag.String("record-switch-trace", "", "record the frames entering the switch of a short steering run "+
	"into this pcapng file (p4/ptf/testdata/rack-trace.pcapng is replayed by p4/ptf's TestTNADifferentialRackTrace)")

// traceConfig is what a replay needs besides the frames: the entries and
// registers the controller installed. It is the pcapng section comment, in
// JSON.
type traceConfig struct {
	Forward   map[string]uint32 `json:"forward"`      // destination MAC -> switch port
	Tracked   map[string]uint16 `json:"tracked_keys"` // Clover key (decimal) -> slot
	SteerMode uint64            `json:"steer_mode"`
	NodeSize  uint64            `json:"node_size"`
	TailTTLus uint64            `json:"tail_ttl_us"`
}

// TestRecordSwitchTrace records, when -record-switch-trace names a file,
// the frames entering the switch of a software rack (v1model program,
// read-write steering, a tail TTL of 5ms, frames dropped and duplicated on
// the host links) while 6 Clover threads put and get 4 hot keys, each
// pausing up to 0.5ms between operations: a
// pcapng file with one interface per switch port ("port<N>"), timestamps
// in microseconds since the first frame, and the switch's configuration
// as the section comment (traceConfig). It stops at 5000 frames (under
// 1 MiB). Without the flag there is nothing to record and it says so.
func TestRecordSwitchTrace(t *testing.T) {
	if *recordTrace == "" {
		t.Skip("records a trace only with -record-switch-trace FILE")
	}
	const (
		maxFrames = 5000
		keys      = 4
		valueSize = 32
		tailTTL   = 5 * time.Millisecond
	)
	type rec struct {
		at    time.Duration
		port  uint32
		frame []byte
	}
	var (
		mu     sync.Mutex
		frames []rec
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
			frames = append(frames, rec{time.Since(start), port, append([]byte(nil), f...)})
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
	cr, err := NewCloverRack(ctx, CloverConfig{Rack: Config{Steering: SteerReadWrite, TrackedKeys: tracked, SwitchTap: tap, TailTTL: tailTTL,
		HostFaults: netio.Faults{Drop: 0.005, Duplicate: 0.01, Seed: 7}},
		ClientHosts: 2, Threads: 6, Keys: keys, ValueSize: valueSize})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Close()
	if err := createKeys(ctx, cr, keys, valueSize); err != nil {
		t.Fatal(err)
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

	cfg := traceConfig{Forward: map[string]uint32{}, Tracked: map[string]uint16{}, NodeSize: uint64(24 + valueSize),
		TailTTLus: uint64(tailTTL / time.Microsecond)}
	if cfg.SteerMode, err = SteerModeValue(SteerReadWrite); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= len(cr.Hosts); i++ {
		m := HostMAC(i)
		cfg.Forward[fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])] = uint32(MemoryPort + i)
	}
	for i, k := range tracked { // the controller gives tracked key i slot i (ctrl/plan.go)
		cfg.Tracked[fmt.Sprint(k)] = uint16(i)
	}
	comment, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(*recordTrace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	intf := func(port int) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: fmt.Sprintf("port%d", port), LinkType: layers.LinkTypeEthernet,
			TimestampResolution: 6, SnapLength: 0}
	}
	w, err := pcapgo.NewNgWriterInterface(f, intf(MemoryPort), pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
		Application: "swordbox testbed TestRecordSwitchTrace", Comment: string(comment)}})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[uint32]int{MemoryPort: 0}
	for p := MemoryPort + 1; p <= MemoryPort+len(cr.Hosts); p++ {
		if ids[uint32(p)], err = w.AddInterface(intf(p)); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, 0).Add(r.at.Truncate(time.Microsecond)), CaptureLength: len(r.frame),
			Length: len(r.frame), InterfaceIndex: ids[r.port]}
		if err := w.WritePacket(ci, r.frame); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, _ := cr.Ctrl.ReadCounter(ctx, "SwordboxIngress.stats", nil)
	t.Logf("recorded %d frames into %s; switch stats %v", len(frames), *recordTrace, st)
}
