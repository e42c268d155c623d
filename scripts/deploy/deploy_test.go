package deploy

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// repo is the repository's root; the scripts run from there.
const repo = "../.."

// swordbox builds the real binary once per test run.
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func swordbox(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sbdeploy")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "swordbox")
		c := exec.Command("go", "build", "-o", binPath, "./cmd/swordbox")
		c.Dir = repo
		if out, err := c.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/swordbox: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// scriptEnv is the environment of a dry run: this machine's, without the
// SDE's variables, so that every plan is the plan of a machine without it.
func scriptEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SDE=") && !strings.HasPrefix(e, "SDE_INSTALL=") {
			env = append(env, e)
		}
	}
	return env
}

// runScript runs a script (a path under scripts/deploy) and returns its
// stdout, stderr and exit code.
func runScript(t *testing.T, script string, args ...string) (string, string, int) {
	t.Helper()
	c := exec.Command("bash", append([]string{filepath.Join("scripts/deploy", script)}, args...)...)
	c.Dir = repo
	c.Env = scriptEnv()
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out.String(), errb.String(), code
}

// plan is a parsed dry run: its commands (comments dropped, here-documents
// taken out) and the files it would write.
type plan struct {
	commands []string
	files    map[string]string
	comments []string
}

var heredocRE = regexp.MustCompile(`^cat > (\S+) <<'EOF'$`)

func parsePlan(out string) plan {
	p := plan{files: map[string]string{}}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := heredocRE.FindStringSubmatch(l); m != nil {
			var body []string
			for i++; i < len(lines) && lines[i] != "EOF"; i++ {
				body = append(body, lines[i])
			}
			p.files[m[1]] = strings.Join(body, "\n") + "\n"
			continue
		}
		if strings.HasPrefix(l, "# ") {
			p.comments = append(p.comments, l)
			continue
		}
		p.commands = append(p.commands, l)
	}
	return p
}

func dryRun(t *testing.T, script string, args ...string) plan {
	t.Helper()
	out, errOut, code := runScript(t, script, append([]string{"--dry-run"}, args...)...)
	if code != 0 {
		t.Fatalf("%s --dry-run %s: exit %d\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), code, out, errOut)
	}
	if strings.TrimSpace(errOut) != "" {
		t.Errorf("%s --dry-run: wrote to stderr:\n%s", script, errOut)
	}
	return parsePlan(out)
}

// words splits a command line as the shell would for the plans' quoting:
// single quotes ('\” inside), no other expansion.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in, quoted := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quoted && c == '\'':
			quoted = false
		case quoted:
			cur.WriteByte(c)
		case c == '\'':
			quoted, in = true, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			in = true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// swordboxCalls returns the argument lists (after the binary) of every
// swordbox invocation of the plan, with the daemon's redirections and
// trailing comment dropped.
func swordboxCalls(p plan) [][]string {
	var calls [][]string
	for _, c := range p.commands {
		for _, seg := range strings.Split(c, " | ") {
			seg, _, _ = strings.Cut(seg, "   # ")
			w := words(seg)
			for len(w) > 0 && (strings.HasPrefix(w[len(w)-1], ">") || w[len(w)-1] == "2>&1" || w[len(w)-1] == "&") {
				w = w[:len(w)-1]
			}
			if len(w) > 0 && (w[0] == "swordbox" || strings.HasSuffix(w[0], "/swordbox")) {
				calls = append(calls, w[1:])
			}
		}
	}
	return calls
}

var (
	helpMu    sync.Mutex
	helpCache = map[string]map[string]bool{}
	flagRE    = regexp.MustCompile(`^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)\b`)
)

// help returns `swordbox <path> --help`.
func help(t *testing.T, path []string) string {
	t.Helper()
	out, err := exec.Command(swordbox(t), append(slices.Clone(path), "--help")...).CombinedOutput()
	if err != nil {
		t.Fatalf("swordbox %s --help: %v\n%s", strings.Join(path, " "), err, out)
	}
	return string(out)
}

// command finds the command an argument list names: the longest prefix of
// its leading words that is a command (its --help's usage line starts
// with it), the rest being the command's arguments. It fails the test
// when there is none, or when words are left over for a command that
// only has subcommands (a renamed subcommand).
func command(t *testing.T, words []string) (path []string, flags map[string]bool) {
	t.Helper()
	helpMu.Lock()
	defer helpMu.Unlock()
	for k := len(words); k >= 1; k-- {
		key := strings.Join(words[:k], " ")
		if f, ok := helpCache[key]; ok {
			return words[:k], f
		}
		out := help(t, words[:k])
		m := regexp.MustCompile(`\n  (swordbox ` + regexp.QuoteMeta(key) + `)( [^\n]*)?\n`).FindStringSubmatch(out)
		if m == nil {
			continue
		}
		if k < len(words) && strings.Contains(m[2], "[command]") {
			t.Fatalf("swordbox %s: %q is not a command of %q", strings.Join(words, " "), words[k], key)
		}
		flags := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			if m := flagRE.FindStringSubmatch(l); m != nil {
				flags[m[1]] = true
			}
		}
		helpCache[key] = flags
		return words[:k], flags
	}
	t.Fatalf("swordbox %s: no such command", strings.Join(words, " "))
	return nil, nil
}

// checkFlags holds one swordbox invocation to the binary's --help: the
// command exists and lists every flag the plan passes.
func checkFlags(t *testing.T, where string, args []string) {
	t.Helper()
	i := 0
	for i < len(args) && !strings.HasPrefix(args[i], "-") {
		i++
	}
	if i == 0 {
		t.Fatalf("%s: swordbox without a command: %q", where, args)
	}
	path, flags := command(t, args[:i])
	for _, a := range args[i:] {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[name] {
			t.Errorf("%s: swordbox %s has no flag --%s (the plan: %s)", where, strings.Join(path, " "), name, strings.Join(args, " "))
		}
	}
}

// command returns the plan's first command whose words start with prefix.
func (p plan) command(prefix ...string) []string {
	for _, c := range p.commands {
		w := words(c)
		if len(w) >= len(prefix) && slices.Equal(w[:len(prefix)], prefix) {
			return w
		}
	}
	return nil
}

func (p plan) has(t *testing.T, prefix ...string) []string {
	t.Helper()
	w := p.command(prefix...)
	if w == nil {
		t.Fatalf("the plan has no command %q:\n%s", strings.Join(prefix, " "), strings.Join(p.commands, "\n"))
	}
	return w
}

// setFlag replaces a flag's value in an argument list (--flag VALUE).
func setFlag(args []string, flag, value string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == flag {
			out[i+1] = value
			return out
		}
	}
	return append(out, flag, value)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// lockedBuf collects a process's output while the test reads it.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runUntil starts swordbox with args, waits until its output holds want,
// then interrupts it and waits for it; it fails if the process exits
// first or want does not come within 20 s.
func runUntil(t *testing.T, args []string, want string) string {
	t.Helper()
	c := exec.Command(swordbox(t), args...)
	c.Dir = repo
	out := &lockedBuf{}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), want) {
		select {
		case err := <-done:
			t.Fatalf("swordbox %s exited (%v) before %q:\n%s", strings.Join(args, " "), err, want, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Process.Kill()
			<-done
			t.Fatalf("swordbox %s: no %q within 20s:\n%s", strings.Join(args, " "), want, out)
		}
	}
	c.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.Process.Kill()
		<-done
	}
	return out.String()
}
