package middlebox

import (
	"fmt"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"github.com/swordbox/swordbox/roce"
)

// Defaults of Config's sizes.
const (
	DefaultRingSize     = 4096
	DefaultConnRingSize = 256
	DefaultWindow       = 256
	// DefaultReplayLogBytes keeps the replay copies within the L2 cache.
	DefaultReplayLogBytes = 64 << 10
	DefaultMaxConns       = 4096
	DefaultMaxWords       = 1 << 14
	DefaultPMTU           = 4096
)

// Bounds of Config's sizes that are not powers of two.
const (
	MaxConnsLimit = 1 << 20
	MaxWordsLimit = 1 << 24
	// MaxReplayHoldoff keeps a replay within a client's retransmission
	// timer's reach: a longer holdoff leaves a lost request to the
	// clients' own retries.
	MaxReplayHoldoff = time.Second
)

// NAK recovery modes (Config.NAKRecovery).
const (
	NAKReplay    = "replay"
	NAKBroadcast = "broadcast"
)

// Config configures an Engine. The zero value of every size means its
// default.
type Config struct {
	// RingSize is the number of map entries of a shared (remapping target)
	// connection: the N of "outgoing PSN modulo N". A power of two. A new
	// request that would overwrite an entry not yet acknowledged to its
	// client is dropped (DropRingFull).
	RingSize int `mapstructure:"ring-size" yaml:"ring-size"`
	// ConnRingSize is the number of map entries of every other connection
	// (which only ever carries its own client's traffic). A power of two.
	ConnRingSize int `mapstructure:"conn-ring-size" yaml:"conn-ring-size"`
	// Window bounds the operations a client may have outstanding through
	// the middlebox (DropWindowFull beyond). A power of two.
	Window int `mapstructure:"window" yaml:"window"`
	// MaxConns bounds the connection table (learned and preloaded).
	MaxConns int `mapstructure:"max-conns" yaml:"max-conns"`
	// MaxWords bounds the number of tracked 8-byte words.
	MaxWords int `mapstructure:"max-words" yaml:"max-words"`
	// PMTU is the path MTU of the RC connections (256..4096): a READ of L
	// bytes takes max(1, ceil(L/PMTU)) PSNs.
	PMTU int `mapstructure:"pmtu" yaml:"pmtu"`
	// NAKRecovery chooses what the engine does when a server answers a
	// shared connection with NAK PSN sequence error (a request was lost
	// between the middlebox and the server): "replay" (default) resends,
	// in order, its own copies of the requests from the NAK's PSN on;
	// "broadcast" sends each client with operations outstanding on the
	// connection a NAK at its own oldest PSN, as the paper does (section
	// 4.5). See the package documentation for why replay is the default.
	NAKRecovery string `mapstructure:"nak-recovery" yaml:"nak-recovery"`
	// ReplayLogBytes is the size of the byte ring in which a shared
	// connection keeps its copies of the requests it sent, for replay (a
	// power of two, 4 KiB to 64 MiB; default 64 KiB). It should hold the
	// requests outstanding at the server when a NAK arrives (64 KiB: about
	// 750 CMP_SWAPs); a copy overwritten before it is needed is skipped
	// (counter replay-lost) and its client's retransmission recovers it.
	// Larger logs cost cache space on every request.
	ReplayLogBytes int `mapstructure:"replay-log-bytes" yaml:"replay-log-bytes"`
	// ReplayHoldoff is the least time between two replays of one
	// connection triggered by client retransmissions (default 1ms).
	ReplayHoldoff time.Duration `mapstructure:"replay-holdoff" yaml:"replay-holdoff"`
	// SkipICRCCheck turns off the dropping of received frames whose ICRC
	// is wrong, for NICs that drop frames with a bad Ethernet FCS (the
	// links of the software rack can corrupt frames without one). A frame
	// the engine rewrites keeps a wrong ICRC wrong (CMP_SWAP replaced by
	// WRITE included), so the server drops it; generated answers get a
	// correct one. It saves no time: the fast path computes every received
	// frame's ICRC error either way, to carry it (icrc.go).
	SkipICRCCheck bool `mapstructure:"skip-icrc-check" yaml:"skip-icrc-check"`
	// Steering enables Clover steering in software (nil: off); see steer.go.
	Steering *SteerConfig `mapstructure:"steering" yaml:"steering"`
	// Servers are the memory nodes whose traffic the engine manages.
	// Traffic to or from any other address passes through unchanged.
	Servers []ServerConfig `mapstructure:"servers" yaml:"servers"`
	// Conns preloads connections (both directions known from the start).
	Conns []ConnConfig `mapstructure:"conns" yaml:"conns"`
	// Words seeds the values of tracked words (e.g. Sherman's locks, all 0
	// at start), so their first CMP_SWAP is already replaced by a WRITE.
	// Each must lie in a CASToWrite range of some server.
	Words []WordConfig `mapstructure:"words" yaml:"words"`
}

