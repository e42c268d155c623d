package rnic

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// AckMode selects when the responder acknowledges.
type AckMode uint8

const (
	// AckCoalesced sends one cumulative ACK per receive burst and QP (or
	// every AckCoalesceMax AckReq packets), the way ConnectX NICs coalesce.
	AckCoalesced AckMode = iota
	// AckEach acknowledges every AckReq packet at once.
	AckEach
)

// Config configures a Device. The zero value of every field selects the
// default named in its comment.
type Config struct {
	// Name labels the device in errors; default the port's name.
	Name string
	// MAC and IP are the device's addresses (one RNIC = one MAC/IP).
	MAC [6]byte
	IP  [4]byte
	// MTU is the default path MTU: 256, 512, 1024 (default), 2048 or 4096.
	MTU int
	// SkipICRC turns ICRC verification of received frames off, as memory
	// nodes behind a steering switch run (the switch rewrites without
	// recomputing the ICRC). Transmitted frames always carry a correct ICRC.
	SkipICRC bool
	// Workers shards the responder over this many goroutines by QPN, so
	// requests of different QPs are applied in an order that differs from
	// their arrival order (SwordBox section 3.1, Figure 2). 0 (default)
	// runs the responder on the receive loop: arrival order.
	Workers int
	// AckMode and AckCoalesceMax (default 16) set the ACK policy.
	AckMode        AckMode
	AckCoalesceMax int
	// Timeout is the requester's local ACK timeout (default 8ms; a
	// ConnectX default of 14 would be 67ms, far beyond in-memory RTTs).
	Timeout time.Duration
	// RetryCount is the number of retransmissions on timeout before the
	// QP fails with RETRY_EXC_ERR (default 7, the IBA maximum).
	RetryCount int
	// RNRRetry is the number of RNR retries (default 7, which the IBA
	// defines as infinite).
	RNRRetry int
	// RNRTimer is the delay the responder asks for in RNR NAKs (default
	// 100us, rounded up to an IBA timer code); MinRNRDelay is the least the
	// requester waits whatever the code says (default 0).
	RNRTimer    time.Duration
	MinRNRDelay time.Duration
	// MaxRdAtomic limits READ and atomic requests outstanding per QP
	// (max_rd_atomic; default 16, as ConnectX-5).
	MaxRdAtomic int
	// MaxSendWR and MaxRecvWR are the default queue sizes (default 1024).
	MaxSendWR, MaxRecvWR int
	// RxBurst is how many frames the receive loop takes at once (default 32).
	RxBurst int
	// DeviceMemory is the size of NIC device memory AllocDM can hand out
	// (default 256 KiB, the ConnectX-5 on-chip memory Sherman uses).
	DeviceMemory int
	// Timing enables the NIC timing model; nil (default) runs untimed.
	Timing *Timing
	// OnAtomic, if set, observes every atomic the responder executes (not
	// the replay of a duplicate), right after it changed memory and under
	// no lock: now is the device's clock (virtual time on a virtual
	// device), mem the 8-byte word's region, orig the word's value before.
	// It must not block; tests use it to timestamp commits at the memory.
	OnAtomic func(a ExecutedAtomic)
}

// ExecutedAtomic is an atomic as the responder executed it.
type ExecutedAtomic struct {
	Now                    int64 // the device's clock, ns
	MR                     *MR   // the region of the word
	VA                     uint64
	CAS                    bool // CMP_SWAP; else FETCH_ADD
	Compare, SwapAdd, Orig uint64
}

// Swapped reports whether the atomic changed the word: a CMP_SWAP whose
// compare matched, or a FETCH_ADD of a non-zero addend.
func (a ExecutedAtomic) Swapped() bool {
	if a.CAS {
		return a.Orig == a.Compare && a.SwapAdd != a.Orig
	}
	return a.SwapAdd != 0
}

