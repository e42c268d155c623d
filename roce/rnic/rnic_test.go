package rnic

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/verbs"
)

func TestBasicVerbs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		faults netio.Faults
	}{{"clean", netio.Faults{}}, {"lossy", lossy(1)}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t, tc.faults, fastCfg(), fastCfg())
			cs, ss := p.qps(t, 1, 0xfffff0)
			c, s := cs[0], ss[0]
			remote := make([]byte, 64<<10)
			rmr, err := p.srv.Register(remote, verbs.AccessAll)
			if err != nil {
				t.Fatal(err)
			}
			local := make([]byte, 64<<10)
			lmr, err := p.cli.Register(local, verbs.AccessAll)
			if err != nil {
				t.Fatal(err)
			}
			for i := range local {
				local[i] = byte(i * 7)
			}
			// WRITE 10000 bytes (10 packets at MTU 1024), then READ them back.
			err = c.PostSend([]verbs.SendWR{
				{ID: 1, Op: verbs.OpWrite, SG: []verbs.SGE{{Addr: lmr.Addr(), Length: 10000, LKey: lmr.LKey()}}, RemoteAddr: rmr.Addr() + 8, RKey: rmr.RKey(), Flags: verbs.Signaled},
				{ID: 2, Op: verbs.OpRead, SG: []verbs.SGE{{Addr: lmr.Addr() + 32768, Length: 10000, LKey: lmr.LKey()}}, RemoteAddr: rmr.Addr() + 8, RKey: rmr.RKey(), Flags: verbs.Signaled},
			})
			if err != nil {
				t.Fatal(err)
			}
			wcs := waitN(t, p.cliCQ, 2, 10*time.Second)
			for i, wc := range wcs {
				if wc.Status != verbs.StatusSuccess || wc.ID != uint64(i+1) || wc.ByteLen != 10000 {
					t.Fatalf("completion %d: %+v", i, wc)
				}
			}
			if !bytes.Equal(remote[8:10008], local[:10000]) {
				t.Fatal("WRITE did not land")
			}
			if !bytes.Equal(local[32768:32768+10000], local[:10000]) {
				t.Fatal("READ returned wrong data")
			}
			// CMP_SWAP then FETCH_ADD on the word at offset 16.
			binary.LittleEndian.PutUint64(remote[16:], 5)
			err = c.PostSend([]verbs.SendWR{
				{ID: 3, Op: verbs.OpCompareSwap, SG: []verbs.SGE{{Addr: lmr.Addr(), Length: 8, LKey: lmr.LKey()}}, RemoteAddr: rmr.Addr() + 16, RKey: rmr.RKey(), Compare: 5, SwapAdd: 9, Flags: verbs.Signaled},
				{ID: 4, Op: verbs.OpFetchAdd, SG: []verbs.SGE{{Addr: lmr.Addr() + 8, Length: 8, LKey: lmr.LKey()}}, RemoteAddr: rmr.Addr() + 16, RKey: rmr.RKey(), SwapAdd: 100, Flags: verbs.Signaled},
			})
			if err != nil {
				t.Fatal(err)
			}
			wcs = waitN(t, p.cliCQ, 2, 10*time.Second)
			if wcs[0].Orig != 5 || wcs[1].Orig != 9 || wcs[0].Status != 0 || wcs[1].Status != 0 {
				t.Fatalf("atomics: %+v", wcs)
			}
			if got := binary.LittleEndian.Uint64(remote[16:]); got != 109 {
				t.Fatalf("word after CAS+FADD = %d, want 109", got)
			}
			if binary.LittleEndian.Uint64(local[0:]) != 5 || binary.LittleEndian.Uint64(local[8:]) != 9 {
				t.Fatal("atomic original values not written to the local buffer")
			}
			// SEND with immediate into a posted receive.
			rbuf := make([]byte, 4096)
			rbmr, _ := p.srv.Register(rbuf, verbs.AccessLocalWrite)
			if err := s.PostRecv([]verbs.RecvWR{{ID: 77, SG: []verbs.SGE{{Addr: rbmr.Addr(), Length: 4096, LKey: rbmr.LKey()}}}}); err != nil {
				t.Fatal(err)
			}
			if err := c.PostSend([]verbs.SendWR{{ID: 5, Op: verbs.OpSendImm, Imm: 0xabcd, SG: []verbs.SGE{{Addr: lmr.Addr() + 100, Length: 3000, LKey: lmr.LKey()}}, Flags: verbs.Signaled}}); err != nil {
				t.Fatal(err)
			}
			wcs = waitN(t, p.cliCQ, 1, 10*time.Second)
			if wcs[0].Status != 0 || wcs[0].ID != 5 {
				t.Fatalf("send: %+v", wcs)
			}
			rw := waitN(t, p.srvCQ, 1, 10*time.Second)
			if rw[0].ID != 77 || rw[0].ByteLen != 3000 || !rw[0].HasImm || rw[0].Imm != 0xabcd || rw[0].Op != verbs.OpRecv {
				t.Fatalf("recv: %+v", rw)
			}
			if !bytes.Equal(rbuf[:3000], local[100:3100]) {
				t.Fatal("SEND payload wrong")
			}
			t.Logf("stats: cli %+v", p.cli.Stats())
			t.Logf("stats: srv %+v", p.srv.Stats())
		})
	}
}
