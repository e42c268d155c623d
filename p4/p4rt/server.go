// Package p4rt serves P4Runtime (github.com/p4lang/p4runtime v1.5.0) over
// gRPC for the Go target (p4/target; programs for v1model or TNA), the way
// simple_switch_grpc serves BMv2, so that a controller cannot tell the two
// apart. It also runs the switch's data plane: it moves frames between
// netio ports and the target's pipeline, and maps the CPU port to PacketIn
// and PacketOut.
//
// It owns: Capabilities; SetForwardingPipelineConfig (VERIFY,
// VERIFY_AND_SAVE, COMMIT, VERIFY_AND_COMMIT) and
// GetForwardingPipelineConfig, where the device config is the P4 source text
// the target compiles; Write and Read of table, register, counter, direct
// counter, meter, direct meter, digest, action profile member and group,
// and packet replication engine entries (multicast groups, clone sessions); DigestList and DigestListAck
// (digest.go); StreamChannel with arbitration by election ID, PacketIn and
// PacketOut. It does not own the P4 language, the pipeline semantics or the
// table state: those are p4/target's.
//
// Response codes follow the P4Runtime specification's text (v1.5.0); the
// conformance tests (conformance_test.go) check each with a gRPC client.
// Decisions where the specification leaves room:
//   - The P4Info of SetForwardingPipelineConfig must equal, in substance, the
//     P4Info the target derives from the P4 source: every object's ID, name,
//     alias and shape must match; documentation, annotations, source
//     locations and pkg_info are ignored, as is the order of objects.
//     Anything else is INVALID_ARGUMENT, so a controller holding a P4Info of
//     another program version fails loudly instead of writing to wrong IDs.
//     A BMv2 JSON as device config is INVALID_ARGUMENT with a message that
//     says to send the P4 source instead.
//   - GetForwardingPipelineConfig before any pipeline is OK with the config
//     unset; COMMIT without a saved pipeline is NOT_FOUND.
//   - Write supports all three atomicity modes. CONTINUE_ON_ERROR applies
//     every update. ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC apply the
//     updates in order until one fails, then undo the applied ones in
//     reverse order (each update's undo is read from the state before it);
//     the whole batch runs under the mutex the data plane takes for every
//     frame, so no packet sees it half done, which makes it
//     DATAPLANE_ATOMIC too. A failed atomic batch reports every update: the
//     failing one with its code, the others ABORTED (rolled back, or not
//     attempted). A re-inserted table entry reads back after the others.
//   - A batch with failed updates fails with UNKNOWN and one p4.v1.Error per
//     update, in order, in the status details (OK for the others); a Read
//     batch with failed requests sends the other requests' entities, then
//     UNKNOWN with one p4.v1.Error per request. The status is kept under
//     7 KiB of trailers, because a status above the client's metadata
//     limit (8 KiB by default in gRPC C core, hence grpcio, p4runtime-shell
//     and finsy) never arrives: the client sees INTERNAL from a reset
//     stream. Above the budget, the messages of all failures but the first
//     are dropped (codes kept); above it still, the details are dropped and
//     the status message names the number of failures, the first one's
//     index, code and message, and the indexes and codes of as many more as
//     fit. Measured: with 26-byte messages, up to 79 failed updates keep
//     their messages and up to 135 their codes (111-byte messages: 34 and
//     133); beyond that, send smaller batches to learn each update's code.
//   - Entities this target cannot have (value sets, externs: the compiler
//     refuses programs that declare them): a wildcard read finds none, a
//     read or write naming an ID is NOT_FOUND.
//   - Idle timeouts: once an entry has a TTL, a loop scans every 10 ms (the
//     specification's example) and sends one IdleTimeoutNotification per
//     table with expired entries to the primary of every role (dropped,
//     counted, when the stream queue is full).
//   - Digests: lists are made as the specification's pseudo-code says
//     (buffer of distinct messages, cache until ack or ack_timeout_ns). A
//     loop takes the data plane's records every millisecond while a digest
//     is enabled (so max_timeout_ns is honoured to about 1 ms); records made
//     while a digest is not enabled are dropped. Lists go to the primary of
//     every role, dropped (counted) when its stream queue is full. Acks are
//     taken from the primary only; an ack for a digest that is not enabled
//     is a StreamError NOT_FOUND.
//   - A request naming another device ID fails with NOT_FOUND; Write and
//     SetForwardingPipelineConfig from anyone but the primary of the role
//     fail with PERMISSION_DENIED; Write, Read and PacketOut before a
//     pipeline is committed fail with FAILED_PRECONDITION (PacketOut errors
//     arrive as StreamError).
//   - Arbitration follows the specification (section 5): per role, the
//     highest election ID ever accepted wins; when the primary leaves, every
//     stream is told NOT_FOUND and nobody is primary until a client announces
//     an ID at least as high. Role configs are UNIMPLEMENTED.
//   - PacketIn goes to the primary of every role; a full stream queue drops
//     the packet (counted), as a NIC queue would.
//   - The data plane serializes all pipeline work (frames, PacketOut, table
//     and register access) on one mutex: the target's state is then never
//     touched concurrently, and a committed pipeline replaces the old one
//     between two frames.
package p4rt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/target"
)

