package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/testbed"
	"github.com/swordbox/swordbox/testbed/netns"
	"github.com/swordbox/swordbox/testbed/report"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// cloverMSConfig is the typed configuration of `swordbox clover ms`.
type cloverMSConfig struct {
	Iface       string        `mapstructure:"iface"`
	MAC         string        `mapstructure:"mac"`
	IP          string        `mapstructure:"ip"`
	MTU         int           `mapstructure:"mtu"`
	AckTimeout  time.Duration `mapstructure:"ack-timeout"`
	Listen      string        `mapstructure:"listen"`
	Memnode     string        `mapstructure:"memnode"`
	Keys        int           `mapstructure:"keys"`
	Chunks      int           `mapstructure:"chunks"`
	Threads     int           `mapstructure:"threads"`
	ReadTimeout time.Duration `mapstructure:"read-timeout"`
	EpochPeriod time.Duration `mapstructure:"epoch-period"`
}

// cloverClientsConfig is the typed configuration of `swordbox clover clients`.
type cloverClientsConfig struct {
	Iface       string        `mapstructure:"iface"`
	MAC         string        `mapstructure:"mac"`
	IP          string        `mapstructure:"ip"`
	MTU         int           `mapstructure:"mtu"`
	AckTimeout  time.Duration `mapstructure:"ack-timeout"`
	Memnode     string        `mapstructure:"memnode"`
	MS          string        `mapstructure:"ms"`
	Host        int           `mapstructure:"host"`
	Hosts       int           `mapstructure:"hosts"`
	Threads     int           `mapstructure:"threads"`
	Workload    string        `mapstructure:"workload"`
	Keys        int           `mapstructure:"keys"`
	ValueSize   int           `mapstructure:"value-size"`
	Zipf        float64       `mapstructure:"zipf"`
	Seed        uint64        `mapstructure:"seed"`
	Warmup      time.Duration `mapstructure:"warmup"`
	Duration    time.Duration `mapstructure:"duration"`
	ReadTimeout time.Duration `mapstructure:"read-timeout"`
}

// newCloverCmd builds `swordbox clover` with its subcommands ms and clients.
func newCloverCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "clover",
		Short: "Run Clover's metadata server or client threads as rack hosts",
		Long: `clover runs the hosts of a Clover deployment against a memory node
('swordbox memnode') over a software RNIC on an AF_PACKET data port, with
queue pairs set up through the connection manager (TCP). 'swordbox bench
--netns' starts one 'clover ms' and one 'clover clients' per client host, each
in its own network namespace; see docs/netns.md.`,
	}
	c.AddCommand(newCloverMSCmd(), newCloverClientsCmd())
	return c
}

// newCloverMSCmd builds `swordbox clover ms` and its flags.
func newCloverMSCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ms",
		Short: "Run Clover's metadata server host",
		Long: `ms writes the Clover region header into the memory node's (zeroed) region,
then serves Clover's metadata server (allocation, GC, lookups) to every client
that connects a queue pair through the connection manager on --listen. It
prints "clover ms: ready" on stdout once clients may connect, and runs until
SIGINT or SIGTERM.`,
		Example: `  swordbox clover ms --iface d0 --mac 02:00:00:00:00:02 --ip 10.0.0.2 \
      --listen 10.99.0.3:7472 --memnode 10.99.0.2:7471 --keys 1024 --threads 32`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg cloverMSConfig
			if err := loadConfig(cmd, "clover-ms", &cfg); err != nil {
				return err
			}
			return runCloverHost(cmd, "ms", cfg.Iface, cfg.MAC, cfg.IP, cfg.MTU, cfg.AckTimeout, func(ctx context.Context, dev *rnic.Device) error {
				return netns.RunMS(ctx, netns.MSConfig{Listen: cfg.Listen, Memory: cfg.Memnode, Keys: cfg.Keys, Chunks: cfg.Chunks,
					Threads: cfg.Threads, ReadTimeout: cfg.ReadTimeout, EpochPeriod: cfg.EpochPeriod}, dev, cmd.OutOrStdout())
			})
		},
	}
	f := c.Flags()
	addCloverHostFlags(f, "02:00:00:00:00:02", "10.0.0.2")
	f.String("listen", "127.0.0.1:7472", "connection manager address clients dial (TCP host:port)")
	f.String("memnode", "127.0.0.1:7471", "the memory node's connection manager (TCP host:port)")
	f.Int("keys", 1024, "Clover keys the region is laid out for (one shortcut each, room for as many inserts)")
	f.Int("chunks", netns.DefaultChunks, "1 MiB chunks of the region for version nodes (room for two per key and two ALLOC batches of 32 per client thread)")
	f.Int("threads", 32, "client threads expected (sizes the completion queue)")
	f.Duration("read-timeout", netns.DefaultReadTimeout, "Clover's T_r")
	f.Duration("epoch-period", netns.DefaultEpochPeriod, "Clover's T_e")
	return c
}

