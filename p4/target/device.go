package target

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/swordbox/swordbox/netio"
)

// Options configure a Device.
type Options struct {
	// CPUPort is the port number of the CPU port (simple_switch_grpc's
	// --cpu-port): frames the program sends there go to PacketIn in Run,
	// and PacketOut frames enter the pipeline with it as ingress port.
	// 0 means no CPU port (port 0 is then an ordinary port).
	CPUPort uint32
	// PacketIn receives, in Run, every frame the pipeline sends to
	// CPUPort (with the program's packet_in header in front). The slice is
	// valid only during the call. Nil drops them.
	PacketIn func(frame []byte)
	// RandomSeed seeds the generator of tna's Random extern (0: a fixed
	// seed); the sequence is the same for the same seed and packets.
	RandomSeed uint64
	// Now returns standard_metadata's ingress/egress_global_timestamp in
	// microseconds (48 bits). Nil: microseconds since NewDevice.
	Now func() uint64
}

// counterRT is the runtime state of an indexed counter.
type counterRT struct {
	packets, bytes []uint64
}

// Device is one switch running a Program: the runtime state (table
// entries, registers, counters, direct counters) and the pipeline.
//
// Every method is safe for concurrent use. One mutex orders all packets
// and control-plane operations: each packet runs through the whole
// pipeline atomically, so packets from different ports see each other's
// register updates in one total order, as on a hardware pipeline and in
// BMv2's single ingress thread. The steering logic of swordbox.p4 relies on
// that order.
type Device struct {
	prog     *Program
	opts     Options
	start    time.Time
	mu       sync.Mutex
	tables   []*tableRT
	regs     [][]uint64
	counters []counterRT
	meters   [][]meterState
	digestQs []digestQ
	profs    []*profRT
	groups   map[uint32]*mcGroup      // multicast groups by id
	sessions map[uint32]*cloneSession // clone sessions by id
	copies   int                      // copies made of the packet being processed
	pool     sync.Pool
	stats    Stats
	rng      uint64   // tna's Random
	pktSeq   uint64   // tna: packets through passTNA (from 1)
	regSeen  []uint64 // tna: per register, the pktSeq of its last access
}

// Stats are the Device's own packet counts.
type Stats struct {
	In, Out, Dropped, ParserErrors uint64
	// CopyLimit counts copies dropped because one received packet
	// already made maxCopies (multicast and clones); ReentryLimit packets
	// dropped because they were resubmitted or recirculated more than
	// maxReentry times in a row.
	CopyLimit, ReentryLimit uint64
	// Resubmits counts the tna packets resubmitted (Resubmit): each ran
	// ingress twice.
	Resubmits uint64
	// DigestDrops counts digest records dropped because their queue was
	// full (nobody took them with TakeDigests).
	DigestDrops uint64
	// RegisterReaccesses counts the times a tna program accessed a
	// register (RegisterAction, read, write) it had already accessed for
	// the same packet: Tofino cannot (a register sits in one stage).
	RegisterReaccesses uint64
}

