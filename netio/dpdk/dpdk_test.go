//go:build dpdk

package dpdk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/swordbox/swordbox/netio"
)

// The EAL lives once per process: every test shares one, made on first use
// with a loopback ring vdev (what net_ring0 transmits on a queue it receives
// on the same queue).
var (
	ealOnce sync.Once
	ealErr  error
	ealArgs []string
	poolSeq atomic.Int32
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func needEAL(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("DPDK tests need root")
	}
	ealOnce.Do(func() {
		ealArgs = VirtualArgs(fmt.Sprintf("swordbox-test-%d", os.Getpid()), "net_ring0")
		ealErr = Init(ealArgs)
	})
	if ealErr != nil {
		t.Fatal(ealErr)
	}
}

func newPool(t testing.TB, n int) *Mempool {
	t.Helper()
	p, err := NewMempool(fmt.Sprintf("test%d", poolSeq.Add(1)), n, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Free) // after the ports using it are drained and closed
	return p
}

// ringPort opens net_ring0 and, when the test ends, empties its ring (the
// mbufs in it belong to this test's pool) and closes it.
func ringPort(t testing.TB, pool *Mempool) *EthPort {
	t.Helper()
	p, err := OpenPort("net_ring0", PortConfig{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ms := make([]*Mbuf, MaxBurst)
		for !p.closed.Load() {
			n := p.RxBurst(0, ms)
			if n == 0 {
				break
			}
			FreeBulk(ms[:n])
		}
		p.Close()
	})
	return p
}

func frame(seq, size int) []byte {
	f := make([]byte, size)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	binary.BigEndian.PutUint32(f[14:], uint32(seq))
	for i := 18; i < size; i++ {
		f[i] = byte(seq*7 + i)
	}
	return f
}

func newBufs(n int) [][]byte {
	b := make([][]byte, n)
	for i := range b {
		b[i] = make([]byte, netio.MaxFrameSize)
	}
	return b
}

func TestInitOncePerProcess(t *testing.T) {
	needEAL(t)
	if err := Init(ealArgs); err != nil {
		t.Fatalf("Init with the same arguments: %v", err)
	}
	if err := Init(VirtualArgs("other", "net_null0")); err == nil {
		t.Fatal("Init with other arguments succeeded")
	}
	if _, err := PortByName("no_such_port"); err == nil {
		t.Fatal("found a port that does not exist")
	}
	if _, err := NewMempool("bad", 0, 0, 0); err == nil {
		t.Fatal("made an empty mempool")
	}
}

func TestPortMovesFramesOverRing(t *testing.T) {
	needEAL(t)
	pool := newPool(t, 1023)
	p := ringPort(t, pool)
	before, err := p.Stats() // device counters outlive a port's Close
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{60, 64, 128, 1024, 1500, 4096, netio.MaxFrameSize}
	var want [][]byte
	for i := range 200 {
		want = append(want, frame(i, sizes[i%len(sizes)]))
	}
	for i := 0; i < len(want); i += 50 {
		if n, err := p.Send(want[i : i+50]); n != 50 || err != nil {
			t.Fatalf("Send = %d, %v", n, err)
		}
	}
	bufs := newBufs(MaxBurst)
	got := 0
	for got < len(want) {
		n, err := p.Recv(bufs)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range bufs[:n] {
			if !bytes.Equal(f, want[got]) {
				t.Fatalf("frame %d: got %d bytes, want %d, contents differ", got, len(f), len(want[got]))
			}
			got++
		}
	}
	st, err := p.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.TxPackets-before.TxPackets != 200 || st.RxPackets-before.RxPackets != 200 || st.TxDropped != 0 {
		t.Fatalf("stats %+v", st)
	}
	// net_ring holds no RX descriptors of its own: every mbuf is back.
	if a := pool.Available(); a != 1023 {
		t.Fatalf("pool has %d of 1023 mbufs free after the run: leak", a)
	}
	if _, err := p.Send([][]byte{make([]byte, netio.MaxFrameSize+1)}); err == nil {
		t.Fatal("oversize frame accepted")
	}
}

func TestRecvTruncatesAndCloseUnblocks(t *testing.T) {
	needEAL(t)
	p := ringPort(t, newPool(t, 511))
	p.Send([][]byte{frame(1, 300)})
	bufs := [][]byte{make([]byte, 0, 100)}
	if n, err := p.Recv(bufs); n != 1 || err != nil || len(bufs[0]) != 100 {
		t.Fatalf("Recv = %d, %v, len %d", n, err, len(bufs[0]))
	}
	if st, _ := p.Stats(); st.Truncated != 1 {
		t.Fatalf("stats %+v", st)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Recv(newBufs(1))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	p.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, netio.ErrClosed) {
			t.Fatalf("Recv after Close = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Recv still polling after Close")
	}
	if _, err := p.Send([][]byte{frame(1, 64)}); !errors.Is(err, netio.ErrClosed) {
		t.Fatalf("Send after Close = %v", err)
	}
}

