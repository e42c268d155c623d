package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/ctrl/rack"
)

// The README's and the docs' shell blocks, run as written where this
// machine can run them:
//
//   - every swordbox command line (swordbox, ./swordbox, go run
//     ./cmd/swordbox) is first checked as the binary would check it: the
//     command exists, its flags parse, its config file exists, loads and
//     validates (checkOnly, in a child process);
//   - then it runs, if it can here: servers (switch, memnode, ctrl run,
//     middlebox run) are started, must come up (and, for ctrl run, take
//     charge of the block's switch), and are stopped with SIGTERM at the end
//     of the block; one-shot commands (perf, middlebox bench, ctrl show) run
//     to the end with exit code 0, measurement durations cut to 300ms;
//   - veth pairs the docs name are created with scripts/veths.sh (as root)
//     and removed afterwards;
//   - what needs a real rack (p4c, BMv2, interfaces of other hosts, a remote
//     memory node), root that this run lacks, or minutes (bench runs, the
//     test suite itself) is listed in the test log, not run.
//
// A line nobody classified fails the test, so a new doc line is either
// runnable or listed. The address 127.0.0.1:9559 of the docs is replaced by
// a free port (other tests may hold 9559), and ctrl run's metrics go to a
// free port.

// builtOnce: the docs' identical build lines run once per test.
var builtOnce bool

// docBlock is one shell block (or one command of the README's table).
type docBlock struct {
	where string // file:line
	lines []docLine
}

type docLine struct {
	where string
	words []string // env assignments first, then the command
	bg    bool     // ended with &
}

var fenceRE = regexp.MustCompile("^```(sh|bash|shell)\\s*$")

// docBlocks extracts the shell blocks of a Markdown file, and the
// ./swordbox commands in backticks of its tables.
func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "|") {
			for _, m := range regexp.MustCompile("`(\\./swordbox [^`]*)`").FindAllStringSubmatch(lines[i], -1) {
				if strings.ContainsAny(m[1], "[|\\") {
					continue // a synopsis (alternatives, optional parts), not a command
				}
				where := fmt.Sprintf("%s:%d", path, i+1)
				blocks = append(blocks, docBlock{where: where, lines: []docLine{parseDocLine(where, m[1])}})
			}
			continue
		}
		if !fenceRE.MatchString(lines[i]) {
			continue
		}
		b := docBlock{where: fmt.Sprintf("%s:%d", path, i+1)}
		cur, start := "", 0
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			l := stripComment(lines[i])
			if cur == "" {
				start = i + 1
			}
			if strings.HasSuffix(strings.TrimSpace(l), "\\") {
				cur += strings.TrimSuffix(strings.TrimSpace(l), "\\") + " "
				continue
			}
			cur += l
			if strings.TrimSpace(cur) != "" {
				b.lines = append(b.lines, parseDocLine(fmt.Sprintf("%s:%d", path, start), cur))
			}
			cur = ""
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// stripComment drops a shell comment (a # after a blank, outside quotes).
func stripComment(l string) string {
	quote := rune(0)
	for i, c := range l {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t'):
			return l[:i]
		}
	}
	return l
}

