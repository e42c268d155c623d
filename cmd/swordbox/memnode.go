package main

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
)

// memnodeConfig is the typed configuration of `swordbox memnode` (YAML
// section "memnode").
type memnodeConfig struct {
	Listen       string        `mapstructure:"listen"`
	Size         string        `mapstructure:"size"`
	Regions      int           `mapstructure:"regions"`
	DeviceMemory string        `mapstructure:"device-memory"`
	Iface        string        `mapstructure:"iface"`
	MAC          string        `mapstructure:"mac"`
	IP           string        `mapstructure:"ip"`
	MTU          int           `mapstructure:"mtu"`
	Workers      int           `mapstructure:"workers"`
	SkipICRC     bool          `mapstructure:"skip-icrc"`
	Timing       string        `mapstructure:"timing"`
	Duration     time.Duration `mapstructure:"duration"`
	StatsPeriod  time.Duration `mapstructure:"stats-period"`
}

// newMemnodeCmd builds `swordbox memnode` and its flags.
func newMemnodeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "memnode",
		Short: "Run a passive RDMA memory node on the software RNIC",
		Long: `memnode registers --size bytes of memory as --regions regions (plus, with
--device-memory, a zero-based NIC device-memory region with its own rkey) on a
software RNIC and accepts RC connections through the connection manager on
--listen (TCP): a client sends its QPN, PSN, MAC, IP and MTU and receives the
node's, with the regions (address, rkey, length). After that all traffic is
RoCEv2 on the data port; no CPU of the node takes part in one-sided verbs.

The data port is --iface (AF_PACKET on that interface, root) or, when empty, an
in-memory link that only this process reaches (a configuration smoke test;
swordbox perf without --remote builds the same node in-process). The RNIC uses
its own --mac and --ip, not the interface's. See docs/rnic.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cfg memnodeConfig
			if err := loadConfig(cmd, "memnode", &cfg); err != nil {
				return err
			}
			if cfg.Listen == "" {
				// Clients reach the node's regions only through its
				// connection manager.
				return fmt.Errorf("memnode: --listen is empty: want the connection manager's host:port")
			}
			port, err := openDataPort(cfg.Iface, cfg.MTU)
			if err != nil {
				return fmt.Errorf("memnode: %w", err)
			}
			n, err := startMemnode(cfg, port)
			if err != nil {
				return err
			}
			defer n.Close()
			// Signals are caught before the ready lines: a supervisor may
			// signal as soon as it reads them.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := cmd.OutOrStdout()
			ip := n.dev.IP()
			fmt.Fprintf(w, "memnode: listening on %s, RNIC %s %s, data port %s\n", n.ln.Addr(), formatMAC(n.dev.MAC()), net.IP(ip[:]), port.Name())
			for _, r := range n.acc.Regions {
				fmt.Fprintf(w, "memnode: region addr %#x rkey %#x len %d\n", r.Addr, r.RKey, r.Len)
			}
			if cfg.Duration > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
				defer cancel()
			}
			var tick <-chan time.Time
			if cfg.StatsPeriod > 0 {
				t := time.NewTicker(cfg.StatsPeriod)
				defer t.Stop()
				tick = t.C
			}
			for {
				select {
				case <-ctx.Done():
					fmt.Fprintf(w, "memnode: %s\n", keyValues(n.dev.Stats()))
					return nil
				case <-tick:
					fmt.Fprintf(w, "memnode: %s\n", keyValues(n.dev.Stats()))
				}
			}
		},
	}
	f := c.Flags()
	f.String("listen", "127.0.0.1:7471", "connection manager address (TCP host:port)")
	f.String("size", "64MiB", "memory to register (bytes; suffixes KiB, MiB, GiB)")
	f.Int("regions", 1, "number of equal regions the memory is split into, each with its own rkey")
	f.String("device-memory", "0", "NIC device memory to expose as one more zero-based region (at most 256KiB)")
	f.String("iface", "", "data interface (AF_PACKET, root); empty: in-memory link")
	f.String("mac", "02:00:00:00:01:02", "MAC address of the node's RNIC")
	f.String("ip", "10.0.1.2", "IPv4 address of the node's RNIC")
	f.Int("mtu", 1024, "path MTU (256, 512, 1024, 2048, 4096); an --iface must carry 78 bytes more")
	f.Int("workers", 0, "responder workers QPs are sharded over (0: the receive loop)")
	f.Bool("skip-icrc", false, "do not verify the ICRC of received frames (behind a steering switch)")
	f.String("timing", "off", "NIC timing model: off or cx5 (ConnectX-5 atomic caps, SwordBox Figures 3 and 4)")
	f.Duration("duration", 0, "exit after this long (0: run until interrupted)")
	f.Duration("stats-period", 0, "print the RNIC counters this often (0: only at exit)")
	return c
}

// memnodeSettings is the settings table of the "memnode" section.
func memnodeSettings() *settingTable {
	mem, why := memoryCap()
	return newSection([]string{"memnode"},
		bytesSpan("size", 4<<10, mem).because(why),
		intSpan("regions", 1, 1024),
		bytesSpan("device-memory", 0, 256<<10),
		setSpan("mtu", 256, 512, 1024, 2048, 4096),
		intSpan("workers", 0, 64),
		durSpan("duration", time.Millisecond, 365*24*time.Hour).orZero("run until interrupted"),
		durSpan("stats-period", 10*time.Millisecond, 24*time.Hour).orZero("only at exit"),
	).withCheck(func(cfg any) error {
		c := cfg.(*memnodeConfig)
		size, _ := parseBytes(c.Size)
		if size/int64(c.Regions) < 4096 {
			return fmt.Errorf("--size %s split into --regions %d leaves regions under 4KiB", c.Size, c.Regions)
		}
		return nil
	})
}

// memnode is a running memory node.
type memnode struct {
	dev *rnic.Device
	acc *rnic.Acceptor
	ln  *rnic.Listener
}

func (n *memnode) Close() {
	if n.ln != nil {
		n.ln.Close()
	}
	n.dev.Close()
}

// openDataPort opens an AF_PACKET port on iface, or an in-memory link whose
// far end is drained when iface is empty. An interface whose MTU cannot
// carry packets of the RoCE path MTU mtu is refused: the kernel would not
// send them, and the first large message would end in RETRY_EXC_ERR.
func openDataPort(iface string, mtu int) (netio.Port, error) {
	if iface == "" {
		a, b := netio.Pipe()
		go discard(b)
		return a, nil
	}
	if ifi, err := net.InterfaceByName(iface); err == nil && ifi.MTU < mtu+roce.LinkMTUOverhead {
		return nil, fmt.Errorf("--mtu %d on %s: its packets take %d bytes, more than the interface's MTU %d (raise it: ip link set %s mtu %d; or lower --mtu)",
			mtu, iface, mtu+roce.LinkMTUOverhead, ifi.MTU, iface, mtu+roce.LinkMTUOverhead)
	}
	p, err := netio.NewAFPacketPort(netio.AFPacketConfig{Interface: iface})
	if err != nil {
		return nil, fmt.Errorf("data port %s: %w", iface, err)
	}
	return p, nil
}

// rnicConfig builds the RNIC configuration shared by memnode and perf.
func rnicConfig(mac, ip string, mtu int, timing string) (rnic.Config, error) {
	var c rnic.Config
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return c, fmt.Errorf("mac %q: not a 48-bit MAC address", mac)
	}
	copy(c.MAC[:], hw)
	a := net.ParseIP(ip).To4()
	if a == nil {
		return c, fmt.Errorf("ip %q: not an IPv4 address", ip)
	}
	copy(c.IP[:], a)
	c.MTU = mtu
	switch timing {
	case "", "off":
	case "cx5":
		t := rnic.ConnectX5()
		c.Timing = &t
	default:
		return c, fmt.Errorf("timing %q: want off or cx5", timing)
	}
	return c, nil
}

// startMemnode starts a memory node on port (which it owns from now on).
// An empty cfg.Listen serves no TCP connection manager (in-process use).
func startMemnode(cfg memnodeConfig, port netio.Port) (*memnode, error) {
	fail := func(err error) (*memnode, error) {
		port.Close()
		return nil, fmt.Errorf("memnode: %w", err)
	}
	size, err := parseBytes(cfg.Size)
	if err != nil {
		return fail(fmt.Errorf("size: %w", err))
	}
	dmSize, err := parseBytes(cfg.DeviceMemory)
	if err != nil {
		return fail(fmt.Errorf("device-memory: %w", err))
	}
	if cfg.Regions <= 0 {
		return fail(fmt.Errorf("regions %d: want at least 1", cfg.Regions))
	}
	if size <= 0 || size/int64(cfg.Regions) < 8 {
		return fail(fmt.Errorf("size %d too small for %d regions", size, cfg.Regions))
	}
	rc, err := rnicConfig(cfg.MAC, cfg.IP, cfg.MTU, cfg.Timing)
	if err != nil {
		return fail(err)
	}
	rc.Workers, rc.SkipICRC, rc.Name = cfg.Workers, cfg.SkipICRC, "memnode"
	dev, err := rnic.New(port, rc)
	if err != nil {
		return fail(err)
	}
	n := &memnode{dev: dev, acc: &rnic.Acceptor{Dev: dev}}
	per := size / int64(cfg.Regions)
	for i := 0; i < cfg.Regions; i++ {
		mr, err := dev.Register(make([]byte, per), verbs.AccessAll)
		if err != nil {
			dev.Close()
			return nil, fmt.Errorf("memnode: register region %d: %w", i, err)
		}
		n.acc.Regions = append(n.acc.Regions, mr.Remote())
	}
	if dmSize > 0 {
		dm, err := dev.AllocDM(int(dmSize), verbs.AccessAll)
		if err != nil {
			dev.Close()
			return nil, fmt.Errorf("memnode: %w", err)
		}
		n.acc.Regions = append(n.acc.Regions, dm.Remote())
	}
	if cfg.Listen != "" {
		ln, err := rnic.Listen(cfg.Listen, n.acc)
		if err != nil {
			dev.Close()
			return nil, fmt.Errorf("memnode: %w", err)
		}
		n.ln = ln
	}
	return n, nil
}

// parseBytes parses a byte count with an optional binary suffix (K, KiB,
// M, MiB, G, GiB; K and KB mean KiB too).
func parseBytes(in string) (int64, error) {
	s := strings.TrimSpace(in)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a byte count (a number with an optional B, KiB, MiB or GiB)", in)
	}
	if v > math.MaxInt64/mult {
		return 0, fmt.Errorf("%q is too large a byte count", in)
	}
	return v * mult, nil
}

func formatMAC(m [6]byte) string { return net.HardwareAddr(m[:]).String() }