func (c *Config) defaults() error {
	if c.MTU == 0 {
		c.MTU = 1024
	}
	if !validMTU(c.MTU) {
		return fmt.Errorf("MTU %d not one of 256, 512, 1024, 2048, 4096", c.MTU)
	}
	if c.AckCoalesceMax <= 0 {
		c.AckCoalesceMax = 16
	}
	if c.Timeout <= 0 {
		c.Timeout = 8 * time.Millisecond
	}
	if c.RetryCount <= 0 {
		c.RetryCount = 7
	}
	if c.RNRRetry <= 0 {
		c.RNRRetry = 7
	}
	if c.RNRTimer <= 0 {
		c.RNRTimer = 100 * time.Microsecond
	}
	if c.MaxRdAtomic <= 0 {
		c.MaxRdAtomic = 16
	}
	if c.MaxSendWR <= 0 {
		c.MaxSendWR = 1024
	}
	if c.MaxRecvWR <= 0 {
		c.MaxRecvWR = 1024
	}
	if c.RxBurst <= 0 {
		c.RxBurst = 32
	}
	if c.DeviceMemory <= 0 {
		c.DeviceMemory = 256 << 10
	}
	if c.Workers < 0 {
		return fmt.Errorf("negative worker count %d", c.Workers)
	}
	return nil
}

// qpnBase is the first QPN a device hands out (QPNs 0 and 1 are special in
// the IBA).
const qpnBase = 0x100

// Device is a software RNIC on one netio.Port: one MAC/IP, many QPs. It
// implements verbs.Device.
type Device struct {
	cfg    Config
	port   netio.Port
	mrs    mrTable
	timing *timingModel
	epoch  time.Time
	clock  func() int64 // virtual time in ns (NewVirtual); nil: since epoch

	qpMu sync.Mutex
	qps  atomic.Pointer[[]*QP]

	dmMu   sync.Mutex
	dmUsed int

	batches sync.Pool
	workers []chan *rxItem
	free    chan *rxItem

	stop   chan struct{}
	wg     sync.WaitGroup
	wgWork sync.WaitGroup
	closed atomic.Bool

	stats devCounters

	// onRetryExceeded, when set (by tests), sees the send queue of a QP
	// that is about to fail with RETRY_EXC_ERR.
	onRetryExceeded atomic.Pointer[func(state string)]
}

type devCounters struct {
	rxFrames, rxNotRoCE, rxBadICRC, rxNotMine, rxUnknownQP atomic.Uint64
	txFrames, txDropped, txErrors                          atomic.Uint64
	stalls                                                 atomic.Uint64
}

// Stats are a device's counters.
type Stats struct {
	RxFrames, RxNotRoCE, RxBadICRC, RxNotForUs, RxUnknownQP uint64
	TxFrames, TxDropped, TxBuildErrors                      uint64
	// Summed over QPs.
	Retransmits, Timeouts, SeqNAKsReceived, RNRNAKsReceived uint64
	Duplicates, SeqNAKsSent, RNRNAKsSent, ACKsSent          uint64
	AtomicsExecuted                                         uint64
	// TimerStalls counts timer ticks that came so late that the host must
	// have stalled; retransmission deadlines were pushed back by the stall.
	TimerStalls uint64
}

var _ verbs.Device = (*Device)(nil)

// New starts a device on port. The device owns the port from now on and
// closes it in Close.
func New(port netio.Port, cfg Config) (*Device, error) {
	if cfg.Name == "" {
		cfg.Name = port.Name()
	}
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("rnic %s: %w", cfg.Name, err)
	}
	d := &Device{cfg: cfg, port: port, epoch: time.Now(), stop: make(chan struct{})}
	if cfg.Timing != nil {
		d.timing = newTimingModel(d, *cfg.Timing)
	}
	d.batches.New = func() any { return newTxBatch(d, 32) }
	if cfg.Workers > 0 {
		d.free = make(chan *rxItem, 256*cfg.Workers)
		for i := 0; i < cap(d.free); i++ {
			d.free <- &rxItem{buf: make([]byte, 0, netio.MaxFrameSize)}
		}
		d.workers = make([]chan *rxItem, cfg.Workers)
		for i := range d.workers {
			d.workers[i] = make(chan *rxItem, 256)
			d.wgWork.Add(1)
			go d.workerLoop(d.workers[i])
		}
	}
	d.wg.Add(2)
	go d.rxLoop()
	go d.timerLoop()
	return d, nil
}