// parseDocLine splits a command line into words (quotes removed).
func parseDocLine(where, l string) docLine {
	var words []string
	var cur strings.Builder
	quote, in := rune(0), false
	for _, c := range l {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	d := docLine{where: where, words: words}
	if n := len(words); n > 0 && words[n-1] == "&" {
		d.words, d.bg = words[:n-1], true
	}
	return d
}

// swordboxArgs returns the arguments of a swordbox command line and its
// environment assignments, or ok false.
func swordboxArgs(words []string) (env, args []string, ok bool) {
	i := 0
	for i < len(words) && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(words[i]) {
		i++
	}
	env, rest := words[:i], words[i:]
	switch {
	case len(rest) >= 2 && rest[0] == "go" && rest[1] == "run" && len(rest) >= 3 && rest[2] == "./cmd/swordbox":
		return env, rest[3:], true
	case len(rest) >= 1 && (rest[0] == "swordbox" || rest[0] == "./swordbox"):
		return env, rest[1:], true
	}
	return nil, nil, false
}

// checkOnly is the child process's side of the static check: the command
// line parsed and its configuration loaded and validated exactly as the
// command's RunE starts, without running it. It prints the interfaces the
// command would open, one per line, as "iface NAME".
func checkOnly(args []string) error {
	cmd, rest, err := newRootCmd(new(cpuProfile)).Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	path := strings.TrimPrefix(cmd.CommandPath(), "swordbox ")
	var section string
	for s, tab := range settings {
		for _, c := range tab.commands {
			if c == path {
				section = s
			}
		}
	}
	var cfg any
	switch section {
	case "bench":
		cfg = &benchConfig{}
	case "perf":
		cfg = &perfConfig{}
	case "memnode":
		cfg = &memnodeConfig{}
	case "switch":
		cfg = &switchConfig{}
	case "ctrl":
		d := rack.Defaults()
		cfg = &d
	case "middlebox":
		cfg = &mboxRunConfig{}
	case "middlebox-bench":
		cfg = &mboxBenchConfig{}
	case "clover-ms":
		cfg = &cloverMSConfig{}
	case "clover-clients":
		cfg = &cloverClientsConfig{}
	case "decode":
		cfg = &decodeConfig{}
	case "p4info":
		cfg = &p4infoConfig{}
	default:
		return fmt.Errorf("%s: no settings section (docs test)", path)
	}
	if err := loadConfig(cmd, section, cfg); err != nil {
		return err
	}
	switch c := cfg.(type) {
	case *rack.Config:
		if path == "ctrl run" {
			if _, err := c.Parse(); err != nil {
				return attributeField(cmd, "ctrl", err)
			}
		}
	case *mboxRunConfig:
		if err := c.Engine.Validate(); err != nil {
			return err
		}
		fmt.Printf("iface %s\niface %s\n", c.ClientIface, c.ServerIface)
	case *switchConfig:
		for _, spec := range strings.Split(c.Ports, ",") {
			if _, what, ok := strings.Cut(spec, "="); ok && what != "mem" {
				fmt.Printf("iface %s\n", what)
			}
		}
	case *memnodeConfig:
		fmt.Printf("iface %s\n", c.Iface)
	case *perfConfig:
		fmt.Printf("iface %s\n", c.Iface)
		if c.Remote != "" {
			fmt.Printf("remote %s\n", c.Remote)
		}
	case *cloverMSConfig:
		fmt.Printf("remote %s\n", c.Memnode)
	case *cloverClientsConfig:
		fmt.Printf("remote %s\n", c.Memnode)
	case *benchConfig:
		if c.Netns {
			fmt.Println("netns")
		}
	}
	return nil
}

// vethsTheDocsCreate are the interface names scripts/veths.sh creates in
// the docs' examples; other interfaces belong to a real rack.
var vethsTheDocsCreate = map[string]bool{"veth1": true, "veth2": true, "mbox-c": true, "mbox-s": true}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestDocsRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the docs' servers and benchmarks (about 10 s)")
	}
	t.Chdir("../..") // the docs' commands run from the repository's root
	builtOnce = false
	files := []string{"README.md"}
	docs, _ := filepath.Glob("docs/*.md")
	files = append(files, docs...)
	root := os.Geteuid() == 0
	var listed []string
	list := func(l docLine, why string) {
		listed = append(listed, fmt.Sprintf("%s: %s (%s)", l.where, strings.Join(l.words, " "), why))
	}
	ran := 0
	for _, f := range files {
		for _, b := range docBlocks(t, f) {
			ran += runDocBlock(t, b, root, list)
		}
	}
	t.Logf("ran %d commands of the README and docs; not run here:\n  %s", ran, strings.Join(listed, "\n  "))
	if ran < 10 {
		t.Errorf("only %d commands ran: the extraction is broken", ran)
	}
}

