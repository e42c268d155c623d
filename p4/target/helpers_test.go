package target

import (
	"os"

	"google.golang.org/grpc/status"
	"strings"
	"testing"

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
	tb.Helper()
	for _, t := range p.P4Info().Tables {
		if t.Preamble.Name == name {
			return t.Preamble.Id
		}
	}
	tb.Fatalf("no table %s", name)
	return 0
}

func actionID(tb testing.TB, p *Program, name string) uint32 {
	tb.Helper()
	for _, a := range p.P4Info().Actions {
		if a.Preamble.Name == name {
			return a.Preamble.Id
		}
	}
	tb.Fatalf("no action %s", name)
	return 0
}

func registerID(tb testing.TB, p *Program, name string) uint32 {
	tb.Helper()
	for _, r := range p.P4Info().Registers {
		if r.Preamble.Name == name {
			return r.Preamble.Id
		}
	}
	tb.Fatalf("no register %s", name)
	return 0
}

func counterID(tb testing.TB, p *Program, name string) uint32 {
	tb.Helper()
	for _, c := range p.P4Info().Counters {
		if c.Preamble.Name == name {
			return c.Preamble.Id
		}
	}
	tb.Fatalf("no counter %s", name)
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
