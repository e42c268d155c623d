package rnic

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce/verbs"
)

func TestConnectionManager(t *testing.T) {
	for _, mode := range []string{"tcp", "local"} {
		t.Run(mode, func(t *testing.T) {
			p := newPair(t, lossy(9), Config{MTU: 4096, Timeout: fastCfg().Timeout}, Config{MTU: 2048})
			mem := make([]byte, 1<<20)
			rm, _ := p.srv.Register(mem, verbs.AccessAll)
			acc := &Acceptor{Dev: p.srv, Regions: []verbs.RemoteRegion{rm.Remote()}}
			var dialer verbs.Dialer
			addr := "node0"
			if mode == "tcp" {
				ln, err := Listen("127.0.0.1:0", acc)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				addr = ln.Addr().String()
				dialer = &Dialer{Dev: p.cli}
			} else {
				dialer = &LocalDialer{Dev: p.cli, Nodes: map[string]*Acceptor{addr: acc}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for i := 0; i < 3; i++ {
				conn, err := dialer.Dial(ctx, addr, verbs.QPConfig{SendCQ: p.cliCQ, RecvCQ: p.cliCQ})
				if err != nil {
					t.Fatal(err)
				}
				q := conn.QP.(*QP)
				if q.State() != verbs.StateRTS || q.MTU() != 2048 || len(conn.Remote) != 1 || conn.Remote[0] != rm.Remote() {
					t.Fatalf("conn %+v state %s mtu %d", conn, q.State(), q.MTU())
				}
				peer := p.srv.QP(q.Path().RemoteQPN)
				if peer == nil || peer.Path().RemoteQPN != q.QPN() || peer.MTU() != 2048 {
					t.Fatalf("server side QP %v", peer)
				}
				lm, _ := p.cli.Register(make([]byte, 8), verbs.AccessAll)
				r := conn.Remote[0]
				if err := q.PostSend([]verbs.SendWR{{ID: 1, Op: verbs.OpFetchAdd, SG: []verbs.SGE{{Addr: lm.Addr(), Length: 8, LKey: lm.LKey()}}, RemoteAddr: r.Addr + 64, RKey: r.RKey, SwapAdd: 1, Flags: verbs.Signaled}}); err != nil {
					t.Fatal(err)
				}
				w := waitN(t, p.cliCQ, 1, 5*time.Second)
				if w[0].Status != 0 || w[0].Orig != uint64(i) {
					t.Fatalf("%+v", w)
				}
			}
			if binary.LittleEndian.Uint64(mem[64:]) != 3 {
				t.Fatal("counter")
			}
		})
	}
}
