package p4rt

import (
	"fmt"
	"sort"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ignoredP4InfoFields are the fields that carry no meaning for the data
// plane: a P4Info that differs only in them is the same pipeline.
var ignoredP4InfoFields = map[protoreflect.Name]bool{
	"pkg_info":               true,
	"doc":                    true,
	"annotations":            true,
	"annotation_locations":   true,
	"structured_annotations": true,
	"source_location":        true,
}

// sameP4Info reports, as an error naming the first difference, whether two
// P4Infos describe the same pipeline: equal after dropping documentation,
// annotations, source locations and pkg_info, and sorting every top-level
// list by ID.
func sameP4Info(got, want *configv1.P4Info) error {
	g, w := normalize(got), normalize(want)
	if proto.Equal(g, w) {
		return nil
	}
	return firstDifference(g, w)
}

func normalize(in *configv1.P4Info) *configv1.P4Info {
	out := proto.Clone(in).(*configv1.P4Info)
	strip(out.ProtoReflect())
	byID := func(n int, id func(i int) uint32, swap func(i, j int)) {
		sort.Sort(sorter{n: n, less: func(i, j int) bool { return id(i) < id(j) }, swap: swap})
	}
	byID(len(out.Tables), func(i int) uint32 { return out.Tables[i].GetPreamble().GetId() }, func(i, j int) { out.Tables[i], out.Tables[j] = out.Tables[j], out.Tables[i] })
	byID(len(out.Actions), func(i int) uint32 { return out.Actions[i].GetPreamble().GetId() }, func(i, j int) { out.Actions[i], out.Actions[j] = out.Actions[j], out.Actions[i] })
	byID(len(out.ActionProfiles), func(i int) uint32 { return out.ActionProfiles[i].GetPreamble().GetId() }, func(i, j int) {
		out.ActionProfiles[i], out.ActionProfiles[j] = out.ActionProfiles[j], out.ActionProfiles[i]
	})
	byID(len(out.Counters), func(i int) uint32 { return out.Counters[i].GetPreamble().GetId() }, func(i, j int) { out.Counters[i], out.Counters[j] = out.Counters[j], out.Counters[i] })
	byID(len(out.DirectCounters), func(i int) uint32 { return out.DirectCounters[i].GetPreamble().GetId() }, func(i, j int) {
		out.DirectCounters[i], out.DirectCounters[j] = out.DirectCounters[j], out.DirectCounters[i]
	})
	byID(len(out.Meters), func(i int) uint32 { return out.Meters[i].GetPreamble().GetId() }, func(i, j int) { out.Meters[i], out.Meters[j] = out.Meters[j], out.Meters[i] })
	byID(len(out.DirectMeters), func(i int) uint32 { return out.DirectMeters[i].GetPreamble().GetId() }, func(i, j int) { out.DirectMeters[i], out.DirectMeters[j] = out.DirectMeters[j], out.DirectMeters[i] })
	byID(len(out.ControllerPacketMetadata), func(i int) uint32 { return out.ControllerPacketMetadata[i].GetPreamble().GetId() }, func(i, j int) {
		out.ControllerPacketMetadata[i], out.ControllerPacketMetadata[j] = out.ControllerPacketMetadata[j], out.ControllerPacketMetadata[i]
	})
	byID(len(out.ValueSets), func(i int) uint32 { return out.ValueSets[i].GetPreamble().GetId() }, func(i, j int) { out.ValueSets[i], out.ValueSets[j] = out.ValueSets[j], out.ValueSets[i] })
	byID(len(out.Registers), func(i int) uint32 { return out.Registers[i].GetPreamble().GetId() }, func(i, j int) { out.Registers[i], out.Registers[j] = out.Registers[j], out.Registers[i] })
	byID(len(out.Digests), func(i int) uint32 { return out.Digests[i].GetPreamble().GetId() }, func(i, j int) { out.Digests[i], out.Digests[j] = out.Digests[j], out.Digests[i] })
	return out
}

type sorter struct {
	n    int
	less func(i, j int) bool
	swap func(i, j int)
}

func (s sorter) Len() int           { return s.n }
func (s sorter) Less(i, j int) bool { return s.less(i, j) }
func (s sorter) Swap(i, j int)      { s.swap(i, j) }

// strip clears, recursively, every field ignoredP4InfoFields marks true.
func strip(m protoreflect.Message) {
	var clear []protoreflect.FieldDescriptor
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if ignoredP4InfoFields[fd.Name()] {
			clear = append(clear, fd)
			return true
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				strip(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				strip(mv.Message())
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			strip(v.Message())
		}
		return true
	})
	for _, fd := range clear {
		m.Clear(fd)
	}
}

// namedObject is a top-level P4Info object: it has a preamble.
type namedObject interface {
	proto.Message
	GetPreamble() *configv1.Preamble
}

// firstDiffering compares two lists of P4Info objects by ID and names the
// first object that is missing on either side or differs.
func firstDiffering[T namedObject](kind string, gl, wl []T) error {
	wm := make(map[uint32]T, len(wl))
	for _, x := range wl {
		wm[x.GetPreamble().GetId()] = x
	}
	for _, x := range gl {
		y, ok := wm[x.GetPreamble().GetId()]
		if !ok {
			return fmt.Errorf("%s %q (id %#x) is not in the program", kind, x.GetPreamble().GetName(), x.GetPreamble().GetId())
		}
		if !proto.Equal(x, y) {
			return fmt.Errorf("%s %q (id %#x) differs from the program's", kind, x.GetPreamble().GetName(), x.GetPreamble().GetId())
		}
		delete(wm, x.GetPreamble().GetId())
	}
	for _, y := range wm {
		return fmt.Errorf("%s %q (id %#x) of the program is missing", kind, y.GetPreamble().GetName(), y.GetPreamble().GetId())
	}
	return nil
}

// firstDifference names the first top-level object that differs.
func firstDifference(g, w *configv1.P4Info) error {
	for _, err := range []error{
		firstDiffering("table", g.Tables, w.Tables),
		firstDiffering("action", g.Actions, w.Actions),
		firstDiffering("register", g.Registers, w.Registers),
		firstDiffering("counter", g.Counters, w.Counters),
		firstDiffering("direct counter", g.DirectCounters, w.DirectCounters),
		firstDiffering("controller header", g.ControllerPacketMetadata, w.ControllerPacketMetadata),
	} {
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("the P4Infos differ (outside tables, actions, registers, counters and controller headers)")
}

// protoV1 adapts p4.v1.Errors for status.WithDetails.
func protoV1(errs []*p4v1.Error) []protoadapt.MessageV1 {
	out := make([]protoadapt.MessageV1, len(errs))
	for i, e := range errs {
		out[i] = protoadapt.MessageV1Of(e)
	}
	return out
}
