package ptf

import (
	"flag"
	"os"
	"testing"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite p4/swordbox.p4info.txtpb from the program")

const p4infoPath = "../swordbox.p4info.txtpb"

// TestP4InfoUpToDate fails when the committed P4Info is not the one the
// target derives from swordbox.p4 (the comparison is on the parsed message:
// prototext output is deliberately not byte-stable).
func TestP4InfoUpToDate(t *testing.T) {
	_, info := loadProgram(t)
	if *update {
		b, err := prototext.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p4infoPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p4infoPath)
	if err != nil {
		t.Fatalf("%v (generate it with go test ./p4/ptf -run P4Info -update)", err)
	}
	var committed configv1.P4Info
	if err := prototext.Unmarshal(b, &committed); err != nil {
		t.Fatalf("%s: %v", p4infoPath, err)
	}
	if !proto.Equal(&committed, info) {
		t.Fatalf("%s is stale: regenerate it with go test ./p4/ptf -run P4Info -update", p4infoPath)
	}
}
