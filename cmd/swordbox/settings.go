package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// The validation layer of the CLI: every numeric setting of every command
// has a documented range, checked in one place (checkSettings, called by
// loadConfig) whatever the value came from (flag, SWORDBOX_* variable or
// config file), and refused outside it with a message that names where it
// came from and the range:
//
//	bench: --threads 0: out of range 1..4096
//	bench: SWORDBOX_BENCH_THREADS=0: out of range 1..4096
//	config rack.yaml: bench.threads: 0: out of range 1..4096
//
// A command's settings are one entry of the settings table below, keyed by
// its config section and built by a function in the command's file
// (benchSettings, perfSettings, ...). A new flag joins the layer by adding
// its span to its section's function: newSection's list, or withSpans for
// spans kept in another file of the same command (bench --system sherman's
// shermanSpans, say), and withCheck for a cross-field check. newRootCmd
// appends each span's range to its flag's help text (documentSettings), so
// --help documents what is enforced. Settings that are not numbers (names,
// addresses, lists) are checked by the code that parses them.

// span is the documented range [lo, hi] of one numeric setting, in the
// setting's unit: the number itself for integers and floats, nanoseconds for
// durations, bytes for byte counts (strings such as "64MiB").
type span struct {
	key    string
	kind   spanKind
	lo, hi float64
	// zero, when set, is what 0 means: 0 is accepted besides lo..hi
	// ("off", "run until interrupted").
	zero string
	// why explains an upper bound derived from the machine.
	why string
	// set, when not empty, lists the only values allowed (an MTU).
	set []float64
}

type spanKind int

const (
	kindNumber spanKind = iota
	kindDuration
	kindBytes
)

func intSpan(key string, lo, hi float64) span { return span{key: key, lo: lo, hi: hi} }

func durSpan(key string, lo, hi time.Duration) span {
	return span{key: key, kind: kindDuration, lo: float64(lo), hi: float64(hi)}
}

func bytesSpan(key string, lo, hi int64) span {
	return span{key: key, kind: kindBytes, lo: float64(lo), hi: float64(hi)}
}

func setSpan(key string, vals ...float64) span {
	return span{key: key, lo: vals[0], hi: vals[len(vals)-1], set: vals}
}

// orZero also accepts 0, meaning what.
func (s span) orZero(what string) span { s.zero = what; return s }

// because records why the upper bound is what it is.
func (s span) because(why string) span { s.why = why; return s }

// rangeText is the range as the help text and the refusals print it.
func (s span) rangeText() string {
	var r string
	switch {
	case len(s.set) > 0:
		parts := make([]string, len(s.set))
		for i, v := range s.set {
			parts[i] = s.format(v)
		}
		r = "one of " + strings.Join(parts, ", ")
	default:
		r = s.format(s.lo) + ".." + s.format(s.hi)
	}
	if s.zero != "" {
		r += " or 0 (" + s.zero + ")"
	}
	if s.why != "" {
		r += "; " + s.why
	}
	return r
}

