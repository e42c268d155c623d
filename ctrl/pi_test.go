package ctrl

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"

	"github.com/swordbox/swordbox/ctrl/rack"
	"github.com/swordbox/swordbox/roce/verbs"
)

// piServer answers register access as PI's P4Runtime server does (the
// server of BMv2's simple_switch_grpc and of bf_switchd; p4lang/PI
// proto/frontend/src/device_mgr.cpp): a Read naming a register entry
// fails with UNIMPLEMENTED, and in a Write each register update fails with
// UNIMPLEMENTED in the per-update details of an UNKNOWN batch status while
// the other updates are applied. Everything else goes to the real server.
type piServer struct {
	p4.P4RuntimeServer
}

func (s piServer) Read(req *p4.ReadRequest, st p4.P4Runtime_ReadServer) error {
	for _, e := range req.GetEntities() {
		if e.GetRegisterEntry() != nil {
			return status.Error(codes.Unimplemented, "Register reads are not supported yet")
		}
	}
	return s.P4RuntimeServer.Read(req, st)
}

func (s piServer) Write(ctx context.Context, req *p4.WriteRequest) (*p4.WriteResponse, error) {
	var details []protoadapt.MessageV1
	failed := false
	for _, u := range req.GetUpdates() {
		if u.GetEntity().GetRegisterEntry() != nil {
			details = append(details, protoadapt.MessageV1Of(&p4.Error{CanonicalCode: int32(code.Code_UNIMPLEMENTED), Message: "Register writes are not supported yet"}))
			failed = true
			continue
		}
		one := &p4.WriteRequest{DeviceId: req.GetDeviceId(), Role: req.GetRole(), ElectionId: req.GetElectionId(),
			Atomicity: req.GetAtomicity(), Updates: []*p4.Update{u}}
		if _, err := s.P4RuntimeServer.Write(ctx, one); err != nil {
			st := status.Convert(err)
			c := st.Code()
			for _, d := range st.Details() {
				if pe, ok := d.(*p4.Error); ok {
					c = codes.Code(pe.GetCanonicalCode())
				}
			}
			details = append(details, protoadapt.MessageV1Of(&p4.Error{CanonicalCode: int32(c), Message: st.Message()}))
			failed = true
			continue
		}
		details = append(details, protoadapt.MessageV1Of(&p4.Error{CanonicalCode: int32(code.Code_OK)}))
	}
	if !failed {
		return &p4.WriteResponse{}, nil
	}
	st, err := status.New(codes.Unknown, "Write failure.").WithDetails(details...)
	if err != nil {
		return nil, err
	}
	return nil, st.Err()
}

// syncBuffer is a bytes.Buffer safe for the controller's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// TestPIServerSteersWithoutRepair runs the controller against a server
// without register access: it installs forwarding, the configuration
// (the config table's default entry) and the tracked keys, the switch
// steers, and the failed outstanding-CAS read turns repair off (logged
// once, metric 0) without stopping the controller.
func TestPIServerSteersWithoutRepair(t *testing.T) {
	r := newRigWith(t, time.Hour, func(s p4.P4RuntimeServer) p4.P4RuntimeServer { return piServer{s} })
	rk := r.rackConfig(func(c *rack.Config) { c.Steering = rack.SteerReadWrite })
	var logs syncBuffer
	c, err := New(rk, Options{P4Info: r.info, DeviceConfig: r.src, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	eventually(t, 10*time.Second, "in charge", c.InCharge)

	// The wrapper really refuses register access.
	if _, err := c.ReadRegister(ctx, rCASValid, nil); status.Code(err) != codes.Unimplemented {
		t.Fatalf("register read through the PI-like server: %v, want UNIMPLEMENTED", err)
	}
	if cfg := readConfig(t, c); cfg[pMode] != modeWrite|modeRead|modeChain || cfg[pNodeSize] != nodeSize {
		t.Fatalf("config default entry: %v", cfg)
	}
	fwd, err := c.readTable(ctx, tForward)
	if err != nil || len(fwd) != 3 {
		t.Fatalf("forward table: %d entries, %v", len(fwd), err)
	}
	if tr, err := c.readTracked(ctx); err != nil || len(tr) != 1 {
		t.Fatalf("tracked keys: %v, %v", tr, err)
	}

	// Steering works: a stale CAS is steered to the cached tail (the link
	// drops it, so it stays outstanding on the switch).
	steeredCASDropped(t, r)
	eventually(t, 5*time.Second, "repair off", c.RepairOff)
	// Several more repair periods: the controller keeps running, logs once
	// and sends nothing.
	time.Sleep(10 * rk.RepairPeriod)
	if !c.InCharge() {
		t.Fatal("the controller left charge after the repair failure")
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
	const msg = "repair needs register reads, which this P4Runtime server does not implement; steering continues, repair is off"
	if n := strings.Count(logs.String(), msg); n != 1 {
		t.Fatalf("repair-off message logged %d times, want once; log:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), "resetting a reused slot's cached tail needs register writes"); n != 1 {
		t.Fatalf("slot-reset message logged %d times, want once; log:\n%s", n, logs.String())
	}
	var m dto.Metric
	if err := c.Metrics.RepairEnabled.Write(&m); err != nil || m.GetGauge().GetValue() != 0 {
		t.Fatalf("repair_enabled %v (%v), want 0", m.GetGauge().GetValue(), err)
	}
	if v := testRepairs(c); v != 0 {
		t.Fatalf("repairs sent %v without register reads", v)
	}
	// Nothing retransmits the dropped CAS (the client's timeout is an hour).
	wctx, wcancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer wcancel()
	buf := make([]verbs.WC, 16)
	for {
		n, err := r.cliCQ.Wait(wctx, buf)
		if err != nil {
			break
		}
		for _, wc := range buf[:n] {
			if wc.ID == 12 {
				t.Fatalf("the dropped CAS completed without repair: %+v", wc)
			}
		}
	}
}