// runDocBlock runs one block's commands in order and returns how many ran.
func runDocBlock(t *testing.T, b docBlock, root bool, list func(docLine, string)) int {
	t.Helper()
	where := b.where
	addr := freeAddr(t)
	var daemons []*swordboxProc
	var veths []string
	stop := func(d *swordboxProc) {
		d.cmd.Process.Signal(os.Interrupt)
		if code := d.wait(5 * time.Second); code != 0 {
			t.Errorf("%s: %s: exit %d after SIGINT\nstderr: %s", where, strings.Join(d.cmd.Args[1:], " "), code, d.stderr)
		}
	}
	defer func() {
		// Last started, first stopped: a controller before its switch.
		for i := len(daemons) - 1; i >= 0; i-- {
			stop(daemons[i])
		}
		if len(veths) > 0 {
			if out, err := exec.Command("scripts/veths.sh", append([]string{"down"}, veths...)...).CombinedOutput(); err != nil {
				t.Errorf("veths.sh down: %v\n%s", err, out)
			}
		}
	}()
	hasSwitch := false
	for _, l := range b.lines {
		if _, a, ok := swordboxArgs(l.words); ok && len(a) > 0 && a[0] == "switch" {
			hasSwitch = true
		}
	}
	n := 0
	afterRealRack := false
	for _, l := range b.lines {
		w := l.words
		if len(w) == 0 {
			continue
		}
		if w[0] == "sudo" {
			t.Errorf("%s: the docs run as root, without sudo: %s", l.where, strings.Join(w, " "))
			continue
		}
		env, args, ok := swordboxArgs(w)
		if !ok {
			for len(w) > 1 && regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`).MatchString(w[0]) {
				w = w[1:] // environment assignments
			}
			switch {
			case w[0] == "go" && len(w) > 1 && w[1] == "build" && strings.Contains(strings.Join(w, " "), "./cmd/swordbox"):
				if builtOnce {
					list(l, "the same build ran above")
					continue
				}
				builtOnce = true
				out := filepath.Join(t.TempDir(), "swordbox")
				c := exec.Command("go", "build", "-o", out, "./cmd/swordbox")
				if msg, err := c.CombinedOutput(); err != nil {
					t.Errorf("%s: go build: %v\n%s", l.where, err, msg)
				}
				n++
			case w[0] == "go" && len(w) > 1 && w[1] == "test":
				list(l, "a test command: scripts/test.sh runs the suite")
			case w[0] == "scripts/test.sh":
				list(l, "the whole test suite")
			case w[0] == "p4c" || w[0] == "simple_switch_grpc":
				list(l, "needs a real rack: p4c and BMv2 are not packaged here")
				afterRealRack = true
			case w[0] == "scripts/veths.sh":
				if !root {
					list(l, "needs root")
					continue
				}
				if msg, err := exec.Command(w[0], w[1:]...).CombinedOutput(); err != nil {
					t.Errorf("%s: %v\n%s", l.where, err, msg)
				}
				if len(w) > 1 && w[1] == "up" {
					veths = append(veths, w[2:]...)
				}
				n++
			default:
				t.Errorf("%s: a command the docs test does not know how to run or list: %s", l.where, strings.Join(w, " "))
			}
			continue
		}
		// The docs' switch address is this block's free port.
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], "127.0.0.1:9559", addr)
		}
		check := startSwordboxMode(t, "check", env, args...)
		if code := check.wait(20 * time.Second); code != 0 {
			t.Errorf("%s: swordbox %s: refused: %s", l.where, strings.Join(args, " "), check.stderr)
			continue
		}
		facts := check.stdout.String()
		if afterRealRack {
			list(l, "checked; needs a real rack: follows a step of this block that does")
			continue
		}
		if why := cannotRunHere(args, facts, root); why != "" {
			list(l, why)
			continue
		}
		// Interfaces the docs create: as the README says, with scripts/veths.sh.
		for _, f := range strings.Split(facts, "\n") {
			if name, ok := strings.CutPrefix(f, "iface "); ok && name != "" && !contains(veths, name) {
				if msg, err := exec.Command("scripts/veths.sh", "up", name).CombinedOutput(); err != nil {
					t.Fatalf("%s: veths.sh up %s: %v\n%s", l.where, name, err, msg)
				}
				veths = append(veths, name)
			}
		}
		switch args[0] {
		case "switch", "memnode", "middlebox":
			if args[0] == "middlebox" && args[1] != "run" {
				break
			}
			if args[0] == "memnode" {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			// A second server of the same kind is an alternative to the
			// first (the same address): stop the first.
			for i, d := range daemons {
				if d != nil && d.cmd.Args[1] == args[0] {
					stop(d)
					daemons[i] = nil
				}
			}
			daemons = slices.DeleteFunc(daemons, func(d *swordboxProc) bool { return d == nil })
			d := startSwordbox(t, env, args...)
			ready := map[string]string{"switch": "P4Runtime on", "memnode": "memnode: listening", "middlebox": ""}[args[0]]
			waitUp(t, d, l.where, ready)
			daemons = append(daemons, d)
			n++
			continue
		case "ctrl":
			if args[1] == "run" {
				if !hasSwitch {
					sw := startSwordbox(t, nil, "switch", "--grpc", addr, "--ports", "1=mem,2=mem,11=mem,12=mem")
					waitUp(t, sw, l.where, "P4Runtime on")
					daemons = append(daemons, sw)
					hasSwitch = true
				}
				args = append(args, "--switch", addr, "--metrics", freeAddr(t))
				d := startSwordbox(t, env, args...)
				waitUp(t, d, l.where, "in charge")
				daemons = append(daemons, d)
				n++
				continue
			}
		}
		if args[0] == "ctrl" && !hasSwitch {
			list(l, "needs a live switch, started in another block")
			continue
		}
		switch args[0] {
		case "perf", "middlebox":
			args = append(args, "--duration", "300ms")
		case "p4info":
			args = append(args, "-o", filepath.Join(t.TempDir(), "out.txtpb"))
		}
		p := startSwordbox(t, env, args...)
		if code := p.wait(30 * time.Second); code != 0 {
			t.Errorf("%s: swordbox %s: exit %d\nstdout: %s\nstderr: %s", l.where, strings.Join(args, " "), code, p.stdout, p.stderr)
		}
		n++
	}
	return n
}

// cannotRunHere says why a checked swordbox command cannot run on this
// machine in seconds, or "".
func cannotRunHere(args []string, facts string, root bool) string {
	switch {
	case strings.Contains(facts, "remote "):
		return "needs a real rack: other hosts at the addresses it names"
	case strings.Contains(facts, "netns"):
		if !root {
			return "needs root"
		}
		return "checked; a namespace run takes minutes (testbed/netns tests run one)"
	case args[0] == "bench":
		return "checked; a full run takes minutes (TestBenchJSONAndResults runs a short one)"
	}
	for _, f := range strings.Split(facts, "\n") {
		if name, ok := strings.CutPrefix(f, "iface "); ok && name != "" {
			if !vethsTheDocsCreate[name] {
				return "needs a real rack: interface " + name + " of another host"
			}
			if !root {
				return "needs root for interface " + name
			}
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// waitUp waits until a server prints ready (or, with ready empty, is still
// running after a second).
func waitUp(t *testing.T, p *swordboxProc, where, ready string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	if ready == "" {
		deadline = time.Now().Add(time.Second)
	}
	for ready == "" || !strings.Contains(p.stdout.String()+p.stderr.String(), ready) {
		if p.exited() {
			t.Fatalf("%s: swordbox %s exited\nstdout: %s\nstderr: %s", where, strings.Join(p.cmd.Args[1:], " "), p.stdout, p.stderr)
		}
		if time.Now().After(deadline) {
			if ready == "" {
				return
			}
			t.Fatalf("%s: swordbox %s: no %q within 15s\nstdout: %s\nstderr: %s", where, strings.Join(p.cmd.Args[1:], " "), ready, p.stdout, p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBenchDocsRanges checks that docs/bench.md's ranges table gives every
// range of the bench section as the validation layer enforces it.
func TestBenchDocsRanges(t *testing.T) {
	doc, err := os.ReadFile("../../docs/bench.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(doc), "\n") {
		if cells := strings.Split(l, "|"); len(cells) == 4 && strings.HasPrefix(strings.TrimSpace(cells[1]), "`--") {
			rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[2]
		}
	}
	for _, s := range settings["bench"].spans {
		row, ok := rows["--"+s.key]
		if !ok {
			t.Errorf("docs/bench.md has no range row for --%s (%s)", s.key, s.rangeText())
			continue
		}
		if r := s.format(s.lo) + ".." + s.format(s.hi); !strings.Contains(row, r) {
			t.Errorf("docs/bench.md: --%s is %q, the layer enforces %s", s.key, strings.TrimSpace(row), s.rangeText())
		}
	}
}

