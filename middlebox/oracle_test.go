package middlebox

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// scapyICRC is an independent ICRC oracle (scapy.contrib.roce): it reads one
// frame per line (hex), clears the ICRC so scapy recomputes it, and prints
// the rebuilt frame.
const scapyICRC = `
import sys
from scapy.contrib.roce import BTH
from scapy.layers.l2 import Ether
for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    pkt = Ether(bytes.fromhex(line))
    pkt[BTH].icrc = None
    print(bytes(pkt).hex(), flush=True)
`

// Every kind of frame the engine writes — remapped requests, CMP_SWAP
// turned WRITE, READ responses mapped back, ACKs, ATOMIC ACKs and NAKs
// built from templates — carries the ICRC scapy computes.
func TestEngineFramesAgainstScapy(t *testing.T) {
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("scapy oracle unavailable: /usr/bin/python3 not found (install python3-scapy)")
	}
	if err := exec.Command(python, "-c", "import scapy.contrib.roce").Run(); err != nil {
		t.Skipf("scapy oracle unavailable: scapy.contrib.roce not importable (%v); install python3-scapy", err)
	}
	r := newTestRack(t, 3, testConfig(true, true))
	s0 := r.cli[0].psn
	var frames []emitted
	add := func(in Side, f []byte) { frames = append(frames, r.run(in, f)...) }
	f, _ := r.write(1, 0x5000, []byte("0123456789abcdef"))
	add(ClientSide, f) // remapped WRITE: s0
	f, _ = r.cas(2, 0x1000, 0, 1)
	add(ClientSide, f) // CAS passes (word unknown): s0+1
	f, _ = r.read(1, 0x8000, 2000, 1024)
	add(ClientSide, f)                          // remapped READ: s0+2, s0+3
	add(ServerSide, r.ack(0, s0, synACK, 1))    // ACK to client 1
	add(ServerSide, r.atomicAck(0, s0+1, 0, 2)) // ATOMIC ACK to client 2, word learned (1)
	f, _ = r.cas(2, 0x1000, 1, 0)
	add(ClientSide, f) // CAS to WRITE: s0+4
	add(ServerSide, r.readResp(0, roce.OpRCReadResponseFirst, s0+2, bytes.Repeat([]byte{9}, 1024), 3))
	add(ServerSide, r.readResp(0, roce.OpRCReadResponseLast, s0+3, bytes.Repeat([]byte{8}, 976), 3))
	add(ServerSide, r.ack(0, s0+4, synACK, 4)) // WRITE ACK becomes ATOMIC ACK
	f, _ = r.write(0, 0x5000, le64(1))
	_, _ = r.write(0, 0x5000, le64(2)) // lost: the next one is a gap
	g, _ := r.write(0, 0x5000, le64(3))
	add(ClientSide, f)
	add(ServerSide, r.ack(0, s0+5, synACK, 5))
	add(ClientSide, g) // gap NAK
	kinds := map[roce.Opcode]bool{}
	var in bytes.Buffer
	for _, x := range frames {
		kinds[x.p.Opcode] = true
		fmt.Fprintln(&in, hex.EncodeToString(x.raw))
	}
	for _, op := range []roce.Opcode{roce.OpRCWriteOnly, roce.OpRCCompareSwap, roce.OpRCReadRequest, roce.OpRCAcknowledge,
		roce.OpRCAtomicAcknowledge, roce.OpRCReadResponseFirst, roce.OpRCReadResponseLast} {
		if !kinds[op] {
			t.Fatalf("no %v among the %d frames to check", op, len(frames))
		}
	}
	cmd := exec.Command(python, "-c", scapyICRC)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("scapy: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("scapy printed %d lines for %d frames", len(lines), len(frames))
	}
	for i, x := range frames {
		if lines[i] != hex.EncodeToString(x.raw) {
			t.Fatalf("frame %d (%v PSN %d): scapy rebuilds\n%s\nthe engine wrote\n%s", i, x.p.Opcode, x.p.BTH.PSN(), lines[i], hex.EncodeToString(x.raw))
		}
	}
	t.Logf("%d frames of %d kinds agree with scapy", len(frames), len(kinds))
}
