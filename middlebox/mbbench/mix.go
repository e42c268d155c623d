package mbbench

import (
	"fmt"
	"math/rand/v2"

	"github.com/swordbox/swordbox/middlebox"
	"github.com/swordbox/swordbox/roce"
)

// MixConfig describes a synthetic recorded mix of traffic for benchmarks:
// Clients clients, each with its own RC connection to one memory server,
// issue CMP_SWAP on a lock word, small WRITEs and small READs; the server
// answers every Coalesce requests with its READ responses and one
// coalesced ACK, as a real RNIC does. Through an engine configured with
// EngineConfig, every request is remapped onto client 0's connection and
// every CMP_SWAP becomes a WRITE, and every server ACK is de-coalesced.
type MixConfig struct {
	Clients  int    // client connections (>= 1)
	CASPct   int    // percent of requests that are CMP_SWAP (lock/unlock)
	ReadPct  int    // percent that are 64-byte READs (the rest: 8..64-byte WRITEs)
	Coalesce int    // requests per server ACK (>= 1)
	Seed     uint64 // random choices
	Server   byte   // last byte of the server's IP (10.0.<Server>.100), to run several mixes side by side
	// SkipICRCCheck configures the engine not to verify received ICRCs
	// (Config.SkipICRCCheck), as behind a NIC that checks the FCS.
	SkipICRCCheck bool
}

// DefaultMix is the mix the benchmarks and tests replay: 16 clients, 60 %
// CMP_SWAP, 20 % READs, one server ACK per 8 requests (the defaults of
// `swordbox middlebox bench` too).
var DefaultMix = MixConfig{Clients: 16, CASPct: 60, ReadPct: 20, Coalesce: 8, Seed: 1}

// Mix generates the frames of a MixConfig, batch after batch, consistent
// with the engine's state (PSNs continue from batch to batch).
type Mix struct {
	cfg     MixConfig
	rng     *rand.Rand
	srvIP   [4]byte
	srvMAC  [6]byte
	clients []testlessHost
	outPSN  uint32 // next PSN on the shared connection
	lock    uint64
	// pending server responses of the current round
	reads []uint32
	last  uint32
	n     int
	msn   uint32
}

type testlessHost struct {
	ip    [4]byte
	mac   [6]byte
	port  uint16
	cliQP uint32
	srvQP uint32
	psn   uint32
}

// mixLockVA is the address of the lock word of a Mix.
const mixLockVA = 0x10000

// NewMix returns a generator for cfg.
func NewMix(cfg MixConfig) (*Mix, error) {
	if cfg.Clients < 1 || cfg.Coalesce < 1 || cfg.CASPct < 0 || cfg.ReadPct < 0 || cfg.CASPct+cfg.ReadPct > 100 {
		return nil, fmt.Errorf("middlebox: mix %+v: need clients >= 1, coalesce >= 1, cas%%+read%% <= 100", cfg)
	}
	m := &Mix{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		srvIP: [4]byte{10, 0, cfg.Server, 100}, srvMAC: [6]byte{2, 0, 0, cfg.Server, 0, 100}}
	for i := 0; i < cfg.Clients; i++ {
		m.clients = append(m.clients, testlessHost{
			ip: [4]byte{10, 1, byte(i >> 8), byte(i)}, mac: [6]byte{2, 1, 0, cfg.Server, byte(i >> 8), byte(i)},
			port: uint16(49152 + i), cliQP: uint32(0x1000 + i), srvQP: uint32(0x2000 + i), psn: uint32(i * 4099 % (1 << 24)),
		})
	}
	m.outPSN = m.clients[0].psn
	return m, nil
}

// EngineConfig returns the engine configuration the mix is meant for:
// everything to the server remapped, the lock word tracked (known to be 0),
// every connection preloaded.
func (m *Mix) EngineConfig() middlebox.Config {
	ip := fmt.Sprintf("%d.%d.%d.%d", m.srvIP[0], m.srvIP[1], m.srvIP[2], m.srvIP[3])
	cfg := middlebox.Config{Servers: []middlebox.ServerConfig{{IP: ip, Remap: []middlebox.Range{{}}, CASToWrite: []middlebox.Range{{Lo: mixLockVA, Hi: mixLockVA + 8}}}},
		Words: []middlebox.WordConfig{{VA: mixLockVA, Value: 0}}, PMTU: 4096, SkipICRCCheck: m.cfg.SkipICRCCheck}
	for _, h := range m.clients {
		cfg.Conns = append(cfg.Conns, middlebox.ConnConfig{
			ClientIP: fmt.Sprintf("%d.%d.%d.%d", h.ip[0], h.ip[1], h.ip[2], h.ip[3]), ServerIP: ip,
			ClientMAC: macString(h.mac), ServerMAC: macString(m.srvMAC), ClientPort: h.port, ServerPort: 4791,
			ClientQP: h.cliQP, ServerQP: h.srvQP, PSN: h.psn, PSNKnown: true,
		})
	}
	return cfg
}

