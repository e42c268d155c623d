package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Two command trees share nothing: a flag set on one is not seen by the
// other, and no command or flag is the same object in both.
func TestRootTwiceSharesNothing(t *testing.T) {
	frames, want := testCapture(t)
	path := filepath.Join(t.TempDir(), "rack.pcap")
	writeCapture(t, path, frames, false)

	a, b := newRootCmd(new(cpuProfile)), newRootCmd(new(cpuProfile))
	run := func(root *cobra.Command, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.String()
	}
	if out := run(a, "decode", "--json", path); !strings.HasPrefix(out, "{") {
		t.Fatalf("decode --json on the first tree printed %q", out)
	}
	// The second tree's --json was never set: it prints text lines.
	out := run(b, "decode", path)
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
		t.Fatalf("decode on the second tree after --json on the first:\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
	if f := findFlag(t, b, "decode", "json"); f.Changed || f.Value.String() != "false" {
		t.Fatalf("second tree's decode --json: changed %v, value %s", f.Changed, f.Value)
	}

	cmds, flags := map[*cobra.Command]bool{}, map[*pflag.Flag]bool{}
	walkTree(a, func(c *cobra.Command) {
		cmds[c] = true
		c.Flags().VisitAll(func(f *pflag.Flag) { flags[f] = true })
	})
	walkTree(b, func(c *cobra.Command) {
		if cmds[c] {
			t.Errorf("command %q is in both trees", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if flags[f] {
				t.Errorf("flag --%s of %q is in both trees", f.Name, c.CommandPath())
			}
		})
	})
}

// walkTree calls fn on c and every command under it.
func walkTree(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walkTree(sub, fn)
	}
}

func findFlag(t *testing.T, root *cobra.Command, path, name string) *pflag.Flag {
	t.Helper()
	c, _, err := root.Find(strings.Fields(path))
	if err != nil {
		t.Fatal(err)
	}
	f := c.Flags().Lookup(name)
	if f == nil {
		t.Fatalf("%s has no --%s", path, name)
	}
	return f
}

// docFlagTables are the docs' flag tables ("| `--flag` | ..." rows) and
// the command each documents, by file and the heading of its section.
var docFlagTables = []struct{ file, heading, command string }{
	{"docs/bench.md", "## Knobs", "bench"},
	{"docs/rnic.md", "## `swordbox memnode`", "memnode"},
}