// APIVersion is the P4Runtime version Capabilities reports.
const APIVersion = "1.5.0"

// DefaultCPUPort is the CPU port of swordbox.p4 (its CPU_PORT constant).
const DefaultCPUPort = 255

// Options configure a Server.
type Options struct {
	// DeviceID is the P4Runtime device_id the switch answers to.
	DeviceID uint64
	// CPUPort is the pipeline port mapped to PacketIn and PacketOut; it
	// must equal the program's CPU port constant. 0 means DefaultCPUPort.
	CPUPort uint32
	// Ports are the front-panel ports by pipeline port number. The server
	// owns them from New on: Close closes them.
	Ports map[uint32]netio.Port
	// Burst is the number of frames read from a port at a time (default 32).
	Burst int
	// Logf, if set, receives one line per notable event (pipeline changes).
	Logf func(format string, args ...any)
	// Now, if set, is the data plane's clock (target.Options.Now:
	// microseconds) for every pipeline committed; nil: wall clock.
	Now func() uint64
}

// Stats are the data plane's counters.
type Stats struct {
	RxFrames       uint64 // frames received on front-panel ports
	TxFrames       uint64 // frames sent out of front-panel ports
	DroppedNoPipe  uint64 // frames received while no pipeline was committed
	DroppedNoPort  uint64 // frames emitted to a port that does not exist
	PacketIns      uint64 // PacketIn messages queued to a primary
	PacketInDrops  uint64 // PacketIns lost: no primary, full queue or malformed
	PacketOuts     uint64 // PacketOut frames injected
	SendErrors     uint64 // port Send errors
	PipelineCommit uint64 // pipelines committed
	DigestLists    uint64 // DigestList messages queued to a primary
	DigestDrops    uint64 // DigestLists lost: no primary or full queue
	IdleNotes      uint64 // IdleTimeoutNotifications queued to a primary
	IdleDrops      uint64 // IdleTimeoutNotifications lost: no primary or full queue
}

// pipeline is one compiled, verified forwarding pipeline.
type pipeline struct {
	info   *configv1.P4Info // as the client sent it (returned by Get)
	source []byte           // the P4 source (p4_device_config)
	cookie *p4v1.ForwardingPipelineConfig_Cookie
	prog   *target.Program
}

// Server is a P4Runtime server and the data plane of one switch.
type Server struct {
	p4v1.UnimplementedP4RuntimeServer

	opts    Options
	cpuPort uint32
	arb     *arbiter

	// mu guards the committed and saved pipelines and the device, and
	// serializes every call into the device.
	mu     sync.Mutex
	pipe   *pipeline
	saved  *pipeline
	dev    *target.Device
	emitFn func(uint32, []byte)
	one    [1][]byte
	pout   []byte // PacketOut scratch
	prim   []*conn
	dg     *digests      // digest configs, buffers and caches of the committed pipeline
	wake   chan struct{} // a digest was enabled: the digest loop starts ticking
	idle   chan struct{} // an entry got an idle timeout: the idle loop starts scanning
	stop   chan struct{} // closed by Close

	stats struct {
		rx, tx, noPipe, noPort, pin, pinDrop, pout, sendErr, commits, digestLists, digestDrops, idleNotes, idleDrops atomic.Uint64
	}

	startOnce, closeOnce sync.Once
	wg                   sync.WaitGroup
	closed               atomic.Bool
}

