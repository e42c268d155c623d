package roce

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// writePcap writes frames to an Ethernet pcap file.
func writePcap(t testing.TB, path string, frames [][]byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, fr := range frames {
		ci := gopacket.CaptureInfo{Timestamp: ts.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(fr), Length: len(fr)}
		if err := w.WritePacket(ci, fr); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// oracleMissing skips the test, or fails it when SWORDBOX_REQUIRE_ORACLES is
// set (CI sets it, so that a missing oracle cannot pass as a skip).
func oracleMissing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("SWORDBOX_REQUIRE_ORACLES") != "" {
		t.Fatal(strings.Replace(msg, "test skipped", "test FAILED because SWORDBOX_REQUIRE_ORACLES is set", 1))
	}
	t.Skip(msg)
}

// oracleFrame is a frame for the oracles with a name saying how it was made.
type oracleFrame struct {
	name  string
	frame []byte
}

// oracleFrames returns every sample frame, a frame with IPv4 options and
// variant fields set, and every frame after each in-place rewrite that
// applies to it (field setters followed by SetICRC, CAS/FETCH_ADD to WRITE,
// ACK to ATOMIC ACK), all with the ICRC computed by this package.
func oracleFrames(t testing.TB) []oracleFrame {
	var out []oracleFrame
	for _, s := range samples() {
		fr := build(t, &s.f, 0)
		out = append(out, oracleFrame{s.name, fr})

		p, err := Parse(append([]byte(nil), fr...))
		if err != nil {
			t.Fatal(err)
		}
		if p.RETH != nil || p.AtomicETH != nil {
			_ = p.SetVA(0x00007f00deadbee8)
			_ = p.SetRKey(0x5a5a)
			p.SetICRC()
			out = append(out, oracleFrame{s.name + " / set VA+rkey", p.Frame})
		}
		p, _ = Parse(append([]byte(nil), fr...))
		p.BTH.SetDestQP(0xabcdef)
		p.BTH.SetPSN(0x800001)
		p.SetICRC()
		out = append(out, oracleFrame{s.name + " / set QP+PSN", p.Frame})
		if p.AETH != nil {
			p, _ = Parse(append([]byte(nil), fr...))
			_ = p.SetMSN(0xfedcba)
			p.SetICRC()
			out = append(out, oracleFrame{s.name + " / set MSN", p.Frame})
		}
		switch s.f.Opcode {
		case OpRCCompareSwap, OpRCFetchAdd:
			w, err := AtomicToWrite(append([]byte(nil), fr...), 0x1122334455667788, true)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, oracleFrame{s.name + " / to WRITE", w})
		case OpRCAcknowledge:
			if !s.f.Syndrome.IsACK() {
				break
			}
			a, err := AckToAtomicAck(append(make([]byte, 0, len(fr)+8), fr...), 0x8877665544332211, true)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, oracleFrame{s.name + " / to ATOMIC ACK", a})
		}
	}
	f := baseFields(OpRCWriteOnly)
	f.VA, f.RKey, f.DMALen, f.Payload = 0x1000, 7, 8, seq(8)
	f.TOS, f.TTL, f.FECN, f.BECN = 0xb8, 3, true, true
	fr := withIPOptions(build(t, &f, 0), 8)
	if err := SetICRC(fr); err != nil {
		t.Fatal(err)
	}
	out = append(out, oracleFrame{"ipv4 options, variant fields set", fr})
	return out
}

func TestScapyICRCOracle(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		oracleMissing(t, fmt.Sprintf("scapy oracle unavailable, test skipped: %s not found (install python3-scapy)", python))
	}
	if err := exec.Command(python, "-c", "import scapy.contrib.roce").Run(); err != nil {
		oracleMissing(t, fmt.Sprintf("scapy oracle unavailable, test skipped: scapy.contrib.roce not importable (%v); install python3-scapy", err))
	}
	frames := oracleFrames(t)
	var in bytes.Buffer
	for _, f := range frames {
		fmt.Fprintln(&in, hex.EncodeToString(f.frame))
	}
	cmd := exec.Command(python, filepath.Join("testdata", "scapy_icrc.py"))
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("scapy: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("scapy printed %d lines for %d frames\n%s", len(lines), len(frames), stderr.String())
	}
	for i, f := range frames {
		got, err := hex.DecodeString(lines[i])
		if err != nil {
			t.Fatalf("%s: scapy line %q: %v", f.name, lines[i], err)
		}
		if !bytes.Equal(got, f.frame) {
			p, _ := Parse(f.frame)
			t.Errorf("%s: scapy rebuilt the frame differently (our ICRC %x)\n ours  %x\n scapy %x", f.name, p.ICRC, f.frame, got)
		}
	}
	t.Logf("scapy agreed on the ICRC of %d frames", len(frames))
}

// tsharkFields are the Wireshark 4.0 fields compared (platform.md).
var tsharkFields = []string{
	"infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m", "infiniband.bth.padcnt",
	"infiniband.bth.tver", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.a",
	"infiniband.bth.psn", "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt", "infiniband.aeth.syndrome",
	"infiniband.aeth.msn", "infiniband.atomicacketh.origremdt", "infiniband.invariant.crc",
	"infiniband.immdt", "infiniband.ieth", "infiniband.deth.q_key", "infiniband.deth.srcqp", "data.data",
}