// documentedFlags maps a command path ("ctrl run"; "" for the root) to the
// flags the README and docs/*.md use or list for it: on every swordbox
// command line of their shell blocks, in every `swordbox ...` code span of
// their text and tables, and in the first column of the flag tables of
// docFlagTables.
func documentedFlags(t *testing.T) map[string][]string {
	t.Helper()
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	root := newRootCmd(new(cpuProfile))
	byCmd := map[string][]string{}
	add := func(path, flag string) {
		// --help is cobra's, on every command.
		if flag != "help" && !slices.Contains(byCmd[path], flag) {
			byCmd[path] = append(byCmd[path], flag)
		}
	}
	// line records the flags of one command line (or synopsis: `swordbox
	// middlebox bench --io engine|ring|dpdk [--cores N]`).
	flagRE := regexp.MustCompile(`(?:^|[\s\[])--([a-z0-9-]+)`)
	line := func(where string, words []string) {
		var cmdWords []string
		for _, w := range words {
			if strings.HasPrefix(w, "-") || strings.ContainsAny(w, "[]<>|\\") {
				break
			}
			cmdWords = append(cmdWords, w)
		}
		c, _, err := root.Find(cmdWords)
		if err != nil {
			t.Errorf("%s: %v: not a swordbox command: %v", where, words, err)
			return
		}
		path := strings.TrimPrefix(c.CommandPath(), "swordbox")
		for _, m := range flagRE.FindAllStringSubmatch(strings.Join(words, " "), -1) {
			add(strings.TrimSpace(path), m[1])
		}
	}
	inline := regexp.MustCompile("`(?:\\./)?swordbox ([^`]*)`")
	for _, doc := range docs {
		for _, b := range docBlocks(t, doc) {
			for _, l := range b.lines {
				if _, args, ok := swordboxArgs(l.words); ok {
					line(l.where, args)
				}
			}
		}
		for i, text := range strings.Split(string(mustRead(t, doc)), "\n") {
			for _, m := range inline.FindAllStringSubmatch(text, -1) {
				line(fmt.Sprintf("%s:%d", doc, i+1), strings.Fields(m[1]))
			}
		}
	}
	row := regexp.MustCompile("^\\| *(`--[a-z0-9-]+`(?:, *`--[a-z0-9-]+`)*) *\\|")
	for _, tab := range docFlagTables {
		data := string(mustRead(t, filepath.Join("../..", tab.file)))
		_, section, ok := strings.Cut(data, "\n"+tab.heading+"\n")
		if !ok {
			t.Fatalf("%s: no heading %q", tab.file, tab.heading)
		}
		if i := strings.Index(section, "\n## "); i >= 0 {
			section = section[:i]
		}
		n := 0
		for _, line := range strings.Split(section, "\n") {
			m := row.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			for _, f := range strings.Split(m[1], ",") {
				add(tab.command, strings.Trim(strings.TrimSpace(f), "`-"))
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s %s: no flag table rows", tab.file, tab.heading)
		}
	}
	return byCmd
}

// Each command's constructor wires the flags the docs use and list for it,
// on a command built alone (not through the root). The root's persistent
// flags (--config, --cpuprofile) are the root's.
func TestConstructorsWireDocumentedFlags(t *testing.T) {
	documented := documentedFlags(t)
	persistent := newRootCmd(new(cpuProfile)).PersistentFlags()
	tests := []struct {
		path string
		new  func() *cobra.Command
	}{
		{"bench", newBenchCmd},
		{"clover ms", newCloverMSCmd},
		{"clover clients", newCloverClientsCmd},
		{"ctrl run", newCtrlRunCmd},
		{"ctrl show", newCtrlShowCmd},
		{"decode", newDecodeCmd},
		{"memnode", newMemnodeCmd},
		{"middlebox run", newMiddleboxRunCmd},
		{"middlebox bench", newMiddleboxBenchCmd},
		{"p4info", newP4infoCmd},
		{"perf", newPerfCmd},
		{"switch", newSwitchCmd},
	}
	for _, f := range documented[""] {
		if persistent.Lookup(f) == nil {
			t.Errorf("the docs use --%s of swordbox itself; newRootCmd does not define it", f)
		}
	}
	seen := map[string]bool{"": true}
	for _, tc := range tests {
		seen[tc.path] = true
		t.Run(strings.ReplaceAll(tc.path, " ", "-"), func(t *testing.T) {
			c := tc.new()
			if name := tc.path[strings.LastIndex(tc.path, " ")+1:]; c.Name() != name {
				t.Fatalf("constructor builds %q, want %q", c.Name(), name)
			}
			for _, f := range documented[tc.path] {
				if c.Flags().Lookup(f) == nil && persistent.Lookup(f) == nil {
					t.Errorf("the docs use --%s of swordbox %s; its constructor does not define it", f, tc.path)
				}
			}
			t.Logf("%d documented flags: %v", len(documented[tc.path]), documented[tc.path])
		})
	}
	// Every command the docs use has its row above, and every command of
	// the tree is built by a constructor of the table.
	for path := range documented {
		if !seen[path] {
			t.Errorf("the docs use swordbox %s, which has no row in this test", path)
		}
	}
	walkTree(newRootCmd(new(cpuProfile)), func(c *cobra.Command) {
		if path := strings.TrimPrefix(c.CommandPath(), "swordbox"); c.Runnable() && !seen[strings.TrimSpace(path)] {
			t.Errorf("swordbox%s has no row in this test", path)
		}
	})
}