// inlineSpanRE matches a backticked span of Markdown prose, which may run
// over a line break.
var inlineSpanRE = regexp.MustCompile("`([^`]+)`")

// TestDocsInlineCommandsExist: every swordbox command line the README and
// the docs quote inline in their prose (`swordbox <command> --flag ...`,
// the fenced blocks being TestDocsRunAsWritten's) names a command the
// binary has and only flags that command takes. Values are not checked
// (prose writes "..." or alternatives for them), and a span with a
// placeholder in angle brackets names no command.
func TestDocsInlineCommandsExist(t *testing.T) {
	files := []string{"../../README.md"}
	docs, _ := filepath.Glob("../../docs/*.md")
	files = append(files, docs...)
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prose := regexp.MustCompile("(?ms)^```.*?^```").ReplaceAllStringFunc(string(data), func(block string) string {
			return strings.Repeat("\n", strings.Count(block, "\n")) // keep line numbers
		})
		for _, m := range inlineSpanRE.FindAllStringSubmatchIndex(prose, -1) {
			span := strings.Join(strings.Fields(prose[m[2]:m[3]]), " ")
			if strings.Contains(span, "<") {
				continue
			}
			_, args, ok := swordboxArgs(strings.Fields(span))
			if !ok || len(args) == 0 {
				continue
			}
			where := fmt.Sprintf("%s:%d", strings.TrimPrefix(f, "../../"), strings.Count(prose[:m[0]], "\n")+1)
			// A table writes alternatives as a\|b: each is a command.
			variants := [][]string{args}
			for i, w := range args {
				if alts := strings.Split(strings.ReplaceAll(w, `\|`, "|"), "|"); len(alts) > 1 && !strings.HasPrefix(w, "-") {
					variants = nil
					for _, alt := range alts {
						variants = append(variants, append(append(slices.Clone(args[:i]), alt), args[i+1:]...))
					}
					break
				}
			}
			for _, args := range variants {
				checked++
				checkInlineCommand(t, where, span, args)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d inline commands found: the extraction is broken", checked)
	}
	t.Logf("checked %d inline swordbox commands", checked)
}

// checkInlineCommand checks one inline command line's command and flag
// names (TestDocsInlineCommandsExist).
func checkInlineCommand(t *testing.T, where, span string, args []string) {
	t.Helper()
	cmd, rest, err := newRootCmd(new(cpuProfile)).Find(args)
	if err != nil {
		t.Errorf("%s: `%s`: %v", where, span, err)
		return
	}
	if cmd.HasSubCommands() && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		t.Errorf("%s: `%s`: %q has no subcommand %q", where, span, cmd.CommandPath(), rest[0])
		return
	}
	cmd.InitDefaultHelpFlag()
	for _, w := range rest {
		w = strings.Trim(w, "[]")
		switch {
		case strings.HasPrefix(w, "--"):
			name, _, _ := strings.Cut(w[2:], "=")
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
				t.Errorf("%s: `%s`: %s has no flag --%s", where, span, cmd.CommandPath(), name)
			}
		case len(w) == 2 && w[0] == '-' && w[1] != '-':
			if cmd.Flags().ShorthandLookup(w[1:]) == nil && cmd.InheritedFlags().ShorthandLookup(w[1:]) == nil {
				t.Errorf("%s: `%s`: %s has no flag %s", where, span, cmd.CommandPath(), w)
			}
		}
	}
}

