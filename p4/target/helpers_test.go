package target

import (
	"os"

	"google.golang.org/grpc/status"
	"strings"
	"testing"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

func mustCompileFile(tb testing.TB, path string) *Program {
	tb.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := Compile(path, src)
	if err != nil {
		tb.Fatalf("compile %s: %v", path, err)
	}
	return p
}

func mustCompile(tb testing.TB, src string) *Program {
	tb.Helper()
	p, err := Compile("test.p4", []byte(src))
	if err != nil {
		tb.Fatalf("compile: %v", err)
	}
	return p
}

// out is one frame the pipeline emitted.
type out struct {
	port  uint32
	frame []byte
}

// send runs one frame through the device and returns what came out.
func send(d *Device, port uint32, frame []byte) []out {
	var outs []out
	d.Process(port, frame, func(eg uint32, f []byte) {
		outs = append(outs, out{eg, append([]byte(nil), f...)})
	})
	return outs
}

// Names to IDs through the P4Info, as a controller does.

func tableID(tb testing.TB, p *Program, name string) uint32 {
	return idOf(tb, "table", p.P4Info().Tables, name)
}

func actionID(tb testing.TB, p *Program, name string) uint32 {
	return idOf(tb, "action", p.P4Info().Actions, name)
}

func registerID(tb testing.TB, p *Program, name string) uint32 {
	return idOf(tb, "register", p.P4Info().Registers, name)
}

func counterID(tb testing.TB, p *Program, name string) uint32 {
	return idOf(tb, "counter", p.P4Info().Counters, name)
}

func meterID(tb testing.TB, p *Program, name string) uint32 {
	return idOf(tb, "meter", p.P4Info().Meters, name)
}

// idOf returns the ID of the P4Info object called name.
func idOf[T interface{ GetPreamble() *configv1.Preamble }](tb testing.TB, kind string, xs []T, name string) uint32 {
	tb.Helper()
	for _, x := range xs {
		if x.GetPreamble().GetName() == name {
			return x.GetPreamble().GetId()
		}
	}
	tb.Fatalf("no %s %s", kind, name)
	return 0
}

func exact(id uint32, v []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Exact_{Exact: &p4v1.FieldMatch_Exact{Value: v}}}
}

func lpm(id uint32, v []byte, pl int32) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Lpm{Lpm: &p4v1.FieldMatch_LPM{Value: v, PrefixLen: pl}}}
}

func ternary(id uint32, v, m []byte) *p4v1.FieldMatch {
	return &p4v1.FieldMatch{FieldId: id, FieldMatchType: &p4v1.FieldMatch_Ternary_{Ternary: &p4v1.FieldMatch_Ternary{Value: v, Mask: m}}}
}

func act(id uint32, params ...[]byte) *p4v1.TableAction {
	a := &p4v1.Action{ActionId: id}
	for i, p := range params {
		a.Params = append(a.Params, &p4v1.Action_Param{ParamId: uint32(i + 1), Value: p})
	}
	return &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: a}}
}

func wantErrAt(tb testing.TB, err error, want string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("compiled, want error containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		tb.Fatalf("error %q, want it to contain %q", err, want)
	}
}

func statusCode(err error) string { return status.Code(err).String() }
