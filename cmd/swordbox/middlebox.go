package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/middlebox/mbbench"
	"github.com/swordbox/swordbox/netio"
)

// mboxRunConfig is the typed configuration of `swordbox middlebox run`
// (YAML section "middlebox"): the I/O settings as flags, and the engine's
// configuration (servers, conns, words, sizes) inline.
type mboxRunConfig struct {
	IO          string        `mapstructure:"io"`
	ClientIface string        `mapstructure:"client-iface"`
	ServerIface string        `mapstructure:"server-iface"`
	DPDKArgs    []string      `mapstructure:"dpdk-args"`
	Cores       int           `mapstructure:"cores"`
	StatsPeriod time.Duration `mapstructure:"stats-period"`
	Burst       int           `mapstructure:"burst"`

	Engine middlebox.Config `mapstructure:",squash"`
}

// mboxBenchConfig is the typed configuration of `swordbox middlebox bench`
// (YAML section "middlebox-bench").
type mboxBenchConfig struct {
	IO       string        `mapstructure:"io"`
	Cores    int           `mapstructure:"cores"`
	JSON     bool          `mapstructure:"json"`
	Duration time.Duration `mapstructure:"duration"`
	Clients  int           `mapstructure:"clients"`
	CASPct   int           `mapstructure:"cas-pct"`
	ReadPct  int           `mapstructure:"read-pct"`
	Coalesce int           `mapstructure:"coalesce"`
	Seed     uint64        `mapstructure:"seed"`
	NoCheck  bool          `mapstructure:"skip-icrc-check"`
	DPDKArgs []string      `mapstructure:"dpdk-args"`
	Vdevs    []string      `mapstructure:"vdevs"`
}

// newMiddleboxCmd builds `swordbox middlebox` with its subcommands run and bench.
func newMiddleboxCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "middlebox",
		Short: "The multiplexing middlebox: RC connection remapping, CAS to WRITE, ACK de-coalescing",
		Long: `middlebox runs SwordBox's full-featured data plane (paper sections 4.1-4.5):
operations on configured address ranges move onto one shared RC connection per
memory server, CMP_SWAP and FETCH_ADD on tracked words become WRITEs, and the
server's coalesced ACKs are split back per client. See docs/middlebox.md.`,
	}
	c.AddCommand(newMiddleboxRunCmd(), newMiddleboxBenchCmd())
	return c
}