// newCloverClientsCmd builds `swordbox clover clients` and its flags.
func newCloverClientsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "clients",
		Short: "Run a client host's Clover threads under a YCSB workload",
		Long: `clients connects this host's share of --threads Clover client threads
(thread g runs on host g mod --hosts) to the memory node and the metadata
server, prints {"event":"ready"} and then follows commands on stdin, one per
line, answering each with a JSON event line on stdout:

  load    create this host's share of the --keys records     -> {"event":"loaded"}
  warmup  drive the workload for --warmup, unmeasured        -> {"event":"warm"}
  run     drive the workload for --duration (testbed.Drive)  -> {"event":"result","result":{...}}
  quit    exit

The result carries operation counts, HdrHistogram snapshots of the latencies
(all, read, write; nanoseconds) and Clover's counters over the measured phase.
A failure prints {"event":"error","error":"..."} and exits non-zero.`,
		Example: `  swordbox clover clients --iface d0 --mac 02:00:00:00:00:03 --ip 10.0.0.3 \
      --memnode 10.99.0.2:7471 --ms 10.99.0.3:7472 --host 0 --hosts 1 --threads 4 --workload a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg cloverClientsConfig
			if err := loadConfig(cmd, "clover-clients", &cfg); err != nil {
				return err
			}
			if _, _, err := ycsb.Preset(ycsb.Kind(cfg.Workload)); err != nil {
				return fmt.Errorf("clover clients: --workload: %w", err)
			}
			return runCloverHost(cmd, "clients", cfg.Iface, cfg.MAC, cfg.IP, cfg.MTU, cfg.AckTimeout, func(ctx context.Context, dev *rnic.Device) error {
				return netns.RunClients(ctx, netns.ClientsConfig{Host: cfg.Host, Hosts: cfg.Hosts, Threads: cfg.Threads,
					Memory: cfg.Memnode, MS: cfg.MS, Workload: ycsb.Kind(cfg.Workload), Keys: cfg.Keys, ValueSize: cfg.ValueSize,
					Zipf: cfg.Zipf, Seed: cfg.Seed, Warmup: cfg.Warmup, Duration: cfg.Duration, ReadTimeout: cfg.ReadTimeout},
					dev, cmd.InOrStdin(), cmd.OutOrStdout())
			})
		},
	}
	f := c.Flags()
	addCloverHostFlags(f, "02:00:00:00:00:03", "10.0.0.3")
	f.String("memnode", "127.0.0.1:7471", "the memory node's connection manager (TCP host:port)")
	f.String("ms", "127.0.0.1:7472", "the metadata server's connection manager (TCP host:port)")
	f.Int("host", 0, "this client host's index (0-based)")
	f.Int("hosts", 1, "client hosts in the rack (at most --threads)")
	f.Int("threads", 32, "client threads in the rack, over all hosts")
	f.String("workload", "a", "YCSB workload (a, b, c, d, f, write-only)")
	f.Int("keys", 1024, "Clover keys (YCSB record count; with --value-size and --threads within the 1 GiB a Clover LH addresses)")
	f.Int("value-size", 128, "object (value) size in bytes")
	f.Float64("zipf", 0.99, "zipfian constant")
	f.Uint64("seed", 1, "workload seed (host h uses netns.HostSeed(seed, h))")
	f.Duration("warmup", time.Second, "unmeasured time of the warmup command")
	f.Duration("duration", 8*time.Second, "measured time of the run command")
	f.Duration("read-timeout", netns.DefaultReadTimeout, "Clover's T_r (as at the metadata server)")
	return c
}

// addCloverHostFlags registers the flags of a Clover host's RNIC and data
// port, with the RNIC's default addresses.
func addCloverHostFlags(f *pflag.FlagSet, mac, ip string) {
	f.String("iface", "", "data interface (AF_PACKET, root); empty: an in-memory link (smoke test only)")
	f.String("mac", mac, "MAC address of the host's RNIC")
	f.String("ip", ip, "IPv4 address of the host's RNIC")
	f.Int("mtu", 1024, "path MTU (256, 512, 1024, 2048, 4096); an --iface must carry 78 bytes more")
	f.Duration("ack-timeout", 0, "the RNIC's local ACK timeout (0: the RNIC's default, 8ms)")
}

// runCloverHost opens the RNIC of a Clover host (role ms or clients) and
// runs run with it until it returns or SIGINT/SIGTERM cancels its context;
// the RNIC's counters go to stderr at the end.
func runCloverHost(cmd *cobra.Command, role, iface, mac, ip string, mtu int, ackTimeout time.Duration, run func(context.Context, *rnic.Device) error) error {
	dev, err := cloverDevice(role, iface, mac, ip, mtu, ackTimeout)
	if err != nil {
		return err
	}
	defer dev.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() { fmt.Fprintf(cmd.ErrOrStderr(), "clover %s: RNIC %s\n", role, keyValues(dev.Stats())) }()
	return run(ctx, dev)
}

// cloverDevice opens the data port and the RNIC of a Clover host.
func cloverDevice(role, iface, mac, ip string, mtu int, ackTimeout time.Duration) (*rnic.Device, error) {
	rc, err := rnicConfig(mac, ip, mtu, "off")
	if err != nil {
		return nil, fmt.Errorf("clover %s: %w", role, err)
	}
	// Clover hosts sit behind a steering switch that rewrites requests and
	// responses without recomputing the ICRC: like the paper's (section
	// 5.1), they do not check it (the Ethernet FCS covers the frame).
	rc.Name, rc.Timeout, rc.SkipICRC = "clover-"+role, ackTimeout, true
	port, err := openDataPort(iface, mtu)
	if err != nil {
		return nil, fmt.Errorf("clover %s: %w", role, err)
	}
	dev, err := rnic.New(port, rc)
	if err != nil {
		port.Close()
		return nil, fmt.Errorf("clover %s: %w", role, err)
	}
	return dev, nil
}

// cloverMSSettings is the settings table of the "clover-ms" section.
func cloverMSSettings() *settingTable {
	return newSection([]string{"clover ms"},
		setSpan("mtu", 256, 512, 1024, 2048, 4096),
		durSpan("ack-timeout", 10*time.Microsecond, 10*time.Second).orZero("the RNIC's default, 8ms"),
		intSpan("keys", 1, 1<<20),
		intSpan("chunks", 1, 1024).because("1 MiB each, with the shortcuts within the 1 GiB a Clover LH addresses"),
		intSpan("threads", 1, 4096),
		durSpan("read-timeout", time.Microsecond, time.Minute),
		durSpan("epoch-period", time.Microsecond, time.Hour),
	).withCheck(func(cfg any) error {
		c := cfg.(*cloverMSConfig)
		if l := netns.CloverLayout(c.Keys, c.Chunks); l.Size() > clover.MaxRegionSize {
			most := (clover.MaxRegionSize - l.DataOff()) / clover.DefaultChunkSize
			return fmt.Errorf("--chunks %d with --keys %d: a region of %d MiB, more than the %d MiB a Clover LH addresses (at most %d chunks with these keys)",
				c.Chunks, c.Keys, l.Size()>>20, clover.MaxRegionSize>>20, most)
		}
		return nil
	})
}

// cloverClientsSettings is the settings table of the "clover-clients"
// section.
func cloverClientsSettings() *settingTable {
	return newSection([]string{"clover clients"},
		setSpan("mtu", 256, 512, 1024, 2048, 4096),
		durSpan("ack-timeout", 10*time.Microsecond, 10*time.Second).orZero("the RNIC's default, 8ms"),
		intSpan("host", 0, 63),
		intSpan("hosts", 1, 64),
		intSpan("threads", 1, 4096),
		intSpan("keys", 1, 1<<20),
		intSpan("value-size", 1, 4072).because("a Clover node, 24-byte header and value, in one 4096-byte MTU"),
		span{key: "zipf", lo: testbed.MinZipf, hi: testbed.MaxZipf},
		durSpan("warmup", 0, time.Hour),
		durSpan("duration", 10*time.Millisecond, 24*time.Hour),
		durSpan("read-timeout", time.Microsecond, time.Minute),
	).withCheck(func(cfg any) error {
		c := cfg.(*cloverClientsConfig)
		if c.Host >= c.Hosts {
			return fmt.Errorf("--host %d: want 0..%d (--hosts %d)", c.Host, c.Hosts-1, c.Hosts)
		}
		if c.Hosts > c.Threads {
			return fmt.Errorf("--hosts %d is more than --threads %d: every client host needs a thread", c.Hosts, c.Threads)
		}
		return checkCloverRegion(c.Keys, c.ValueSize, c.Threads)
	})
}

// checkCloverRegion refuses keys of valueSize-byte values with threads
// client threads that no Clover region holds (testbed.CloverChunks).
func checkCloverRegion(keys, valueSize, threads int) error {
	if _, err := testbed.CloverChunks(keys, valueSize, threads); err != nil {
		return fmt.Errorf("--keys %d with --value-size %d and --threads %d: %w", keys, valueSize, threads, err)
	}
	return nil
}

// runBenchNetns is `swordbox bench --netns`: the same cells as the
// in-process rack (testbed.SuiteConfig.Cells), each on a fresh rack of
// network namespaces (testbed/netns), reported the same way (emit). It lives
// here, beside the Clover host commands the namespace rack runs, so that
// bench.go keeps only the call.
func runBenchNetns(cmd *cobra.Command, cfg benchConfig) error {
	if cfg.Scenario == testbed.ScenarioCASMux {
		return fmt.Errorf("bench: --netns: scenario cas-mux runs in process only (drop --netns)")
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("bench: --netns: namespace mode needs root (it creates network namespaces and veths)")
	}
	sc, err := suiteConfig(cfg)
	if err != nil {
		return err
	}
	specs, err := sc.Cells()
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	// SWORDBOX_NETNS_LOG=1 copies the rack processes' stderr to ours;
	// SWORDBOX_NETNS_PREFIX names the namespaces (tests find them by it).
	opts := netns.Options{Prefix: os.Getenv("SWORDBOX_NETNS_PREFIX")}
	if os.Getenv("SWORDBOX_NETNS_LOG") != "" {
		opts.Log = cmd.ErrOrStderr()
	}
	// Namespaces are removed on every way out, interrupts included.
	return runSuiteCLI(cmd, cfg, "bench --netns", sc.Scenario, len(specs), 4*time.Second,
		func(ctx context.Context, progress func(i, n int, label string)) (*report.Run, error) {
			return netns.RunSuite(ctx, sc, opts, progress)
		})
}