// TestZeroCopyBurstEditsInPlace does what the middlebox does: receive
// mbufs, rewrite them in place (shrink a CAS into a WRITE, grow an ACK into
// an ATOMIC ACK, strip and restore the Ethernet header) and transmit them.
func TestZeroCopyBurstEditsInPlace(t *testing.T) {
	needEAL(t)
	pool := newPool(t, 255)
	p := ringPort(t, pool)
	start := pool.Available()
	ms := make([]*Mbuf, 4)
	if err := pool.AllocBulk(ms); err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if err := m.SetData(frame(i, 86)); err != nil {
			t.Fatal(err)
		}
	}
	if n := p.TxBurst(0, ms); n != 4 {
		t.Fatalf("TxBurst = %d", n)
	}
	rx := make([]*Mbuf, 8)
	n := 0
	for deadline := time.Now().Add(time.Second); n < 4 && time.Now().Before(deadline); {
		n += p.RxBurst(0, rx[n:])
	}
	if n != 4 {
		t.Fatalf("RxBurst got %d of 4", n)
	}
	m := rx[0]
	if m.Len() != 86 || m.Segments() != 1 || !bytes.Equal(m.Data(), frame(0, 86)) {
		t.Fatalf("received mbuf: len %d segs %d", m.Len(), m.Segments())
	}
	m.Data()[20] = 0xee // in place
	tests := []struct {
		name    string
		edit    func() error
		wantLen int
	}{
		{"trim 4 (CAS to WRITE)", func() error { return m.Trim(4) }, 82},
		{"append 8 (ACK to ATOMIC ACK)", func() error {
			b, err := m.Append(8)
			if err == nil {
				copy(b, "origdata")
			}
			return err
		}, 90},
		{"adj 14 (strip Ethernet)", func() error { return m.Adj(14) }, 76},
		{"prepend 14 (new Ethernet)", func() error {
			b, err := m.Prepend(14)
			if err == nil {
				copy(b, frame(9, 18)[:14])
			}
			return err
		}, 90},
	}
	for _, tc := range tests {
		if err := tc.edit(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if m.Len() != tc.wantLen || len(m.Data()) != tc.wantLen {
			t.Fatalf("%s: len %d/%d, want %d", tc.name, m.Len(), len(m.Data()), tc.wantLen)
		}
	}
	want := append(append(frame(9, 18)[:14], frame(0, 86)[14:82]...), "origdata"...)
	want[20] = 0xee
	if !bytes.Equal(m.Data(), want) {
		t.Fatalf("edited frame\n% x\nwant\n% x", m.Data(), want)
	}
	// Out-of-range edits fail and change nothing.
	for name, err := range map[string]error{
		"trim":     m.Trim(m.Len() + 1),
		"adj":      m.Adj(m.Len() + 1),
		"append":   func() error { _, err := m.Append(m.Tailroom() + 1); return err }(),
		"prepend":  func() error { _, err := m.Prepend(m.Headroom() + 1); return err }(),
		"negative": m.Trim(-1),
	} {
		if err == nil {
			t.Errorf("%s out of range succeeded", name)
		}
	}
	if m.Len() != 90 {
		t.Fatalf("failed edits changed the frame: len %d", m.Len())
	}
	// Forward the edited frame; receive it through the copying Port.
	if p.TxBurst(0, rx[:1]) != 1 {
		t.Fatal("TxBurst of the edited frame failed")
	}
	FreeBulk(rx[1:n])
	bufs := newBufs(1)
	if k, err := p.Recv(bufs); k != 1 || err != nil || !bytes.Equal(bufs[0], want) {
		t.Fatalf("Recv = %d, %v; frame differs", k, err)
	}
	if got := pool.Available(); got != start {
		t.Fatalf("pool has %d free mbufs, had %d: leak", got, start)
	}
}

func TestPoolExhaustion(t *testing.T) {
	needEAL(t)
	pool := newPool(t, 63)
	ms := make([]*Mbuf, 63)
	if err := pool.AllocBulk(ms); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Alloc(); err == nil {
		t.Fatal("allocated from an empty pool")
	}
	p, err := OpenPort("net_ring0", PortConfig{Pool: newPool(t, 63), TxDesc: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendPool := p.pool
	p.pool = pool // empty: Send must fail, not block or crash
	if _, err := p.Send([][]byte{frame(1, 64)}); err == nil {
		t.Fatal("Send from an empty pool succeeded")
	}
	p.pool = sendPool
	FreeBulk(ms)
	if pool.Available() != 63 {
		t.Fatalf("pool has %d free after FreeBulk", pool.Available())
	}
}

// TestInitLeavesGoThreadsUnpinned checks the reason Init runs on a thread
// of its own: rte_eal_init pins its caller to the main lcore's CPU (-l 0),
// and no Go thread may keep that pinning.
func TestInitLeavesGoThreadsUnpinned(t *testing.T) {
	needEAL(t)
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	// Start goroutines so the runtime has threads made after Init too.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); time.Sleep(10 * time.Millisecond) }()
	}
	wg.Wait()
	self, _ := os.ReadFile("/proc/self/comm")
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	goThreads := 0
	for _, task := range tasks {
		comm, err := os.ReadFile("/proc/self/task/" + task.Name() + "/comm")
		if err != nil || !bytes.Equal(comm, self) {
			continue // a DPDK control thread (eal-intr-thread, rte_mp_handle, ...)
		}
		tid, _ := strconv.Atoi(task.Name())
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // the thread exited meanwhile
		}
		goThreads++
		if set != all {
			t.Errorf("thread %d (%s) is pinned to %d CPUs of %d", tid, bytes.TrimSpace(comm), set.Count(), all.Count())
		}
	}
	if goThreads == 0 {
		t.Fatal("found no Go threads to check")
	}
}
