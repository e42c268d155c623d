package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
	"github.com/swordbox/swordbox/testbed"
)

// switchConfig is the typed configuration of `swordbox switch`.
type switchConfig struct {
	P4       string        `mapstructure:"p4"`
	Arch     string        `mapstructure:"arch"`
	GRPC     string        `mapstructure:"grpc"`
	Ports    string        `mapstructure:"ports"`
	DeviceID uint64        `mapstructure:"device-id"`
	CPUPort  uint32        `mapstructure:"cpu-port"`
	Stats    time.Duration `mapstructure:"stats"`
}

// newSwitchCmd builds `swordbox switch` and its flags.
func newSwitchCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "switch",
		Short: "Run the Go switch target (v1model or TNA) with a P4Runtime server",
		Long: `switch runs the Go target as a standalone switch, the way
simple_switch_grpc runs BMv2: a P4Runtime server (gRPC) in front of a pipeline
that executes a P4_16 program over network ports. The target executes programs
written for v1model (BMv2's architecture, p4/swordbox.p4) and for TNA
(Tofino's, p4/tna/swordbox.p4).

--p4 loads a program at start (its P4Info is derived from the source, as
'swordbox p4info' writes it); without it the switch waits for a controller's
SetForwardingPipelineConfig, whose p4_device_config is the P4 source text.
--arch names the architecture the --p4 program is written for (v1model or
tna); a program of the other architecture is refused.

--ports lists N=SPEC pairs: N is the pipeline port number (0..511, not the CPU
port; 0..510 with --arch v1model, whose port 511 drops) and SPEC is an
interface name for an AF_PACKET port (needs root and an existing interface,
e.g. a veth), or "mem" for an in-memory port whose far end discards what the
switch sends (a smoke-test port: it has no traffic source).

The CPU port (--cpu-port, 255 for swordbox.p4) is mapped to PacketIn and
PacketOut on the P4Runtime StreamChannel; it is 1..511, and at most 510 with
--arch v1model.`,
		Example: `  swordbox switch --p4 p4/swordbox.p4 --grpc 127.0.0.1:9559 --ports 1=veth1,2=veth2
  swordbox switch --arch tna --p4 p4/tna/swordbox.p4 --grpc 127.0.0.1:9559 --ports 1=mem,2=mem
  swordbox switch --grpc 127.0.0.1:9559 --ports 1=mem,2=mem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg switchConfig
			if err := loadConfig(cmd, "switch", &cfg); err != nil {
				return err
			}
			ports, err := openSwitchPorts(strings.Split(cfg.Ports, ","), cfg.CPUPort, maxSwitchPort(cfg.Arch))
			if err != nil {
				return err
			}
			logf := func(format string, args ...any) {
				fmt.Fprintf(cmd.ErrOrStderr(), format+"\n", args...)
			}
			srv := p4rt.New(p4rt.Options{DeviceID: cfg.DeviceID, CPUPort: cfg.CPUPort, Ports: ports, Logf: logf})
			defer srv.Close()
			if cfg.P4 != "" {
				_, _, src, err := testbed.SwitchProgram(cfg.Arch, cfg.P4)
				if err != nil {
					return fmt.Errorf("switch: --p4 %s: %w", cfg.P4, err)
				}
				if err := srv.LoadPipeline(cfg.P4, src); err != nil {
					return fmt.Errorf("switch: load %s: %w", cfg.P4, err)
				}
			}
			lis, err := net.Listen("tcp", cfg.GRPC)
			if err != nil {
				return fmt.Errorf("switch: listen %s: %w", cfg.GRPC, err)
			}
			gs := grpc.NewServer()
			srv.Register(gs)
			srv.Start()

			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			errc := make(chan error, 1)
			go func() { errc <- gs.Serve(lis) }()
			fmt.Fprintf(cmd.OutOrStdout(), "swordbox switch: P4Runtime on %s, device %d, %d ports, CPU port %d\n",
				lis.Addr(), cfg.DeviceID, len(ports), cfg.CPUPort)
			var tick <-chan time.Time
			if cfg.Stats > 0 {
				t := time.NewTicker(cfg.Stats)
				defer t.Stop()
				tick = t.C
			}
			for {
				select {
				case <-ctx.Done():
					// Open StreamChannels never end on their own: give RPCs in
					// flight a moment, then cut the rest.
					stopped := make(chan struct{})
					go func() { gs.GracefulStop(); close(stopped) }()
					select {
					case <-stopped:
					case <-time.After(2 * time.Second):
						gs.Stop()
					}
					return nil
				case err := <-errc:
					return fmt.Errorf("switch: grpc: %w", err)
				case <-tick:
					st := srv.Stats()
					fmt.Fprintf(cmd.OutOrStdout(), "switch: rx-frames=%d tx-frames=%d dropped-no-pipeline=%d dropped-no-port=%d packet-ins=%d packet-in-drops=%d packet-outs=%d\n",
						st.RxFrames, st.TxFrames, st.DroppedNoPipe, st.DroppedNoPort, st.PacketIns, st.PacketInDrops, st.PacketOuts)
				}
			}
		},
	}
	f := c.Flags()
	f.String("p4", "", "P4_16 program to load at start (e.g. p4/swordbox.p4, or p4/tna/swordbox.p4 with --arch tna); empty: wait for a controller")
	f.String("arch", testbed.ArchV1Model, "architecture of the --p4 program: "+strings.Join(testbed.SwitchArchs, " or "))
	f.String("grpc", "127.0.0.1:9559", "P4Runtime listen address")
	f.String("ports", "", "pipeline ports as N=INTERFACE (AF_PACKET) or N=mem, comma separated")
	f.Uint64("device-id", 1, "P4Runtime device_id")
	f.Uint32("cpu-port", p4rt.DefaultCPUPort, "pipeline port mapped to PacketIn/PacketOut (swordbox.p4: 255)")
	f.Duration("stats", 0, "print data plane counters at this interval (0: never)")
	return c
}

// v1modelDropPort is the port v1model's mark_to_drop sends a packet to:
// a packet sent there, to a front-panel port or to the CPU, is dropped.
const v1modelDropPort = 511

// maxSwitchPort is the highest port number a port or the CPU port may
// have on a switch of architecture arch: 511 (9-bit ports), less
// v1model's drop port.
func maxSwitchPort(arch string) uint64 {
	if arch == testbed.ArchV1Model {
		return v1modelDropPort - 1
	}
	return v1modelDropPort
}

// openSwitchPorts opens the N=SPEC port list; port numbers go up to maxPort.
func openSwitchPorts(specs []string, cpuPort uint32, maxPort uint64) (map[uint32]netio.Port, error) {
	ports := map[uint32]netio.Port{}
	fail := func(err error) (map[uint32]netio.Port, error) {
		for _, p := range ports {
			p.Close()
		}
		return nil, err
	}
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		num, what, ok := strings.Cut(spec, "=")
		if !ok {
			return fail(fmt.Errorf("switch: port %q: want N=INTERFACE or N=mem", spec))
		}
		n, err := strconv.ParseUint(num, 10, 32)
		if err != nil || n > maxPort {
			why := ""
			if maxPort < v1modelDropPort {
				why = fmt.Sprintf(" (%d is v1model's drop port)", v1modelDropPort)
			}
			return fail(fmt.Errorf("switch: --ports %q: port number must be 0..%d%s", spec, maxPort, why))
		}
		if uint32(n) == cpuPort {
			return fail(fmt.Errorf("switch: port %q: %d is the CPU port", spec, n))
		}
		if _, dup := ports[uint32(n)]; dup {
			return fail(fmt.Errorf("switch: port %q: port %d given twice", spec, n))
		}
		if what == "mem" {
			a, b := netio.Pipe()
			go discard(b)
			ports[uint32(n)] = a
			continue
		}
		p, err := netio.NewAFPacketPort(netio.AFPacketConfig{Interface: what})
		if err != nil {
			return fail(fmt.Errorf("switch: port %d: %w", n, err))
		}
		ports[uint32(n)] = p
	}
	return ports, nil
}

// discard drains the far end of a "mem" port until it is closed.
func discard(p netio.Port) {
	bufs := [][]byte{make([]byte, netio.MaxFrameSize)}
	for {
		bufs[0] = bufs[0][:cap(bufs[0])]
		if _, err := p.Recv(bufs); err != nil {
			return
		}
	}
}

// switchSettings is the settings table of the "switch" section.
func switchSettings() *settingTable {
	return newSection([]string{"switch"},
		// 0 is not a port the target can map: p4rt.Options reads it as
		// p4rt.DefaultCPUPort.
		intSpan("cpu-port", 1, v1modelDropPort).because("v1model's and TNA's 9-bit port numbers; at most 510 with --arch v1model, whose port 511 drops"),
		durSpan("stats", 10*time.Millisecond, 24*time.Hour).orZero("never"),
	).withCheck(func(cfg any) error {
		c := cfg.(*switchConfig)
		if err := testbed.CheckSwitchArch(c.Arch); err != nil {
			return fmt.Errorf("--arch: %w", err)
		}
		if maxPort := maxSwitchPort(c.Arch); uint64(c.CPUPort) > maxPort {
			return fmt.Errorf("--cpu-port %d with --arch %s: want 1..%d (%d is v1model's drop port: PacketIn would never leave)", c.CPUPort, c.Arch, maxPort, v1modelDropPort)
		}
		return nil
	})
}
