package netns

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// run runs one command (iproute2, sysctl) and returns its stdout, or an
// error that carries the command line and its stderr.
func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// topo is the set of namespaces and links one rack is made of. Every name
// it creates lives inside a namespace it created: veths are created with
// both ends already in their namespaces, so nothing ever appears in the
// caller's namespace.
type topo struct {
	nss []string
}

// addNS creates a namespace with loopback up and IPv6 off (so the kernel
// sends no router or neighbour solicitations into the data links, whose
// bytes the rack counts).
func (t *topo) addNS(ctx context.Context, name string) error {
	if _, err := run(ctx, "ip", "netns", "add", name); err != nil {
		return err
	}
	t.nss = append(t.nss, name)
	if _, err := run(ctx, "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		return err
	}
	// Best effort: a kernel without IPv6 has nothing to turn off.
	run(ctx, "ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
	return nil
}

// veth joins ifA in namespace a to ifB in namespace b and brings both up.
func (t *topo) veth(ctx context.Context, a, ifA, b, ifB string) error {
	if _, err := run(ctx, "ip", "link", "add", ifA, "netns", a, "type", "veth", "peer", "name", ifB, "netns", b); err != nil {
		return err
	}
	if _, err := run(ctx, "ip", "-n", a, "link", "set", ifA, "up"); err != nil {
		return err
	}
	_, err := run(ctx, "ip", "-n", b, "link", "set", ifB, "up")
	return err
}

// remove deletes every namespace the topology created (their veths go with
// them). It uses a fresh context: it also runs after the caller's ended.
func (t *topo) remove() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var errs []error
	for i := len(t.nss) - 1; i >= 0; i-- {
		if _, err := run(ctx, "ip", "netns", "del", t.nss[i]); err != nil {
			errs = append(errs, err)
		}
	}
	t.nss = nil
	return errors.Join(errs...)
}

// Namespaces lists the network namespaces whose names start with prefix.
func Namespaces(prefix string) ([]string, error) {
	out, err := run(context.Background(), "ip", "netns", "list")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// rxBytes sums the bytes received by the interfaces of namespace ns whose
// names start with ifPrefix (the kernel's counters: Ethernet header to the
// end of the payload, no FCS).
func rxBytes(ctx context.Context, ns, ifPrefix string) (uint64, error) {
	out, err := run(ctx, "ip", "-n", ns, "-s", "-j", "link", "show")
	if err != nil {
		return 0, err
	}
	var links []struct {
		Name  string `json:"ifname"`
		Stats struct {
			RX struct {
				Bytes uint64 `json:"bytes"`
			} `json:"rx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return 0, fmt.Errorf("ip -s -j link show in %s: %w", ns, err)
	}
	var sum uint64
	for _, l := range links {
		if strings.HasPrefix(l.Name, ifPrefix) {
			sum += l.Stats.RX.Bytes
		}
	}
	return sum, nil
}

// proc is one rack process, started inside a namespace.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	tail  *tail
	done  chan struct{}
	err   error // valid after done
}

// startProc runs bin args... in namespace ns through `ip netns exec` (which
// execs bin, so the process is bin itself). The process gets its own process
// group (a terminal's Ctrl-C reaches only the orchestrator, which stops the
// rack in order) and SIGKILL if the orchestrator's thread dies.
func startProc(ns, name, bin string, log io.Writer, args ...string) (*proc, error) {
	p := &proc{name: name, lines: make(chan string, 64), tail: &tail{max: 4096}, done: make(chan struct{})}
	p.cmd = exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var errw io.Writer = p.tail
	if log != nil {
		errw = io.MultiWriter(p.tail, &prefixWriter{w: log, prefix: name + ": "})
	}
	p.cmd.Stderr = errw
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// send writes one command line to the process.
func (p *proc) send(cmd string) error {
	if _, err := io.WriteString(p.stdin, cmd+"\n"); err != nil {
		return fmt.Errorf("%s: send %q: %w", p.name, cmd, err)
	}
	return nil
}

// expect waits for a stdout line for which match returns true (or an
// error) and returns it.
func (p *proc) expect(ctx context.Context, timeout time.Duration, what string, match func(string) (bool, error)) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s: waiting for %s: %w", p.name, what, ctx.Err())
		case <-t.C:
			return "", fmt.Errorf("%s: no %s after %s (stderr: %s)", p.name, what, timeout, p.tail.String())
		case l, ok := <-p.lines:
			if !ok {
				<-p.done
				return "", fmt.Errorf("%s: exited (%v) before %s; stderr: %s", p.name, p.err, what, p.tail.String())
			}
			ok, err := match(l)
			if err != nil {
				return l, fmt.Errorf("%s: %w", p.name, err)
			}
			if ok {
				return l, nil
			}
		}
	}
}

// stop ends the process: SIGTERM to its group, SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	p.stdin.Close()
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	go func() {
		for range p.lines {
		}
	}()
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return "(empty)"
	}
	return s
}

// prefixWriter prefixes every line written to w.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i])
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}

// dialIn opens a TCP connection from inside namespace ns: on a locked OS
// thread it enters the namespace, dials (the socket stays in the namespace
// it was made in) and returns to the thread's namespace.
func dialIn(ns, addr string, timeout time.Duration) (net.Conn, error) {
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- res{nil, err}
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- res{nil, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- res{nil, fmt.Errorf("enter namespace %s: %w", ns, err)}
			return
		}
		c, err := net.DialTimeout("tcp", addr, timeout)
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			// The thread is stuck in the namespace: leave it locked so the
			// runtime retires it with the goroutine.
			ch <- res{c, err}
			return
		}
		runtime.UnlockOSThread()
		ch <- res{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// proxy forwards connections accepted on a loopback port of the
// orchestrator to addr inside namespace ns: the orchestrator's own gRPC
// clients (observer reads of the switch) reach the management network
// without an address in the orchestrator's namespace.
type proxy struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	open map[net.Conn]bool
}

func newProxy(ns, addr string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, open: map[net.Conn]bool{}}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := dialIn(ns, addr, 5*time.Second)
			if err != nil {
				c.Close()
				continue
			}
			p.track(c, up)
			p.wg.Add(2)
			go p.pipe(c, up)
			go p.pipe(up, c)
		}
	}()
	return p, nil
}

func (p *proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.open[c] = true
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// Addr is the loopback address to dial.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) Close() {
	p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
