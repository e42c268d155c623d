package ptf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/gopacket/gopacket/pcapgo"
)

// rackTracePath is a trace recorded at the switch of a software rack by
// testbed's TestRecordSwitchTrace (go test ./testbed -run
// TestRecordSwitchTrace -record-switch-trace=$PWD/p4/ptf/testdata/rack-trace.pcapng):
// Clover clients putting and getting hot keys under read-write steering,
// with drops and duplicates on the host links. One pcapng interface per
// switch port, named port<N>; timestamps in microseconds; the section
// comment is the switch's configuration in JSON (rackTraceConfig).
const rackTracePath = "testdata/rack-trace.pcapng"

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
	d.setRegister("node_size", 0, cfg.NodeSize)
	d.setRegister("tail_ttl", 0, cfg.TailTTLus)
	d.setRegister("steer_mode", 0, cfg.SteerMode)
	for i, f := range frames {
		d.process(1000+f.at, f.port, f.frame)
		if i == len(frames)/2 {
			d.checkState(fmt.Sprintf("after frame %d of %s", i+1, rackTracePath))
		}
	}
	s := d.checkState("at the end of " + rackTracePath)
	for _, i := range []int{statCASSteered, statReadsSteered, statTailConfirmed, statRetransmits} {
		want := fmt.Sprintf("counter %sstats[%d] = ", prefix, i)
		found := false
		for _, l := range s {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("%s: stats[%d] stayed 0 over the trace", rackTracePath, i)
		}
	}
}
