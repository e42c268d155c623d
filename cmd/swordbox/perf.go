package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/rnic/perftest"
)

// perfConfig is the typed configuration of `swordbox perf` (YAML section
// "perf").
type perfConfig struct {
	QPs          int           `mapstructure:"qps"`
	Depth        int           `mapstructure:"depth"`
	Size         int           `mapstructure:"size"`
	Duration     time.Duration `mapstructure:"duration"`
	JSON         bool          `mapstructure:"json"`
	MTU          int           `mapstructure:"mtu"`
	Remote       string        `mapstructure:"remote"`
	Iface        string        `mapstructure:"iface"`
	MAC          string        `mapstructure:"mac"`
	IP           string        `mapstructure:"ip"`
	Drop         float64       `mapstructure:"drop"`
	Duplicate    float64       `mapstructure:"duplicate"`
	Reorder      float64       `mapstructure:"reorder"`
	ReorderDepth int           `mapstructure:"reorder-depth"`
	Corrupt      float64       `mapstructure:"corrupt"`
	Delay        time.Duration `mapstructure:"delay"`
	Seed         int64         `mapstructure:"seed"`
	Workers      int           `mapstructure:"workers"`
	Timing       string        `mapstructure:"timing"`
	MemSize      string        `mapstructure:"mem-size"`
}