// goTestFlags are the flags of go test and go build a doc's go test line
// may use; any other flag must be one the named packages' tests define.
var goTestFlags = map[string]bool{
	"artifacts": true, "bench": true, "benchtime": true, "count": true, "cover": true, "covermode": true,
	"coverpkg": true, "cpu": true, "failfast": true, "fullpath": true, "fuzz": true, "fuzztime": true,
	"fuzzminimizetime": true, "json": true, "list": true, "outputdir": true, "parallel": true, "run": true,
	"short": true, "shuffle": true, "skip": true, "timeout": true, "v": true, "vet": true, "benchmem": true,
	"blockprofile": true, "coverprofile": true, "cpuprofile": true, "memprofile": true, "mutexprofile": true,
	"trace": true, "args": true, "c": true, "exec": true, "o": true, "tags": true, "pgo": true, "race": true,
}

// goTestValueFlags take the next word as their value.
var goTestValueFlags = map[string]bool{
	"bench": true, "benchtime": true, "count": true, "cpu": true, "fuzz": true, "fuzztime": true,
	"fuzzminimizetime": true, "outputdir": true, "parallel": true, "run": true, "skip": true, "timeout": true,
	"o": true, "tags": true, "exec": true, "covermode": true, "coverpkg": true, "coverprofile": true,
	"cpuprofile": true, "memprofile": true, "blockprofile": true, "mutexprofile": true, "trace": true,
}

