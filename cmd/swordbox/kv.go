package main

import (
	"fmt"
	"reflect"
	"strconv"
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
			parts = append(parts, strings.TrimSuffix(prefix, "-")+"="+formatValue(rv))
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
			parts = append(parts, name+"="+formatValue(f))
		}
	}
	walk("", reflect.ValueOf(v))
	return strings.Join(parts, " ")
}

// formatValue prints a counter: floats with at most 2 decimals (no
// trailing zeros), everything else as %v.
func formatValue(v reflect.Value) string {
	if v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64 {
		s := strconv.FormatFloat(v.Float(), 'f', 2, 64)
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	return fmt.Sprint(v.Interface())
}

// kebab turns a Go field name into a key: RxNotRoCE -> rx-not-roce,
// ACKsSent -> acks-sent, P99 -> p99.
func kebab(s string) string {
	r := []rune(strings.NewReplacer("RoCE", "Roce", "CPUNs", "CpuNs").Replace(s))
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