// NewDevice makes a device running p, with empty tables (except the
// program's const/initial entries), zeroed registers and counters.
func NewDevice(p *Program, o Options) *Device {
	d := &Device{prog: p, opts: o, start: time.Now(), groups: map[uint32]*mcGroup{}, sessions: map[uint32]*cloneSession{}}
	for _, t := range p.tables {
		d.tables = append(d.tables, newTableRT(t))
	}
	d.regSeen = make([]uint64, len(p.registers))
	d.rng = o.RandomSeed
	if d.rng == 0 {
		d.rng = 0x9E3779B97F4A7C15
	}
	for i, r := range p.registers {
		// Skew each array by i cache lines: same-index cells of registers
		// whose sizes are powers of two would otherwise all fall into one
		// L1 cache set.
		skew := 8 * (i % 64)
		cells := make([]uint64, r.size+skew)[skew:][:r.size:r.size]
		if r.init != 0 {
			for j := range cells {
				cells[j] = r.init
			}
		}
		d.regs = append(d.regs, cells)
	}
	for _, c := range p.counters {
		d.counters = append(d.counters, counterRT{packets: make([]uint64, c.size), bytes: make([]uint64, c.size)})
	}
	for _, m := range p.meters {
		d.meters = append(d.meters, make([]meterState, m.size))
	}
	for _, x := range p.profiles {
		d.profs = append(d.profs, &profRT{c: x, t: x.table, members: map[uint32]*apMember{}, groups: map[uint32]*apGroup{}})
	}
	for _, dg := range p.digests {
		d.digestQs = append(d.digestQs, digestQ{vals: make([]uint64, digestQueueCap*len(dg.fields)), nf: len(dg.fields), recordsCap: digestQueueCap})
	}
	outCap := netio.MaxFrameSize + p.outSlack
	d.pool.New = func() any {
		return &pktState{
			slots:   make([]uint64, p.nslots),
			dev:     d,
			out:     make([]byte, 0, outCap),
			keyBuf:  make([]byte, 0, 8*16),
			dataBuf: make([]byte, 0, maxDataBytes+8),
			hoff1:   make([]int32, len(p.hdrBases)),
			dirty:   make([]bool, len(p.hdrBases)),
		}
	}
	return d
}

// Program returns the program the device runs.
func (d *Device) Program() *Program { return d.prog }

// Stats returns a snapshot of the device's packet counts.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// hdrBytes is the size of all headers; the output buffer needs that much
// beyond the frame, plus 8 bytes of slack for the word-wide encoder.
func (p *Program) hdrBytes() int {
	return p.hdrAllBytes
}

func (d *Device) now() uint64 {
	if d.opts.Now != nil {
		return d.opts.Now() & mask(48)
	}
	return uint64(time.Since(d.start)/time.Microsecond) & mask(48)
}

// Process runs the v1model pipeline (parser, verifyChecksum, ingress,
// egress, computeChecksum, deparser) on one frame that arrived on
// ingressPort. emit is called once for the output frame unless the program
// drops it; the slice is valid only during the call, and emit must not
// call back into the Device. Frames the program sends to the CPU port are
// emitted with egressPort == Options.CPUPort like any other. Process does
// not allocate in steady state.
//
// As in BMv2, a parser error does not drop the packet: ingress runs with
// standard_metadata.parser_error set, and the unparsed bytes are the payload.
// A packet that is multicast, cloned, resubmitted or recirculated may leave
// as several copies (or none): emit is then called once per copy, with the
// Device's lock held.
func (d *Device) Process(ingressPort uint32, frame []byte, emit func(egressPort uint32, frame []byte)) {
	s := d.pool.Get().(*pktState)
	d.mu.Lock()
	var port uint32
	ok := false
	d.stats.In++
	if ingressPort > 511 {
		d.stats.Dropped++
	} else if d.prog.tna != nil {
		port, ok = d.passTNA(s, ingressPort, frame)
	} else {
		d.copies = 0
		port, ok = d.pass(s, ingressPort, frame, emit, nil)
	}
	d.mu.Unlock()
	if ok && emit != nil {
		emit(port, s.out)
	}
	s.pkt = nil
	d.pool.Put(s)
}