func (s span) format(v float64) string {
	switch s.kind {
	case kindDuration:
		return formatDuration(time.Duration(v))
	case kindBytes:
		return formatBytes(int64(v))
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// check reports why v is outside the span, or "".
func (s span) check(v float64) string {
	if math.IsNaN(v) {
		return "not a number"
	}
	if v == 0 && s.zero != "" {
		return ""
	}
	if len(s.set) > 0 {
		for _, x := range s.set {
			if v == x {
				return ""
			}
		}
		return "want " + s.rangeText()
	}
	if v < s.lo || v > s.hi {
		return "out of range " + s.rangeText()
	}
	return ""
}

// outsideExactly reports whether an integer field (a duration included)
// lies outside the span when compared as an integer: float64 holds every
// integer only up to 2^53, and past it (durations over 104 days, in
// nanoseconds) a value just outside the span rounds onto its bound.
func (s span) outsideExactly(fv reflect.Value) bool {
	if len(s.set) > 0 {
		return false
	}
	switch fv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := fv.Int()
		return !(i == 0 && s.zero != "") && (i < int64(s.lo) || i > int64(s.hi))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u := fv.Uint()
		return !(u == 0 && s.zero != "") && (float64(u) < s.lo || (s.hi < math.MaxUint64 && u > uint64(s.hi)))
	}
	return false
}

// settingTable is one command's (one config section's) settings.
type settingTable struct {
	// commands are the command paths that read the section ("ctrl run").
	commands []string
	spans    []span
	// checks are cross-field checks on the decoded config struct; each
	// returns an error naming the settings involved.
	checks []func(cfg any) error
}

// settings maps a config section to its table. Every section a config file
// may hold is here, also those without numeric settings, so that an
// unknown (misspelled) section is refused. It is static data, built once:
// the command trees newRootCmd builds only read it.
var settings = map[string]*settingTable{
	"bench":           benchSettings(),
	"clover-ms":       cloverMSSettings(),
	"clover-clients":  cloverClientsSettings(),
	"ctrl":            ctrlSettings(),
	"decode":          newSection([]string{"decode"}),
	"memnode":         memnodeSettings(),
	"middlebox":       middleboxRunSettings(),
	"middlebox-bench": middleboxBenchSettings(),
	"p4info":          newSection([]string{"p4info"}),
	"perf":            perfSettings(),
	"switch":          switchSettings(),
}

// newSection is the table of a section read by the given commands ("ctrl
// run"), with the ranges of its numbers.
func newSection(commands []string, spans ...span) *settingTable {
	return &settingTable{commands: commands, spans: spans}
}

// withSpans adds spans kept in another file of the same command.
func (t *settingTable) withSpans(spans ...span) *settingTable {
	t.spans = append(t.spans, spans...)
	return t
}

// withCheck adds a cross-field check.
func (t *settingTable) withCheck(check func(cfg any) error) *settingTable {
	t.checks = append(t.checks, check)
	return t
}

// source says where a setting's value came from, for the refusal.
type source struct {
	kind string // "flag", "env", "file", "default"
	name string // the env variable or the file
}

// describe names a setting as its source spells it, with its value.
func (s source) describe(section, key, value string) string {
	switch s.kind {
	case "flag":
		return fmt.Sprintf("--%s %s", key, value)
	case "env":
		return fmt.Sprintf("%s=%s", s.name, value)
	case "file":
		return fmt.Sprintf("config %s: %s.%s: %s", s.name, section, key, value)
	}
	return fmt.Sprintf("%s (default) %s", key, value)
}

// checkSettings checks every span of section's table against the decoded
// config out, then the cross-field checks. prefix names the command.
func checkSettings(section string, out any, srcs map[string]source) error {
	t := settings[section]
	if t == nil {
		return nil
	}
	prefix := commandName(section)
	for _, s := range t.spans {
		fv, ok := fieldByTag(reflect.ValueOf(out), s.key)
		if !ok {
			return fmt.Errorf("%s: setting %q has a range but no field (a bug in the settings table)", prefix, s.key)
		}
		v, text, err := numericValue(fv, s.kind)
		if err != nil {
			return fmt.Errorf("%s: %s: %v", prefix, srcs[s.key].describe(section, s.key, text), err)
		}
		why := s.check(v)
		if why == "" && s.outsideExactly(fv) {
			why = "out of range " + s.rangeText()
		}
		if why != "" {
			d := srcs[s.key].describe(section, s.key, text)
			if srcs[s.key].kind == "file" {
				return fmt.Errorf("%s: %s", d, why)
			}
			return fmt.Errorf("%s: %s: %s", prefix, d, why)
		}
	}
	for _, c := range t.checks {
		if err := c(out); err != nil {
			return fmt.Errorf("%s: %w", prefix, err)
		}
	}
	return nil
}

// commandName is the command a section belongs to, for messages.
func commandName(section string) string {
	if t := settings[section]; t != nil && len(t.commands) > 0 {
		return t.commands[0]
	}
	return section
}

// numericValue reads a field as a number of the span's kind, with its text
// as the user wrote it.
func numericValue(v reflect.Value, kind spanKind) (float64, string, error) {
	if kind == kindDuration {
		if d, ok := v.Interface().(time.Duration); ok {
			return float64(d), formatDuration(d), nil
		}
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint()), strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return v.Float(), strconv.FormatFloat(v.Float(), 'g', -1, 64), nil
	case reflect.String:
		if kind == kindBytes {
			n, err := parseBytes(v.String())
			if err != nil {
				return 0, v.String(), err
			}
			return float64(n), v.String(), nil
		}
	}
	return 0, fmt.Sprint(v.Interface()), fmt.Errorf("not a number")
}

// fieldByTag finds the field tagged `mapstructure:"name"` in the struct v
// points to, looking into squashed (inline) structs.
func fieldByTag(v reflect.Value, name string) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, squash := tagOf(t.Field(i))
		if squash {
			if f, ok := fieldByTag(v.Field(i), name); ok {
				return f, true
			}
			continue
		}
		if tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// tagOf is a field's mapstructure name, and whether it is squashed.
func tagOf(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("mapstructure")
	name, opts, _ := strings.Cut(tag, ",")
	if strings.Contains(opts, "squash") {
		return "", true
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, false
}

// documentSettings appends each span's range to its flag's help text, for
// every command of the tree.
func documentSettings(root *cobra.Command) {
	byPath := map[string][]span{}
	for _, t := range settings {
		for _, c := range t.commands {
			byPath[c] = append(byPath[c], t.spans...)
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		for _, s := range byPath[path] {
			if f := c.Flags().Lookup(s.key); f != nil && !strings.Contains(f.Usage, "[range") {
				f.Usage += " [range " + s.rangeText() + "]"
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// sectionNames lists the known sections, for the refusal of an unknown one.
func sectionNames() []string {
	var names []string
	for s := range settings {
		names = append(names, s)
	}
	sort.Strings(names)
	return names
}

// machineMemory is this machine's memory in bytes (MemTotal), or 0 when
// it cannot be read.
func machineMemory() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// memoryCap is the most memory one setting may ask for: half of the
// machine's memory (16 GiB when it cannot be read), so that a typo cannot
// take the machine down.
func memoryCap() (int64, string) {
	m := machineMemory()
	if m <= 0 {
		return 16 << 30, "16GiB, this machine's memory unknown"
	}
	return m / 2, "half of this machine's " + formatBytes(m)
}

// formatDuration prints d as Go does, without zero minutes and seconds
// after hours or minutes (24h, not 24h0m0s).
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatBytes prints a byte count with the largest binary unit that
// divides it (or one decimal of GiB for large odd values).
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return strconv.FormatInt(n, 10)
}
