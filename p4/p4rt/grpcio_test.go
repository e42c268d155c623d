package p4rt_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
)

// grpcioWrite sends a serialized WriteRequest with gRPC C core (Python's
// grpcio, as p4runtime-shell and finsy do) on a channel with default
// options, and prints the status code, the grpc-status-details-bin
// trailer (base64) and the message.
const grpcioWrite = `import sys, base64, grpc
ch = grpc.insecure_channel(sys.argv[1])
write = ch.unary_unary('/p4.v1.P4Runtime/Write', request_serializer=lambda b: b, response_deserializer=lambda b: b)
try:
    write(open(sys.argv[2], 'rb').read(), timeout=20)
    print(0); print(''); print('')
except grpc.RpcError as e:
    md = dict(e.trailing_metadata() or ())
    print(e.code().value[0])
    print(base64.b64encode(md.get('grpc-status-details-bin', b'')).decode())
    print(e.details())
`

// python finds a Python with grpcio (Debian's python3-grpcio).
func python(t *testing.T) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import grpc").Run() == nil {
			return p
		}
	}
	const msg = "no python3 with grpcio (apt-get install python3-grpcio): the C-core client check did not run"
	if os.Getenv("SWORDBOX_REQUIRE_ORACLES") != "" {
		t.Fatal(msg + " (SWORDBOX_REQUIRE_ORACLES is set: CI must install it)")
	}
	t.Skip(msg)
	return ""
}

// The status of a large failing batch, as a client on gRPC C core with its
// default 8 KiB metadata limit sees it: UNKNOWN every time, the
// per-update codes while they fit, a summary message beyond.
func TestGrpcioReadsLargeFailingBatches(t *testing.T) {
	py := python(t)
	e, _ := newPREEnv(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "write.py")
	if err := os.WriteFile(script, []byte(grpcioWrite), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 100, 5000} {
		req := &p4v1.WriteRequest{DeviceId: devID, ElectionId: &p4v1.Uint128{Low: 1}}
		for i := 0; i < n; i++ {
			req.Updates = append(req.Updates, upd(p4v1.Update_DELETE, e.fwdEntry([]byte{byte(i)}, 0)))
		}
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("req%d", n))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(context.Background(), py, script, e.cc.Target(), path).CombinedOutput()
		if err != nil {
			t.Fatalf("%d failures: python: %v\n%s", n, err, out)
		}
		lines := strings.SplitN(strings.TrimRight(string(out), "\n"), "\n", 3)
		if len(lines) != 3 {
			t.Fatalf("%d failures: output %q", n, out)
		}
		code, _ := strconv.Atoi(lines[0])
		if codes.Code(code) != codes.Unknown || !strings.Contains(lines[2], fmt.Sprintf("%d of %d updates failed", n, n)) {
			t.Fatalf("%d failures: code %d, message %q; want UNKNOWN", n, code, lines[2])
		}
		raw, err := base64.StdEncoding.DecodeString(lines[1])
		if err != nil {
			t.Fatal(err)
		}
		st := &spb.Status{}
		if err := proto.Unmarshal(raw, st); err != nil {
			t.Fatal(err)
		}
		switch {
		case n <= 100 && len(st.Details) == n:
			for i, d := range st.Details {
				pe := &p4v1.Error{}
				if err := d.UnmarshalTo(pe); err != nil || codes.Code(pe.CanonicalCode) != codes.NotFound {
					t.Fatalf("%d failures: detail %d: %v %v", n, i, pe, err)
				}
			}
		case n == 5000 && len(raw) == 0:
			if !bytes.Contains([]byte(lines[2]), []byte("first failure: update 0: NotFound")) {
				t.Errorf("summary %q", lines[2])
			}
		default:
			t.Errorf("%d failures: %d details in %d bytes", n, len(st.Details), len(raw))
		}
		t.Logf("%d failures: grpcio read code %d, %d details (%d bytes)", n, code, len(st.Details), len(raw))
	}
}