// Config returns the device configuration with defaults applied.
func (d *Device) Config() Config { return d.cfg }

// MAC returns the device's MAC address.
func (d *Device) MAC() [6]byte { return d.cfg.MAC }

// IP returns the device's IPv4 address.
func (d *Device) IP() [4]byte { return d.cfg.IP }

// Name returns the device's name.
func (d *Device) Name() string { return d.cfg.Name }

func (d *Device) now() int64 {
	if d.clock != nil {
		return d.clock()
	}
	return int64(time.Since(d.epoch))
}

// Close stops the device's loops and closes its port. QPs still holding
// work are moved to ERR.
func (d *Device) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	close(d.stop)
	err := d.port.Close()
	d.wg.Wait()
	for _, w := range d.workers {
		close(w)
	}
	d.wgWork.Wait()
	if p := d.qps.Load(); p != nil {
		for _, q := range *p {
			if q != nil && q.State() != verbs.StateReset {
				q.ToErr()
			}
		}
	}
	if err != nil && !errors.Is(err, netio.ErrClosed) {
		return fmt.Errorf("rnic %s: close: %w", d.cfg.Name, err)
	}
	return nil
}

// Register registers buf as a host memory region.
func (d *Device) Register(buf []byte, access verbs.Access) (*MR, error) {
	m, err := d.mrs.register(buf, access, false)
	if err != nil {
		return nil, fmt.Errorf("rnic %s: %w", d.cfg.Name, err)
	}
	return m, nil
}

// RegisterMR implements verbs.Device.
func (d *Device) RegisterMR(buf []byte, access verbs.Access) (verbs.MemoryRegion, error) {
	return d.Register(buf, access)
}

// AllocDM allocates size bytes of NIC device memory and registers them as a
// zero-based region with its own rkey (ibv_alloc_dm + ibv_reg_dm_mr).
// Device memory is limited to Config.DeviceMemory bytes in total.
func (d *Device) AllocDM(size int, access verbs.Access) (*MR, error) {
	d.dmMu.Lock()
	defer d.dmMu.Unlock()
	if size <= 0 || d.dmUsed+size > d.cfg.DeviceMemory {
		return nil, fmt.Errorf("rnic %s: alloc device memory: %d bytes requested, %d of %d free", d.cfg.Name, size, d.cfg.DeviceMemory-d.dmUsed, d.cfg.DeviceMemory)
	}
	m, err := d.mrs.register(make([]byte, size), access, true)
	if err != nil {
		return nil, fmt.Errorf("rnic %s: device memory: %w", d.cfg.Name, err)
	}
	d.dmUsed += size
	return m, nil
}

// Deregister removes a region: later accesses with its keys fail.
func (d *Device) Deregister(m *MR) error {
	if err := d.mrs.deregister(m); err != nil {
		return fmt.Errorf("rnic %s: %w", d.cfg.Name, err)
	}
	if m.device {
		d.dmMu.Lock()
		d.dmUsed -= len(m.buf)
		d.dmMu.Unlock()
	}
	return nil
}

// NewCQ creates a completion queue with room for depth completions before
// it grows.
func (d *Device) NewCQ(depth int) *CQ { return newCQ(depth) }

// CreateCQ implements verbs.Device.
func (d *Device) CreateCQ(depth int) (verbs.CQ, error) { return newCQ(depth), nil }