// newMiddleboxRunCmd builds `swordbox middlebox run` and its flags.
func newMiddleboxRunCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "run",
		Short: "Run the middlebox between a client-side and a server-side port",
		Long: `run moves frames between the client side and the server side through the
engine until interrupted, printing the counters every --stats-period and at exit.
--io afpacket binds two network interfaces (root); --io dpdk needs a binary built
with -tags dpdk. The engine's settings (servers with their remap and cas-to-write
ranges, preloaded conns, seeded words, ring sizes, Clover steering with its
tail-ttl) come from the "middlebox" section of the --config file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg mboxRunConfig
			if err := loadConfig(cmd, "middlebox", &cfg); err != nil {
				return err
			}
			if err := cfg.Engine.Validate(); err != nil {
				if path, _ := cmd.Flags().GetString("config"); path != "" {
					return fmt.Errorf("config %s: %w", path, err)
				}
				return err
			}
			s, err := middlebox.NewSharded(cfg.Engine, cfg.Cores)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := cmd.OutOrStdout()
			go func() {
				if cfg.StatsPeriod <= 0 {
					return
				}
				t := time.NewTicker(cfg.StatsPeriod)
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-t.C:
						printCounters(w, s)
					}
				}
			}()
			switch cfg.IO {
			case "afpacket":
				if cfg.ClientIface == "" || cfg.ServerIface == "" {
					return fmt.Errorf("middlebox run: --io afpacket needs --client-iface and --server-iface")
				}
				cp, err := netio.NewAFPacketPort(netio.AFPacketConfig{Interface: cfg.ClientIface})
				if err != nil {
					return fmt.Errorf("middlebox run: client side: %w", err)
				}
				sp, err := netio.NewAFPacketPort(netio.AFPacketConfig{Interface: cfg.ServerIface})
				if err != nil {
					cp.Close()
					return fmt.Errorf("middlebox run: server side: %w", err)
				}
				l := &middlebox.Loop{S: s, Ports: [2]netio.Port{cp, sp}, Burst: cfg.Burst}
				err = l.Run(ctx)
				printCounters(w, s)
				return err
			case "dpdk":
				err := middlebox.RunDPDK(ctx, s, middlebox.DPDKConfig{EAL: cfg.DPDKArgs, ClientPort: cfg.ClientIface, ServerPort: cfg.ServerIface, Burst: cfg.Burst})
				printCounters(w, s)
				return err
			}
			return fmt.Errorf("middlebox run: --io %q: want afpacket or dpdk", cfg.IO)
		},
	}
	f := c.Flags()
	f.String("io", "afpacket", "afpacket | dpdk")
	f.String("client-iface", "", "client-side interface (afpacket) or DPDK port name (dpdk)")
	f.String("server-iface", "", "server-side interface (afpacket) or DPDK port name (dpdk)")
	f.StringSlice("dpdk-args", nil, "EAL arguments (--io dpdk)")
	f.Int("cores", 1, "engines (shards by memory server)")
	f.Duration("stats-period", 0, "print the counters this often (0: only at exit)")
	f.Int("burst", 32, "frames received at once")
	return c
}

// newMiddleboxBenchCmd builds `swordbox middlebox bench` and its flags.
func newMiddleboxBenchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "bench",
		Short: "Replay a recorded mix of client CAS, WRITE, READ and server ACK traffic and print Mpps per core",
		Long: `bench replays a synthetic recorded mix (--clients client connections issuing
--cas-pct % CMP_SWAP on a lock word, --read-pct % 64-byte READs, the rest small
WRITEs; the server answering every --coalesce requests with one coalesced ACK)
through the middlebox: every request remapped onto one shared connection, every
CMP_SWAP replaced by a WRITE, every ACK de-coalesced.
  --io engine   the engine alone (time inside Engine.Process only)
  --io ring     the engine in its I/O loop between DPDK net_ring vdevs (build tag dpdk)
  --io dpdk     the same over the vdevs named by --vdevs (build tag dpdk)
Each core runs its own engine and memory server (all traffic of one server-side
connection stays on one core).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg mboxBenchConfig
			if err := loadConfig(cmd, "middlebox-bench", &cfg); err != nil {
				return err
			}
			mix := mbbench.MixConfig{Clients: cfg.Clients, CASPct: cfg.CASPct, ReadPct: cfg.ReadPct, Coalesce: cfg.Coalesce, Seed: cfg.Seed, SkipICRCCheck: cfg.NoCheck}
			var bench func() (mbbench.BenchResult, error)
			switch cfg.IO {
			case "engine":
				bench = func() (mbbench.BenchResult, error) { return mbbench.BenchEngine(mix, cfg.Cores, cfg.Duration) }
			case "ring", "dpdk":
				bench = func() (mbbench.BenchResult, error) {
					return mbbench.BenchDPDK(mbbench.DPDKBenchConfig{Mix: mix, Cores: cfg.Cores, Duration: cfg.Duration,
						EAL: cfg.DPDKArgs, Vdevs: cfg.Vdevs, Ring: cfg.IO == "ring"})
				}
			default:
				return fmt.Errorf("middlebox bench: --io %q: want engine, ring or dpdk", cfg.IO)
			}
			// The measurement runs to its end; SIGINT or SIGTERM ends the
			// command at once instead (the process exits with it).
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			type outcome struct {
				res mbbench.BenchResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				r, err := bench()
				done <- outcome{r, err}
			}()
			var res mbbench.BenchResult
			select {
			case <-ctx.Done():
				return fmt.Errorf("middlebox bench: interrupted before the end of the measurement: no result")
			case o := <-done:
				if o.err != nil {
					return o.err
				}
				res = o.res
			}
			w := cmd.OutOrStdout()
			if cfg.JSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(w, "middlebox bench --io %s: %d clients, %d%% CAS, %d%% READ, ACK every %d requests, %d core(s), %.1fs\n\n",
				res.IO, mix.Clients, mix.CASPct, mix.ReadPct, mix.Coalesce, res.Cores, res.Wall)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "core\tMpps wall\tMpps per CPU\tframes in\tframes out\tbusy s\tCPU s\tdrops\t")
			for k, c := range res.PerCore {
				fmt.Fprintf(tw, "%d\t%.2f\t%.2f\t%d\t%d\t%.2f\t%.2f\t%d\t\n", k, c.Mpps, c.MppsCPU, c.FramesIn, c.FramesOut, c.Busy, c.CPU, c.Drops)
			}
			fmt.Fprintf(tw, "total\t%.2f\t%.2f\t\t\t\t\t\t\n", res.TotalMpp, res.TotalCPU)
			return tw.Flush()
		},
	}
	b := c.Flags()
	b.String("io", "engine", "engine | ring | dpdk")
	b.Int("cores", 1, "cores (one engine and one memory server each; with --io ring or dpdk two DPDK ports each, at most half of the DPDK build's RTE_MAX_ETHPORTS: 16 with Debian's)")
	b.Bool("json", false, "print the result as JSON")
	b.Duration("duration", 3*time.Second, "measured time per core")
	b.Int("clients", 16, "client connections per memory server")
	b.Int("cas-pct", 60, "percent of requests that are CMP_SWAP")
	b.Int("read-pct", 20, "percent of requests that are READs")
	b.Int("coalesce", 8, "requests per server ACK")
	b.Uint64("seed", 1, "seed of the mix")
	b.Bool("skip-icrc-check", false, "do not verify received ICRCs (as behind a NIC that checks the Ethernet FCS)")
	b.StringSlice("dpdk-args", nil, "EAL arguments (default: --no-huge -m 512 --no-pci -l 0-<cores> --file-prefix swordbox-mbox-<pid>)")
	b.StringSlice("vdevs", nil, "--io dpdk: two vdevs per core, client side then server side (default: net_ring pairs)")
	return c
}

