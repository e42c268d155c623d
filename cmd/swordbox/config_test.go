package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

type testConfig struct {
	Name  string        `mapstructure:"name"`
	Count int           `mapstructure:"count"`
	List  []string      `mapstructure:"list"`
	Wait  time.Duration `mapstructure:"wait"`
}

func newTestCmd() *cobra.Command {
	c := &cobra.Command{Use: "t"}
	c.Flags().String("config", "", "")
	c.Flags().String("name", "dflt", "")
	c.Flags().Int("count", 3, "")
	c.Flags().StringSlice("list", []string{"a", "b"}, "")
	c.Flags().Duration("wait", time.Second, "")
	return c
}

func TestLoadConfigPrecedence(t *testing.T) {
	settings["t"] = newSection([]string{"t"}, intSpan("count", 0, 100))
	t.Cleanup(func() { delete(settings, "t") })
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("t:\n  name: fromfile\n  count: 7\n  list: [x, y, z]\n"), 0o644)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("t:\n  nmae: typo\n"), 0o644)

	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    testConfig
		wantErr string
	}{
		{"defaults", nil, nil, testConfig{"dflt", 3, []string{"a", "b"}, time.Second}, ""},
		{"file", []string{"--config", file}, nil, testConfig{"fromfile", 7, []string{"x", "y", "z"}, time.Second}, ""},
		{"env beats file", []string{"--config", file}, map[string]string{"SWORDBOX_T_COUNT": "9"}, testConfig{"fromfile", 9, []string{"x", "y", "z"}, time.Second}, ""},
		{"flag beats env", []string{"--config", file, "--count", "11", "--list", "q"}, map[string]string{"SWORDBOX_T_COUNT": "9"}, testConfig{"fromfile", 11, []string{"q"}, time.Second}, ""},
		{"duration flag", []string{"--wait", "250ms"}, nil, testConfig{"dflt", 3, []string{"a", "b"}, 250 * time.Millisecond}, ""},
		{"unknown key refused", []string{"--config", bad}, nil, testConfig{}, "t.nmae: unknown setting"},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.yaml")}, nil, testConfig{}, "nope.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c := newTestCmd()
			if err := c.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			var got testConfig
			err := loadConfig(c, "t", &got)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want.Name || got.Count != tc.want.Count || strings.Join(got.List, ",") != strings.Join(tc.want.List, ",") || got.Wait != tc.want.Wait {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A number in a config file is taken as written or refused, never
// truncated or wrapped into its field (mapstructure's weak decoding does
// both); YAML gives int, uint64 (past int64) and float64.
func TestExactNumber(t *testing.T) {
	tInt, tU32, tU64 := reflect.TypeOf(0), reflect.TypeOf(uint32(0)), reflect.TypeOf(uint64(0))
	tDur, tKeys := reflect.TypeOf(time.Duration(0)), reflect.TypeOf([]uint64(nil))
	for _, tc := range []struct {
		t    reflect.Type
		raw  any
		want string // "" = taken
	}{
		{tInt, 240, ""},
		{tInt, 1e3, ""},
		{tInt, 2.5, "2.5 is not an integer"},
		{tInt, uint64(9999999999999999999), "9999999999999999999 is too large for an integer of 64 bits"},
		{tInt, 1e19, "1e+19 is too large for an integer of 64 bits"},
		{tU32, 511, ""},
		{tU32, 4294967551, "4294967551 is too large for a non-negative integer of 32 bits"},
		{tU32, -1, "-1 is not a non-negative integer"},
		{tU64, uint64(18446744073709551615), ""},
		{tU64, -1, "-1 is not a non-negative integer"},
		{tDur, 0, ""},
		{tDur, 5, "5 is not a duration"},
		{tDur, "5ms", ""},
		{tKeys, []any{1, 2}, ""},
		{tKeys, []any{1, -1}, "-1 is not a non-negative integer"},
	} {
		err := decodeLeaf(tc.t, tc.raw)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%v into %v: err %v, want %q", tc.raw, tc.t, err, tc.want)
		}
	}
}
