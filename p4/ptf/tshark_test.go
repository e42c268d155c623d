package ptf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// tsharkFields decodes frames with Wireshark (an independent RoCEv2
// decoder) and returns, per frame, the values of the given fields.
func tsharkFields(t *testing.T, frames [][]byte, fields ...string) [][]string {
	t.Helper()
	bin, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark is not installed (apt-get install tshark): no independent decoder to check against")
	}
	path := filepath.Join(t.TempDir(), "frames.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(int64(i), 0), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	args := []string{"-r", path, "-T", "fields", "-E", "separator=|"}
	for _, fl := range fields {
		args = append(args, "-e", fl)
	}
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		rows = append(rows, strings.Split(line, "|"))
	}
	if len(rows) != len(frames) {
		t.Fatalf("tshark decoded %d frames, want %d:\n%s", len(rows), len(frames), out)
	}
	return rows
}

// TestSteeredCASWithTshark checks the steered CAS with Wireshark: it is
// still a well-formed RoCEv2 COMPARE_SWAP of the same connection and PSN,
// with the cached tail's VA and entry version, and the client's ICRC.
func TestSteeredCASWithTshark(t *testing.T) {
	r := newSteerRig(t, modeWrite)
	appendA(t, r)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, vaB1, hotKey, 2, valueSize), "B's node WRITE")
	in := cas(t, qpB, 201, vaT0, hw(0, 0, 5), hw(0xB1, 2, 5))
	r.send(2, in)
	out := r.expect(3)

	rows := tsharkFields(t, [][]byte{in, out},
		"infiniband.bth.opcode", "infiniband.bth.destqp", "infiniband.bth.psn", "udp.srcport",
		"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
		"infiniband.invariant.crc")
	before, after := rows[0], rows[1]
	t.Logf("tshark before: %v\n       after:  %v", before, after)
	for i, name := range []string{"opcode", "dest QP", "PSN", "UDP source port", "", "rkey", "", "", "ICRC"} {
		if name != "" && before[i] != after[i] {
			t.Errorf("%s changed: %s -> %s", name, before[i], after[i])
		}
	}
	num := func(s string) uint64 {
		var v uint64
		if _, err := fmt.Sscan(s, &v); err != nil {
			t.Fatalf("tshark value %q: %v", s, err)
		}
		return v
	}
	if got := num(after[4]); got != vaA1 {
		t.Errorf("tshark: steered VA = %#x, want %#x", got, vaA1)
	}
	if got := num(after[6]); got != hw(0xB1, 2, 1) {
		t.Errorf("tshark: steered swap = %#x, want %#x", got, hw(0xB1, 2, 1))
	}
	if got := num(after[7]); got != hw(0, 0, 1) {
		t.Errorf("tshark: steered compare = %#x, want %#x", got, hw(0, 0, 1))
	}
	if got := num(before[4]); got != vaT0 {
		t.Errorf("tshark: original VA = %#x, want %#x", got, vaT0)
	}
}
