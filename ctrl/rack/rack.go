// Package rack is the controller's configuration of a rack: where the
// switch is and how to reach it, the hosts on the switch's ports (MAC, IP,
// port), which of them are memory nodes and which of their regions are
// steered, the steering mode, chain mode, object size and tail TTL, which
// keys are tracked (a fixed list, or the hottest N), and the periods and
// thresholds of the control loops.
//
// It owns decoding (Config is filled by viper/mapstructure from YAML,
// SWORDBOX_CTRL_* environment variables and flags, see cmd/swordbox) and
// validation: Parse turns a Config into a typed Rack or refuses it with a
// *FieldError naming the offending field ("ctrl.hosts[2].mac"), so a bad
// file is refused before the controller writes anything. It knows nothing
// of P4Runtime; the checks that need the P4Info (table capacities) are made
// by package ctrl when it plans, also before writing.
//
// Decisions: tracked-keys and hot-keys are exclusive (a fixed set or an
// adaptive one, not both); memory nodes name a host of the hosts list rather
// than repeating its addresses; region base addresses are written as
// strings so that hexadecimal ("0x7f0000000000") is natural in YAML;
// ports are v1model's 9-bit ports 0..510 (511 is the drop port).
package rack

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Steering modes.
const (
	SteerOff       = "off"        // forward only
	SteerWrite     = "write"      // steer CAS (writes) of tracked keys
	SteerReadWrite = "read-write" // steer CAS and node READs of tracked keys
)

// MaxPort is the highest usable v1model port (511 drops).
const MaxPort = 510

// Config is the decoded, unvalidated configuration (section "ctrl").
type Config struct {
	Switch       string `mapstructure:"switch"`
	DeviceID     uint64 `mapstructure:"device-id"`
	ElectionID   uint64 `mapstructure:"election-id"`
	Role         string `mapstructure:"role"`
	Takeover     bool   `mapstructure:"takeover"`
	TLSCA        string `mapstructure:"tls-ca"`
	TLSCert      string `mapstructure:"tls-cert"`
	TLSKey       string `mapstructure:"tls-key"`
	TLSName      string `mapstructure:"tls-server-name"`
	P4Info       string `mapstructure:"p4info"`
	DeviceConfig string `mapstructure:"device-config"`
	Push         bool   `mapstructure:"push-pipeline"`
	Metrics      string `mapstructure:"metrics"`

	Steering    string       `mapstructure:"steering"`
	ObjectSize  int          `mapstructure:"object-size"`
	Hosts       []Host       `mapstructure:"hosts"`
	MemoryNodes []MemoryNode `mapstructure:"memory-nodes"`
	TrackedKeys []uint64     `mapstructure:"tracked-keys"`
	HotKeys     int          `mapstructure:"hot-keys"`
	// HotKeyCandidates and HotKeyRange ("lo-hi", inclusive) name the keys
	// hot-key steering may probe; HotKeyProbes is how many it probes per period.
	HotKeyCandidates []uint64 `mapstructure:"hot-key-candidates"`
	HotKeyRange      string   `mapstructure:"hot-key-range"`
	HotKeyProbes     int      `mapstructure:"hot-key-probes"`

	// TailTTL is how long after the CAS that linked it a cached tail may
	// be steered to. It must stay below half of the Clover store's T_r
	// (its read timeout): a tail younger than T_r cannot have been
	// reclaimed, and the other half covers the steered request's flight.
	TailTTL time.Duration `mapstructure:"tail-ttl"`
	// Chain turns on chained write steering (docs/swordbox-p4.md, "Chain
	// mode"): a linking CAS is steered onto the node of the key's previous
	// linking CAS, confirmed or not, instead of onto the confirmed tail.
	// Programs without chain mode (no spec_valid register) ignore it.
	Chain bool `mapstructure:"chain"`

	RepairPeriod    time.Duration `mapstructure:"repair-period"`
	RepairThreshold time.Duration `mapstructure:"repair-threshold"`
	HotKeysPeriod   time.Duration `mapstructure:"hot-keys-period"`
	// HotKeysMinDelta is the number of accesses per hot-keys period a key
	// needs before it may displace a tracked key (hysteresis).
	HotKeysMinDelta uint64 `mapstructure:"hot-keys-min-delta"`
}

