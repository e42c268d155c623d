package sherman_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swordbox/swordbox/roce"
)

// mboxTraceDir, when set, makes the Sherman rack tests record every frame
// through the middlebox and, when a test fails, write them as text there
// (one line per frame; a debugging aid, off by default).
var mboxTraceDir = flag.String("sherman.mbox-trace", "", "on failure, write the middlebox's frames of the failing test to this directory")

type traceRec struct {
	at          int64
	side        uint8
	sent        bool
	src, dst    byte
	sport       uint16
	qp          uint32
	op          roce.Opcode
	psn         uint32
	syn         roce.Syndrome
	msn         uint32
	hasAETH     bool
	va          uint64
	bad         bool
	swap, cmp   uint64
	atomic, rth bool
	icrcBad     bool
}

type mboxTracer struct {
	mu    sync.Mutex
	start time.Time
	recs  []traceRec
	pkt   roce.Packet
}

// tap is a testbed.ShermanConfig.MboxTap.
func (tr *mboxTracer) tap(side int, sent bool, f []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	r := traceRec{at: int64(time.Since(tr.start)), side: uint8(side), sent: sent}
	p := &tr.pkt
	if err := roce.ParseInto(p, f); err != nil {
		r.bad = true
		tr.recs = append(tr.recs, r)
		return
	}
	r.src, r.dst = p.IP[roce.IPv4SrcOff+3], p.IP[roce.IPv4DstOff+3]
	r.sport, r.qp, r.op, r.psn = p.UDP.SrcPort(), p.BTH.DestQP(), p.Opcode, p.BTH.PSN()
	r.icrcBad = !p.ICRCOK()
	if p.AETH != nil {
		r.hasAETH, r.syn, r.msn = true, p.AETH.Syndrome(), p.AETH.MSN()
	}
	if p.RETH != nil {
		r.rth, r.va = true, p.RETH.VA()
	}
	if p.AtomicETH != nil {
		r.atomic, r.va, r.swap, r.cmp = true, p.AtomicETH.VA(), p.AtomicETH.SwapAdd(), p.AtomicETH.Compare()
	}
	tr.recs = append(tr.recs, r)
}

// dump writes the records to dir/<test name>.txt when t failed.
func (tr *mboxTracer) dump(t *testing.T, dir string) {
	if !t.Failed() {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	name := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".txt")
	f, err := os.Create(name)
	if err != nil {
		t.Log(err)
		return
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	for _, r := range tr.recs {
		dir := "rx"
		if r.sent {
			dir = "tx"
		}
		fmt.Fprintf(w, "%d %d %s ", r.at/1000, r.side, dir)
		if r.bad {
			fmt.Fprintln(w, "nonroce")
			continue
		}
		fmt.Fprintf(w, "%d>%d sport=%#x qp=%#x op=%v psn=%#x", r.src, r.dst, r.sport, r.qp, r.op, r.psn)
		if r.hasAETH {
			fmt.Fprintf(w, " syn=%#x msn=%d", uint8(r.syn), r.msn)
		}
		if r.rth || r.atomic {
			fmt.Fprintf(w, " va=%#x", r.va)
		}
		if r.atomic {
			fmt.Fprintf(w, " cmp=%#x swap=%#x", r.cmp, r.swap)
		}
		if r.icrcBad {
			fmt.Fprint(w, " BADICRC")
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	t.Logf("middlebox trace: %s (%d frames)", name, len(tr.recs))
}
