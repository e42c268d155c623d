// Package p4rtc is swordbox's P4Runtime client: it connects to one switch
// (our Go target, BMv2's simple_switch_grpc or Stratum on a
// Tofino), takes part in primary/backup arbitration on the StreamChannel,
// pushes a pipeline, and writes and reads entities whose names it resolves
// through the P4Info (see Schema). It owns the gRPC connection, the stream,
// reconnection and the controller's arbitration role; it knows nothing of
// swordbox's tables (that is package ctrl) and never imports the target.
//
// Decisions where the P4Runtime specification leaves room:
//   - Connection: insecure for loopback, TLS with a CA and a client
//     certificate (mutual TLS) for a real rack; no other modes.
//   - Reconnection: the stream is re-opened with exponential backoff
//     (MinBackoff doubling to MaxBackoff, reset after a stream that reached
//     arbitration); the election ID is re-sent on every new stream.
//   - Failover: when the server reports that no client is primary (the
//     primary's stream closed) a backup re-sends its arbitration request; if
//     the server still prefers an election ID it has seen before (servers
//     differ: some keep the highest ID ever seen), a client with Takeover
//     set raises its own election ID above it. The switch remains the single
//     arbiter: only the client it names primary can write, so raising an ID
//     can never give two writers.
//   - Writes are split into batches of at most MaxBatch updates; a batch is
//     sent with the client's current election ID and fails as a whole per
//     the server's atomicity (we ask for CONTINUE_ON_ERROR and report every
//     failed update).
package p4rtc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Role is the arbitration state of a client.
type Role int

const (
	// Disconnected: no live stream to the switch.
	Disconnected Role = iota
	// Backup: connected, another client is primary (or none is).
	Backup
	// Primary: this client may write and send packets.
	Primary
)

func (r Role) String() string {
	switch r {
	case Backup:
		return "backup"
	case Primary:
		return "primary"
	}
	return "disconnected"
}

// ElectionID is P4Runtime's 128-bit election ID.
type ElectionID struct{ High, Low uint64 }

// Less orders election IDs.
func (e ElectionID) Less(o ElectionID) bool {
	return e.High < o.High || (e.High == o.High && e.Low < o.Low)
}

func (e ElectionID) proto() *p4.Uint128 { return &p4.Uint128{High: e.High, Low: e.Low} }

func fromProto(u *p4.Uint128) ElectionID { return ElectionID{u.GetHigh(), u.GetLow()} }

func (e ElectionID) String() string {
	if e.High == 0 {
		return fmt.Sprint(e.Low)
	}
	return fmt.Sprintf("%d:%d", e.High, e.Low)
}

// TLS names the files of a mutual-TLS connection.
type TLS struct {
	CAFile     string // CA that signed the switch's certificate
	CertFile   string // this controller's certificate
	KeyFile    string // and its key
	ServerName string // expected name in the switch's certificate (default: host of Addr)
}

// Options configure a Client.
type Options struct {
	Addr       string // host:port of the P4Runtime server
	DeviceID   uint64
	ElectionID ElectionID
	Role       string // "" is the default role (full pipeline access)
	TLS        *TLS   // nil: insecure (loopback only)
	// Takeover lets a backup raise its election ID above the highest the
	// server reports when the server says no client is primary.
	Takeover bool
	// Observer opens no StreamChannel: the client only reads (Read,
	// GetP4Info) and never takes part in arbitration, so an operator's
	// inspection cannot disturb the controllers. Its role stays Disconnected.
	Observer   bool
	MinBackoff time.Duration // default 50ms
	MaxBackoff time.Duration // default 5s
	MaxBatch   int           // updates per WriteRequest; default 500
	// OnRole, if set, is called (from the stream goroutine) on every role change.
	OnRole func(Role)
	// OnPacketIn, if set, receives PacketIn messages (from the stream goroutine).
	OnPacketIn func(*p4.PacketIn)
	// OnError, if set, counts errors of RPCs and of the stream.
	OnError func(op string, err error)
	// OnRetry, if set, is called (from the stream goroutine) when the
	// stream could not be opened or broke, with the error and the backoff
	// before the next attempt.
	OnRetry func(err error, backoff time.Duration)
}

// ErrNoPipeline is what GetP4Info returns when the switch runs no pipeline
// yet: the usual state of a fresh switch, not an RPC failure (OnError is
// not called).
var ErrNoPipeline = errors.New("no pipeline installed")