// Host is one machine on a switch port.
type Host struct {
	Name string `mapstructure:"name"`
	MAC  string `mapstructure:"mac"`
	IP   string `mapstructure:"ip"`
	Port int    `mapstructure:"port"`
}

// MemoryNode marks a host as a memory node and lists its steered regions.
type MemoryNode struct {
	Host    string   `mapstructure:"host"`
	Regions []Region `mapstructure:"regions"`
}

// Region is a range of a memory node's virtual addresses whose node WRITEs,
// CASes and READs the switch may steer.
type Region struct {
	Base   string `mapstructure:"base"`
	Length string `mapstructure:"length"`
}

// Rack is a validated configuration with parsed addresses.
type Rack struct {
	Config
	Hosts  []HostAddr
	Memory []MemoryAddr
	// Candidates is the union of hot-key-candidates and hot-key-range, in
	// order, without repetition.
	Candidates []uint64
}

// HostAddr is a parsed Host.
type HostAddr struct {
	Name string
	MAC  [6]byte
	IP   netip.Addr
	Port uint32
}

// MemoryAddr is a parsed MemoryNode.
type MemoryAddr struct {
	Host    HostAddr
	Regions []RegionAddr
}

// RegionAddr is a parsed Region: [Base, Base+Length).
type RegionAddr struct{ Base, Length uint64 }

// End is one past the last address of the region.
func (r RegionAddr) End() uint64 { return r.Base + r.Length }

