package sim

import (
	"context"
	"errors"
	"fmt"

	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// cellRack is the virtual-time rack as a benchmark cell's rack
// (testbed.CellRack): the same runner (testbed.RunCellOn) derives its
// figures as for the in-process and namespace racks; every time in them
// (Seconds, latencies, ops per second) is virtual.
type cellRack struct {
	cr      *CloverRack
	spec    testbed.CellSpec
	w, warm *ycsb.Workload
}

// NewCellRack builds the virtual-time rack for a cell with the default
// knobs; see CellRackWith.
func NewCellRack(ctx context.Context, spec testbed.CellSpec, setup testbed.CellSetup) (testbed.CellRack, error) {
	return CellRackWith(CloverConfig{})(ctx, spec, setup)
}

// CellRackWith returns a testbed.CellRackBuilder of virtual-time racks
// whose knobs (ClientCPU, MSCPU, Rack's link, switch and NIC settings)
// come from base; the spec gives the rest. The memory node's NIC runs the
// virtual ConnectX-5 model, with spec.Timing's atomic caps when set;
// spec.MemoryWorkers has no meaning in virtual time (the model orders
// requests itself) and is refused.
func CellRackWith(base CloverConfig) testbed.CellRackBuilder {
	return func(ctx context.Context, spec testbed.CellSpec, setup testbed.CellSetup) (testbed.CellRack, error) {
		if setup.Workload == nil {
			return nil, errors.New("sim: cell rack: no workload")
		}
		if spec.MemoryWorkers != 0 {
			return nil, fmt.Errorf("sim: cell rack: memory workers %d: the virtual-time rack has none (the NIC model orders requests)", spec.MemoryWorkers)
		}
		cfg := base
		cfg.Rack.Seed = spec.Seed
		// The runner chose the tracked keys; none is none, not "all".
		cfg.Rack.TrackedKeys = append([]uint64{}, setup.Tracked...)
		if spec.Timing != nil {
			nic := rnic.VirtualConnectX5()
			if cfg.Rack.NIC != nil {
				nic = *cfg.Rack.NIC
			}
			nic.Timing = *spec.Timing
			cfg.Rack.NIC = &nic
		}
		cfg.Steering = setup.Steering
		cfg.Rack.Chain = spec.Chain
		cfg.ClientHosts, cfg.Threads, cfg.ValueSize, cfg.Keys, cfg.Zipf = spec.ClientHosts, spec.Threads, spec.ValueSize, spec.Keys, spec.Zipf
		cfg.Workload, cfg.ReadTimeout = spec.Workload, spec.ReadTimeout
		wc := setup.Workload.Config()
		wc.Seed = ^spec.Seed
		warm, err := ycsb.New(wc)
		if err != nil {
			return nil, fmt.Errorf("sim: cell rack: warm-up workload: %w", err)
		}
		cr, err := NewCloverRack(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &cellRack{cr: cr, spec: spec, w: setup.Workload, warm: warm}, nil
	}
}

func (r *cellRack) Load(context.Context) error { return r.cr.Load(r.w) }

func (r *cellRack) WarmUp(context.Context) error {
	_, err := r.cr.Drive(r.warm, r.spec.Warmup)
	return err
}

func (r *cellRack) Measure(context.Context) (*testbed.Measured, error) {
	m0 := r.cr.Metrics()
	d, err := r.cr.Drive(r.w, r.spec.Duration)
	if err != nil {
		return nil, err
	}
	m := r.cr.Metrics()
	m.Sub(m0)
	return &testbed.Measured{Metrics: m, Load: &testbed.Load{Ops: d.Ops, Reads: d.Reads, Writes: d.Writes, Errors: d.Errors,
		Elapsed: d.Elapsed, All: d.All, Read: d.Read, Write: d.Write, FirstErr: d.FirstErr}}, nil
}

func (r *cellRack) Counters(ctx context.Context) (testbed.RackCounters, error) {
	c := testbed.RackCounters{WireBytes: r.cr.R.wireBytes()}
	c.Switch, _ = r.cr.SwitchStats(ctx)
	return c, nil
}

func (r *cellRack) Close() error { return r.cr.Close() }