// ServerConfig describes one memory node.
type ServerConfig struct {
	IP string `mapstructure:"ip" yaml:"ip"`
	// Remap lists the address ranges whose operations move onto the
	// server's shared connection. A range with Lo 0 and Hi 0 means every
	// address.
	Remap []Range `mapstructure:"remap" yaml:"remap"`
	// CASToWrite lists the ranges whose 8-byte words the engine tracks and
	// whose CMP_SWAP and FETCH_ADD it replaces with WRITEs. Each must lie
	// inside a Remap range.
	CASToWrite []Range `mapstructure:"cas-to-write" yaml:"cas-to-write"`
	// AnswerFailedCAS makes the engine answer a CMP_SWAP on a CASToWrite
	// word itself when the word's value is known and differs from the
	// compare value (the CMP_SWAP would fail), instead of forwarding a
	// WRITE of the unchanged value (answerFailedCAS; docs/middlebox.md,
	// "Sherman"). Off: every converted CMP_SWAP reaches the server, as in
	// the paper.
	AnswerFailedCAS bool `mapstructure:"answer-failed-cas" yaml:"answer-failed-cas"`
	// WaitFailedCAS makes such a CMP_SWAP wait in the engine until the
	// word's value changes, instead of being answered at once; then it is
	// evaluated again (and sent as a WRITE if it now succeeds). A
	// retransmission of a waiting CMP_SWAP (its requester's RC timer
	// fired) is answered as failed, with the value then known
	// (waitOnWord; docs/middlebox.md, "Sherman"). It implies
	// AnswerFailedCAS.
	WaitFailedCAS bool `mapstructure:"wait-failed-cas" yaml:"wait-failed-cas"`
	// AnswerAtSend makes the engine answer a CMP_SWAP it converts to a
	// WRITE on the shared connection when it sends the WRITE, instead of
	// at the server's ACK, when the client has nothing else outstanding
	// (answerAtSend; docs/middlebox.md, "Sherman"). The engine keeps a
	// copy of each such WRITE until the server acknowledges it and
	// resends it itself when the server asks (NAK) or a later request on
	// the shared connection is resent. It needs nak-recovery replay.
	AnswerAtSend bool `mapstructure:"answer-at-send" yaml:"answer-at-send"`
	// Shared names the connection that carries remapped traffic, by the
	// client's IP and the server's QP number. Empty: the first preloaded
	// connection to this server, or else the first one learned.
	SharedClientIP string `mapstructure:"shared-client-ip" yaml:"shared-client-ip"`
	SharedServerQP uint32 `mapstructure:"shared-server-qp" yaml:"shared-server-qp"`
}

// Range is the address range [Lo, Hi). Lo == Hi == 0 means all addresses.
type Range struct {
	Lo uint64 `mapstructure:"lo" yaml:"lo"`
	Hi uint64 `mapstructure:"hi" yaml:"hi"`
}

func (r Range) all() bool { return r.Lo == 0 && r.Hi == 0 }

func (r Range) contains(va uint64) bool { return r.all() || (va >= r.Lo && va < r.Hi) }

func (r Range) covers(o Range) bool {
	if r.all() {
		return true
	}
	if o.all() {
		return false
	}
	return o.Lo >= r.Lo && o.Hi <= r.Hi
}

// WordConfig seeds a tracked 8-byte word (VA 8-aligned) with its value.
type WordConfig struct {
	VA    uint64 `mapstructure:"va" yaml:"va"`
	Value uint64 `mapstructure:"value" yaml:"value"`
}