// New returns a server with no pipeline. Call Start to run the data plane
// and Register to serve gRPC.
func New(opts Options) *Server {
	if opts.CPUPort == 0 {
		opts.CPUPort = DefaultCPUPort
	}
	if opts.Burst <= 0 {
		opts.Burst = 32
	}
	s := &Server{opts: opts, cpuPort: opts.CPUPort, arb: newArbiter(opts.DeviceID),
		wake: make(chan struct{}, 1), idle: make(chan struct{}, 1), stop: make(chan struct{})}
	s.emitFn = s.emit
	return s
}

// Register registers the P4Runtime service on g.
func (s *Server) Register(g *grpc.Server) { p4v1.RegisterP4RuntimeServer(g, s) }

// Start runs one receive loop per front-panel port.
func (s *Server) Start() {
	s.startOnce.Do(func() {
		for id, p := range s.opts.Ports {
			s.wg.Add(1)
			go s.portLoop(id, p)
		}
		s.wg.Add(2)
		go s.digestLoop()
		go s.idleLoop()
	})
}

// Close closes the ports and waits for the receive loops to end.
func (s *Server) Close() error {
	var errs []error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		for _, p := range s.opts.Ports {
			if err := p.Close(); err != nil {
				errs = append(errs, fmt.Errorf("p4rt: close port %s: %w", p.Name(), err))
			}
		}
		s.wg.Wait()
	})
	return errors.Join(errs...)
}

// Stats returns a snapshot of the data plane counters.
func (s *Server) Stats() Stats {
	return Stats{
		RxFrames: s.stats.rx.Load(), TxFrames: s.stats.tx.Load(),
		DroppedNoPipe: s.stats.noPipe.Load(), DroppedNoPort: s.stats.noPort.Load(),
		PacketIns: s.stats.pin.Load(), PacketInDrops: s.stats.pinDrop.Load(),
		PacketOuts: s.stats.pout.Load(), SendErrors: s.stats.sendErr.Load(),
		PipelineCommit: s.stats.commits.Load(),
		DigestLists:    s.stats.digestLists.Load(), DigestDrops: s.stats.digestDrops.Load(),
		IdleNotes: s.stats.idleNotes.Load(), IdleDrops: s.stats.idleDrops.Load(),
	}
}

// LoadPipeline compiles the P4 source and commits it with the P4Info the
// target derives, as if a controller had pushed it (swordbox switch --p4).
func (s *Server) LoadPipeline(filename string, src []byte) error {
	p, err := s.build(filename, src, nil, nil)
	if err != nil {
		return errors.New(grpcstatus.Convert(err).Message())
	}
	s.commit(p)
	return nil
}

// P4Info returns the P4Info of the committed pipeline, or nil.
func (s *Server) P4Info() *configv1.P4Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pipe == nil {
		return nil
	}
	return s.pipe.info
}

// build compiles src and checks info (nil: take the compiler's) against it.
func (s *Server) build(filename string, src []byte, info *configv1.P4Info, cookie *p4v1.ForwardingPipelineConfig_Cookie) (*pipeline, error) {
	if isBMv2JSON(src) {
		return nil, grpcstatus.Error(codes.InvalidArgument, "p4_device_config is a BMv2 JSON (p4c's output for simple_switch); "+
			"this target compiles the P4 program itself: send the P4 source text as p4_device_config "+
			"(p4runtime-shell: --config program.p4info.txtpb,program.p4; finsy: P4ConfigSet(p4info=..., p4blob=Path(\"program.p4\")); "+
			"the P4Info may stay p4c's)")
	}
	prog, err := target.Compile(filename, src)
	if err != nil {
		return nil, grpcstatus.Error(codes.InvalidArgument, err.Error())
	}
	derived := prog.P4Info()
	if info == nil {
		info = derived
	} else if err := sameP4Info(info, derived); err != nil {
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "p4info does not match the P4 program: %v", err)
	}
	return &pipeline{info: info, source: append([]byte(nil), src...), cookie: cookie, prog: prog}, nil
}

// isBMv2JSON reports whether a device config is a BMv2 JSON: a JSON object
// with the top-level keys p4c's BMv2 back end writes.
func isBMv2JSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	_, headers := top["header_types"]
	_, pipes := top["pipelines"]
	return headers || pipes
}

