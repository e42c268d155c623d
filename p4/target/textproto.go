package target

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// FormatText writes m in protobuf text format the way p4c and the C++
// TextFormat printer do (fields in declaration order, two-space indent,
// "name: value" and "name {" blocks). Unlike prototext's output it is
// byte-stable across builds, so generated files can be committed and
// compared.
func FormatText(m proto.Message) []byte {
	var b strings.Builder
	writeMsg(&b, m.ProtoReflect(), 0)
	return []byte(b.String())
}

func writeMsg(b *strings.Builder, m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := 0; j < l.Len(); j++ {
				writeField(b, fd, l.Get(j), depth)
			}
		case fd.IsMap():
			// Entries as "name { key: k value: v }", in key order.
			mp := v.Map()
			var keys []protoreflect.MapKey
			mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
				keys = append(keys, k)
				return true
			})
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			ind := strings.Repeat("  ", depth)
			for _, k := range keys {
				fmt.Fprintf(b, "%s%s {\n", ind, fd.Name())
				writeField(b, fd.MapKey(), k.Value(), depth+1)
				writeField(b, fd.MapValue(), mp.Get(k), depth+1)
				fmt.Fprintf(b, "%s}\n", ind)
			}
		default:
			writeField(b, fd, v, depth)
		}
	}
}

func writeField(b *strings.Builder, fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) {
	ind := strings.Repeat("  ", depth)
	name := string(fd.Name())
	if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
		fmt.Fprintf(b, "%s%s {\n", ind, name)
		writeMsg(b, v.Message(), depth+1)
		fmt.Fprintf(b, "%s}\n", ind)
		return
	}
	fmt.Fprintf(b, "%s%s: %s\n", ind, name, scalarText(fd, v))
}

func scalarText(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return quoteC([]byte(v.String()))
	case protoreflect.BytesKind:
		return quoteC(v.Bytes())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.BoolKind:
		return strconv.FormatBool(v.Bool())
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return strconv.FormatInt(v.Int(), 10)
}

// quoteC escapes as the C++ text format printer does (CEscape).
func quoteC(s []byte) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch c {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\'':
			b.WriteString(`\'`)
		case '\\':
			b.WriteString(`\\`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