// ConnConfig preloads one RC connection. MACs may be left empty (learned
// from the first request); PSN is the client's initial send PSN, which is
// the server's initially expected PSN (PSNKnown false: learned from the
// first request).
type ConnConfig struct {
	ClientIP   string `mapstructure:"client-ip" yaml:"client-ip"`
	ServerIP   string `mapstructure:"server-ip" yaml:"server-ip"`
	ClientMAC  string `mapstructure:"client-mac" yaml:"client-mac"`
	ServerMAC  string `mapstructure:"server-mac" yaml:"server-mac"`
	ClientPort uint16 `mapstructure:"client-port" yaml:"client-port"` // UDP source port of the client's requests
	ServerPort uint16 `mapstructure:"server-port" yaml:"server-port"` // UDP source port of the server's responses (0: 4791)
	ClientQP   uint32 `mapstructure:"client-qp" yaml:"client-qp"`
	ServerQP   uint32 `mapstructure:"server-qp" yaml:"server-qp"`
	PSN        uint32 `mapstructure:"psn" yaml:"psn"`
	PSNKnown   bool   `mapstructure:"psn-known" yaml:"psn-known"`
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func (c *Config) withDefaults() Config {
	d := *c
	if d.RingSize == 0 {
		d.RingSize = DefaultRingSize
	}
	if d.ConnRingSize == 0 {
		d.ConnRingSize = DefaultConnRingSize
	}
	if d.Window == 0 {
		d.Window = DefaultWindow
	}
	if d.MaxConns == 0 {
		d.MaxConns = DefaultMaxConns
	}
	if d.MaxWords == 0 {
		d.MaxWords = DefaultMaxWords
	}
	if d.PMTU == 0 {
		d.PMTU = DefaultPMTU
	}
	if d.NAKRecovery == "" {
		d.NAKRecovery = NAKReplay
	}
	if d.ReplayHoldoff == 0 {
		d.ReplayHoldoff = time.Millisecond
	}
	if d.ReplayLogBytes == 0 {
		d.ReplayLogBytes = DefaultReplayLogBytes
	}
	return d
}

// Defaulted is c with every zero size replaced by its default, as the
// engine runs it.
func (c *Config) Defaulted() Config { return c.withDefaults() }

// TableBytes is the most memory the tables of one engine may take: the
// connection table (MaxConns connections, each with its window of
// outstanding operations and its map of ConnRingSize entries, a server's
// shared one with RingSize entries and a replay log) and the steering
// maps. Validate does not bound it (it depends on the machine); a command
// compares it with the memory it has.
func (c *Config) TableBytes() int64 {
	d := c.withDefaults()
	ent := int64(unsafe.Sizeof(entry{}))
	conn := int64(unsafe.Sizeof(conn{})) + int64(d.Window)*int64(unsafe.Sizeof(roce.PSN(0))+unsafe.Sizeof(inRef{})) + int64(d.ConnRingSize)*ent
	shared := int64(max(d.RingSize-d.ConnRingSize, 0))*ent + int64(d.ReplayLogBytes)
	n := int64(d.MaxConns)*conn + int64(len(d.Servers))*shared
	if st := d.Steering; st != nil {
		nodes := int64(orDefault(st.NodeSlots, DefaultSteerNodeSlots))
		if st.chain() {
			nodes *= 2 // nodes2
		}
		n += nodes*int64(unsafe.Sizeof(nodeEntry{})) + int64(orDefault(st.AddrSlots, DefaultSteerAddrSlots))*int64(unsafe.Sizeof(addrEntry{})) +
			int64(orDefault(st.CASSlots, DefaultSteerCASSlots))*int64(unsafe.Sizeof(casRecord{}))
	}
	return n
}

// Validate checks the configuration (after defaults).
func (c *Config) Validate() error {
	d := c.withDefaults()
	for _, x := range []struct {
		name string
		v    int
	}{{"ring-size", d.RingSize}, {"conn-ring-size", d.ConnRingSize}, {"window", d.Window}} {
		if !pow2(x.v) || x.v > 1<<20 {
			return fmt.Errorf("middlebox config: %s %d: want a power of two up to 2^20", x.name, x.v)
		}
	}
	if !pow2(d.ReplayLogBytes) || d.ReplayLogBytes < 1<<12 || d.ReplayLogBytes > 1<<26 {
		return fmt.Errorf("middlebox config: replay-log-bytes %d: want a power of two from 4096 to 2^26", d.ReplayLogBytes)
	}
	if d.PMTU < 256 || d.PMTU > 4096 || !pow2(d.PMTU) {
		return fmt.Errorf("middlebox config: pmtu %d: want 256, 512, 1024, 2048 or 4096", d.PMTU)
	}
	if d.NAKRecovery != NAKReplay && d.NAKRecovery != NAKBroadcast {
		return fmt.Errorf("middlebox config: nak-recovery %q: want %q or %q", d.NAKRecovery, NAKReplay, NAKBroadcast)
	}
	if d.MaxConns < 1 || d.MaxConns > MaxConnsLimit {
		return fmt.Errorf("middlebox config: max-conns %d: want 1..%d (0: default %d)", d.MaxConns, MaxConnsLimit, DefaultMaxConns)
	}
	if d.MaxWords < 1 || d.MaxWords > MaxWordsLimit {
		return fmt.Errorf("middlebox config: max-words %d: want 1..%d (0: default %d)", d.MaxWords, MaxWordsLimit, DefaultMaxWords)
	}
	if d.ReplayHoldoff < time.Microsecond || d.ReplayHoldoff > MaxReplayHoldoff {
		return fmt.Errorf("middlebox config: replay-holdoff %v: want 1µs..%v (0: default 1ms)", d.ReplayHoldoff, MaxReplayHoldoff)
	}
	seen := map[netip.Addr]bool{}
	for i, s := range d.Servers {
		ip, err := parseIP4(s.IP)
		if err != nil {
			return fmt.Errorf("middlebox config: servers[%d]: %w", i, err)
		}
		if seen[ip] {
			return fmt.Errorf("middlebox config: servers[%d]: duplicate server %s", i, ip)
		}
		seen[ip] = true
		for j, r := range append(append([]Range(nil), s.Remap...), s.CASToWrite...) {
			if !r.all() && r.Hi <= r.Lo {
				return fmt.Errorf("middlebox config: server %s: range %d [%#x, %#x) is empty", ip, j, r.Lo, r.Hi)
			}
		}
		if s.AnswerAtSend && d.NAKRecovery != NAKReplay {
			return fmt.Errorf("middlebox config: server %s: answer-at-send needs nak-recovery %q (the engine resends what it answered), not %q", ip, NAKReplay, d.NAKRecovery)
		}
		for j, w := range s.CASToWrite {
			ok := false
			for _, r := range s.Remap {
				if r.covers(w) {
					ok = true
				}
			}
			if !ok {
				return fmt.Errorf("middlebox config: server %s: cas-to-write range %d [%#x, %#x) is not inside a remap range (CAS to WRITE needs the shared connection's ordering)", ip, j, w.Lo, w.Hi)
			}
		}
		if s.SharedClientIP != "" {
			if _, err := parseIP4(s.SharedClientIP); err != nil {
				return fmt.Errorf("middlebox config: server %s: shared-client-ip: %w", ip, err)
			}
		}
	}
	for i, cc := range d.Conns {
		if _, err := cc.parse(); err != nil {
			return fmt.Errorf("middlebox config: conns[%d]: %w", i, err)
		}
	}
	if d.Steering != nil {
		if err := d.Steering.validate(); err != nil {
			return fmt.Errorf("middlebox config: %w", err)
		}
	}
	for i, w := range d.Words {
		ok := w.VA&7 == 0
		found := false
		for _, s := range d.Servers {
			found = found || inRanges(s.CASToWrite, w.VA)
		}
		if !ok || !found {
			return fmt.Errorf("middlebox config: words[%d] VA %#x: must be 8-aligned and inside a cas-to-write range", i, w.VA)
		}
	}
	if len(d.Words) > d.MaxWords {
		return fmt.Errorf("middlebox config: %d seeded words exceed max-words %d", len(d.Words), d.MaxWords)
	}
	if len(d.Conns) > d.MaxConns {
		return fmt.Errorf("middlebox config: %d preloaded conns exceed max-conns %d", len(d.Conns), d.MaxConns)
	}
	return nil
}

func parseIP4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("address %q: %w", s, err)
	}
	if !a.Is4() {
		return netip.Addr{}, fmt.Errorf("address %q: not IPv4", s)
	}
	return a, nil
}