// TestDocsTestCommandsExist: every go test line of the README and the docs
// (fenced or inline) names packages that exist, -run, -bench and -fuzz
// patterns that select at least one test, benchmark or fuzz target of
// theirs (-run is not checked beside -bench or -fuzz, where it only keeps
// the tests out), and flags that go test has or the packages' tests
// define. TestDocsRunAsWritten lists these lines without running them.
func TestDocsTestCommandsExist(t *testing.T) {
	t.Chdir("../..")
	files := []string{"README.md"}
	docs, _ := filepath.Glob("docs/*.md")
	files = append(files, docs...)
	var lines []docLine
	for _, f := range files {
		for _, b := range docBlocks(t, f) {
			lines = append(lines, b.lines...)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		prose := regexp.MustCompile("(?ms)^```.*?^```").ReplaceAllString(string(data), "")
		for _, m := range inlineSpanRE.FindAllStringSubmatch(prose, -1) {
			if strings.HasPrefix(m[1], "go test ./") || strings.HasPrefix(m[1], "go test -") {
				lines = append(lines, parseDocLine(f+" (inline)", strings.Join(strings.Fields(m[1]), " ")))
			}
		}
	}
	checked := 0
	for _, l := range lines {
		w := l.words
		if len(w) < 2 || w[0] != "go" || w[1] != "test" {
			continue
		}
		checked++
		var pkgs []string
		pats := map[string]string{}
		var custom []string
		for i := 2; i < len(w); i++ {
			switch {
			case w[i] == "-args":
				for _, a := range w[i+1:] {
					if strings.HasPrefix(a, "-") {
						custom = append(custom, strings.TrimLeft(a, "-"))
					}
				}
				i = len(w)
			case strings.HasPrefix(w[i], "-"):
				name, val, hasVal := strings.Cut(strings.TrimLeft(w[i], "-"), "=")
				name = strings.TrimPrefix(name, "test.")
				if !goTestFlags[name] {
					custom = append(custom, name)
					continue
				}
				if goTestValueFlags[name] && !hasVal && i+1 < len(w) {
					i++
					val = w[i]
				}
				if name == "run" || name == "bench" || name == "fuzz" {
					pats[name] = val
				}
			default:
				pkgs = append(pkgs, w[i])
			}
		}
		var dirs []string
		for _, p := range pkgs {
			if !strings.HasPrefix(p, "./") {
				continue // a value of a custom flag (-mbox.diff-nak broadcast)
			}
			root, recursive := strings.CutSuffix(p, "/...")
			if _, err := os.Stat(root); err != nil {
				t.Errorf("%s: go test: no package %s", l.where, p)
				continue
			}
			if !recursive {
				dirs = append(dirs, root)
				continue
			}
			filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, path)
				}
				return nil
			})
		}
		if len(dirs) == 0 {
			continue // go test -c, -fuzz and the like without a package in prose
		}
		var src strings.Builder
		for _, d := range dirs {
			tests, _ := filepath.Glob(filepath.Join(d, "*_test.go"))
			for _, f := range tests {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				src.Write(b)
			}
		}
		code := src.String()
		for kind, pat := range pats {
			if kind == "run" && (pats["bench"] != "" || pats["fuzz"] != "") {
				continue
			}
			prefix := map[string]string{"run": "Test", "bench": "Benchmark", "fuzz": "Fuzz"}[kind]
			top, _, _ := strings.Cut(pat, "/")
			re, err := regexp.Compile(top)
			if err != nil {
				t.Errorf("%s: -%s %q: %v", l.where, kind, pat, err)
				continue
			}
			found := false
			for _, m := range regexp.MustCompile(`(?m)^func (`+prefix+`\w*)\(`).FindAllStringSubmatch(code, -1) {
				if re.MatchString(m[1]) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s: -%s %q selects no %s function in %s", l.where, kind, pat, prefix, strings.Join(pkgs, " "))
			}
		}
		for _, name := range custom {
			if !strings.Contains(code, `"`+name+`"`) {
				t.Errorf("%s: flag -%s is neither go test's nor defined by the tests of %s", l.where, name, strings.Join(pkgs, " "))
			}
		}
	}
	if checked < 15 {
		t.Errorf("only %d go test lines found: the extraction is broken", checked)
	}
	t.Logf("checked %d go test lines", checked)
}