// tsharkBlind lists what Wireshark 4.0.17 does not show for some opcodes, so
// that the test does not require it: it hands the payload of SEND with
// invalidate and of UD SEND_ONLY to heuristic dissectors (RPCoRDMA, ...)
// that swallow the ICRC, and it does not know CNP (0x81).
var tsharkBlind = map[Opcode][]string{
	OpRCSendLastInvalidate: {"infiniband.invariant.crc", "data.data"},
	OpRCSendOnlyInvalidate: {"infiniband.invariant.crc", "data.data"},
	OpUDSendOnly:           {"infiniband.invariant.crc", "data.data"},
	OpCNP:                  {"infiniband.invariant.crc", "data.data"},
}

// ourFields renders a parsed packet as the tshark fields it carries, as
// numbers (numeric fields) or lower-case hex (byte fields).
func ourFields(p *Packet) map[string]string {
	m := map[string]string{}
	u := func(k string, v uint64) { m[k] = strconv.FormatUint(v, 10) }
	b := func(k string, v bool) {
		if v {
			m[k] = "1"
		} else {
			m[k] = "0"
		}
	}
	h := p.BTH
	u("infiniband.bth.opcode", uint64(h.Opcode()))
	b("infiniband.bth.se", h.SE())
	b("infiniband.bth.m", h.MigReq())
	u("infiniband.bth.padcnt", uint64(h.PadCnt()))
	u("infiniband.bth.tver", uint64(h.TVer()))
	u("infiniband.bth.p_key", uint64(h.PKey()))
	u("infiniband.bth.destqp", uint64(h.DestQP()))
	b("infiniband.bth.a", h.AckReq())
	u("infiniband.bth.psn", uint64(h.PSN()))
	if p.RETH != nil {
		u("infiniband.reth.va", p.RETH.VA())
		u("infiniband.reth.r_key", uint64(p.RETH.RKey()))
		u("infiniband.reth.dmalen", uint64(p.RETH.DMALen()))
	}
	if p.AtomicETH != nil {
		u("infiniband.reth.va", p.AtomicETH.VA())
		u("infiniband.reth.r_key", uint64(p.AtomicETH.RKey()))
		u("infiniband.atomiceth.swapdt", p.AtomicETH.SwapAdd())
		u("infiniband.atomiceth.cmpdt", p.AtomicETH.Compare())
	}
	if p.AETH != nil {
		u("infiniband.aeth.syndrome", uint64(p.AETH.Syndrome()))
		u("infiniband.aeth.msn", uint64(p.AETH.MSN()))
	}
	if p.AtomicAckETH != nil {
		u("infiniband.atomicacketh.origremdt", p.AtomicAckETH.Orig())
	}
	if p.ImmDt != nil {
		m["infiniband.immdt"] = hex.EncodeToString(p.ImmDt)
	}
	if p.IETH != nil {
		m["infiniband.ieth"] = hex.EncodeToString(p.IETH)
	}
	if p.DETH != nil {
		u("infiniband.deth.q_key", uint64(p.DETH.QKey()))
		u("infiniband.deth.srcqp", uint64(p.DETH.SrcQP()))
	}
	u("infiniband.invariant.crc", uint64(binary.BigEndian.Uint32(p.ICRC)))
	if len(p.Payload)+len(p.Pad) > 0 {
		m["data.data"] = hex.EncodeToString(p.Frame[p.PayloadOff:p.ICRCOff])
	}
	return m
}

// normTshark turns a tshark value into the form ourFields uses.
func normTshark(field, v string) string {
	switch field {
	case "infiniband.immdt", "infiniband.ieth", "data.data":
		return strings.ToLower(strings.ReplaceAll(v, ":", ""))
	}
	switch v {
	case "True":
		return "1"
	case "False":
		return "0"
	}
	if n, err := strconv.ParseUint(v, 0, 64); err == nil {
		return strconv.FormatUint(n, 10)
	}
	return v
}

func TestTsharkOracle(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		oracleMissing(t, "tshark oracle unavailable, test skipped: tshark not found (install the Debian package tshark)")
	}
	frames := oracleFrames(t)
	var raw [][]byte
	for _, f := range frames {
		raw = append(raw, f.frame)
	}
	path := filepath.Join(t.TempDir(), "roce.pcap")
	writePcap(t, path, raw)
	args := []string{"-r", path, "-T", "fields", "-E", "occurrence=f", "-E", "separator=/t"}
	for _, f := range tsharkFields {
		args = append(args, "-e", f)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	i := 0
	compared := 0
	for sc.Scan() {
		if i >= len(frames) {
			t.Fatalf("tshark printed more lines than the %d frames", len(frames))
		}
		f := frames[i]
		i++
		vals := strings.Split(sc.Text(), "\t")
		if len(vals) != len(tsharkFields) {
			t.Fatalf("%s: tshark printed %d fields, want %d: %q", f.name, len(vals), len(tsharkFields), sc.Text())
		}
		p, err := Parse(f.frame)
		if err != nil {
			t.Fatal(err)
		}
		ours := ourFields(&p)
		blind := map[string]bool{}
		for _, k := range tsharkBlind[p.Opcode] {
			blind[k] = true
		}
		for j, field := range tsharkFields {
			theirs := normTshark(field, vals[j])
			mine, have := ours[field]
			switch {
			case vals[j] == "" && blind[field]:
				continue
			case vals[j] == "" && !have:
				continue
			case !have:
				t.Errorf("%s: tshark shows %s=%s, we have no such field", f.name, field, vals[j])
			case theirs != mine:
				t.Errorf("%s: %s: tshark %q (%s), ours %s", f.name, field, vals[j], theirs, mine)
			default:
				compared++
			}
		}
	}
	if i != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames\n%s", i, len(frames), stderr.String())
	}
	t.Logf("tshark agreed on %d field values over %d frames", compared, len(frames))
}