// commit installs p with fresh runtime state (empty tables, zero registers
// and counters), between two frames.
func (s *Server) commit(p *pipeline) {
	dev := target.NewDevice(p.prog, target.Options{CPUPort: s.cpuPort, Now: s.opts.Now})
	s.mu.Lock()
	s.pipe, s.dev, s.saved = p, dev, nil
	s.dg = newDigests(p.info)
	s.mu.Unlock()
	s.stats.commits.Add(1)
	s.logf("p4rt: pipeline committed (%d tables, %d registers, %d counters)",
		len(p.info.GetTables()), len(p.info.GetRegisters()), len(p.info.GetCounters()))
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}

// portLoop moves frames from one port into the pipeline.
func (s *Server) portLoop(id uint32, p netio.Port) {
	defer s.wg.Done()
	bufs := make([][]byte, s.opts.Burst)
	for i := range bufs {
		bufs[i] = make([]byte, netio.MaxFrameSize)
	}
	for {
		for i := range bufs {
			bufs[i] = bufs[i][:cap(bufs[i])]
		}
		n, err := p.Recv(bufs)
		if err != nil {
			if errors.Is(err, netio.ErrClosed) || s.closed.Load() {
				return
			}
			// A transient error (an interface going down) must not stop
			// the port for good.
			s.logf("p4rt: port %d (%s): receive: %v", id, p.Name(), err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.stats.rx.Add(uint64(n))
		s.mu.Lock()
		if s.dev == nil {
			s.stats.noPipe.Add(uint64(n))
		} else {
			for i := 0; i < n; i++ {
				s.dev.Process(id, bufs[i], s.emitFn)
			}
		}
		s.mu.Unlock()
	}
}

// Process runs one frame that arrived on port through the committed
// pipeline, synchronously, as a port loop does: for a caller that drives the
// data plane itself (testbed/sim, in virtual time) instead of Start. Output
// frames go to the ports' Send before it returns. It reports false when no
// pipeline is committed (the frame is counted as dropped).
func (s *Server) Process(port uint32, frame []byte) bool {
	s.stats.rx.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev == nil {
		s.stats.noPipe.Add(1)
		return false
	}
	s.dev.Process(port, frame, s.emitFn)
	return true
}

// digestTick is how often the digest loop takes the data plane's digest
// records and sends the lists that are due, while a digest is enabled.
const digestTick = time.Millisecond

// digestLoop drives the digests: idle until a DigestEntry is inserted,
// then every digestTick until none is enabled.
func (s *Server) digestLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		}
		t := time.NewTicker(digestTick)
		for active := true; active; {
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
				active = s.digestStep(time.Now().UnixNano())
			}
		}
		t.Stop()
	}
}

// digestStep moves the data plane's digest records into the buffers and
// sends the lists that are ready; it reports whether a digest is enabled.
func (s *Server) digestStep(now int64) bool {
	s.mu.Lock()
	if s.dev == nil || s.dg == nil {
		s.mu.Unlock()
		return false
	}
	s.takeDigests(now)
	dg := s.dg
	lists := dg.due(now)
	active := len(dg.on) > 0
	s.prim = s.arb.primaries(s.prim[:0])
	for _, l := range lists {
		m := &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Digest{Digest: l}}
		sent := false
		for _, c := range s.prim {
			sent = c.send(m, false) || sent
		}
		if sent {
			s.stats.digestLists.Add(1)
		} else {
			s.stats.digestDrops.Add(1)
		}
	}
	s.mu.Unlock()
	return active
}

// idleScan is how often the idle loop looks for expired entries (the
// specification's example uses 10 ms).
const idleScan = 10 * time.Millisecond

// idleLoop sends IdleTimeoutNotifications: idle until an entry gets an
// idle timeout, then it scans every idleScan.
func (s *Server) idleLoop() {
	defer s.wg.Done()
	select {
	case <-s.stop:
		return
	case <-s.idle:
	}
	t := time.NewTicker(idleScan)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.idleStep(time.Now().UnixNano())
		}
	}
}

