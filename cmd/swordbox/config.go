package main

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// loadConfig fills out (a pointer to a typed config struct whose fields carry
// `mapstructure:"<flag-name>"` tags) for the command cmd. Sources, in rising
// precedence: the struct's current values (defaults), the section of the
// --config YAML file, SWORDBOX_<SECTION>_<KEY> environment variables, and the
// flags the user set.
//
// It is also where every setting is checked, before anything runs: a
// section of the file that no command reads, a key unknown at any depth
// (hosts[1].mca), a value of the wrong type (threads: lots, naming the file
// and the key's path), and a number outside its documented range
// (checkSettings) are all refused.
func loadConfig(cmd *cobra.Command, section string, out any) error {
	v := viper.New()
	srcs := map[string]source{}

	// Defaults: the flags' default values.
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		v.SetDefault(f.Name, flagValue(f))
		srcs[f.Name] = source{kind: "default"}
	})

	if path, _ := cmd.Flags().GetString("config"); path != "" {
		fv := viper.New()
		fv.SetConfigFile(path)
		if err := fv.ReadInConfig(); err != nil {
			return fmt.Errorf("config %s: %w", path, err)
		}
		if len(settings) > 0 {
			for _, top := range fv.AllKeys() {
				name := strings.SplitN(top, ".", 2)[0]
				if settings[name] == nil {
					return fmt.Errorf("config %s: %s: unknown section (known: %s)", path, name, strings.Join(sectionNames(), ", "))
				}
			}
		}
		if raw := fv.Get(section); raw != nil {
			if err := checkKeys(path, section, reflect.TypeOf(out), raw); err != nil {
				return err
			}
		}
		if sec := fv.Sub(section); sec != nil {
			for _, k := range sec.AllKeys() {
				v.Set(k, sec.Get(k))
				srcs[strings.SplitN(k, ".", 2)[0]] = source{kind: "file", name: path}
			}
		}
	}
	if err := checkEnv(cmd, section, out); err != nil {
		return err
	}
	// Environment beats the file; flags the user set beat everything.
	var envErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		envKey := "SWORDBOX_" + strings.ToUpper(strings.ReplaceAll(section+"_"+f.Name, "-", "_"))
		if val, ok := os.LookupEnv(envKey); ok {
			if ft, ok := fieldType(reflect.TypeOf(out), f.Name); ok && envErr == nil {
				if err := decodeLeaf(ft, val); err != nil {
					envErr = fmt.Errorf("%s: %s=%q: %v", commandName(section), envKey, val, err)
				}
			}
			v.Set(f.Name, val)
			srcs[f.Name] = source{kind: "env", name: envKey}
		}
		if f.Changed {
			v.Set(f.Name, flagValue(f))
			srcs[f.Name] = source{kind: "flag"}
		}
	})
	if envErr != nil {
		return envErr
	}

	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result:           out,
		WeaklyTypedInput: true,
		ErrorUnused:      false,
		DecodeHook:       decodeHooks(),
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(v.AllSettings()); err != nil {
		return fmt.Errorf("%s config: %w", section, err)
	}
	return checkSettings(section, out, srcs)
}

func decodeHooks() mapstructure.DecodeHookFunc {
	return mapstructure.ComposeDecodeHookFunc(
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
	)
}

// checkEnv refuses a SWORDBOX_<SECTION>_<KEY> variable whose key is
// neither a flag of cmd nor a setting of the section (a misspelled
// variable would otherwise be ignored). A variable that belongs to a longer
// section name (SWORDBOX_MIDDLEBOX_BENCH_... is middlebox-bench's, not
// middlebox's) is left to that section.
func checkEnv(cmd *cobra.Command, section string, out any) error {
	envName := func(sec string) string {
		return "SWORDBOX_" + strings.ToUpper(strings.ReplaceAll(sec, "-", "_")) + "_"
	}
	prefix := envName(section)
	var fields map[string]reflect.Type
	if t := reflect.TypeOf(out); t != nil {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			fields = structFields(t)
		}
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		other := false
		for s := range settings {
			if len(s) > len(section) && strings.HasPrefix(name, envName(s)) {
				other = true
			}
		}
		if other {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, prefix), "_", "-"))
		if _, ok := fields[key]; ok || cmd.Flags().Lookup(key) != nil {
			continue
		}
		var known []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "config" && f.Name != "help" && f.Name != "cpuprofile" {
				known = append(known, envName(section)+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_")))
			}
		})
		sort.Strings(known)
		return fmt.Errorf("%s: %s: unknown setting (the variables are %s)", commandName(section), name, strings.Join(known, ", "))
	}
	return nil
}

