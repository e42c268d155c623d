package ptf

import (
	"bytes"
	"flag"
	"os"
	"testing"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/swordbox/swordbox/p4/target"
)

var update = flag.Bool("update", false, "rewrite p4/swordbox.p4info.txtpb and p4/tna/swordbox.p4info.txtpb from the programs")

const p4infoPath = "../swordbox.p4info.txtpb"

// TestP4InfoUpToDate fails when the committed P4Info is not the one the
// target derives from swordbox.p4, in the byte-stable text format that
// `swordbox p4info p4/swordbox.p4 -o p4/swordbox.p4info.txtpb` writes.
func TestP4InfoUpToDate(t *testing.T) {
	_, info := loadProgram(t)
	checkP4InfoFile(t, p4infoPath, info)
}

// checkP4InfoFile compares the committed P4Info at path with info (and
// rewrites it first under -update).
func checkP4InfoFile(t *testing.T, path string, info *configv1.P4Info) {
	t.Helper()
	text := target.FormatText(info)
	if *update {
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (generate it with go test ./p4/ptf -run P4Info -update)", err)
	}
	var committed configv1.P4Info
	if err := prototext.Unmarshal(b, &committed); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !proto.Equal(&committed, info) {
		t.Fatalf("%s is stale: its P4Info differs from the program's; regenerate it with go test ./p4/ptf -run P4Info -update", path)
	}
	if !bytes.Equal(b, text) {
		t.Fatalf("%s has the program's P4Info but not in the stable text format; regenerate it with go test ./p4/ptf -run P4Info -update", path)
	}
}