type connParams struct {
	cliIP, srvIP   [4]byte
	cliMAC, srvMAC [6]byte
	macKnown       bool
	cliPort        uint16
	srvPort        uint16
	cliQP, srvQP   uint32
	psn            uint32
	psnKnown       bool
}

func (cc ConnConfig) parse() (connParams, error) {
	var p connParams
	ci, err := parseIP4(cc.ClientIP)
	if err != nil {
		return p, fmt.Errorf("client-ip: %w", err)
	}
	si, err := parseIP4(cc.ServerIP)
	if err != nil {
		return p, fmt.Errorf("server-ip: %w", err)
	}
	p.cliIP, p.srvIP = ci.As4(), si.As4()
	if (cc.ClientMAC == "") != (cc.ServerMAC == "") {
		return p, fmt.Errorf("give both client-mac and server-mac, or neither")
	}
	if cc.ClientMAC != "" {
		cm, err := net.ParseMAC(cc.ClientMAC)
		if err != nil || len(cm) != 6 {
			return p, fmt.Errorf("client-mac %q: not a MAC-48 address", cc.ClientMAC)
		}
		sm, err := net.ParseMAC(cc.ServerMAC)
		if err != nil || len(sm) != 6 {
			return p, fmt.Errorf("server-mac %q: not a MAC-48 address", cc.ServerMAC)
		}
		copy(p.cliMAC[:], cm)
		copy(p.srvMAC[:], sm)
		p.macKnown = true
	}
	if cc.ClientQP > 0xffffff || cc.ServerQP > 0xffffff || cc.PSN > 0xffffff {
		return p, fmt.Errorf("QP numbers and PSN are 24-bit")
	}
	if cc.ClientPort == 0 {
		return p, fmt.Errorf("client-port (the UDP source port of the client's requests) is required")
	}
	p.cliPort, p.srvPort = cc.ClientPort, cc.ServerPort
	p.cliQP, p.srvQP = cc.ClientQP, cc.ServerQP
	p.psn, p.psnKnown = cc.PSN, cc.PSNKnown
	return p, nil
}
