package netns

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// hub forwards frames between in-memory links by destination MAC: the
// switch's forward table without the switch, so the host roles can be
// tested without root.
type hub struct {
	ports map[[6]byte]netio.Port
	all   []netio.Port
}

func newHub(t *testing.T, members int) (*hub, []netio.Port) {
	h := &hub{ports: map[[6]byte]netio.Port{}}
	hosts := make([]netio.Port, members)
	for m := 0; m < members; m++ {
		sw, host := netio.Pipe()
		h.ports[testbed.HostMAC(m)] = sw
		h.all = append(h.all, sw)
		hosts[m] = host
	}
	for _, p := range h.all {
		go func(p netio.Port) {
			bufs := make([][]byte, 16)
			for i := range bufs {
				bufs[i] = make([]byte, netio.MaxFrameSize)
			}
			for {
				for i := range bufs {
					bufs[i] = bufs[i][:cap(bufs[i])]
				}
				n, err := p.Recv(bufs)
				if err != nil {
					return
				}
				for _, f := range bufs[:n] {
					var dst [6]byte
					copy(dst[:], f)
					if out, ok := h.ports[dst]; ok {
						out.Send([][]byte{f})
					}
				}
			}
		}(p)
	}
	t.Cleanup(func() {
		for _, p := range h.all {
			p.Close()
		}
	})
	return h, hosts
}

func device(t *testing.T, port netio.Port, m int, skipICRC bool) *rnic.Device {
	d, err := rnic.New(port, rnic.Config{Name: fmt.Sprintf("m%d", m), MAC: testbed.HostMAC(m), IP: testbed.HostIP(m), SkipICRC: skipICRC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestHostRoles runs a memory node (as swordbox memnode does: zeroed region
// behind the connection manager), the metadata server role and two client
// host roles in one process over an in-memory hub, and drives them through
// the command protocol.
func TestHostRoles(t *testing.T) {
	const keys, threads, hosts = 64, 4, 2
	_, ports := newHub(t, 2+hosts)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	layout := CloverLayout(keys, 4)
	mem := device(t, ports[0], 0, true)
	mr, err := mem.Register(make([]byte, layout.Size()), verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	mln, err := rnic.Listen("127.0.0.1:0", &rnic.Acceptor{Dev: mem, Regions: []verbs.RemoteRegion{mr.Remote()}})
	if err != nil {
		t.Fatal(err)
	}
	defer mln.Close()

	msOut := newLines()
	msDone := make(chan error, 1)
	go func() {
		msDone <- RunMS(ctx, MSConfig{Listen: "127.0.0.1:0", Memory: mln.Addr().String(), Keys: keys, Chunks: 4, Threads: threads},
			device(t, ports[1], 1, false), msOut)
	}()
	ready := msOut.wait(t, func(l string) bool { return strings.HasPrefix(l, "clover ms: ready") })
	// The header is what InitRegion writes.
	mn, got, err := clover.ReadRegionHeader(mr.Bytes())
	if err != nil || mn != 0 || got != layout {
		t.Fatalf("region header: node %d layout %+v err %v, want node 0 layout %+v", mn, got, err, layout)
	}
	_, rest, _ := strings.Cut(ready, "connection manager on ")
	msAddr, _, _ := strings.Cut(rest, ",")

	type host struct {
		in  *io.PipeWriter
		out *lines
		err chan error
	}
	hs := make([]host, hosts)
	for h := range hs {
		r, w := io.Pipe()
		hs[h] = host{in: w, out: newLines(), err: make(chan error, 1)}
		cfg := ClientsConfig{Host: h, Hosts: hosts, Threads: threads, Memory: mln.Addr().String(), MS: msAddr,
			Workload: ycsb.WorkloadA, Keys: keys, ValueSize: 32, Zipf: 0.99, Seed: 1,
			Warmup: 100 * time.Millisecond, Duration: 300 * time.Millisecond}
		dev := device(t, ports[2+h], 2+h, false)
		go func(h int) { hs[h].err <- RunClients(ctx, cfg, dev, r, hs[h].out) }(h)
		hs[h].out.event(t, "ready")
	}
	for _, step := range [][2]string{{CmdLoad, "loaded"}, {CmdWarmup, "warm"}, {CmdRun, "result"}} {
		for _, h := range hs {
			fmt.Fprintln(h.in, step[0])
		}
		for i, h := range hs {
			e := h.out.event(t, step[1])
			if step[1] != "result" {
				continue
			}
			r := e.Result
			if r == nil || r.Ops == 0 || r.Errors != 0 || r.Threads != threads/hosts || r.Host != i || r.All == nil {
				t.Fatalf("host %d result %+v", i, r)
			}
			if r.Metrics.Verbs == 0 || r.Metrics.CAS == 0 {
				t.Errorf("host %d: %d verbs, %d CAS over %d ops", i, r.Metrics.Verbs, r.Metrics.CAS, r.Ops)
			}
		}
	}
	// Every key was created once, by one host.
	if st := msStats(t, ctx, msOut, cancel, msDone); !strings.Contains(st, fmt.Sprintf("clover ms: %d keys", keys)) {
		t.Errorf("metadata server: %q, want %d keys", st, keys)
	}
	for _, h := range hs {
		h.in.Close()
		if err := <-h.err; err != nil {
			t.Errorf("clients: %v", err)
		}
	}
}

func msStats(t *testing.T, ctx context.Context, out *lines, cancel context.CancelFunc, done chan error) string {
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ms: %v", err)
	}
	return out.wait(t, func(l string) bool { return strings.Contains(l, " keys, ") })
}

func TestRunClientsRefusesBadHost(t *testing.T) {
	_, ports := newHub(t, 1)
	var out strings.Builder
	err := RunClients(context.Background(), ClientsConfig{Host: 2, Hosts: 2, Threads: 4}, device(t, ports[0], 0, false), strings.NewReader(""), &out)
	if err == nil || !strings.Contains(out.String(), `"event":"error"`) {
		t.Fatalf("err %v, out %q", err, out.String())
	}
}

// lines collects what a role writes, line by line.
type lines struct {
	w  *io.PipeWriter
	ch chan string
}

func newLines() *lines {
	r, w := io.Pipe()
	l := &lines{w: w, ch: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<16), 64<<20)
		for sc.Scan() {
			l.ch <- sc.Text()
		}
	}()
	return l
}

func (l *lines) Write(p []byte) (int, error) { return l.w.Write(p) }

func (l *lines) wait(t *testing.T, match func(string) bool) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case s := <-l.ch:
			if match(s) {
				return s
			}
		case <-timeout:
			t.Fatal("no matching line in 30s")
		}
	}
}

func (l *lines) event(t *testing.T, want string) Event {
	t.Helper()
	var e Event
	l.wait(t, func(s string) bool {
		if json.Unmarshal([]byte(s), &e) != nil {
			return false
		}
		if e.Event == "error" {
			t.Fatalf("error event: %s", e.Error)
		}
		return e.Event == want
	})
	return e
}