// FieldError is a refused configuration, naming the field.
type FieldError struct {
	Field string // e.g. "ctrl.hosts[1].mac"
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

func ferr(field, format string, a ...any) error {
	return &FieldError{Field: "ctrl." + field, Err: fmt.Errorf(format, a...)}
}

// The node layout's sizes (docs/clover-layout.md): a node is NodeOverhead
// bytes of header word, key and own handle, then the object.
const (
	NodeOverhead  = 24
	MaxObjectSize = 4096 - NodeOverhead
)

// DefaultTailTTL is half of Clover's default T_r (50ms); MaxTailTTL is the
// largest the switch's 48-bit microsecond clock comparison holds comfortably.
const (
	DefaultTailTTL = 25 * time.Millisecond
	MaxTailTTL     = time.Hour
)

// Defaults returns the defaults of every scalar setting.
func Defaults() Config {
	return Config{
		Switch:          "127.0.0.1:9559",
		DeviceID:        1,
		ElectionID:      1,
		Push:            true,
		Steering:        SteerWrite,
		ObjectSize:      128,
		TailTTL:         DefaultTailTTL,
		Chain:           true,
		RepairPeriod:    50 * time.Millisecond,
		RepairThreshold: 200 * time.Millisecond,
		HotKeysPeriod:   time.Second,
		HotKeysMinDelta: 1,
		HotKeyProbes:    4,
	}
}

// Parse validates c and returns the typed rack, or the first problem as a
// *FieldError.
func (c Config) Parse() (*Rack, error) {
	r := &Rack{Config: c}
	if _, _, err := net.SplitHostPort(c.Switch); err != nil {
		return nil, ferr("switch", "%q is not host:port: %v", c.Switch, err)
	}
	if c.ElectionID == 0 {
		return nil, ferr("election-id", "must be at least 1 (0 is reserved by P4Runtime)")
	}
	if c.P4Info == "" {
		return nil, ferr("p4info", "a P4Info file is required")
	}
	if c.Push && c.DeviceConfig == "" {
		return nil, ferr("device-config", "required to push the pipeline (our target: the P4 source; BMv2: p4c's JSON; Tofino: the compiled binary)")
	}
	tlsAny := c.TLSCA != "" || c.TLSCert != "" || c.TLSKey != ""
	if tlsAny && c.TLSCA == "" {
		return nil, ferr("tls-ca", "TLS needs the CA certificate")
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		if c.TLSCert == "" {
			return nil, ferr("tls-cert", "a client key without a certificate")
		}
		return nil, ferr("tls-key", "a client certificate without a key")
	}
	switch c.Steering {
	case SteerOff, SteerWrite, SteerReadWrite:
	default:
		return nil, ferr("steering", "%q is not one of off, write, read-write", c.Steering)
	}
	if c.ObjectSize <= 0 || c.ObjectSize > MaxObjectSize {
		return nil, ferr("object-size", "%d out of 1..%d bytes (a node is %d+size bytes in one 4096-byte MTU)", c.ObjectSize, MaxObjectSize, NodeOverhead)
	}
	if c.TailTTL < time.Microsecond || c.TailTTL > MaxTailTTL {
		return nil, ferr("tail-ttl", "%s out of 1µs..%s (keep it below half of Clover's T_r)", c.TailTTL, MaxTailTTL)
	}

	byName := map[string]HostAddr{}
	seenMAC := map[[6]byte]string{}
	seenIP := map[netip.Addr]string{}
	for i, h := range c.Hosts {
		f := fmt.Sprintf("hosts[%d]", i)
		if h.Name == "" {
			return nil, ferr(f+".name", "empty")
		}
		if _, dup := byName[h.Name]; dup {
			return nil, ferr(f+".name", "%q used twice", h.Name)
		}
		hw, err := net.ParseMAC(h.MAC)
		if err != nil || len(hw) != 6 {
			return nil, ferr(f+".mac", "%q is not an Ethernet address", h.MAC)
		}
		if hw[0]&1 != 0 {
			return nil, ferr(f+".mac", "%s is a multicast address", h.MAC)
		}
		var mac [6]byte
		copy(mac[:], hw)
		if o, dup := seenMAC[mac]; dup {
			return nil, ferr(f+".mac", "%s also belongs to host %s", h.MAC, o)
		}
		ip, err := netip.ParseAddr(h.IP)
		if err != nil || !ip.Is4() {
			return nil, ferr(f+".ip", "%q is not an IPv4 address", h.IP)
		}
		if o, dup := seenIP[ip]; dup {
			return nil, ferr(f+".ip", "%s also belongs to host %s", h.IP, o)
		}
		if h.Port < 0 || h.Port > MaxPort {
			return nil, ferr(f+".port", "%d out of 0..%d", h.Port, MaxPort)
		}
		a := HostAddr{Name: h.Name, MAC: mac, IP: ip, Port: uint32(h.Port)}
		byName[h.Name], seenMAC[mac], seenIP[ip] = a, h.Name, h.Name
		r.Hosts = append(r.Hosts, a)
	}

	memHost := map[string]bool{}
	for i, m := range c.MemoryNodes {
		f := fmt.Sprintf("memory-nodes[%d]", i)
		h, ok := byName[m.Host]
		if !ok {
			return nil, ferr(f+".host", "%q is not in hosts", m.Host)
		}
		if memHost[m.Host] {
			return nil, ferr(f+".host", "%q listed twice", m.Host)
		}
		memHost[m.Host] = true
		ma := MemoryAddr{Host: h}
		for j, g := range m.Regions {
			rf := fmt.Sprintf("%s.regions[%d]", f, j)
			base, err := parseU64(g.Base)
			if err != nil {
				return nil, ferr(rf+".base", "%v", err)
			}
			length, err := parseU64(g.Length)
			if err != nil {
				return nil, ferr(rf+".length", "%v", err)
			}
			if length == 0 {
				return nil, ferr(rf+".length", "empty region")
			}
			if base+length < base {
				return nil, ferr(rf+".length", "region 0x%x+0x%x wraps around the address space", base, length)
			}
			ra := RegionAddr{Base: base, Length: length}
			for k, o := range ma.Regions {
				if ra.Base < o.End() && o.Base < ra.End() {
					return nil, ferr(rf, "overlaps %s.regions[%d]", f, k)
				}
			}
			ma.Regions = append(ma.Regions, ra)
		}
		r.Memory = append(r.Memory, ma)
	}
	if c.Steering != SteerOff {
		n := 0
		for _, m := range r.Memory {
			n += len(m.Regions)
		}
		if n == 0 {
			return nil, ferr("memory-nodes", "steering %q needs at least one memory node with a steered region", c.Steering)
		}
	}

	if len(c.TrackedKeys) > 0 && c.HotKeys > 0 {
		return nil, ferr("hot-keys", "set either tracked-keys or hot-keys, not both")
	}
	if c.HotKeys < 0 {
		return nil, ferr("hot-keys", "%d is negative", c.HotKeys)
	}
	seenKey := map[uint64]bool{}
	for i, k := range c.TrackedKeys {
		if seenKey[k] {
			return nil, ferr(fmt.Sprintf("tracked-keys[%d]", i), "key %d listed twice", k)
		}
		seenKey[k] = true
	}
	if c.HotKeyProbes < 0 {
		return nil, ferr("hot-key-probes", "%d is negative", c.HotKeyProbes)
	}
	seenCand := map[uint64]bool{}
	for _, k := range c.HotKeyCandidates {
		if !seenCand[k] {
			seenCand[k] = true
			r.Candidates = append(r.Candidates, k)
		}
	}
	if c.HotKeyRange != "" {
		lo, hi, ok := strings.Cut(c.HotKeyRange, "-")
		a, err1 := parseU64(lo)
		b, err2 := parseU64(hi)
		if !ok || err1 != nil || err2 != nil || a > b {
			return nil, ferr("hot-key-range", "%q is not lo-hi with lo <= hi", c.HotKeyRange)
		}
		if b-a >= 1<<20 {
			return nil, ferr("hot-key-range", "%q has more than 2^20 keys", c.HotKeyRange)
		}
		for k := a; ; k++ {
			if !seenCand[k] {
				seenCand[k] = true
				r.Candidates = append(r.Candidates, k)
			}
			if k == b {
				break
			}
		}
	}
	if c.HotKeys > 0 && len(r.Candidates) == 0 {
		return nil, ferr("hot-key-candidates", "hot-keys needs candidate keys (hot-key-candidates or hot-key-range)")
	}
	if c.HotKeys > 0 && c.HotKeyProbes == 0 {
		// The switch counts a key's activity only while it is tracked: a
		// candidate is measured in a probe slot, so without one no key
		// ever becomes hot and nothing is steered.
		return nil, ferr("hot-key-probes", "0 with hot-keys %d: want at least 1 (a key's activity is counted only while it is tracked; without probe slots no candidate is ever measured)", c.HotKeys)
	}
	if c.RepairPeriod <= 0 {
		return nil, ferr("repair-period", "%s must be positive", c.RepairPeriod)
	}
	if c.RepairThreshold < c.RepairPeriod {
		return nil, ferr("repair-threshold", "%s is shorter than repair-period %s", c.RepairThreshold, c.RepairPeriod)
	}
	if c.HotKeysPeriod <= 0 { // also the period of counter mirroring
		return nil, ferr("hot-keys-period", "%s must be positive", c.HotKeysPeriod)
	}
	return r, nil
}

func parseU64(s string) (uint64, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if s == "" {
		return 0, errors.New("empty")
	}
	v, err := strconv.ParseUint(s, 0, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an unsigned 64-bit number", s)
	}
	return v, nil
}

// Host returns the host named name.
func (r *Rack) Host(name string) (HostAddr, bool) {
	for _, h := range r.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return HostAddr{}, false
}

// HostByIP returns the host with address ip.
func (r *Rack) HostByIP(ip netip.Addr) (HostAddr, bool) {
	for _, h := range r.Hosts {
		if h.IP == ip {
			return h, true
		}
	}
	return HostAddr{}, false
}