// SideOf says which side a frame of the mix arrives on: the server side
// when its IPv4 source is the mix's memory server, else the client side.
func (m *Mix) SideOf(f []byte) middlebox.Side {
	if len(f) >= 30 && f[12] == 0x08 && f[13] == 0 && [4]byte(f[26:30]) == m.srvIP {
		return middlebox.ServerSide
	}
	return middlebox.ClientSide
}

func macString(b [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
}

// Trace is a batch of recorded frames with the side each arrives on.
type Trace struct {
	Frames [][]byte
	Sides  []middlebox.Side
	arena  []byte
	used   int
}

// NewTrace returns a trace with room for n frames.
func NewTrace(n int) *Trace {
	return &Trace{Frames: make([][]byte, 0, n), Sides: make([]middlebox.Side, 0, n), arena: make([]byte, n*96)}
}

func (t *Trace) reset() { t.Frames, t.Sides, t.used = t.Frames[:0], t.Sides[:0], 0 }

func (t *Trace) add(s middlebox.Side, f *roce.Fields) {
	n := roce.FrameLen(f)
	if t.used+n > len(t.arena) {
		t.arena = make([]byte, 2*len(t.arena)+n)
		t.used = 0
	}
	b := t.arena[t.used : t.used+n : t.used+n]
	if _, err := roce.Build(b, f); err != nil {
		panic(err) // the generator's own fields: a bug, not input
	}
	t.used += n
	t.Frames = append(t.Frames, b)
	t.Sides = append(t.Sides, s)
}

// Fill replaces t's frames with the next batch of about n frames (whole
// rounds: Coalesce requests and the server's answers to them).
func (m *Mix) Fill(t *Trace, n int) {
	t.reset()
	var pay [64]byte
	for len(t.Frames) < n {
		for k := 0; k < m.cfg.Coalesce; k++ {
			i := m.rng.IntN(len(m.clients))
			h := &m.clients[i]
			f := roce.Fields{DstMAC: m.srvMAC, SrcMAC: h.mac, SrcIP: h.ip, DstIP: m.srvIP, TTL: 64, DontFragment: true,
				SrcPort: h.port, MigReq: true, PKey: 0xffff, DestQP: h.srvQP, AckReq: true, PSN: h.psn, RKey: 0x77}
			x := m.rng.IntN(100)
			switch {
			case x < m.cfg.CASPct:
				f.Opcode, f.VA = roce.OpRCCompareSwap, mixLockVA
				if m.lock == 0 {
					f.Compare, f.SwapAdd = 0, 1
					m.lock = 1
				} else {
					f.Compare, f.SwapAdd = 1, 0 // the holder unlocks (modelled: any client)
					m.lock = 0
				}
			case x < m.cfg.CASPct+m.cfg.ReadPct:
				f.Opcode, f.VA, f.DMALen = roce.OpRCReadRequest, 0x20000+uint64(i)*64, 64
				m.reads = append(m.reads, m.outPSN)
			default:
				l := 8 * (1 + m.rng.IntN(8))
				f.Opcode, f.VA, f.DMALen, f.Payload = roce.OpRCWriteOnly, 0x40000+uint64(i)*64, uint32(l), pay[:l]
			}
			t.add(middlebox.ClientSide, &f)
			h.psn = (h.psn + 1) & roce.MaxPSN
			m.last = m.outPSN
			m.outPSN = (m.outPSN + 1) & roce.MaxPSN
			m.n++
		}
		// The server answers the round on client 0's connection.
		s := &m.clients[0]
		r := roce.Fields{DstMAC: s.mac, SrcMAC: m.srvMAC, SrcIP: m.srvIP, DstIP: s.ip, TTL: 64, DontFragment: true,
			SrcPort: 4791, PKey: 0xffff, DestQP: s.cliQP, Syndrome: roce.ACKSyndrome(roce.CreditInvalid)}
		for _, p := range m.reads {
			m.msn++
			r.Opcode, r.PSN, r.MSN, r.Payload = roce.OpRCReadResponseOnly, p, m.msn&roce.MaxMSN, pay[:64]
			t.add(middlebox.ServerSide, &r)
		}
		if len(m.reads) == 0 || m.reads[len(m.reads)-1] != m.last {
			m.msn += uint32(m.cfg.Coalesce - len(m.reads))
			r.Opcode, r.PSN, r.MSN, r.Payload = roce.OpRCAcknowledge, m.last, m.msn&roce.MaxMSN, nil
			t.add(middlebox.ServerSide, &r)
		}
		m.reads = m.reads[:0]
	}
}
