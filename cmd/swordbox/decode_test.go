package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/swordbox/swordbox/roce"
)

// workedExample is the CMP_SWAP frame of platform.md (ICRC dce072ec).
const workedExample = "020000000002020000000001080045000048000140004011" +
	"26a20a0000010a000002c35012b700340000" +
	"1340ffff000000118000000500007f00000010000000123400000000deadbeef0000000000000000" +
	"dce072ec"

type capFrame struct {
	data    []byte
	wireLen int // 0: len(data)
}

func buildFrame(t *testing.T, f roce.Fields) []byte {
	t.Helper()
	buf := make([]byte, roce.FrameLen(&f))
	if _, err := roce.Build(buf, &f); err != nil {
		t.Fatal(err)
	}
	return buf
}

func fields(op roce.Opcode, psn uint32) roce.Fields {
	return roce.Fields{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2}, TTL: 64, SrcPort: 49152,
		Opcode: op, PKey: 0xffff, DestQP: 0xabcdef, PSN: psn,
	}
}

// testCapture returns frames covering every output key, a bad ICRC, foreign
// traffic, a malformed frame and a frame cut short by the snap length, and
// the exact lines decode must print for them.
func testCapture(t *testing.T) ([]capFrame, []string) {
	worked, _ := hex.DecodeString(workedExample)

	badICRC := append([]byte(nil), worked...)
	badICRC[len(badICRC)-1] ^= 0xff

	wimm := fields(roce.OpRCWriteOnlyImm, 7)
	wimm.AckReq, wimm.VA, wimm.RKey, wimm.DMALen, wimm.Imm, wimm.Payload = true, 0x1000, 0x42, 4, 0xcafe, []byte{1, 2, 3, 4}

	ack := fields(roce.OpRCAcknowledge, 9)
	ack.Syndrome, ack.MSN = roce.NAKSyndrome(roce.NAKPSNSequenceError), 12

	aack := fields(roce.OpRCAtomicAcknowledge, 5)
	aack.Syndrome, aack.MSN, aack.Orig = roce.ACKSyndrome(roce.CreditInvalid), 1, 0xdeadbeef

	inv := fields(roce.OpRCSendOnlyInvalidate, 3)
	inv.RKey, inv.Payload = 0x77, []byte{9, 9, 9, 9}

	// Not RoCEv2: the worked example sent to UDP port 53, and an ARP frame.
	dns := append([]byte(nil), worked...)
	dns[36], dns[37] = 0, 53
	arp := append(append([]byte(nil), worked[:12]...), 0x08, 0x06)
	arp = append(arp, make([]byte, 28)...)

	// Malformed: UDP length disagrees with IPv4.
	badUDP := append([]byte(nil), worked...)
	badUDP[39]++

	frames := []capFrame{
		{data: worked}, {data: badICRC}, {data: dns}, {data: buildFrame(t, wimm)}, {data: arp},
		{data: buildFrame(t, ack)}, {data: buildFrame(t, aack)}, {data: buildFrame(t, inv)},
		{data: badUDP}, {data: worked[:60], wireLen: len(worked)},
	}
	want := []string{
		"opcode=RC_CMP_SWAP qp=0x000011 psn=5 ack_req=1 icrc=ok va=0x7f0000001000 rkey=0x1234 swap=0xdeadbeef cmp=0x0",
		"opcode=RC_CMP_SWAP qp=0x000011 psn=5 ack_req=1 icrc=bad va=0x7f0000001000 rkey=0x1234 swap=0xdeadbeef cmp=0x0",
		"opcode=RC_WRITE_ONLY_IMM qp=0xabcdef psn=7 ack_req=1 icrc=ok va=0x1000 rkey=0x42 len=4 imm=0xcafe",
		"opcode=RC_ACK qp=0xabcdef psn=9 ack_req=0 icrc=ok syndrome=0x60 msn=12",
		"opcode=RC_ATOMIC_ACK qp=0xabcdef psn=5 ack_req=0 icrc=ok orig=0xdeadbeef syndrome=0x1f msn=1",
		"opcode=RC_SEND_ONLY_INV qp=0xabcdef psn=3 ack_req=0 icrc=ok rkey=0x77",
		`frame=9 error="roce: udp.length: 53, IPv4 says 52"`,
		`frame=10 error="roce: ipv4.total_length: 72 exceeds the 46 bytes after Ethernet (capture truncated: 60 of 86 bytes)"`,
	}
	return frames, want
}

func writeCapture(t *testing.T, path string, frames []capFrame, ng bool) {
	t.Helper()
	writeCaptureLink(t, path, frames, ng, layers.LinkTypeEthernet)
}

func writeCaptureLink(t *testing.T, path string, frames []capFrame, ng bool, lt layers.LinkType) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var write func(gopacket.CaptureInfo, []byte) error
	var flush func() error
	if ng {
		w, err := pcapgo.NewNgWriter(f, lt)
		if err != nil {
			t.Fatal(err)
		}
		write, flush = w.WritePacket, w.Flush
	} else {
		w := pcapgo.NewWriter(f)
		if err := w.WriteFileHeader(65535, lt); err != nil {
			t.Fatal(err)
		}
		write, flush = w.WritePacket, func() error { return nil }
	}
	for i, fr := range frames {
		wl := fr.wireLen
		if wl == 0 {
			wl = len(fr.data)
		}
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr.data), Length: wl, InterfaceIndex: 0}
		if err := write(ci, fr.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		t.Fatal(err)
	}
}