// TestDocsYAMLBlocksLoad: every YAML block of the README and the docs whose
// top-level key is a settings section (the middlebox's every key in
// docs/middlebox.md, the rack file of docs/deploy.md) is a configuration
// the binary loads and validates as written, for the section's first
// command (checkOnly: unknown keys, wrong types and ranges are refused).
func TestDocsYAMLBlocksLoad(t *testing.T) {
	t.Chdir("../..")
	files := []string{"README.md"}
	docs, _ := filepath.Glob("docs/*.md")
	files = append(files, docs...)
	block := regexp.MustCompile("(?ms)^```ya?ml\n(.*?)^```")
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatchIndex(data, -1) {
			body := data[m[2]:m[3]]
			section, _, _ := strings.Cut(string(body), ":")
			tab, ok := settings[section]
			if !ok {
				continue
			}
			n++
			where := fmt.Sprintf("%s:%d", f, strings.Count(string(data[:m[0]]), "\n")+1)
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
			args := append(strings.Fields(tab.commands[0]), "--config", path)
			if c := startSwordboxMode(t, "check", nil, args...); c.wait(20*time.Second) != 0 {
				t.Errorf("%s: the %s block is refused by swordbox %s: %s", where, section, tab.commands[0], c.stderr)
			}
		}
	}
	if n < 2 {
		t.Errorf("only %d YAML blocks of a settings section found: the extraction is broken", n)
	}
	t.Logf("loaded %d YAML blocks", n)
}
