package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/ctrl/rack"
)

// newCtrlCmd builds `swordbox ctrl` with its subcommands run and show.
func newCtrlCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "ctrl",
		Short: "The P4Runtime controller: program a swordbox switch, repair CAS, steer hot keys",
		Long: `ctrl is swordbox's control plane. It speaks only P4Runtime, so it drives
the Go target ('swordbox switch'), BMv2's simple_switch_grpc or Stratum alike.

The rack (hosts, memory nodes and their steered regions, tracked keys) lives
in the 'ctrl' section of the --config file; scalar settings are also flags
and SWORDBOX_CTRL_* environment variables. See docs/ctrl.md and
docs/examples/rack.yaml.`,
	}
	c.AddCommand(newCtrlRunCmd(), newCtrlShowCmd())
	return c
}

// newCtrlRunCmd builds `swordbox ctrl run` and its flags.
func newCtrlRunCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "run",
		Short: "Program the switch and run the repair and hot-key loops",
		Long: `run validates the whole configuration against the P4Info before it
connects (a bad file is refused naming the field, and nothing is written),
takes part in primary/backup arbitration, and while primary: pushes the
pipeline if the switch runs another one, reconciles forwarding, steering
registers and tracked keys, retransmits CAS outstanding longer than
--repair-threshold, moves the tracked keys to the hottest --hot-keys, and
serves Prometheus metrics on --metrics.`,
		Example: `  swordbox ctrl run --config docs/examples/rack.yaml
  swordbox ctrl run --config rack.yaml --switch 10.0.0.254:9559 --election-id 2 --takeover`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := rack.Defaults()
			if err := loadConfig(cmd, "ctrl", &cfg); err != nil {
				return err
			}
			r, err := cfg.Parse()
			if err != nil {
				return attributeField(cmd, "ctrl", err)
			}
			// Signals are caught before ctrl.New, which starts dialing the
			// switch (and logging its retries) in the background.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			c, err := ctrl.New(r, ctrl.Options{Log: log})
			if err != nil {
				return attributeField(cmd, "ctrl", err)
			}
			defer c.Close()
			if r.Metrics != "" {
				lis, err := net.Listen("tcp", r.Metrics)
				if err != nil {
					return fmt.Errorf("ctrl.metrics: %w", err)
				}
				mux := http.NewServeMux()
				mux.Handle("/metrics", c.Metrics.Handler())
				hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
				go hs.Serve(lis)
				defer hs.Close()
				fmt.Fprintf(cmd.OutOrStdout(), "swordbox ctrl: metrics on http://%s/metrics\n", lis.Addr())
			}
			fmt.Fprintf(cmd.OutOrStdout(), "swordbox ctrl: switch %s device %d election id %d, %d hosts, %d memory nodes, steering %s\n",
				r.Switch, r.DeviceID, r.ElectionID, len(r.Hosts), len(r.Memory), r.Steering)
			if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	d := rack.Defaults()
	addCtrlSwitchFlags(c.Flags(), d)
	f := c.Flags()
	f.Uint64("election-id", d.ElectionID, "election ID (distinct per controller; the highest is primary)")
	f.String("role", d.Role, "P4Runtime role name (empty: the default role)")
	f.Bool("takeover", d.Takeover, "when the primary dies, raise our election ID above it and take over")
	f.String("p4info", d.P4Info, "P4Info file of the pipeline (text or binary protobuf)")
	f.String("device-config", d.DeviceConfig, "device config pushed with the P4Info: P4 source (Go target), p4c JSON (BMv2), compiled binary (Tofino)")
	f.Bool("push-pipeline", d.Push, "push the pipeline when the switch runs none or another one")
	f.String("metrics", d.Metrics, "serve Prometheus /metrics on this address (empty: off)")
	f.String("steering", d.Steering, "off | write | read-write")
	f.Int("object-size", d.ObjectSize, "Clover object size in bytes (a node is 24 + size)")
	f.Duration("tail-ttl", d.TailTTL, "how long a confirmed tail may be steered to after the CAS that linked it")
	f.Bool("chain", d.Chain, "chained write steering: steer a CAS onto the key's last forwarded link (docs/swordbox-p4.md, \"Chain mode\"); ignored, with a warning, by a program without chain mode")
	f.Int("hot-keys", d.HotKeys, "keep the hottest N keys tracked (instead of tracked-keys)")
	f.String("hot-key-range", d.HotKeyRange, "candidate keys of hot-key steering, lo-hi")
	f.Int("hot-key-probes", d.HotKeyProbes, "candidate keys probed per hot-keys period")
	f.Uint64("hot-keys-min-delta", d.HotKeysMinDelta, "activity per period a key needs to become hot")
	f.Duration("hot-keys-period", d.HotKeysPeriod, "period of hot-key steering")
	f.Duration("repair-period", d.RepairPeriod, "poll period of the outstanding-CAS registers")
	f.Duration("repair-threshold", d.RepairThreshold, "retransmit a CAS seen outstanding this long")
	return c
}

