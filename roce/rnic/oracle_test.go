package rnic

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/verbs"
)

// captureRun runs one operation of each kind through two devices, one at a
// time, with the client port tapped into a pcap file, and returns the file
// and the (opcode, PSN) sequence the IBA dictates for that run.
func captureRun(t *testing.T) (string, []string) {
	path := filepath.Join(t.TempDir(), "rnic.pcap")
	a, b := netio.Pipe()
	tap, err := netio.NewTapFile(a, path)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := New(tap, Config{MTU: 256, MAC: [6]byte{2, 0, 0, 0, 0, 1}, IP: [4]byte{10, 0, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(b, Config{MTU: 256, AckMode: AckEach, MAC: [6]byte{2, 0, 0, 0, 0, 2}, IP: [4]byte{10, 0, 0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	ccq, scq := cli.NewCQ(16), srv.NewCQ(16)
	c, _ := cli.NewQP(verbs.QPConfig{SendCQ: ccq, RecvCQ: ccq})
	s, _ := srv.NewQP(verbs.QPConfig{SendCQ: scq, RecvCQ: scq})
	if err := Connect(c, s, 0xfffffe, 0x1000); err != nil {
		t.Fatal(err)
	}
	rm, _ := srv.Register(make([]byte, 4096), verbs.AccessAll)
	lm, _ := cli.Register(make([]byte, 4096), verbs.AccessAll)
	rb, _ := srv.Register(make([]byte, 4096), verbs.AccessLocalWrite)
	if err := s.PostRecv([]verbs.RecvWR{{ID: 1, SG: []verbs.SGE{{Addr: rb.Addr(), Length: 4096, LKey: rb.LKey()}}}, {ID: 2, SG: []verbs.SGE{{Addr: rb.Addr(), Length: 4096, LKey: rb.LKey()}}}}); err != nil {
		t.Fatal(err)
	}
	sg := func(n int) []verbs.SGE { return []verbs.SGE{{Addr: lm.Addr(), Length: uint32(n), LKey: lm.LKey()}} }
	ops := []verbs.SendWR{
		{Op: verbs.OpWrite, SG: sg(600), RemoteAddr: rm.Addr(), RKey: rm.RKey()},
		{Op: verbs.OpRead, SG: sg(300), RemoteAddr: rm.Addr(), RKey: rm.RKey()},
		{Op: verbs.OpCompareSwap, SG: sg(8), RemoteAddr: rm.Addr() + 8, RKey: rm.RKey(), Compare: 0, SwapAdd: 7},
		{Op: verbs.OpFetchAdd, SG: sg(8), RemoteAddr: rm.Addr() + 8, RKey: rm.RKey(), SwapAdd: 1},
		{Op: verbs.OpSend, SG: sg(100)},
		{Op: verbs.OpWriteImm, SG: sg(40), RemoteAddr: rm.Addr(), RKey: rm.RKey(), Imm: 5},
	}
	for i := range ops {
		ops[i].ID, ops[i].Flags = uint64(i), verbs.Signaled
		if err := c.PostSend(ops[i : i+1]); err != nil {
			t.Fatal(err)
		}
		if w := waitN(t, ccq, 1, 5*time.Second); w[0].Status != 0 {
			t.Fatalf("%+v", w)
		}
	}
	cli.Close()
	srv.Close()
	if err := tap.Close(); err != nil {
		t.Fatal(err)
	}
	// Opcodes as tshark prints them (decimal) with PSNs; responses carry the
	// request's PSN. AckEach: one ACK per AckReq packet.
	want := []string{
		"6 16777214", "7 16777215", "8 0", "17 0", // WRITE 600 B at MTU 256 across the PSN wrap, ACK
		"12 1", "13 1", "15 2", // READ 300 B: request, two responses
		"19 3", "18 3", // CMP_SWAP, ATOMIC ACK
		"20 4", "18 4", // FETCH_ADD, ATOMIC ACK
		"4 5", "17 5", // SEND_ONLY, ACK
		"11 6", "17 6", // WRITE_ONLY_IMM, ACK
	}
	return path, want
}

func TestCaptureDecodesInTsharkAndICRCsCheckInScapy(t *testing.T) {
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Skip("tshark not installed (apt-get install tshark); oracle test skipped")
	}
	path, want := captureRun(t)
	var tstderr bytes.Buffer
	tcmd := exec.Command(tshark, "-r", path, "-T", "fields", "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn")
	tcmd.Stderr = &tstderr
	out, err := tcmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, tstderr.String())
	}
	got := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(out), "\t", " ")), "\n")
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tshark decoded\n%v\nwant\n%v", got, want)
	}
	t.Logf("tshark decoded %d frames with the expected opcodes and PSNs", len(got))

	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import scapy.contrib.roce").Run(); err != nil {
		t.Skipf("scapy not installed (apt-get install python3-scapy): ICRC oracle skipped (%v)", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(python, filepath.Join("testdata", "scapy_icrc.py"), path)
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	if err != nil {
		t.Fatalf("scapy: %v\n%s", err, stderr.String())
	}
	lines := strings.Fields(string(res))
	if len(lines) != len(want) {
		t.Fatalf("scapy saw %d frames, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		if l != "ok" {
			t.Fatalf("frame %d (%s): scapy says %s", i, want[i], l)
		}
	}
	t.Logf("scapy recomputed the same ICRC for all %d frames", len(lines))
}