// NewQP creates an RC queue pair in RESET.
func (d *Device) NewQP(cfg verbs.QPConfig) (*QP, error) {
	scq, ok1 := cfg.SendCQ.(*CQ)
	rcq, ok2 := cfg.RecvCQ.(*CQ)
	if !ok1 || !ok2 || scq == nil || rcq == nil {
		return nil, fmt.Errorf("rnic %s: create qp: send and receive CQs must be CQs of this RNIC", d.cfg.Name)
	}
	if cfg.MaxSendWR <= 0 {
		cfg.MaxSendWR = d.cfg.MaxSendWR
	}
	if cfg.MaxRecvWR <= 0 {
		cfg.MaxRecvWR = d.cfg.MaxRecvWR
	}
	q := &QP{dev: d, sendCQ: scq, recvCQ: rcq, sigAll: cfg.SignalAll}
	q.sq.ring = make([]wqe, cfg.MaxSendWR)
	q.rq.ring = make([]recvWQE, cfg.MaxRecvWR)
	d.qpMu.Lock()
	defer d.qpMu.Unlock()
	var old []*QP
	if p := d.qps.Load(); p != nil {
		old = *p
	}
	if qpnBase+len(old) > roce.MaxQP {
		return nil, fmt.Errorf("rnic %s: create qp: out of QPNs", d.cfg.Name)
	}
	next := make([]*QP, len(old)+1)
	copy(next, old)
	q.qpn = uint32(qpnBase + len(old))
	next[len(old)] = q
	d.qps.Store(&next)
	return q, nil
}

// CreateQP implements verbs.Device.
func (d *Device) CreateQP(cfg verbs.QPConfig) (verbs.QP, error) { return d.NewQP(cfg) }

// QP returns the queue pair with number qpn, or nil.
func (d *Device) QP(qpn uint32) *QP {
	p := d.qps.Load()
	if p == nil || qpn < qpnBase || int(qpn-qpnBase) >= len(*p) {
		return nil
	}
	return (*p)[qpn-qpnBase]
}

// Stats returns the device counters, with the per-QP counters summed.
func (d *Device) Stats() Stats {
	s := Stats{
		RxFrames: d.stats.rxFrames.Load(), RxNotRoCE: d.stats.rxNotRoCE.Load(), RxBadICRC: d.stats.rxBadICRC.Load(),
		RxNotForUs: d.stats.rxNotMine.Load(), RxUnknownQP: d.stats.rxUnknownQP.Load(),
		TxFrames: d.stats.txFrames.Load(), TxDropped: d.stats.txDropped.Load(), TxBuildErrors: d.stats.txErrors.Load(),
		TimerStalls: d.stats.stalls.Load(),
	}
	if p := d.qps.Load(); p != nil {
		for _, q := range *p {
			q.sq.mu.Lock()
			s.Retransmits += q.sq.retransmits
			s.Timeouts += q.sq.timeouts
			s.SeqNAKsReceived += q.sq.seqNAKs
			s.RNRNAKsReceived += q.sq.rnrNAKs
			q.sq.mu.Unlock()
			q.rq.mu.Lock()
			s.Duplicates += q.rq.duplicates
			s.SeqNAKsSent += q.rq.seqNAKsSent
			s.RNRNAKsSent += q.rq.rnrNAKsSent
			s.ACKsSent += q.rq.acksSent
			s.AtomicsExecuted += q.rq.atomicsDone
			q.rq.mu.Unlock()
		}
	}
	return s
}

// txBatch collects frames and sends them in bursts; it is the engines'
// emitter.
type txBatch struct {
	d      *Device
	bufs   [][]byte
	frames [][]byte
	n      int
}

func newTxBatch(d *Device, n int) *txBatch {
	b := &txBatch{d: d, bufs: make([][]byte, n), frames: make([][]byte, n)}
	for i := range b.bufs {
		b.bufs[i] = make([]byte, netio.MaxFrameSize)
	}
	return b
}

func (d *Device) getBatch() *txBatch { return d.batches.Get().(*txBatch) }