// idleStep sends one notification per table with expired entries.
func (s *Server) idleStep(now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dev == nil {
		return
	}
	s.dev.ExpiredEntries(func(_ uint32, es []*p4v1.TableEntry) {
		m := &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_IdleTimeoutNotification{
			IdleTimeoutNotification: &p4v1.IdleTimeoutNotification{TableEntry: es, Timestamp: now}}}
		s.prim = s.arb.primaries(s.prim[:0])
		sent := false
		for _, c := range s.prim {
			sent = c.send(m, false) || sent
		}
		if sent {
			s.stats.idleNotes.Add(1)
		} else {
			s.stats.idleDrops.Add(1)
		}
	})
}

// takeDigests moves the data plane's digest records into the digest
// buffers (called with s.mu held).
func (s *Server) takeDigests(now int64) {
	s.dev.TakeDigests(func(id uint32, vals []uint64) { s.dg.add(id, vals, now) })
}

// emit is the pipeline's output (called with s.mu held).
func (s *Server) emit(port uint32, frame []byte) {
	if port == s.cpuPort {
		s.packetIn(frame)
		return
	}
	p, ok := s.opts.Ports[port]
	if !ok {
		s.stats.noPort.Add(1)
		return
	}
	s.one[0] = frame
	n, err := p.Send(s.one[:])
	s.one[0] = nil
	if err != nil {
		s.stats.sendErr.Add(1)
		return
	}
	s.stats.tx.Add(uint64(n))
}

// packetIn turns a CPU-port frame into PacketIn messages to the primaries
// (called with s.mu held).
func (s *Server) packetIn(frame []byte) {
	if s.pipe == nil {
		s.stats.pinDrop.Add(1)
		return
	}
	md, payload, err := s.pipe.prog.SplitPacketIn(frame)
	if err != nil {
		s.stats.pinDrop.Add(1)
		return
	}
	s.prim = s.arb.primaries(s.prim[:0])
	if len(s.prim) == 0 {
		s.stats.pinDrop.Add(1)
		return
	}
	m := &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Packet{Packet: &p4v1.PacketIn{
		Payload: append([]byte(nil), payload...), Metadata: md,
	}}}
	for _, c := range s.prim {
		if c.send(m, false) {
			s.stats.pin.Add(1)
		} else {
			s.stats.pinDrop.Add(1)
		}
	}
}

// packetOut injects a PacketOut at the CPU port.
func (s *Server) packetOut(po *p4v1.PacketOut) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pipe == nil {
		return grpcstatus.Error(codes.FailedPrecondition, "no forwarding pipeline is set")
	}
	// The target frames the controller header (status errors:
	// INVALID_ARGUMENT for bad metadata, FAILED_PRECONDITION without a
	// packet_out header).
	frame, err := s.pipe.prog.PacketOutFrame(s.pout[:0], po.GetMetadata(), po.GetPayload())
	if err != nil {
		return err
	}
	s.pout = frame
	s.stats.pout.Add(1)
	s.dev.Process(s.cpuPort, frame, s.emitFn)
	return nil
}

// ---- RPCs ----

func (s *Server) checkDevice(id uint64) error {
	if id != s.opts.DeviceID {
		return grpcstatus.Errorf(codes.NotFound, "device %d not found (this switch is device %d)", id, s.opts.DeviceID)
	}
	return nil
}

// Capabilities reports the P4Runtime API version.
func (s *Server) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}

