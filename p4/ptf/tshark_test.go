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
	r.confirm(qpA, 100, nT0.va, nT0.ev, nA1)
	r.expectSame(2, 3, nodeWrite(t, qpB, 200, nB1, valueSize), "B's node WRITE")
	in := link(t, qpB, 201, nT0.va, nT0.ev, nB1)
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
	if got := num(after[4]); got != nA1.va {
		t.Errorf("tshark: steered VA = %#x, want %#x", got, nA1.va)
	}
	if got := num(after[6]); got != hw(nB1.lh, nB1.ev, nA1.ev) {
		t.Errorf("tshark: steered swap = %#x, want %#x", got, hw(nB1.lh, nB1.ev, nA1.ev))
	}
	if got := num(after[7]); got != hw(0, 0, nA1.ev) {
		t.Errorf("tshark: steered compare = %#x, want %#x", got, hw(0, 0, nA1.ev))
	}
	if got := num(before[4]); got != nT0.va {
		t.Errorf("tshark: original VA = %#x, want %#x", got, nT0.va)
	}
}

// TestNodeWriteWithTshark checks the node WRITE the tests build with
// Wireshark: a RoCEv2 RDMA WRITE Only whose RETH DMA length is the node
// size (24-byte prefix + value) and whose payload starts with the header
// word, the key and the node's own logical handle, little-endian.
func TestNodeWriteWithTshark(t *testing.T) {
	in := nodeWrite(t, qpA, 100, nA1, valueSize)
	rows := tsharkFields(t, [][]byte{in}, "infiniband.bth.opcode", "infiniband.reth.dmalen", "infiniband.reth.va", "data.data")
	if rows[0][0] != "10" || rows[0][1] != fmt.Sprint(nodeSize) {
		t.Fatalf("tshark: opcode %s DMA length %s, want 10 and %d", rows[0][0], rows[0][1], nodeSize)
	}
	want := fmt.Sprintf("%016x%016x%016x", bswap(hw(0, 0, nA1.ev)), bswap(nA1.key), bswap(uint64(nA1.lh)))
	if p := strings.ReplaceAll(rows[0][3], ":", ""); !strings.HasPrefix(p, want) {
		t.Fatalf("tshark: payload %s, want the prefix %s", p, want)
	}
}

func bswap(v uint64) uint64 {
	var r uint64
	for i := 0; i < 8; i++ {
		r = r<<8 | v>>(8*i)&0xff
	}
	return r
}