func (d *Device) putBatch(b *txBatch) {
	b.flush()
	d.batches.Put(b)
}

func (b *txBatch) emit(q *QP, p txPkt) {
	if b.n == len(b.bufs) {
		b.flush()
	}
	d := b.d
	f := roce.Fields{
		DstMAC: q.path.RemoteMAC, SrcMAC: d.cfg.MAC,
		SrcIP: d.cfg.IP, DstIP: q.path.RemoteIP,
		IPID: uint16(q.ipID.Add(1)), DontFragment: true, TTL: 64,
		SrcPort: q.udpSrc,
		Opcode:  p.op, SE: p.se, MigReq: true, PKey: 0xffff,
		DestQP: q.path.RemoteQPN, AckReq: p.ackReq, PSN: uint32(p.psn),
		VA: p.va, RKey: p.rkey, DMALen: p.dmaLen,
		SwapAdd: p.swapAdd, Compare: p.compare,
		Syndrome: p.syndrome, MSN: p.msn & roce.MaxMSN,
		Orig: p.orig, Imm: p.imm,
		Payload: p.payload,
		PadCnt:  uint8((4 - len(p.payload)%4) % 4),
	}
	n, err := roce.Build(b.bufs[b.n], &f)
	if err != nil {
		d.stats.txErrors.Add(1)
		return
	}
	b.frames[b.n] = b.bufs[b.n][:n]
	b.n++
}

func (b *txBatch) flush() {
	if b.n == 0 {
		return
	}
	sent, err := b.d.port.Send(b.frames[:b.n])
	if err != nil && sent < 0 {
		sent = 0
	}
	b.d.stats.txFrames.Add(uint64(sent))
	if sent < b.n {
		b.d.stats.txDropped.Add(uint64(b.n - sent))
	}
	b.n = 0
}

// rxItem carries a request to a responder worker.
type rxItem struct {
	q   *QP
	req rxReq
	buf []byte
}

// rxState is the per-goroutine scratch of a receive path.
type rxState struct {
	pkt     roce.Packet
	b       *txBatch
	touched []*QP
}

func (st *rxState) touch(q *QP) {
	for _, t := range st.touched {
		if t == q {
			return
		}
	}
	st.touched = append(st.touched, q)
}

// endBurst sends the coalesced ACKs of the QPs touched in a burst and
// flushes the transmit batch.
func (st *rxState) endBurst() {
	for i, q := range st.touched {
		q.rq.mu.Lock()
		q.rq.flushAck(q, st.b)
		q.rq.mu.Unlock()
		st.touched[i] = nil
	}
	st.touched = st.touched[:0]
	st.b.flush()
}

func (d *Device) rxLoop() {
	defer d.wg.Done()
	n := d.cfg.RxBurst
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = make([]byte, netio.MaxFrameSize)
	}
	st := &rxState{b: newTxBatch(d, 32), touched: make([]*QP, 0, n)}
	for {
		for i := range bufs {
			bufs[i] = bufs[i][:cap(bufs[i])]
		}
		k, err := d.port.Recv(bufs)
		if err != nil {
			return
		}
		now := d.now()
		for i := 0; i < k; i++ {
			d.handleFrame(bufs[i], now, st)
		}
		st.endBurst()
	}
}

// handleFrame decodes one frame and runs the engine it belongs to.
func (d *Device) handleFrame(frame []byte, now int64, st *rxState) {
	d.handleFrameTo(frame, now, st, st.b)
}