// middleboxRunSettings is the settings table of the "middlebox" section
// (middlebox run).
func middleboxRunSettings() *settingTable {
	return newSection([]string{"middlebox run"},
		intSpan("cores", 1, 64),
		durSpan("stats-period", 10*time.Millisecond, 24*time.Hour).orZero("only at exit"),
		intSpan("burst", 1, 1024),
	).withCheck(func(cfg any) error {
		// Each core's engine fills its tables as traffic arrives
		// (connections learned, steering slots used): tables that cannot
		// fit would end the run mid-way, out of memory.
		c := cfg.(*mboxRunConfig)
		mem, why := memoryCap()
		if need := c.Engine.TableBytes() * int64(c.Cores); need > mem {
			e := c.Engine.Defaulted()
			return fmt.Errorf("max-conns %d, window %d, conn-ring-size %d with --cores %d: the engines' tables (connections, steering maps) may take %s, more than %s (%s)",
				e.MaxConns, e.Window, e.ConnRingSize, c.Cores, formatBytes(need), formatBytes(mem), why)
		}
		return nil
	})
}

// middleboxBenchSettings is the settings table of the "middlebox-bench"
// section.
func middleboxBenchSettings() *settingTable {
	return newSection([]string{"middlebox bench"},
		intSpan("cores", 1, 64),
		durSpan("duration", 10*time.Millisecond, time.Hour),
		intSpan("clients", 1, 1024),
		intSpan("cas-pct", 0, 100),
		intSpan("read-pct", 0, 100),
		// A round of --coalesce requests is outstanding until the server's
		// ACK, and any one client may hold all of it: more than the
		// engine's per-client window and the engine drops the excess
		// (window-full), the drops counted as frames processed.
		intSpan("coalesce", 1, middlebox.DefaultWindow).because("the middlebox's per-client window: one client may have a whole round outstanding"),
	).withCheck(func(cfg any) error {
		c := cfg.(*mboxBenchConfig)
		if c.CASPct+c.ReadPct > 100 {
			return fmt.Errorf("--cas-pct %d + --read-pct %d is more than 100", c.CASPct, c.ReadPct)
		}
		return nil
	})
}

// printCounters prints the engines' counters as key=value pairs (only the
// non-zero ones), or says that all are zero.
func printCounters(w io.Writer, s *middlebox.Sharded) {
	c := s.Counters()
	if line := c.String(); line != "" {
		fmt.Fprintf(w, "middlebox: %s\n", line)
		return
	}
	fmt.Fprintln(w, "middlebox: every counter is zero (no frames seen)")
}
