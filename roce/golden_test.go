package roce

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/every-opcode.pcap")

// TestGoldenPcap keeps testdata/every-opcode.pcap, a capture of every oracle
// frame (every opcode, padded SEND, multi-packet WRITE and READ response,
// every rewrite), equal to what the tests generate, so that users can try
// `swordbox decode roce/testdata/every-opcode.pcap` and tshark on it.
// Regenerate with: go test ./roce -run GoldenPcap -update
func TestGoldenPcap(t *testing.T) {
	var frames [][]byte
	for _, f := range oracleFrames(t) {
		frames = append(frames, f.frame)
	}
	tmp := filepath.Join(t.TempDir(), "every-opcode.pcap")
	writePcap(t, tmp, frames)
	got, err := os.ReadFile(tmp)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "every-opcode.pcap")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (regenerate with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: regenerate with go test ./roce -run GoldenPcap -update", golden)
	}
}
