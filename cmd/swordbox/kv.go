package main

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
)

// keyValues prints the exported fields of a struct of counters as
// key=value pairs on one line (rx-frames=12 tx-frames=9 ...), in field
// order, with nested structs' fields prefixed by the struct's name: the
// form every counter the CLI prints takes, for people and for grep.
func keyValues(v any) string {
	var parts []string
	var walk func(prefix string, rv reflect.Value)
	walk = func(prefix string, rv reflect.Value) {
		for rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				return
			}
			rv = rv.Elem()
		}
		if rv.Kind() != reflect.Struct {
			parts = append(parts, fmt.Sprintf("%s=%v", strings.TrimSuffix(prefix, "-"), rv.Interface()))
			return
		}
		t := rv.Type()
		for i := 0; i < t.NumField(); i++ {
			if !t.Field(i).IsExported() {
				continue
			}
			name := prefix + kebab(t.Field(i).Name)
			f := rv.Field(i)
			if f.Kind() == reflect.Struct {
				walk(name+"-", f)
				continue
			}
			parts = append(parts, fmt.Sprintf("%s=%v", name, f.Interface()))
		}
	}
	walk("", reflect.ValueOf(v))
	return strings.Join(parts, " ")
}

// kebab turns a Go field name into a key: RxNotRoCE -> rx-not-roce,
// ACKsSent -> acks-sent, P99 -> p99.
func kebab(s string) string {
	r := []rune(strings.ReplaceAll(s, "RoCE", "Roce"))
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 {
			prevLower := unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])
			nextLower := i+1 < len(r) && unicode.IsLower(r[i+1]) && !(r[i+1] == 's' && (i+2 == len(r) || unicode.IsUpper(r[i+2])))
			if prevLower || (unicode.IsUpper(r[i-1]) && nextLower) {
				b.WriteByte('-')
			}
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