// pass runs one packet through the whole pipeline; re is set for a packet
// that enters ingress again (resubmitted or recirculated). The usual case
// (one copy) returns the copy's port with ok; a packet that replication,
// cloning, resubmission or recirculation turns into other copies is
// emitted here (with d.mu held) and ok is false.
func (d *Device) pass(s *pktState, in uint32, frame []byte, emit func(uint32, []byte), re *reentry) (uint32, bool) {
	p := d.prog
	clear(s.slots)
	clear(s.hoff1)
	s.pkt, s.off, s.exited, s.pre = frame, 0, false, 0
	s.out = s.out[:0]
	s.tsSet = false
	s.clone.set = false
	s.pending, s.depth = 0, 0
	s.slots[p.smIngressPort] = uint64(in)
	s.slots[p.smPacketLength] = uint64(len(frame)) & mask(32)
	if re != nil {
		for _, k := range re.keep {
			s.slots[k] = re.from[k]
		}
		s.slots[p.smInstanceType] = re.instance
		s.depth = re.depth
	}
	if !p.parser.run(s) {
		d.stats.ParserErrors++
	}
	p.verify.run(s)
	p.ingress.run(s)
	if s.pending != 0 || s.slots[p.smMcastGrp] != 0 {
		d.replicate(s, frame, emit)
		return 0, false
	}
	if s.slots[p.smEgressSpec] == dropPort {
		d.stats.Dropped++
		return 0, false
	}
	s.slots[p.smEgressPort] = s.slots[p.smEgressSpec]
	p.egress.run(s)
	if s.pending != 0 {
		d.finishEgress(s, frame, emit, 1, 0)
		return 0, false
	}
	if s.slots[p.smEgressSpec] == dropPort {
		d.stats.Dropped++
		return 0, false
	}
	// deparseInto, inlined on the usual path (s.out is empty).
	p.compute.run(s)
	if need := len(frame) + p.outSlack; cap(s.out) < need {
		s.out = make([]byte, 0, need)
	}
	p.deparser.run(s)
	if s.off < len(frame) {
		s.out = append(s.out, frame[s.off:]...)
	}
	d.stats.Out++
	return uint32(s.slots[p.smEgressPort]), true
}

// deparse runs computeChecksum and the deparser into s.out and appends
// the payload.
func (d *Device) deparse(s *pktState, frame []byte) {
	p := d.prog
	p.compute.run(s)
	deparseInto(s, p.deparser, frame, p.outSlack)
}

// deparseInto runs the deparser dep into s.out and appends the payload:
// the bytes of in past the parser's cursor.
func deparseInto(s *pktState, dep *controlC, in []byte, slack int) {
	s.out = s.out[:0]
	if need := len(in) + slack; cap(s.out) < need {
		s.out = make([]byte, 0, need)
	}
	dep.run(s)
	if s.off < len(in) {
		s.out = append(s.out, in[s.off:]...)
	}
}

// Run moves frames between the netio ports (keyed by port number) and the
// pipeline, one goroutine per port, until ctx is done. Frames for the CPU
// port go to Options.PacketIn; frames for a port not in the map are
// dropped. When ctx is done Run closes the ports (that is how a blocked
// Recv is released) and returns ctx.Err() once every goroutine has ended;
// a port failure ends Run early with that error.
func (d *Device) Run(ctx context.Context, ports map[uint32]netio.Port) error {
	if len(ports) == 0 {
		return errors.New("p4 target: Run needs at least one port")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, len(ports))
	for id, port := range ports {
		wg.Add(1)
		go func(id uint32, port netio.Port) {
			defer wg.Done()
			if err := d.portLoop(id, port, ports); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("p4 target: port %d (%s): %w", id, port.Name(), err)
				cancel()
			}
		}(id, port)
	}
	<-ctx.Done()
	for _, port := range ports {
		port.Close()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	return ctx.Err()
}

func (d *Device) portLoop(id uint32, port netio.Port, ports map[uint32]netio.Port) error {
	const burst = 32
	bufs := make([][]byte, burst)
	for i := range bufs {
		bufs[i] = make([]byte, netio.MaxFrameSize)
	}
	out := make([][]byte, 1)
	emit := func(eg uint32, frame []byte) {
		if eg == d.opts.CPUPort && d.opts.CPUPort != 0 {
			if d.opts.PacketIn != nil {
				d.opts.PacketIn(frame)
			}
			return
		}
		if p, ok := ports[eg]; ok {
			out[0] = frame
			p.Send(out)
			out[0] = nil
		}
	}
	for {
		for i := range bufs {
			bufs[i] = bufs[i][:cap(bufs[i])]
		}
		n, err := port.Recv(bufs)
		if err != nil {
			if errors.Is(err, netio.ErrClosed) {
				return nil
			}
			return err
		}
		for i := 0; i < n; i++ {
			d.Process(id, bufs[i], emit)
		}
	}
}
