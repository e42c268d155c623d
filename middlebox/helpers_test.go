package middlebox

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// testHost is one client connection of a test rack.
type testHost struct {
	ip     [4]byte
	mac    [6]byte
	port   uint16
	cliQP  uint32
	srvQP  uint32
	psn    uint32 // the client's next PSN
	srvPSN uint32 // not used by the engine: the server side of direct tests
}

var (
	testSrvIP  = [4]byte{10, 0, 0, 100}
	testSrvMAC = [6]byte{2, 0, 0, 0, 0, 100}
)

// testRack drives an engine with hand-built frames: client i's connection
// is preloaded; client 0's connection is the shared one.
type testRack struct {
	t   testing.TB
	e   *Engine
	out *Out
	cli []testHost
}

func testConfig(remapAll, cas bool) Config {
	s := ServerConfig{IP: "10.0.0.100"}
	if remapAll {
		s.Remap = []Range{{}}
	}
	if cas {
		s.CASToWrite = []Range{{Lo: 0x1000, Hi: 0x2000}}
	}
	return Config{Servers: []ServerConfig{s}, RingSize: 64, ConnRingSize: 16, Window: 16, PMTU: 1024, MaxWords: 64, MaxConns: 64}
}

func newTestRack(t testing.TB, n int, cfg Config) *testRack {
	t.Helper()
	r := &testRack{t: t, out: NewOut(256, 1<<16)}
	for i := 0; i < n; i++ {
		h := testHost{
			ip:    [4]byte{10, 0, 0, byte(1 + i)},
			mac:   [6]byte{2, 0, 0, 0, 0, byte(1 + i)},
			port:  uint16(49152 + i),
			cliQP: uint32(0x100 + i),
			srvQP: uint32(0x200 + i),
			psn:   uint32(1000*i + 7),
		}
		r.cli = append(r.cli, h)
		cfg.Conns = append(cfg.Conns, ConnConfig{
			ClientIP: ipStr(h.ip), ServerIP: ipStr(testSrvIP), ClientMAC: macStr(h.mac), ServerMAC: macStr(testSrvMAC),
			ClientPort: h.port, ServerPort: 4791, ClientQP: h.cliQP, ServerQP: h.srvQP, PSN: h.psn, PSNKnown: true,
		})
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	return r
}

func ipStr(a [4]byte) string { return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3]) }
func macStr(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

func buildFrame(t testing.TB, f *roce.Fields) []byte {
	t.Helper()
	buf := make([]byte, roce.FrameLen(f)+64)
	n, err := roce.Build(buf, f)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

// reqFields returns the fields of a request from client i at PSN psn.
func (r *testRack) reqFields(i int, op roce.Opcode, psn uint32) roce.Fields {
	h := r.cli[i]
	return roce.Fields{
		DstMAC: testSrvMAC, SrcMAC: h.mac, SrcIP: h.ip, DstIP: testSrvIP, TTL: 64, DontFragment: true,
		SrcPort: h.port, Opcode: op, MigReq: true, PKey: 0xffff, DestQP: h.srvQP, AckReq: true, PSN: psn,
	}
}

// cas builds client i's next CMP_SWAP and advances its PSN.
func (r *testRack) cas(i int, va, cmp, swap uint64) ([]byte, uint32) {
	f := r.reqFields(i, roce.OpRCCompareSwap, r.cli[i].psn)
	f.VA, f.RKey, f.Compare, f.SwapAdd = va, 0x1234, cmp, swap
	psn := r.cli[i].psn
	r.cli[i].psn = uint32(roce.PSN(psn).Add(1))
	return buildFrame(r.t, &f), psn
}

func (r *testRack) fetchAdd(i int, va, add uint64) ([]byte, uint32) {
	f := r.reqFields(i, roce.OpRCFetchAdd, r.cli[i].psn)
	f.VA, f.RKey, f.SwapAdd = va, 0x1234, add
	psn := r.cli[i].psn
	r.cli[i].psn = uint32(roce.PSN(psn).Add(1))
	return buildFrame(r.t, &f), psn
}

func (r *testRack) write(i int, va uint64, data []byte) ([]byte, uint32) {
	f := r.reqFields(i, roce.OpRCWriteOnly, r.cli[i].psn)
	f.VA, f.RKey, f.DMALen, f.Payload = va, 0x1234, uint32(len(data)), data
	psn := r.cli[i].psn
	r.cli[i].psn = uint32(roce.PSN(psn).Add(1))
	return buildFrame(r.t, &f), psn
}

func (r *testRack) read(i int, va uint64, n uint32, pmtu uint32) ([]byte, uint32) {
	f := r.reqFields(i, roce.OpRCReadRequest, r.cli[i].psn)
	f.VA, f.RKey, f.DMALen = va, 0x1234, n
	psn := r.cli[i].psn
	k := (n + pmtu - 1) / pmtu
	if k == 0 {
		k = 1
	}
	r.cli[i].psn = uint32(roce.PSN(psn).Add(int(k)))
	return buildFrame(r.t, &f), psn
}

// respFields returns the fields of a response from the server on client
// j's connection (j 0 is the shared one).
func (r *testRack) respFields(j int, op roce.Opcode, psn uint32) roce.Fields {
	h := r.cli[j]
	return roce.Fields{
		DstMAC: h.mac, SrcMAC: testSrvMAC, SrcIP: testSrvIP, DstIP: h.ip, TTL: 64, DontFragment: true,
		SrcPort: 4791, Opcode: op, PKey: 0xffff, DestQP: h.cliQP, PSN: psn,
	}
}

func (r *testRack) ack(j int, psn uint32, syn roce.Syndrome, msn uint32) []byte {
	f := r.respFields(j, roce.OpRCAcknowledge, psn)
	f.Syndrome, f.MSN = syn, msn
	return buildFrame(r.t, &f)
}

func (r *testRack) atomicAck(j int, psn uint32, orig uint64, msn uint32) []byte {
	f := r.respFields(j, roce.OpRCAtomicAcknowledge, psn)
	f.Syndrome, f.MSN, f.Orig = roce.ACKSyndrome(roce.CreditInvalid), msn, orig
	return buildFrame(r.t, &f)
}

func (r *testRack) readResp(j int, op roce.Opcode, psn uint32, data []byte, msn uint32) []byte {
	f := r.respFields(j, op, psn)
	f.Payload, f.MSN = data, msn
	return buildFrame(r.t, &f)
}

// emitted is one output frame, parsed.
type emitted struct {
	side Side
	p    roce.Packet
	raw  []byte
}

// run feeds one frame to the engine and returns what it emitted, checking
// that every RoCEv2 frame out has a correct ICRC and IPv4 checksum.
func (r *testRack) run(in Side, frame []byte) []emitted {
	r.t.Helper()
	r.out.Reset()
	r.e.Process(0, in, frame, r.out)
	var res []emitted
	for i, f := range r.out.Frames {
		raw := append([]byte(nil), f...)
		p, err := roce.Parse(raw)
		if err != nil {
			r.t.Fatalf("emitted frame %d does not parse: %v", i, err)
		}
		if !p.ICRCOK() {
			r.t.Fatalf("emitted frame %d (%v PSN %d): bad ICRC", i, p.Opcode, p.BTH.PSN())
		}
		if !p.IP.ChecksumOK() {
			r.t.Fatalf("emitted frame %d: bad IPv4 checksum", i)
		}
		res = append(res, emitted{side: r.out.Sides[i], p: p, raw: raw})
	}
	return res
}

func (r *testRack) one(in Side, frame []byte) emitted {
	r.t.Helper()
	res := r.run(in, frame)
	if len(res) != 1 {
		r.t.Fatalf("want 1 frame out, got %d (%s)", len(res), r.e.c.String())
	}
	return res[0]
}

func (r *testRack) none(in Side, frame []byte) {
	r.t.Helper()
	if res := r.run(in, frame); len(res) != 0 {
		r.t.Fatalf("want no frame out, got %d: first %v PSN %d", len(res), res[0].p.Opcode, res[0].p.BTH.PSN())
	}
}

// checkToServer checks a request forwarded to the server on client j's
// connection with outgoing PSN psn.
func (r *testRack) checkToServer(x emitted, j int, op roce.Opcode, psn uint32) {
	r.t.Helper()
	h := r.cli[j]
	p := x.p
	if x.side != ServerSide || p.Opcode != op || p.BTH.PSN() != psn || p.BTH.DestQP() != h.srvQP ||
		p.IP.Src() != h.ip || p.Eth.Src() != h.mac || p.UDP.SrcPort() != h.port || p.IP.Dst() != testSrvIP || p.Eth.Dst() != testSrvMAC {
		r.t.Fatalf("to server: got %v side %v PSN %d QP %#x from %v/%v port %d; want %v PSN %d on client %d's connection (QP %#x, %v)",
			p.Opcode, x.side, p.BTH.PSN(), p.BTH.DestQP(), p.IP.Src(), p.Eth.Src(), p.UDP.SrcPort(), op, psn, j, h.srvQP, h.ip)
	}
}

// checkGrantWrite checks a converted lock CMP_SWAP as sent on the shared
// connection (client 0's) at psn: a WRITE of its swap value.
func (r *testRack) checkGrantWrite(x emitted, psn uint32, swap uint64) {
	r.t.Helper()
	r.checkToServer(x, 0, roce.OpRCWriteOnly, psn)
	if v := binary.LittleEndian.Uint64(x.p.Payload); v != swap {
		r.t.Fatalf("the granted CMP_SWAP writes %#x, want its swap value %#x", v, swap)
	}
}

// checkToClient checks a response sent to client i.
func (r *testRack) checkToClient(x emitted, i int, op roce.Opcode, psn uint32) {
	r.t.Helper()
	h := r.cli[i]
	p := x.p
	if x.side != ClientSide || p.Opcode != op || p.BTH.PSN() != psn || p.BTH.DestQP() != h.cliQP ||
		p.IP.Dst() != h.ip || p.Eth.Dst() != h.mac || p.IP.Src() != testSrvIP || p.Eth.Src() != testSrvMAC {
		r.t.Fatalf("to client: got %v side %v PSN %d QP %#x to %v/%v; want %v PSN %d to client %d (QP %#x, %v)",
			p.Opcode, x.side, p.BTH.PSN(), p.BTH.DestQP(), p.IP.Dst(), p.Eth.Dst(), op, psn, i, h.cliQP, h.ip)
	}
}

func le64(v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b
}