func runDecode(t *testing.T, args ...string) (string, error) {
	out, _, err := runDecodeStderr(t, args...)
	return out, err
}

func runDecodeStderr(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd(new(cpuProfile))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"decode"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestDecodeText(t *testing.T) {
	frames, want := testCapture(t)
	for _, ng := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "rack.pcap")
		writeCapture(t, path, frames, ng)
		out, summary, err := runDecodeStderr(t, "--json=false", path)
		if err != nil {
			t.Fatalf("pcapng %v: %v", ng, err)
		}
		if want := "decode: 10 frames: 6 RoCEv2 (1 with a bad ICRC), 2 malformed, 2 skipped (not RoCEv2 over IPv4)\n"; summary != want {
			t.Errorf("summary %q, want %q", summary, want)
		}
		got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(got) != len(want) {
			t.Fatalf("pcapng %v: %d lines, want %d:\n%s", ng, len(got), len(want), out)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("pcapng %v line %d:\n got %s\nwant %s", ng, i+1, got[i], want[i])
			}
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	frames, want := testCapture(t)
	path := filepath.Join(t.TempDir(), "rack.pcap")
	writeCapture(t, path, frames, false)
	out, err := runDecode(t, "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	// Each JSON line carries exactly the key=value pairs of the text line.
	for i, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		var pairs []string
		if strings.HasPrefix(want[i], "frame=") {
			pairs = []string{"frame=" + jsonScalar(m["frame"]), "error=" + jsonScalar(m["error"])}
			if !strings.Contains(want[i], jsonScalar(m["error"])) {
				t.Errorf("line %d: error %v not in %s", i+1, m["error"], want[i])
			}
		} else {
			for _, kv := range strings.Fields(want[i]) {
				k, v, _ := strings.Cut(kv, "=")
				if got := jsonScalar(m[k]); got != v {
					t.Errorf("line %d: %s = %s, want %s", i+1, k, got, v)
				}
				pairs = append(pairs, kv)
			}
		}
		if len(m) != len(pairs) {
			t.Errorf("line %d: %d keys, want %d: %s", i+1, len(m), len(pairs), line)
		}
	}
}

func jsonScalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestDecodeErrors(t *testing.T) {
	dir := t.TempDir()
	notCap := filepath.Join(dir, "junk.pcap")
	if err := os.WriteFile(notCap, []byte("this is not a capture file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runDecode(t, "--json=false", notCap); err == nil || !strings.Contains(err.Error(), "pcap") {
		t.Errorf("junk file: err = %v", err)
	}
	if _, err := runDecode(t, "--json=false", filepath.Join(dir, "missing.pcap")); err == nil {
		t.Error("missing file: no error")
	}
	raw := filepath.Join(dir, "raw.pcap")
	f, _ := os.Create(raw)
	w := pcapgo.NewWriter(f)
	_ = w.WriteFileHeader(65535, layers.LinkTypeRaw)
	f.Close()
	if _, err := runDecode(t, "--json=false", raw); err == nil || !strings.Contains(err.Error(), "link type") {
		t.Errorf("raw IP capture: err = %v", err)
	}
}

// cooked rewrites an Ethernet frame as a Linux cooked (SLL or SLL2) frame,
// the way the kernel captures it on "any".
func cooked(lt layers.LinkType, fr capFrame) capFrame {
	eth := fr.data
	var h []byte
	switch lt {
	case layers.LinkTypeLinuxSLL:
		h = []byte{0, 0, 0, 1, 0, 6}
		h = append(h, eth[6:12]...)
		h = append(h, 0, 0)
		h = append(h, eth[12:14]...)
	case layers.LinkTypeLinuxSLL2:
		h = append([]byte(nil), eth[12:14]...)
		h = append(h, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6)
		h = append(h, eth[6:12]...)
		h = append(h, 0, 0)
	}
	out := capFrame{data: append(h, eth[14:]...)}
	if fr.wireLen != 0 {
		out.wireLen = fr.wireLen - 14 + len(h)
	}
	return out
}

func TestDecodeCooked(t *testing.T) {
	frames, want := testCapture(t)
	for _, lt := range []layers.LinkType{layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2} {
		var cf []capFrame
		for _, f := range frames {
			cf = append(cf, cooked(lt, f))
		}
		// A cooked frame too short for its own header is skipped.
		cf = append(cf, capFrame{data: []byte{8, 0, 0}})
		path := filepath.Join(t.TempDir(), "any.pcap")
		writeCaptureLink(t, path, cf, false, lt)
		out, summary, err := runDecodeStderr(t, "--json=false", path)
		if err != nil {
			t.Fatalf("%v: %v", lt, err)
		}
		last := cf[len(cf)-2]
		w := append([]string(nil), want...)
		w[len(w)-1] = strings.Replace(w[len(w)-1], "60 of 86", fmt.Sprintf("%d of %d", len(last.data), last.wireLen), 1)
		if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(w, "\n") {
			t.Errorf("%v:\n got %s\nwant %s", lt, strings.Join(got, "\n     "), strings.Join(w, "\n     "))
		}
		if !strings.Contains(summary, "11 frames: 6 RoCEv2 (1 with a bad ICRC), 2 malformed, 3 skipped") {
			t.Errorf("%v: summary %q", lt, summary)
		}
	}
}
