package p4rtc

import (
	"errors"
	"fmt"
	"testing"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
)

// batch is a failed Write as a P4Runtime server answers it: UNKNOWN with
// one p4.v1.Error per update.
func batch(t *testing.T, cs ...code.Code) error {
	t.Helper()
	var ds []protoadapt.MessageV1
	for _, c := range cs {
		ds = append(ds, protoadapt.MessageV1Of(&p4.Error{CanonicalCode: int32(c), Message: c.String()}))
	}
	st, err := status.New(codes.Unknown, "Write failure.").WithDetails(ds...)
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestIsUnimplemented(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"read refused (PI register read)", fmt.Errorf("p4rtc x: read: %w", status.Error(codes.Unimplemented, "Register reads are not supported yet")), true},
		{"write, every update unimplemented", writeError(batch(t, code.Code_UNIMPLEMENTED, code.Code_UNIMPLEMENTED), 0), true},
		{"write, unimplemented among successes", writeError(batch(t, code.Code_OK, code.Code_UNIMPLEMENTED), 0), true},
		{"write, another failure too", writeError(batch(t, code.Code_UNIMPLEMENTED, code.Code_INVALID_ARGUMENT), 0), false},
		{"write, invalid argument", writeError(batch(t, code.Code_INVALID_ARGUMENT), 0), false},
		{"unavailable", status.Error(codes.Unavailable, "down"), false},
		{"not a status", errors.New("plain"), false},
	} {
		if got := IsUnimplemented(tc.err); got != tc.want {
			t.Errorf("%s: IsUnimplemented(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	// The message lists the failed updates with their index and code.
	if got, want := writeError(batch(t, code.Code_OK, code.Code_UNIMPLEMENTED), 4).Error(), "Unknown: update 5: UNIMPLEMENTED: UNIMPLEMENTED"; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