// Client is a P4Runtime client for one device. Its methods are safe for
// concurrent use.
type Client struct {
	opts Options
	conn *grpc.ClientConn
	rpc  p4.P4RuntimeClient

	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	role     Role
	election ElectionID
	stream   p4.P4Runtime_StreamChannelClient
	sendMu   sync.Mutex
	changed  chan struct{} // closed and replaced on every role change
	claimed  *ElectionID   // highest ID reported when we last claimed a vacant primary role
}

// Dial creates the gRPC connection (lazily connected) and starts the
// stream goroutine, which connects, arbitrates and reconnects until Close.
func Dial(opts Options) (*Client, error) {
	if opts.Addr == "" {
		return nil, errors.New("p4rtc: no switch address")
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 50 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 500
	}
	creds, err := transportCreds(opts)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(opts.Addr, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, fmt.Errorf("p4rtc %s: %w", opts.Addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		opts: opts, conn: conn, rpc: p4.NewP4RuntimeClient(conn),
		cancel: cancel, done: make(chan struct{}),
		election: opts.ElectionID, changed: make(chan struct{}),
	}
	if opts.Observer {
		close(c.done)
	} else {
		go c.run(ctx)
	}
	return c, nil
}

func transportCreds(opts Options) (credentials.TransportCredentials, error) {
	if opts.TLS == nil {
		return insecure.NewCredentials(), nil
	}
	t := opts.TLS
	pem, err := os.ReadFile(t.CAFile)
	if err != nil {
		return nil, fmt.Errorf("p4rtc tls: ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("p4rtc tls: ca %s: no certificate found", t.CAFile)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: t.ServerName, MinVersion: tls.VersionTLS12}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("p4rtc tls: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return credentials.NewTLS(cfg), nil
}

// Close ends the stream (giving up the role) and the connection.
func (c *Client) Close() error {
	c.cancel()
	<-c.done
	return c.conn.Close()
}

// Role returns the current arbitration role.
func (c *Client) Role() Role {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.role
}

// Election returns the election ID the client currently uses.
func (c *Client) Election() ElectionID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.election
}

// WaitRole blocks until the client's role is want or ctx ends.
func (c *Client) WaitRole(ctx context.Context, want Role) error {
	for {
		c.mu.Lock()
		r, ch := c.role, c.changed
		c.mu.Unlock()
		if r == want {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("p4rtc %s: waiting to become %s (still %s): %w", c.opts.Addr, want, r, ctx.Err())
		}
	}
}

func (c *Client) setRole(r Role) {
	c.mu.Lock()
	if c.role == r {
		c.mu.Unlock()
		return
	}
	c.role = r
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if c.opts.OnRole != nil {
		c.opts.OnRole(r)
	}
}

func (c *Client) errorf(op string, err error) error {
	if c.opts.OnError != nil {
		c.opts.OnError(op, err)
	}
	return fmt.Errorf("p4rtc %s: %s: %w", c.opts.Addr, op, err)
}

// run is the stream shell: open, arbitrate, receive until the stream
// breaks, back off, repeat.
func (c *Client) run(ctx context.Context) {
	defer close(c.done)
	backoff := c.opts.MinBackoff
	for ctx.Err() == nil {
		arbitrated, err := c.session(ctx)
		c.mu.Lock()
		c.stream = nil
		c.mu.Unlock()
		c.setRole(Disconnected)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			_ = c.errorf("stream", err)
		}
		if arbitrated {
			backoff = c.opts.MinBackoff
		}
		if c.opts.OnRetry != nil {
			c.opts.OnRetry(err, backoff)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
		if backoff *= 2; backoff > c.opts.MaxBackoff {
			backoff = c.opts.MaxBackoff
		}
	}
}

// session runs one stream. It reports whether arbitration got an answer.
func (c *Client) session(ctx context.Context) (bool, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.rpc.StreamChannel(sctx)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	c.stream = st
	// Every stream starts from the configured ID: an ID raised by a takeover
	// on a previous stream may now belong to another client.
	c.election = c.opts.ElectionID
	c.claimed = nil
	c.mu.Unlock()
	if err := c.sendArbitration(st); err != nil {
		return false, err
	}
	arbitrated := false
	for {
		m, err := st.Recv()
		if err != nil {
			if err == io.EOF {
				err = errors.New("stream closed by the switch")
			}
			return arbitrated, err
		}
		switch u := m.GetUpdate().(type) {
		case *p4.StreamMessageResponse_Arbitration:
			arbitrated = true
			c.arbitration(st, u.Arbitration)
		case *p4.StreamMessageResponse_Packet:
			if c.opts.OnPacketIn != nil {
				c.opts.OnPacketIn(u.Packet)
			}
		case *p4.StreamMessageResponse_Error:
			_ = c.errorf("stream error", status.Error(grpcCode(u.Error.GetCanonicalCode()), u.Error.GetMessage()))
		}
	}
}

func grpcCode(c int32) codes.Code { return codes.Code(c) }

func (c *Client) sendArbitration(st p4.P4Runtime_StreamChannelClient) error {
	c.mu.Lock()
	req := &p4.MasterArbitrationUpdate{DeviceId: c.opts.DeviceID, ElectionId: c.election.proto()}
	c.mu.Unlock()
	if c.opts.Role != "" {
		req.Role = &p4.Role{Name: c.opts.Role}
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return st.Send(&p4.StreamMessageRequest{Update: &p4.StreamMessageRequest_Arbitration{Arbitration: req}})
}

// arbitration applies one MasterArbitrationUpdate from the switch.
func (c *Client) arbitration(st p4.P4Runtime_StreamChannelClient, u *p4.MasterArbitrationUpdate) {
	c.mu.Lock()
	mine := c.election
	c.mu.Unlock()
	highest := fromProto(u.GetElectionId())
	if u.GetStatus().GetCode() == int32(code.Code_OK) {
		c.mu.Lock()
		c.claimed = nil
		c.mu.Unlock()
		if highest == mine {
			c.setRole(Primary)
			return
		}
	}
	c.setRole(Backup)
	if u.GetStatus().GetCode() != int32(code.Code_NOT_FOUND) {
		return // another client is primary
	}
	// No primary: claim the role, once per reported highest ID so that a
	// server that keeps refusing cannot make us loop.
	c.mu.Lock()
	switch {
	case c.claimed != nil && *c.claimed == highest:
		c.mu.Unlock()
		return
	case c.opts.Takeover && mine.Less(highest):
		next := highest
		if next.Low++; next.Low == 0 {
			next.High++
		}
		c.election = next
	case mine.Less(highest):
		c.mu.Unlock()
		return // a higher (dead) ID blocks us and we may not raise ours
	}
	c.claimed = &highest
	c.mu.Unlock()
	if err := c.sendArbitration(st); err != nil {
		_ = c.errorf("arbitration", err)
	}
}

// SetPipeline pushes a pipeline with VERIFY_AND_COMMIT: the P4Info and the
// target's device config (our target: the P4 source; BMv2: p4c's JSON;
// Tofino: the compiled binary). The client must be primary.
func (c *Client) SetPipeline(ctx context.Context, info *p4cfg.P4Info, deviceConfig []byte) error {
	req := &p4.SetForwardingPipelineConfigRequest{
		DeviceId:   c.opts.DeviceID,
		Role:       c.opts.Role,
		ElectionId: c.Election().proto(),
		Action:     p4.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT,
		Config:     &p4.ForwardingPipelineConfig{P4Info: info, P4DeviceConfig: deviceConfig},
	}
	if _, err := c.rpc.SetForwardingPipelineConfig(ctx, req); err != nil {
		return c.errorf("set pipeline", err)
	}
	return nil
}

// GetP4Info returns the P4Info of the pipeline installed on the switch.
func (c *Client) GetP4Info(ctx context.Context) (*p4cfg.P4Info, error) {
	resp, err := c.rpc.GetForwardingPipelineConfig(ctx, &p4.GetForwardingPipelineConfigRequest{
		DeviceId: c.opts.DeviceID, ResponseType: p4.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE,
	})
	if status.Code(err) == codes.FailedPrecondition {
		return nil, fmt.Errorf("p4rtc %s: get pipeline: %w (%v)", c.opts.Addr, ErrNoPipeline, err)
	}
	if err != nil {
		return nil, c.errorf("get pipeline", err)
	}
	if resp.GetConfig().GetP4Info() == nil {
		return nil, fmt.Errorf("p4rtc %s: get pipeline: %w", c.opts.Addr, ErrNoPipeline)
	}
	return resp.GetConfig().GetP4Info(), nil
}

// Write sends updates in batches of at most MaxBatch. It stops at the first
// failed batch; the error lists every failed update of that batch.
func (c *Client) Write(ctx context.Context, updates []*p4.Update) error {
	for start := 0; start < len(updates); start += c.opts.MaxBatch {
		end := min(start+c.opts.MaxBatch, len(updates))
		req := &p4.WriteRequest{
			DeviceId:   c.opts.DeviceID,
			Role:       c.opts.Role,
			ElectionId: c.Election().proto(),
			Updates:    updates[start:end],
			Atomicity:  p4.WriteRequest_CONTINUE_ON_ERROR,
		}
		if _, err := c.rpc.Write(ctx, req); err != nil {
			return c.errorf("write", writeError(err, start))
		}
	}
	return nil
}

// WriteError is a failed Write batch: the batch's status code and every
// failed update, from the per-update details P4Runtime servers attach
// (p4.v1.Error in the status details).
type WriteError struct {
	Code    codes.Code
	Updates []UpdateError
}

// UpdateError is one failed update of a Write, by its index in the
// updates given to Client.Write.
type UpdateError struct {
	Index   int
	Code    codes.Code
	Message string
}

func (e *WriteError) Error() string {
	msgs := make([]string, len(e.Updates))
	for i, u := range e.Updates {
		msgs[i] = fmt.Sprintf("update %d: %s: %s", u.Index, code.Code(u.Code), u.Message)
	}
	return fmt.Sprintf("%s: %s", e.Code, strings.Join(msgs, "\n"))
}

// writeError expands the per-update details of a failed Write; an error
// without them is returned as is.
func writeError(err error, offset int) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	we := &WriteError{Code: st.Code()}
	for i, d := range st.Details() {
		if pe, ok := d.(*p4.Error); ok && pe.GetCanonicalCode() != int32(code.Code_OK) {
			we.Updates = append(we.Updates, UpdateError{Index: offset + i, Code: codes.Code(pe.GetCanonicalCode()), Message: pe.GetMessage()})
		}
	}
	if len(we.Updates) == 0 {
		return err
	}
	return we
}

// IsUnimplemented reports whether err says the server does not implement
// what was asked: a Read or Write answered UNIMPLEMENTED, or a Write whose
// every failed update is UNIMPLEMENTED (PI's server answers a batch with
// UNKNOWN and the per-update codes in the details).
func IsUnimplemented(err error) bool {
	var we *WriteError
	if errors.As(err, &we) {
		for _, u := range we.Updates {
			if u.Code != codes.Unimplemented {
				return false
			}
		}
		return true
	}
	return status.Code(err) == codes.Unimplemented
}

// Read returns every entity matching the given (possibly wildcard) entities.
func (c *Client) Read(ctx context.Context, entities ...*p4.Entity) ([]*p4.Entity, error) {
	rc, err := c.rpc.Read(ctx, &p4.ReadRequest{DeviceId: c.opts.DeviceID, Role: c.opts.Role, Entities: entities})
	if err != nil {
		return nil, c.errorf("read", err)
	}
	var out []*p4.Entity
	for {
		resp, err := rc.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, c.errorf("read", err)
		}
		out = append(out, resp.GetEntities()...)
	}
}

// ErrNotPrimary is returned by PacketOut when the client is not primary.
var ErrNotPrimary = errors.New("not the primary controller")

// PacketOut sends a packet through the switch's CPU port with the given
// metadata (see Schema.PacketOutMetadata). Only the primary may send.
func (c *Client) PacketOut(payload []byte, md []*p4.PacketMetadata) error {
	c.mu.Lock()
	st, r := c.stream, c.role
	c.mu.Unlock()
	if st == nil || r != Primary {
		return c.errorf("packet out", ErrNotPrimary)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := st.Send(&p4.StreamMessageRequest{Update: &p4.StreamMessageRequest_Packet{
		Packet: &p4.PacketOut{Payload: payload, Metadata: md}}}); err != nil {
		return c.errorf("packet out", err)
	}
	return nil
}

// Insert, Modify and Delete wrap an entity in an Update.
func Insert(e *p4.Entity) *p4.Update { return &p4.Update{Type: p4.Update_INSERT, Entity: e} }

// Modify wraps an entity in a MODIFY update.
func Modify(e *p4.Entity) *p4.Update { return &p4.Update{Type: p4.Update_MODIFY, Entity: e} }

// Delete wraps an entity in a DELETE update.
func Delete(e *p4.Entity) *p4.Update { return &p4.Update{Type: p4.Update_DELETE, Entity: e} }

// TableEntity wraps a table entry in an Entity.
func TableEntity(t *p4.TableEntry) *p4.Entity {
	return &p4.Entity{Entity: &p4.Entity_TableEntry{TableEntry: t}}
}
