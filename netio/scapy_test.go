package netio

import (
	"bytes"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"
)

// scapyICRCCheck is run by /usr/bin/python3: for each hex frame on stdin it
// prints "ok" when the frame's ICRC equals the one scapy computes for it,
// "bad" otherwise.
const scapyICRCCheck = `
import sys, binascii
from scapy.all import Ether
from scapy.contrib.roce import BTH
for line in sys.stdin:
    p = Ether(binascii.unhexlify(line.strip()))
    q = p.copy()
    q[BTH].icrc = None
    q = Ether(bytes(q))
    print("ok" if q[BTH].icrc == p[BTH].icrc else "bad")
`

// TestCorruptionFailsScapyICRC checks the corrupter with an oracle we did
// not write: scapy must reject the ICRC of every single-bit corruption the
// injector can make of the worked-example frame, and accept the original.
func TestCorruptionFailsScapyICRC(t *testing.T) {
	if exec.Command("/usr/bin/python3", "-c", "import scapy.contrib.roce").Run() != nil {
		t.Skip("scapy not installed (apt-get install python3-scapy)")
	}
	var in strings.Builder
	in.WriteString(hex.EncodeToString(rocev2CAS) + "\n")
	span := uint64(len(rocev2CAS) - udpPayloadOffset(rocev2CAS))
	n := 0
	bits := uint64(8)
	if testing.Short() {
		bits = 1 // every byte, one bit: scapy takes ~25ms a frame
	}
	for pos := range span {
		for bit := range bits {
			f := bytes.Clone(rocev2CAS)
			corruptFrame(f, bit<<32|pos)
			in.WriteString(hex.EncodeToString(f) + "\n")
			n++
		}
	}
	cmd := exec.Command("/usr/bin/python3", "-c", scapyICRCCheck)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scapy: %v\n%s", err, out)
	}
	lines := strings.Fields(string(out))
	if len(lines) != n+1 {
		t.Fatalf("scapy answered %d lines for %d frames:\n%s", len(lines), n+1, out)
	}
	if lines[0] != "ok" {
		t.Fatal("scapy rejects the ICRC of the unmodified worked example")
	}
	for i, l := range lines[1:] {
		if l != "bad" {
			t.Errorf("corruption %d (payload byte %d, bit %d): scapy accepts the ICRC", i, i/int(bits), i%int(bits))
		}
	}
}
