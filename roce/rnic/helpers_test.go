package rnic

import (
	"context"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// pair is two devices joined by an in-memory link: a client and a memory
// node, each with one CQ.
type pair struct {
	cli, srv     *Device
	cliCQ, srvCQ *CQ
	linkA, linkB *netio.LinkPort
}

func newPair(t testing.TB, faults netio.Faults, cfgC, cfgS Config) *pair {
	t.Helper()
	fa, fb := faults, faults
	if fb.Seed != 0 {
		fb.Seed++
	}
	a, b, err := netio.NewLink("cli", "srv", netio.LinkConfig{AtoB: fa, BtoA: fb, Capacity: 4096})
	if err != nil {
		t.Fatal(err)
	}
	cfgC.MAC, cfgC.IP = [6]byte{2, 0, 0, 0, 0, 1}, [4]byte{10, 0, 0, 1}
	cfgS.MAC, cfgS.IP = [6]byte{2, 0, 0, 0, 0, 2}, [4]byte{10, 0, 0, 2}
	cli, err := New(a, cfgC)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(b, cfgS)
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{cli: cli, srv: srv, cliCQ: cli.NewCQ(256), srvCQ: srv.NewCQ(256), linkA: a, linkB: b}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return p
}

// qps creates n connected QP pairs; client QP i starts at PSN psn+i*7919
// (near the 24-bit wrap when psn is), the server's at a different PSN.
func (p *pair) qps(t testing.TB, n int, psn uint32) ([]*QP, []*QP) {
	t.Helper()
	var cs, ss []*QP
	for i := 0; i < n; i++ {
		c, err := p.cli.NewQP(verbs.QPConfig{SendCQ: p.cliCQ, RecvCQ: p.cliCQ})
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.srv.NewQP(verbs.QPConfig{SendCQ: p.srvCQ, RecvCQ: p.srvCQ})
		if err != nil {
			t.Fatal(err)
		}
		if err := Connect(c, s, uint32(roce.PSN(psn).Add(i*7919)), uint32(roce.PSN(psn).Add(i*104729+5))); err != nil {
			t.Fatal(err)
		}
		cs, ss = append(cs, c), append(ss, s)
	}
	return cs, ss
}

// waitN waits for n completions on cq.
func waitN(t testing.TB, cq *CQ, n int, d time.Duration) []verbs.WC {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out := make([]verbs.WC, 0, n)
	buf := make([]verbs.WC, 64)
	for len(out) < n {
		k, err := cq.Wait(ctx, buf)
		if err != nil {
			t.Fatalf("waiting for %d completions, got %d: %v (%+v)", n, len(out), err, out)
		}
		out = append(out, buf[:k]...)
	}
	return out
}

// lossy are the faults of the conformance tests: drop, reorder and
// duplicate, seeded.
func lossy(seed int64) netio.Faults {
	return netio.Faults{Drop: 0.05, Duplicate: 0.05, Reorder: 0.1, ReorderDepth: 4, ReorderHold: 200 * time.Microsecond, Seed: seed}
}

func fastCfg() Config {
	if raceEnabled {
		return Config{Timeout: 100 * time.Millisecond, RetryCount: 7}
	}
	// The machine is shared and loaded: a loop may not run for tens of
	// milliseconds. A timeout shorter than that fails QPs for no fault of
	// the protocol (7 retries x 30ms without any progress is a real stall).
	return Config{Timeout: 30 * time.Millisecond, RetryCount: 7}
}
