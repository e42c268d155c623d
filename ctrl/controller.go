// Package ctrl is swordbox's control plane: from a rack configuration it
// programs a switch running swordbox.p4 over P4Runtime (forwarding; the
// config table's default entry: steering mode, chain mode, node size, tail
// TTL; tracked keys), retransmits CAS requests that stay outstanding on the
// switch so that a client whose CAS was lost need not wait for its own
// retransmission timeout (repair, SwordBox section 4.5; steering's
// correctness does not depend on it), moves partial steering to the hottest
// keys (section 6.4.4), and exports what it sees on a Prometheus endpoint.
//
// It speaks only P4Runtime (through ctrl/p4rtc) and knows the program only
// by the P4Info names in names.go (the contract of docs/swordbox-p4.md); it
// never imports the switch target. The logic is deterministic functions
// over snapshots (BuildPlan, Reconcile, RepairTracker, HotKeys, PlanSlots);
// Controller is the thin shell that reads snapshots, calls them and writes
// the results, and Run is the goroutine with the timers.
//
// Decisions where the paper is silent:
//   - Pipeline: a controller that becomes primary pushes the pipeline
//     (VERIFY_AND_COMMIT) only if the switch has none or a different P4Info;
//     a backup taking over from a dead primary therefore keeps the switch's
//     soft state (cached tails, outstanding CAS) instead of wiping it.
//   - On becoming primary it reconciles the forward table and the config
//     table's default entry with the configuration (inserting, modifying
//     and deleting: it owns them), and adopts the tracked-keys table it finds
//     under hot-key steering (fixed tracked keys are reconciled like forward).
//   - Repair goes only towards a configured memory node (by destination IP)
//     and, when that node lists regions, only for a VA inside one: anything
//     else is counted as refused, never sent.
//   - A server that implements no register access (PI's, in BMv2 and
//     bf_switchd) turns repair off and skips the slot reset below, each
//     logged once; the controller keeps running and steering (RepairStep).
//   - A slot given to another key has its cached tail reset (tail_valid 0)
//     after the old key's entry is deleted and before the new one is inserted:
//     three writes, in that order, because P4Runtime does not order the
//     updates of one batch.
package ctrl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	p4cfg "github.com/p4lang/p4runtime/go/p4/config/v1"
	p4 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/protobuf/proto"

	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
)

// Controller programs one switch for one rack.
type Controller struct {
	Rack    *rack.Rack
	Schema  *p4rtc.Schema
	Client  *p4rtc.Client
	Metrics *Metrics
	Log     *slog.Logger

	plan         *Plan
	deviceConfig []byte
	now          func() time.Time

	mu      sync.Mutex // guards the loop state below
	tracked map[uint64]uint16
	repair  *RepairTracker
	hot     *HotKeys
	keyBase map[uint16]uint64 // per-slot activity at the last hot-key step
	frame   [128]byte

	inCharge atomic.Bool // primary and the switch reconciled: the loops run
	// repairOff: the server answered the outstanding-CAS read with
	// UNIMPLEMENTED (PI's P4Runtime server reads no registers), so repair
	// is off for the life of the controller. resetOff: the same for the
	// register write that resets a reused slot's cached tail.
	repairOff atomic.Bool
	resetOff  atomic.Bool
}

// Options are the parts of a Controller that are not configuration.
type Options struct {
	// P4Info overrides reading rack.P4Info from disk.
	P4Info *p4cfg.P4Info
	// DeviceConfig overrides reading rack.DeviceConfig from disk.
	DeviceConfig []byte
	Log          *slog.Logger
	// Now is the clock of the loops (default time.Now).
	Now func() time.Time
}