// checkKeys walks the raw value of a config file's key path against the Go
// type it will be decoded into: every key of a map must name a field (at any
// depth: list entries and nested sections included), and every leaf must
// decode into its field's type. Errors name the file and the key's path.
func checkKeys(file, path string, t reflect.Type, raw any) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if t == reflect.TypeOf(time.Time{}) {
			break
		}
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("config %s: %s: want a section of settings (key: value lines), got %s", file, path, describeRaw(raw))
		}
		fields := structFields(t)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[strings.ToLower(k)]
			if !ok {
				known := make([]string, 0, len(fields))
				for n := range fields {
					known = append(known, n)
				}
				sort.Strings(known)
				return fmt.Errorf("config %s: %s.%s: unknown setting (known: %s)", file, path, k, strings.Join(known, ", "))
			}
			if err := checkKeys(file, path+"."+k, ft, m[k]); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice:
		et := t.Elem()
		for et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() == reflect.Struct {
			list, ok := raw.([]any)
			if !ok {
				return fmt.Errorf("config %s: %s: want a list, got %s", file, path, describeRaw(raw))
			}
			for i, e := range list {
				if err := checkKeys(file, fmt.Sprintf("%s[%d]", path, i), et, e); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := decodeLeaf(t, raw); err != nil {
		return fmt.Errorf("config %s: %s: %v", file, path, err)
	}
	return nil
}

// structFields maps a struct's mapstructure names (squashed structs
// flattened) to their types.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, squash := tagOf(f)
		if squash {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for k, v := range structFields(ft) {
				out[k] = v
			}
			continue
		}
		out[name] = f.Type
	}
	return out
}

// fieldType is the type of the field of out's struct named name.
func fieldType(t reflect.Type, name string) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	ft, ok := structFields(t)[name]
	return ft, ok
}

// decodeLeaf checks that raw decodes into a value of type t as loadConfig
// decodes it, and says what was expected when it does not.
func decodeLeaf(t reflect.Type, raw any) error {
	if raw == nil {
		return nil
	}
	if err := exactNumber(t, raw); err != nil {
		return err
	}
	dst := reflect.New(t)
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		Result: dst.Interface(), WeaklyTypedInput: true, DecodeHook: decodeHooks(),
	})
	if err != nil {
		return err
	}
	if err := dec.Decode(raw); err != nil {
		return fmt.Errorf("%s is not %s", describeRaw(raw), typeName(t))
	}
	return nil
}

// exactNumber refuses a number of a config file that its field would not
// hold as written, where mapstructure's weak decoding truncates or wraps
// it: a fraction or a value past the bits of an integer (threads: 2.5 was
// 2, cpu-port: 4294967551 was 255), a negative unsigned (device-id: -1 was
// 2^64-1), and a bare number for a duration (warmup: 5 was 5ns; a flag or
// a variable needs a unit).
func exactNumber(t reflect.Type, raw any) error {
	var f float64
	var u uint64
	isUint := false
	switch x := raw.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f, u, isUint = float64(x), x, true
	case float64:
		f = x
	case []any:
		if t.Kind() == reflect.Slice {
			for _, e := range x {
				if err := exactNumber(t.Elem(), e); err != nil {
					return err
				}
			}
		}
		return nil
	default:
		return nil
	}
	wrong := fmt.Errorf("%s is not %s", describeRaw(raw), typeName(t))
	if t == reflect.TypeOf(time.Duration(0)) {
		if f != 0 {
			return wrong
		}
		return nil
	}
	v := reflect.New(t).Elem()
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if f != math.Trunc(f) {
			return wrong
		}
		if (isUint && u > math.MaxInt64) || (!isUint && (f >= math.MaxInt64 || f < math.MinInt64)) || v.OverflowInt(int64(f)) {
			return fmt.Errorf("%s is too large for %s of %d bits", describeRaw(raw), typeName(t), t.Bits())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if f != math.Trunc(f) || f < 0 {
			return wrong
		}
		if !isUint {
			if f >= math.MaxUint64 {
				return fmt.Errorf("%s is too large for %s of %d bits", describeRaw(raw), typeName(t), t.Bits())
			}
			u = uint64(f)
		}
		if v.OverflowUint(u) {
			return fmt.Errorf("%s is too large for %s of %d bits", describeRaw(raw), typeName(t), t.Bits())
		}
	}
	return nil
}

func describeRaw(raw any) string {
	switch x := raw.(type) {
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "a section"
	case []any:
		return "a list"
	}
	return fmt.Sprint(raw)
}

// typeName says in words what a setting of type t takes.
func typeName(t reflect.Type) string {
	if t == reflect.TypeOf(time.Duration(0)) {
		return "a duration (such as 250ms, 8s, 1m)"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "an "), "a ") + "s"
	case reflect.Struct:
		return "a section"
	}
	return t.String()
}

// flagValue is a flag's value for viper: slices as slices (their String()
// form, "[a,b]", would otherwise arrive as one element).
func flagValue(f *pflag.Flag) any {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return f.Value.String()
}