// newPerfCmd builds `swordbox perf` and its flags.
func newPerfCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "perf write_bw|read_bw|atomic_bw|write_lat|read_lat|atomic_lat",
		Short: "RDMA microbenchmarks (perftest style) on the software RNIC",
		Long: `perf keeps --depth requests outstanding on each of --qps RC queue pairs
against a memory node for --duration and reports operations per second, MB/s
(2^20 bytes) and latency percentiles in microseconds (post to completion).
*_bw tests use --depth; *_lat tests run at depth 1. Atomics are 8-byte
FETCH_ADDs.

Without --remote the memory node runs in this process, joined to the client by
an in-memory link on which --drop, --duplicate, --reorder, --corrupt and --delay
inject faults (seeded by --seed). With --remote HOST:PORT the client connects
to a swordbox memnode through its connection manager and sends RoCEv2 on
--iface (AF_PACKET, root) with its own --mac and --ip; the faults then apply to
what the client sends. See docs/rnic.md.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: perftest.Tests,
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg perfConfig
			if err := loadConfig(cmd, "perf", &cfg); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := runPerf(ctx, args[0], cfg)
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("perf %s: interrupted before the end of the measurement: no result", args[0])
				}
				if r.Errors > 0 && (cfg.Drop > 0 || cfg.Corrupt > 0) {
					// RC gives up on a request after its retransmissions
					// (RETRY_EXC_ERR): on a lossy enough link that is the
					// measurement's outcome, not a bug.
					return fmt.Errorf("%w (the link loses frames, --drop %g and --corrupt %g: the RNIC gave up on a request its retransmissions did not get through)", err, cfg.Drop, cfg.Corrupt)
				}
				return err
			}
			if cfg.JSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				return enc.Encode(r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "perf: %s\n", keyValues(r))
			return nil
		},
	}
	f := c.Flags()
	f.Int("qps", 1, "queue pairs")
	f.Int("depth", 16, "requests outstanding per QP (bandwidth tests)")
	f.Int("size", 64, "bytes per WRITE or READ")
	f.Duration("duration", 5*time.Second, "measured time (after a warm-up of a tenth, at most 500ms)")
	f.Bool("json", false, "print the summary as JSON")
	f.Int("mtu", 1024, "path MTU; an --iface must carry 78 bytes more")
	f.String("remote", "", "connection manager address of a swordbox memnode (empty: in-process node)")
	f.String("iface", "", "data interface for --remote (AF_PACKET, root)")
	f.String("mac", "02:00:00:00:01:01", "MAC address of the client RNIC (--remote)")
	f.String("ip", "10.0.1.1", "IPv4 address of the client RNIC (--remote)")
	f.Float64("drop", 0, "probability a frame is dropped (below 1; from about 0.5 the RNIC soon gives up on a request: RETRY_EXC_ERR)")
	f.Float64("duplicate", 0, "probability a frame is duplicated")
	f.Float64("reorder", 0, "probability a frame is held back behind later ones")
	f.Int("reorder-depth", 3, "how many frames a reordered frame falls behind")
	f.Float64("corrupt", 0, "probability a frame gets a bit flipped (breaks its ICRC; below 1, as --drop)")
	f.Duration("delay", 0, "fixed link delay")
	f.Int64("seed", 1, "seed of the fault injector")
	f.Int("workers", 0, "responder workers of the in-process memory node")
	f.String("timing", "off", "NIC timing model of the in-process memory node: off or cx5")
	f.String("mem-size", "64MiB", "memory of the in-process memory node")
	return c
}

// perfSettings is the settings table of the "perf" section.
func perfSettings() *settingTable {
	mem, why := memoryCap()
	return newSection([]string{"perf"},
		intSpan("qps", 1, 1024),
		intSpan("depth", 1, 1024),
		intSpan("size", 1, 1<<20),
		durSpan("duration", 10*time.Millisecond, 24*time.Hour),
		setSpan("mtu", 256, 512, 1024, 2048, 4096),
		span{key: "drop", lo: 0, hi: 1},
		span{key: "duplicate", lo: 0, hi: 1},
		span{key: "reorder", lo: 0, hi: 1},
		intSpan("reorder-depth", 1, 1024),
		span{key: "corrupt", lo: 0, hi: 1},
		durSpan("delay", 0, time.Second),
		intSpan("workers", 0, 64),
		bytesSpan("mem-size", 4<<10, mem).because(why),
	).withCheck(func(cfg any) error {
		c := cfg.(*perfConfig)
		for _, f := range []struct {
			name string
			p    float64
		}{{"drop", c.Drop}, {"corrupt", c.Corrupt}} {
			if f.p == 1 {
				return fmt.Errorf("--%s 1: every frame is lost, no operation can complete: want below 1", f.name)
			}
		}
		if n := c.QPs * c.Depth; n > perfMaxOutstanding {
			return fmt.Errorf("--qps %d x --depth %d = %d requests outstanding: at most %d", c.QPs, c.Depth, n, perfMaxOutstanding)
		}
		mem, _ := parseBytes(c.MemSize)
		if need := int64(c.QPs*c.Depth) * int64((c.Size+63)&^63); c.Remote == "" && need > mem {
			return fmt.Errorf("--qps %d x --depth %d requests of --size %d need %s of memory node, more than --mem-size %s", c.QPs, c.Depth, c.Size, formatBytes(need), c.MemSize)
		}
		return nil
	})
}

// perfMaxOutstanding bounds the requests perf keeps in flight (qps x
// depth): each holds a buffer slot, a work request and completion queue
// room on both RNICs.
const perfMaxOutstanding = 1 << 16

func runPerf(ctx context.Context, test string, cfg perfConfig) (perftest.Result, error) {
	faults := netio.Faults{Drop: cfg.Drop, Duplicate: cfg.Duplicate, Reorder: cfg.Reorder, ReorderDepth: cfg.ReorderDepth,
		Corrupt: cfg.Corrupt, Delay: cfg.Delay, Seed: cfg.Seed}
	if err := faults.Validate(); err != nil {
		return perftest.Result{}, fmt.Errorf("perf: %w", err)
	}
	pc := perftest.Config{Test: test, QPs: cfg.QPs, Depth: cfg.Depth, Size: cfg.Size, Duration: cfg.Duration, MTU: cfg.MTU}
	if cfg.Remote == "" {
		mem, err := parseBytes(cfg.MemSize)
		if err != nil {
			return perftest.Result{}, fmt.Errorf("perf: mem-size: %w", err)
		}
		tc, err := rnicConfig("02:00:00:00:00:01", "10.0.0.1", cfg.MTU, cfg.Timing)
		if err != nil {
			return perftest.Result{}, fmt.Errorf("perf: %w", err)
		}
		pc.Faults, pc.ServerWorkers, pc.Timing, pc.RegionSize = faults, cfg.Workers, tc.Timing, int(mem)
		return perftest.Run(ctx, pc)
	}
	if cfg.Iface == "" {
		return perftest.Result{}, fmt.Errorf("perf: --remote needs --iface, the interface that reaches the memory node")
	}
	rc, err := rnicConfig(cfg.MAC, cfg.IP, cfg.MTU, "off")
	if err != nil {
		return perftest.Result{}, fmt.Errorf("perf: %w", err)
	}
	var port netio.Port
	if port, err = openDataPort(cfg.Iface, cfg.MTU); err != nil {
		return perftest.Result{}, fmt.Errorf("perf: %w", err)
	}
	if faults.Active() {
		fp, err := netio.NewFaultPort(port, faults)
		if err != nil {
			port.Close()
			return perftest.Result{}, fmt.Errorf("perf: %w", err)
		}
		port = fp
	}
	rc.Name = "perf"
	dev, err := rnic.New(port, rc)
	if err != nil {
		port.Close()
		return perftest.Result{}, fmt.Errorf("perf: %w", err)
	}
	defer dev.Close()
	pc.Dev, pc.Dialer, pc.Remote = dev, &rnic.Dialer{Dev: dev}, cfg.Remote
	return perftest.Run(ctx, pc)
}