// SetForwardingPipelineConfig verifies, saves and commits pipelines.
func (s *Server) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	if err := s.arb.allow(req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	verify := func() (*pipeline, error) {
		cfg := req.GetConfig()
		if cfg == nil {
			return nil, grpcstatus.Error(codes.InvalidArgument, "config is missing")
		}
		if cfg.GetP4Info() == nil {
			return nil, grpcstatus.Error(codes.InvalidArgument, "config.p4info is missing")
		}
		if len(cfg.GetP4DeviceConfig()) == 0 {
			return nil, grpcstatus.Error(codes.InvalidArgument, "config.p4_device_config is empty: this target takes the P4 source text")
		}
		return s.build("p4_device_config", cfg.GetP4DeviceConfig(), cfg.GetP4Info(), cfg.GetCookie())
	}
	switch req.GetAction() {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
		if _, err := verify(); err != nil {
			return nil, err
		}
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE:
		p, err := verify()
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.saved = p
		s.mu.Unlock()
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		p, err := verify()
		if err != nil {
			return nil, err
		}
		s.commit(p)
	case p4v1.SetForwardingPipelineConfigRequest_COMMIT:
		if req.GetConfig() != nil {
			return nil, grpcstatus.Error(codes.InvalidArgument, "COMMIT takes no config: it commits the one saved by VERIFY_AND_SAVE")
		}
		s.mu.Lock()
		p := s.saved
		s.mu.Unlock()
		if p == nil {
			return nil, grpcstatus.Error(codes.NotFound, "COMMIT without a pipeline saved by VERIFY_AND_SAVE")
		}
		s.commit(p)
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		return nil, grpcstatus.Error(codes.Unimplemented, "RECONCILE_AND_COMMIT is not supported")
	default:
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "action %v is not valid", req.GetAction())
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// GetForwardingPipelineConfig returns the committed pipeline.
func (s *Server) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	p := s.pipe
	s.mu.Unlock()
	if p == nil {
		// P4Runtime: a server whose pipeline is not known answers OK with
		// the config unset (finsy waits for that before it pushes one).
		return &p4v1.GetForwardingPipelineConfigResponse{}, nil
	}
	cfg := &p4v1.ForwardingPipelineConfig{Cookie: p.cookie}
	switch req.GetResponseType() {
	case p4v1.GetForwardingPipelineConfigRequest_ALL:
		cfg.P4Info, cfg.P4DeviceConfig = p.info, p.source
	case p4v1.GetForwardingPipelineConfigRequest_COOKIE_ONLY:
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		cfg.P4Info = p.info
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		cfg.P4DeviceConfig = p.source
	default:
		return nil, grpcstatus.Errorf(codes.InvalidArgument, "response type %v is not valid", req.GetResponseType())
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: cfg}, nil
}

// StreamChannel runs arbitration, PacketIn and PacketOut for one client.
func (s *Server) StreamChannel(st p4v1.P4Runtime_StreamChannelServer) error {
	c := &conn{out: make(chan *p4v1.StreamMessageResponse, 1024), done: make(chan struct{})}
	senderDone := make(chan struct{})
	ctx, cancel := context.WithCancel(st.Context())
	go func() {
		defer close(senderDone)
		for {
			select {
			case m := <-c.out:
				if err := st.Send(m); err != nil {
					cancel()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		s.arb.leave(c)
		close(c.done)
		cancel()
		<-senderDone
	}()
	for {
		req, err := st.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch u := req.GetUpdate().(type) {
		case *p4v1.StreamMessageRequest_Arbitration:
			if err := s.arb.update(c, u.Arbitration); err != nil {
				return err
			}
		case *p4v1.StreamMessageRequest_DigestAck:
			var err error
			if !s.arb.isPrimary(c) {
				err = grpcstatus.Error(codes.PermissionDenied, "only the primary may acknowledge digest lists")
			} else {
				s.mu.Lock()
				if s.dg == nil {
					err = grpcstatus.Error(codes.FailedPrecondition, "no forwarding pipeline is set")
				} else {
					err = s.dg.ack(u.DigestAck)
				}
				s.mu.Unlock()
			}
			if err != nil {
				st := grpcstatus.Convert(err)
				c.send(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: &p4v1.StreamError{
					CanonicalCode: int32(st.Code()), Message: st.Message(),
					Details: &p4v1.StreamError_DigestListAck{DigestListAck: &p4v1.DigestListAckError{DigestListAck: u.DigestAck}},
				}}}, true)
			}
		case *p4v1.StreamMessageRequest_Packet:
			var err error
			if !s.arb.isPrimary(c) {
				err = grpcstatus.Error(codes.PermissionDenied, "only the primary may send PacketOut")
			} else {
				err = s.packetOut(u.Packet)
			}
			if err != nil {
				st := grpcstatus.Convert(err)
				c.send(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: &p4v1.StreamError{
					CanonicalCode: int32(st.Code()), Message: st.Message(),
					Details: &p4v1.StreamError_PacketOut{PacketOut: &p4v1.PacketOutError{PacketOut: u.Packet}},
				}}}, true)
			}
		default:
			c.send(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: &p4v1.StreamError{
				CanonicalCode: int32(codes.Unimplemented), Message: fmt.Sprintf("stream message %T is not supported", u),
			}}}, true)
		}
	}
}