func (d *Device) handleFrameTo(frame []byte, now int64, st *rxState, em emitter) {
	d.stats.rxFrames.Add(1)
	p := &st.pkt
	if err := roce.ParseInto(p, frame); err != nil {
		d.stats.rxNotRoCE.Add(1)
		return
	}
	if p.IP.Dst() != d.cfg.IP {
		d.stats.rxNotMine.Add(1)
		return
	}
	if !d.cfg.SkipICRC && !p.ICRCOK() {
		d.stats.rxBadICRC.Add(1)
		return
	}
	q := d.QP(p.BTH.DestQP())
	if q == nil {
		d.stats.rxUnknownQP.Add(1)
		return
	}
	op := p.Opcode
	if isRequestOp(op) {
		var r rxReq
		r.op, r.psn, r.ackReq, r.se = op, roce.PSN(p.BTH.PSN()), p.BTH.AckReq(), p.BTH.SE()
		if p.RETH != nil {
			r.va, r.rkey, r.dmaLen = p.RETH.VA(), p.RETH.RKey(), p.RETH.DMALen()
		}
		if p.AtomicETH != nil {
			r.va, r.rkey = p.AtomicETH.VA(), p.AtomicETH.RKey()
			r.swapAdd, r.compare = p.AtomicETH.SwapAdd(), p.AtomicETH.Compare()
		}
		if p.ImmDt != nil {
			r.imm = p.ImmDt.Imm()
		}
		r.payload = p.Payload
		if len(d.workers) > 0 {
			it := <-d.free
			it.q = q
			it.buf = append(it.buf[:0], r.payload...)
			r.payload = it.buf
			it.req = r
			d.workers[q.qpn%uint32(len(d.workers))] <- it
			return
		}
		q.rq.mu.Lock()
		q.rq.onRequest(q, &r, em)
		q.rq.mu.Unlock()
		st.touch(q)
		return
	}
	var r rxResp
	r.op, r.psn = op, roce.PSN(p.BTH.PSN())
	if p.AETH != nil {
		r.syndrome, r.msn = p.AETH.Syndrome(), p.AETH.MSN()
	}
	if p.AtomicAckETH != nil {
		r.orig = p.AtomicAckETH.Orig()
	}
	r.payload = p.Payload
	q.sq.mu.Lock()
	q.sq.onResponse(q, &r, now, em)
	q.sq.mu.Unlock()
}

// workerLoop is one responder shard.
func (d *Device) workerLoop(in chan *rxItem) {
	defer d.wgWork.Done()
	st := &rxState{b: newTxBatch(d, 32), touched: make([]*QP, 0, 32)}
	for it := range in {
		for k := 1; it != nil; k++ {
			q := it.q
			q.rq.mu.Lock()
			q.rq.onRequest(q, &it.req, st.b)
			q.rq.mu.Unlock()
			st.touch(q)
			it.q, it.req.payload = nil, nil
			d.free <- it
			it = nil
			if k < 32 {
				select {
				case nx, ok := <-in:
					if !ok {
						st.endBurst()
						return
					}
					it = nx
				default:
				}
			}
		}
		st.endBurst()
	}
}

// timerLoop drives retransmission timers and RNR waits.
func (d *Device) timerLoop() {
	defer d.wg.Done()
	period := d.cfg.Timeout / 4
	if period < 100*time.Microsecond {
		period = 100 * time.Microsecond
	}
	if m := d.cfg.MinRNRDelay; m > 0 && m < period {
		period = m
	}
	t := time.NewTicker(period)
	defer t.Stop()
	b := newTxBatch(d, 32)
	var prev int64
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		now := d.now()
		// A tick far later than its period means the whole process did
		// not run (a loaded host): the responses that would have stopped
		// the timers are still queued, unprocessed. Timers measure time the
		// host ran, so they are pushed back by the stall.
		var stall int64
		if prev != 0 && now-prev > 4*int64(period) {
			stall = now - prev - int64(period)
			d.stats.stalls.Add(1)
		}
		prev = now
		p := d.qps.Load()
		if p == nil {
			continue
		}
		for _, q := range *p {
			q.sq.mu.Lock()
			if q.sq.n > 0 {
				if stall > 0 && q.sq.timerOn {
					q.sq.deadline += stall
				}
				q.sq.tick(q, now, b)
			}
			q.sq.mu.Unlock()
		}
		b.flush()
	}
}