// newCtrlShowCmd builds `swordbox ctrl show` and its flags.
func newCtrlShowCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "show tables|registers|counters [NAME...]",
		Short: "Print the tables, registers or counters of a live switch",
		Long: `show reads a live switch without taking part in arbitration (it never
disturbs the controllers). It uses the P4Info the switch runs, so it needs no
file; NAMES (full names or aliases) restrict the dump. Registers and counters
print only non-zero cells.`,
		Example: `  swordbox ctrl show tables --switch 127.0.0.1:9559
  swordbox ctrl show registers cas_out_valid tail_valid`,
		Args:      cobra.MinimumNArgs(1),
		ValidArgs: []string{"tables", "registers", "counters"},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := rack.Defaults()
			if err := loadConfig(cmd, "ctrl", &cfg); err != nil {
				return err
			}
			var tlsOpt *p4rtc.TLS
			if cfg.TLSCA != "" {
				tlsOpt = &p4rtc.TLS{CAFile: cfg.TLSCA, CertFile: cfg.TLSCert, KeyFile: cfg.TLSKey, ServerName: cfg.TLSName}
			}
			cli, err := p4rtc.Dial(p4rtc.Options{Addr: cfg.Switch, DeviceID: cfg.DeviceID, TLS: tlsOpt, Observer: true})
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			info, err := cli.GetP4Info(ctx)
			if err != nil {
				return err
			}
			s, err := p4rtc.NewSchema(info)
			if err != nil {
				return err
			}
			return ctrl.Show(ctx, cli, s, args[0], args[1:], cmd.OutOrStdout())
		},
	}
	addCtrlSwitchFlags(c.Flags(), rack.Defaults())
	return c
}

// addCtrlSwitchFlags registers the flags every ctrl subcommand has: how to
// reach the switch.
func addCtrlSwitchFlags(f *pflag.FlagSet, d rack.Config) {
	f.String("switch", d.Switch, "P4Runtime server of the switch, host:port")
	f.Uint64("device-id", d.DeviceID, "P4Runtime device ID")
	f.String("tls-ca", "", "CA certificate of the switch (enables TLS)")
	f.String("tls-cert", "", "client certificate (mutual TLS)")
	f.String("tls-key", "", "client key (mutual TLS)")
	f.String("tls-server-name", "", "name expected in the switch's certificate")
}

// ctrlSettings is the settings table of the "ctrl" section.
func ctrlSettings() *settingTable {
	return newSection([]string{"ctrl run", "ctrl show"},
		intSpan("object-size", 1, 4072).because("a Clover node, 24-byte header and value, in one 4096-byte MTU"),
		intSpan("hot-keys", 0, 4096).because("the switch's key slots, with the hot-key-probes"),
		intSpan("hot-key-probes", 0, 4096),
		// HotKeys takes 0 as 1: a newcomer needs at least one access.
		intSpan("hot-keys-min-delta", 1, 1<<32),
		durSpan("hot-keys-period", time.Millisecond, 24*time.Hour),
		durSpan("tail-ttl", time.Microsecond, time.Hour).because("keep it below half of Clover's T_r"),
		durSpan("repair-period", time.Millisecond, time.Hour),
		durSpan("repair-threshold", time.Millisecond, time.Hour),
	)
}

// attributeField says where the setting a *rack.FieldError names came from:
// the flag, the SWORDBOX_CTRL_* variable, or the config file (named).
func attributeField(cmd *cobra.Command, section string, err error) error {
	var field string
	var fe *rack.FieldError
	if errors.As(err, &fe) {
		field = fe.Field
	} else if f, _, ok := strings.Cut(err.Error(), ": "); ok && strings.HasPrefix(f, section+".") {
		field = f
	} else {
		return err
	}
	key := strings.TrimPrefix(field, section+".")
	if i := strings.IndexAny(key, ".["); i >= 0 {
		key = key[:i]
	}
	if f := cmd.Flags().Lookup(key); f != nil && f.Changed {
		return fmt.Errorf("--%s: %w", key, err)
	}
	env := "SWORDBOX_" + strings.ToUpper(strings.ReplaceAll(section+"_"+key, "-", "_"))
	if _, ok := os.LookupEnv(env); ok {
		return fmt.Errorf("%s: %w", env, err)
	}
	if path, _ := cmd.Flags().GetString("config"); path != "" {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return err
}