// New validates everything it can without the switch (P4Info names,
// capacities, every entry of the plan) and only then connects. A refused
// configuration never reaches the switch.
func New(r *rack.Rack, opts Options) (*Controller, error) {
	info := opts.P4Info
	if info == nil {
		var err error
		if info, err = p4rtc.LoadP4Info(r.P4Info); err != nil {
			return nil, fmt.Errorf("ctrl.p4info: %w", err)
		}
	}
	s, err := p4rtc.NewSchema(info)
	if err != nil {
		return nil, err
	}
	plan, err := BuildPlan(r, s)
	if err != nil {
		return nil, err
	}
	devcfg := opts.DeviceConfig
	if devcfg == nil && r.Push {
		if devcfg, err = os.ReadFile(r.DeviceConfig); err != nil {
			return nil, fmt.Errorf("ctrl.device-config: %w", err)
		}
	}
	c := &Controller{
		Rack: r, Schema: s, Metrics: NewMetrics(), Log: opts.Log,
		plan: plan, deviceConfig: devcfg, now: opts.Now,
		tracked: map[uint64]uint16{}, keyBase: map[uint16]uint64{},
		repair: NewRepairTracker(RepairPolicy{Threshold: r.RepairThreshold}),
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if plan.NoChain {
		c.Log.Warn("chain: true, but the program has no chain mode (no spec_valid register); write steering steers to confirmed tails only")
	}
	if c.now == nil {
		c.now = time.Now
	}
	if r.HotKeys > 0 {
		c.hot = NewHotKeys(HotKeyPolicy{N: r.HotKeys, Probes: r.HotKeyProbes, MinDelta: r.HotKeysMinDelta, Candidates: r.Candidates})
	}
	var tlsOpt *p4rtc.TLS
	if r.TLSCA != "" {
		tlsOpt = &p4rtc.TLS{CAFile: r.TLSCA, CertFile: r.TLSCert, KeyFile: r.TLSKey, ServerName: r.TLSName}
	}
	c.Client, err = p4rtc.Dial(p4rtc.Options{
		Addr: r.Switch, DeviceID: r.DeviceID, ElectionID: p4rtc.ElectionID{Low: r.ElectionID},
		Role: r.Role, TLS: tlsOpt, Takeover: r.Takeover,
		OnRole: func(role p4rtc.Role) {
			c.Metrics.Role.Set(float64(role))
			if role == p4rtc.Disconnected {
				c.Log.Info("disconnected from the switch", "switch", r.Switch)
				return
			}
			c.Log.Info("connected to the switch", "switch", r.Switch, "role", role.String())
		},
		OnError: func(op string, err error) {
			c.Metrics.RPCErrors.WithLabelValues(op).Inc()
		},
		OnRetry: func(err error, backoff time.Duration) {
			c.Log.Warn("cannot reach the switch, retrying", "switch", r.Switch, "backoff", backoff, "err", err)
		},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Close gives up the role and closes the connection.
func (c *Controller) Close() error { return c.Client.Close() }

// Tracked returns the tracked-keys table as the controller last wrote it.
func (c *Controller) Tracked() map[uint64]uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[uint64]uint16, len(c.tracked))
	for k, v := range c.tracked {
		out[k] = v
	}
	return out
}

// RepairOff reports whether CAS repair is off because the switch's
// P4Runtime server does not implement register reads.
func (c *Controller) RepairOff() bool { return c.repairOff.Load() }

// InCharge reports whether Run has taken charge of the switch (it is
// primary and reconciled the configuration) and runs the loops.
func (c *Controller) InCharge() bool { return c.inCharge.Load() }

// Run is the controller's shell: wait to be primary, take charge of the
// switch (pipeline, reconcile), then run the repair and hot-key loops
// until the role is lost (then wait again) or ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	for {
		if err := c.Client.WaitRole(ctx, p4rtc.Primary); err != nil {
			return ctx.Err()
		}
		if err := c.TakeCharge(ctx); err != nil {
			c.Log.Error("take charge", "err", err)
			select {
			case <-time.After(c.Rack.RepairPeriod):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c.Log.Info("in charge: the switch matches the configuration", "switch", c.Rack.Switch)
		c.inCharge.Store(true)
		c.Metrics.InCharge.Set(1)
		c.loops(ctx)
		c.inCharge.Store(false)
		c.Metrics.InCharge.Set(0)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// loops runs the periodic work while this controller is primary.
func (c *Controller) loops(ctx context.Context) {
	repairT := time.NewTicker(c.Rack.RepairPeriod)
	defer repairT.Stop()
	// The hot-keys period also paces the mirroring of the switch's counters,
	// with or without hot-key steering.
	hotT := time.NewTicker(c.Rack.HotKeysPeriod)
	defer hotT.Stop()
	hotC := hotT.C
	for {
		select {
		case <-ctx.Done():
			return
		case <-repairT.C:
			if c.Client.Role() != p4rtc.Primary {
				return
			}
			if _, err := c.RepairStep(ctx); err != nil {
				c.Log.Warn("repair", "err", err)
			}
		case <-hotC:
			if c.Client.Role() != p4rtc.Primary {
				return
			}
			if err := c.HotKeyStep(ctx); err != nil {
				c.Log.Warn("hot keys", "err", err)
			}
		}
	}
}

// TakeCharge makes the switch match the configuration: it pushes the
// pipeline if the switch runs none or another one, then reconciles the
// forward table, the config table's default entry and the tracked-keys table.
// The controller must be primary.
func (c *Controller) TakeCharge(ctx context.Context) error {
	have, err := c.Client.GetP4Info(ctx)
	if err != nil || !proto.Equal(have, c.Schema.P4Info()) {
		if !c.Rack.Push {
			if err != nil {
				return fmt.Errorf("switch has no pipeline and push-pipeline is off: %w", err)
			}
			return errors.New("switch runs another pipeline and push-pipeline is off")
		}
		if err := c.Client.SetPipeline(ctx, c.Schema.P4Info(), c.deviceConfig); err != nil {
			return err
		}
		c.Log.Info("pipeline pushed")
	}
	// Forward table.
	fwd, err := c.readTable(ctx, tForward)
	if err != nil {
		return err
	}
	if err := c.write(ctx, tForward, Reconcile(fwd, c.plan.Forward)); err != nil {
		return err
	}
	// Configuration: the config table's default entry.
	if err := c.write(ctx, tConfig, []*p4.Update{p4rtc.Modify(p4rtc.TableEntity(c.plan.Config))}); err != nil {
		return err
	}
	// Tracked keys.
	cur, err := c.readTracked(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tracked = cur
	want := c.plan.Tracked
	if c.hot != nil {
		// Adopt what a previous primary left, within our N + probes.
		keys := make([]uint64, 0, len(cur))
		for k := range cur {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		c.hot.Adopt(keys)
		_, next := PlanSlots(c.tracked, c.hot.Tracked(), c.plan.KeySlots)
		return c.applyTrackedLocked(ctx, next, true)
	}
	// Fixed list: exactly the configured slots.
	return c.applyTrackedLocked(ctx, want, false)
}

// write sends updates and counts them by table.
func (c *Controller) write(ctx context.Context, what string, ups []*p4.Update) error {
	if len(ups) == 0 {
		return nil
	}
	if err := c.Client.Write(ctx, ups); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, u := range ups {
		name := what
		if te := u.GetEntity().GetTableEntry(); te != nil {
			name = c.Schema.Name(te.GetTableId())
		} else if re := u.GetEntity().GetRegisterEntry(); re != nil {
			name = c.Schema.Name(re.GetRegisterId())
		}
		if u.GetType() == p4.Update_DELETE {
			c.Metrics.EntriesDeleted.WithLabelValues(name).Inc()
		} else {
			c.Metrics.EntriesInstalled.WithLabelValues(name).Inc()
		}
	}
	return nil
}

func (c *Controller) readTable(ctx context.Context, name string) ([]*p4.TableEntry, error) {
	q, err := c.Schema.TableRead(name)
	if err != nil {
		return nil, err
	}
	ents, err := c.Client.Read(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var out []*p4.TableEntry
	for _, e := range ents {
		if te := e.GetTableEntry(); te != nil && !te.GetIsDefaultAction() {
			out = append(out, te)
		}
	}
	return out, nil
}

// readTracked reads the tracked-keys table as key -> slot.
func (c *Controller) readTracked(ctx context.Context) (map[uint64]uint16, error) {
	ents, err := c.readTable(ctx, tTrackedKeys)
	if err != nil {
		return nil, err
	}
	out := map[uint64]uint16{}
	for _, e := range ents {
		if len(e.GetMatch()) != 1 || e.GetMatch()[0].GetExact() == nil || e.GetAction().GetAction() == nil ||
			len(e.GetAction().GetAction().GetParams()) != 1 {
			return nil, fmt.Errorf("read %s: unexpected entry %v", tTrackedKeys, e)
		}
		k, err := p4rtc.ToUint(e.GetMatch()[0].GetExact().GetValue())
		if err != nil {
			return nil, err
		}
		s, err := p4rtc.ToUint(e.GetAction().GetAction().GetParams()[0].GetValue())
		if err != nil {
			return nil, err
		}
		out[k] = uint16(s)
	}
	return out, nil
}

// ReadRegister reads cells of a register: all of them when indexes is nil.
// It returns index -> value.
func (c *Controller) ReadRegister(ctx context.Context, name string, indexes []int64) (map[int64]uint64, error) {
	return c.readCells(ctx, "register", name, indexes, c.Schema.RegisterRead, func(e *p4.Entity) (int64, uint64, bool, error) {
		re := e.GetRegisterEntry()
		if re == nil {
			return 0, 0, false, nil
		}
		v, err := p4rtc.ToUint(re.GetData().GetBitstring())
		return re.GetIndex().GetIndex(), v, true, err
	})
}

// ReadCounter reads cells of a counter (packets): all when indexes is nil.
//
// A counter N may be split into parts N_part2, N_part3, ... of the same
// indexes (the Tofino program's stats: a Tofino counter counts once per
// packet, so a program that counts N's cells at several places on one path
// counts them in several counters); ReadCounter returns, per index, the sum
// over N and the consecutive parts the P4Info has.
func (c *Controller) ReadCounter(ctx context.Context, name string, indexes []int64) (map[int64]uint64, error) {
	cell := func(e *p4.Entity) (int64, uint64, bool, error) {
		ce := e.GetCounterEntry()
		if ce == nil {
			return 0, 0, false, nil
		}
		return ce.GetIndex().GetIndex(), uint64(ce.GetData().GetPacketCount()), true, nil
	}
	sum, err := c.readCells(ctx, "counter", name, indexes, c.Schema.CounterRead, cell)
	if err != nil {
		return nil, err
	}
	for _, part := range counterParts(c.Schema, name) {
		vals, err := c.readCells(ctx, "counter", part, indexes, c.Schema.CounterRead, cell)
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			sum[i] += v
		}
	}
	return sum, nil
}

// counterParts names the parts N_part2, N_part3, ... of counter N that the
// P4Info has, up to the first missing one.
func counterParts(s *p4rtc.Schema, name string) []string {
	var parts []string
	for k := 2; ; k++ {
		part := fmt.Sprintf("%s_part%d", name, k)
		if _, err := s.Counter(part); err != nil {
			return parts
		}
		parts = append(parts, part)
	}
}

// readCells reads the given cells of an indexed entity (all of them when
// indexes is nil, with one wildcard query) and decodes each answer with
// cell into index -> value.
func (c *Controller) readCells(ctx context.Context, kind, name string, indexes []int64,
	query func(name string, index int64) (*p4.Entity, error),
	cell func(*p4.Entity) (index int64, value uint64, ok bool, err error)) (map[int64]uint64, error) {
	var qs []*p4.Entity
	if indexes == nil {
		indexes = []int64{-1} // the wildcard
	}
	for _, i := range indexes {
		q, err := query(name, i)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	if len(qs) == 0 {
		return map[int64]uint64{}, nil
	}
	ents, err := c.Client.Read(ctx, qs...)
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", kind, name, err)
	}
	out := make(map[int64]uint64, len(ents))
	for _, e := range ents {
		i, v, ok, err := cell(e)
		if err != nil {
			return nil, fmt.Errorf("%s %s[%d]: %w", kind, name, i, err)
		}
		if ok {
			out[i] = v
		}
	}
	return out, nil
}

// ReadOutstanding reads the outstanding CAS registers: cas_out_valid for
// every slot, then the other registers of the valid slots in one request.
func (c *Controller) ReadOutstanding(ctx context.Context) ([]Outstanding, error) {
	valid, err := c.ReadRegister(ctx, rCASValid, nil)
	if err != nil {
		return nil, err
	}
	var slots []int64
	for i, v := range valid {
		if v == 1 {
			slots = append(slots, i)
		}
	}
	if len(slots) == 0 {
		return nil, nil
	}
	slices.Sort(slots)
	var qs []*p4.Entity
	ids := map[uint32]int{}
	for fi, name := range casFields {
		r, err := c.Schema.Register(name)
		if err != nil {
			return nil, err
		}
		ids[r.GetPreamble().GetId()] = fi
		for _, s := range slots {
			q, _ := c.Schema.RegisterRead(name, s)
			qs = append(qs, q)
		}
	}
	ents, err := c.Client.Read(ctx, qs...)
	if err != nil {
		return nil, fmt.Errorf("read outstanding CAS: %w", err)
	}
	vals := map[int64][]uint64{}
	for _, s := range slots {
		vals[s] = make([]uint64, len(casFields))
	}
	for _, e := range ents {
		re := e.GetRegisterEntry()
		fi, ok := ids[re.GetRegisterId()]
		if !ok {
			continue
		}
		v, err := p4rtc.ToUint(re.GetData().GetBitstring())
		if err != nil {
			return nil, err
		}
		if row, ok := vals[re.GetIndex().GetIndex()]; ok {
			row[fi] = v
		}
	}
	out := make([]Outstanding, 0, len(slots))
	for _, s := range slots {
		out = append(out, outstandingOf(int(s), vals[s]))
	}
	return out, nil
}

// outstandingOf decodes the register values of one slot, in casFields order.
func outstandingOf(slot int, v []uint64) Outstanding {
	o := Outstanding{Slot: slot}
	putMAC := func(dst *[6]byte, x uint64) {
		for i := 5; i >= 0; i-- {
			dst[i] = byte(x)
			x >>= 8
		}
	}
	putIP := func(dst *[4]byte, x uint64) {
		for i := 3; i >= 0; i-- {
			dst[i] = byte(x)
			x >>= 8
		}
	}
	putMAC(&o.SrcMAC, v[0])
	putMAC(&o.DstMAC, v[1])
	putIP(&o.SrcIP, v[2])
	putIP(&o.DstIP, v[3])
	o.SrcPort = uint16(v[4])
	o.DestQP = uint32(v[5])
	o.PSN = uint32(v[6])
	o.PKey = uint16(v[7])
	o.VA = v[8]
	o.RKey = uint32(v[9])
	o.Swap = v[10]
	o.Compare = v[11]
	o.Timestamp = v[12]
	return o
}

// repairTarget returns the switch port towards the memory node of o, or
// an error saying why o must not be retransmitted.
func (c *Controller) repairTarget(o *Outstanding) (uint32, error) {
	ip := netip.AddrFrom4(o.DstIP)
	for _, m := range c.Rack.Memory {
		if m.Host.IP != ip {
			continue
		}
		if m.Host.MAC != o.DstMAC {
			return 0, fmt.Errorf("CAS to %s carries MAC %x, the node has %x", ip, o.DstMAC, m.Host.MAC)
		}
		if len(m.Regions) == 0 {
			return m.Host.Port, nil
		}
		for _, g := range m.Regions {
			if o.VA >= g.Base && o.VA+8 <= g.End() {
				return m.Host.Port, nil
			}
		}
		return 0, fmt.Errorf("CAS VA 0x%x outside the steered regions of %s", o.VA, m.Host.Name)
	}
	return 0, fmt.Errorf("CAS to %s: not a configured memory node", ip)
}

// RepairStep is one poll of CAS repair: read the outstanding CAS, feed the
// tracker, retransmit the due ones as PacketOut towards their memory node.
// It returns how many it sent.
//
// A server that answers the read with UNIMPLEMENTED (PI's, in BMv2's
// simple_switch_grpc and in bf_switchd, implements no register reads)
// turns repair off: logged once, exported as the repair_enabled metric,
// and every later step returns at once. Steering stays correct without
// repair (the switch caches only confirmed tails, docs/swordbox-p4.md);
// repair only speeds up a client whose CAS was lost.
func (c *Controller) RepairStep(ctx context.Context) (int, error) {
	if c.repairOff.Load() {
		return 0, nil
	}
	snap, err := c.ReadOutstanding(ctx)
	if err != nil {
		if p4rtc.IsUnimplemented(err) {
			if c.repairOff.CompareAndSwap(false, true) {
				c.Metrics.RepairEnabled.Set(0)
				c.Log.Warn("repair needs register reads, which this P4Runtime server does not implement; steering continues, repair is off",
					"switch", c.Rack.Switch, "err", err)
			}
			return 0, nil
		}
		return 0, err
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Metrics.Outstanding.Set(float64(len(snap)))
	before := c.repair.Abandoned
	due := c.repair.Observe(now, snap)
	sent := 0
	var errs []error
	for i := range due {
		o := &due[i]
		port, err := c.repairTarget(o)
		if err != nil {
			c.Metrics.RepairsRefused.Inc()
			c.repair.Sent(o.Slot, now) // counts as an attempt: do not re-examine every poll
			errs = append(errs, err)
			continue
		}
		frame, err := CASFrame(c.frame[:], o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		md, err := c.Schema.PacketOutMetadata(p4rtc.P(mEgressPort, uint64(port)))
		if err != nil {
			return sent, err
		}
		if err := c.Client.PacketOut(append([]byte(nil), frame...), md); err != nil {
			errs = append(errs, err)
			continue
		}
		if s, ok := c.repair.seen[o.Slot]; ok {
			c.Metrics.RepairLatency.Observe(now.Sub(s.firstSeen).Seconds())
		}
		c.repair.Sent(o.Slot, now)
		c.Metrics.RepairsSent.Inc()
		c.Log.Info("repair", "slot", o.Slot, "dst", netip.AddrFrom4(o.DstIP), "qp", o.DestQP, "psn", o.PSN, "va", fmt.Sprintf("0x%x", o.VA))
		sent++
	}
	c.Metrics.RepairsAbandoned.Add(float64(c.repair.Abandoned - before))
	return sent, errors.Join(errs...)
}

// keyCounters are the per-key counters whose sum is a key's activity.
var keyCounters = []string{cKeyCAS, cKeyReads, cKeyMisses, cKeyRetrans}

// HotKeyStep is one period of hot-key steering: read the per-key counters
// of the tracked slots, step the engine, move the table. It also mirrors
// the stats counter.
func (c *Controller) HotKeyStep(ctx context.Context) error {
	if err := c.MirrorStats(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hot == nil {
		return nil
	}
	var slots []int64
	for _, s := range c.tracked {
		slots = append(slots, int64(s))
	}
	activity, err := c.activity(ctx, slots)
	if err != nil {
		return err
	}
	delta := map[uint64]uint64{}
	for k, s := range c.tracked {
		a := activity[int64(s)]
		if base, ok := c.keyBase[s]; ok && a >= base {
			delta[k] = a - base
		} // else: no baseline yet (adopted from another controller): 0 this period
		c.keyBase[s] = a
		c.Metrics.KeyActivity.WithLabelValues("activity", fmt.Sprint(k)).Set(float64(a))
	}
	_, next := PlanSlots(c.tracked, c.hot.Step(delta), c.plan.KeySlots)
	return c.applyTrackedLocked(ctx, next, true)
}

// activity sums the per-key counters of the given slots, read in one request.
func (c *Controller) activity(ctx context.Context, slots []int64) (map[int64]uint64, error) {
	out := map[int64]uint64{}
	if len(slots) == 0 {
		return out, nil
	}
	var qs []*p4.Entity
	for _, name := range keyCounters {
		for _, s := range slots {
			q, err := c.Schema.CounterRead(name, s)
			if err != nil {
				return nil, err
			}
			qs = append(qs, q)
		}
	}
	ents, err := c.Client.Read(ctx, qs...)
	if err != nil {
		return nil, fmt.Errorf("read per-key counters: %w", err)
	}
	for _, e := range ents {
		if ce := e.GetCounterEntry(); ce != nil {
			out[ce.GetIndex().GetIndex()] += uint64(ce.GetData().GetPacketCount())
		}
	}
	return out, nil
}

// applyTrackedLocked changes the tracked-keys table to want (key -> slot):
// delete, reset the cached tail of every slot given to a key, insert (c.mu
// held). hot says whether the changes count as hot-key changes.
func (c *Controller) applyTrackedLocked(ctx context.Context, want map[uint64]uint16, hot bool) error {
	sp := DiffSlots(c.tracked, want)
	if len(sp.Delete) == 0 && len(sp.Insert) == 0 {
		return nil
	}
	var del, reset, ins []*p4.Update
	for _, k := range sortedKeys(sp.Delete) {
		e, err := trackEntry(c.Schema, k, sp.Delete[k])
		if err != nil {
			return err
		}
		del = append(del, p4rtc.Delete(p4rtc.TableEntity(&p4.TableEntry{TableId: e.TableId, Match: e.Match})))
	}
	for _, k := range sortedKeys(sp.Insert) {
		s := sp.Insert[k]
		r, err := registerCell(c.Schema, rTailValid, int64(s), 0)
		if err != nil {
			return err
		}
		reset = append(reset, p4rtc.Modify(&p4.Entity{Entity: &p4.Entity_RegisterEntry{RegisterEntry: r}}))
		e, err := trackEntry(c.Schema, k, s)
		if err != nil {
			return err
		}
		ins = append(ins, p4rtc.Insert(p4rtc.TableEntity(e)))
	}
	if err := c.write(ctx, tTrackedKeys, del); err != nil {
		return err
	}
	for k := range sp.Delete {
		delete(c.tracked, k)
	}
	if c.resetOff.Load() {
		reset = nil
	}
	if err := c.write(ctx, rTailValid, reset); err != nil {
		if !p4rtc.IsUnimplemented(err) {
			return err
		}
		// The reset is a second guard: the program steers a slot's cached
		// tail only to requests of the key in tail_key.
		if c.resetOff.CompareAndSwap(false, true) {
			c.Log.Warn("resetting a reused slot's cached tail needs register writes, which this P4Runtime server does not implement; "+
				"the program's tail_key check still keeps the old key's tail from the new key", "switch", c.Rack.Switch, "err", err)
		}
	}
	// Baselines of the reused slots, read while no key maps to them (their
	// counters are frozen): the new owner's first period is measured exactly.
	var newSlots []int64
	for _, s := range sp.Insert {
		newSlots = append(newSlots, int64(s))
	}
	slices.Sort(newSlots)
	base, err := c.activity(ctx, newSlots)
	if err != nil {
		return err
	}
	if err := c.write(ctx, tTrackedKeys, ins); err != nil {
		return err
	}
	for k, s := range sp.Insert {
		c.keyBase[s] = base[int64(s)]
		c.tracked[k] = s
	}
	if hot {
		c.Metrics.HotKeyChanges.Add(float64(len(sp.Delete) + len(sp.Insert)))
	}
	c.Metrics.TrackedKeys.Set(float64(len(c.tracked)))
	return nil
}

func sortedKeys(m map[uint64]uint16) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// StatNames name the cells of swordbox.p4's stats counter, by index
// (docs/swordbox-p4.md, "Counters"): the metrics' labels, and the names the
// benchmark reports.
var StatNames = []string{"requests", "node_writes", "cas_seen", "cas_steered", "node_reads", "reads_steered",
	"read_misses", "retransmissions", "outstanding_cleared", "link_takeovers", "tails_dropped", "links_unresolved",
	"tails_confirmed", "tails_expired", "confirms_stale", "links_ambiguous", "cas_chained", "chains_broken",
	"chains_refused", "reads_chain_end", "links_vouched", "chains_ended_unconfirmed", "chains_ended_failed", "reads_vouched"}

// MirrorStats copies the switch's stats counter into the metrics.
func (c *Controller) MirrorStats(ctx context.Context) error {
	vals, err := c.ReadCounter(ctx, cStats, nil)
	if err != nil {
		return err
	}
	for i, v := range vals {
		name := fmt.Sprint(i)
		if int(i) < len(StatNames) {
			name = StatNames[i]
		}
		c.Metrics.SwitchCounter.WithLabelValues(cStats, name).Set(float64(v))
	}
	return nil
}
