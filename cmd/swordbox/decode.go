package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/roce"
)

// decodeConfig is the typed configuration of `swordbox decode`.
type decodeConfig struct {
	JSON bool `mapstructure:"json"`
}

// newDecodeCmd builds `swordbox decode` and its flags.
func newDecodeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "decode FILE.pcap",
		Short: "Print the RoCEv2 frames of a capture, one line each",
		Long: `decode reads a pcap or pcapng capture of Ethernet frames (or Linux
cooked frames, as 'tcpdump -i any' writes them) and prints one
line per RoCEv2 frame (IPv4, UDP port 4791) as key=value pairs:

  opcode=<NAME> qp=0x<6 hex> psn=<decimal> ack_req=0|1 icrc=ok|bad

followed, where the packet carries them, by va=0x<hex> rkey=0x<hex>
len=<decimal> (RETH DMA length) swap=0x<hex> cmp=0x<hex> (AtomicETH; swap is
the addend for FETCH_ADD) orig=0x<hex> (AtomicAckETH) syndrome=0x<hex>
msn=<decimal> (AETH) imm=0x<hex> (ImmDt). Frames that are not RoCEv2 are
skipped; a malformed one prints frame=<n> error="<what is wrong>", where n
counts the capture's frames from 1. With --json each line is a JSON object
with the same keys. A summary of the counts goes to standard error.`,
		Example: `  swordbox decode rack.pcap
  swordbox decode --json rack.pcap | jq 'select(.icrc == "bad")'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg decodeConfig
			if err := loadConfig(cmd, "decode", &cfg); err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			defer f.Close()
			w := bufio.NewWriter(cmd.OutOrStdout())
			st, err := decodeCapture(f, w, cfg.JSON)
			if err != nil {
				w.Flush()
				return fmt.Errorf("decode %s: %w", args[0], err)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "decode: %d frames: %d RoCEv2 (%d with a bad ICRC), %d malformed, %d skipped (not RoCEv2 over IPv4)\n",
				st.frames, st.roce, st.badICRC, st.malformed, st.skipped)
			return nil
		},
	}
	c.Flags().Bool("json", false, "print one JSON object per frame")
	return c
}

// packetSource is what pcapgo's Reader and NgReader have in common.
type packetSource interface {
	ReadPacketData() ([]byte, captureInfo, error)
	LinkType() layers.LinkType
}

type captureInfo struct{ capLen, wireLen int }

type pcapSource struct{ r *pcapgo.Reader }

func (s pcapSource) LinkType() layers.LinkType { return s.r.LinkType() }

func (s pcapSource) ReadPacketData() ([]byte, captureInfo, error) {
	d, ci, err := s.r.ReadPacketData()
	return d, captureInfo{ci.CaptureLength, ci.Length}, err
}

type ngSource struct{ r *pcapgo.NgReader }

func (s ngSource) LinkType() layers.LinkType { return s.r.LinkType() }

func (s ngSource) ReadPacketData() ([]byte, captureInfo, error) {
	d, ci, err := s.r.ReadPacketData()
	return d, captureInfo{ci.CaptureLength, ci.Length}, err
}

// openCapture recognizes pcap and pcapng by their magic numbers and checks
// that the capture holds Ethernet frames or Linux cooked frames (SLL, SLL2:
// what `tcpdump -i any` writes).
func openCapture(r io.Reader) (packetSource, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil {
		if len(magic) == 0 {
			return nil, fmt.Errorf("empty file: not a pcap or pcapng capture")
		}
		return nil, errNotCapture(magic)
	}
	if bytes.Equal(magic, []byte{0x0a, 0x0d, 0x0d, 0x0a}) {
		ng, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("pcapng: %w", err)
		}
		if lt := ng.LinkType(); !supportedLink(lt) {
			return nil, fmt.Errorf("pcapng: link type %v, only Ethernet and Linux SLL/SLL2 are supported", lt)
		}
		return ngSource{ng}, nil
	}
	if !isPcapMagic(magic) {
		return nil, errNotCapture(magic)
	}
	pr, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("pcap: %w", err)
	}
	if lt := pr.LinkType(); !supportedLink(lt) {
		return nil, fmt.Errorf("pcap: link type %v, only Ethernet and Linux SLL/SLL2 are supported", lt)
	}
	return pcapSource{pr}, nil
}

// isPcapMagic reports the four magic numbers of pcap files (micro- and
// nanosecond timestamps, either byte order).
func isPcapMagic(m []byte) bool {
	for _, x := range []uint32{0xa1b2c3d4, 0xa1b23c4d} {
		if binary.BigEndian.Uint32(m) == x || binary.LittleEndian.Uint32(m) == x {
			return true
		}
	}
	return false
}

func errNotCapture(start []byte) error {
	return fmt.Errorf("not a pcap or pcapng capture (it starts with %q; a capture starts with a pcap or pcapng magic number)", start)
}

func supportedLink(lt layers.LinkType) bool {
	return lt == layers.LinkTypeEthernet || lt == layers.LinkTypeLinuxSLL || lt == layers.LinkTypeLinuxSLL2
}

// Linux cooked capture header layouts.
const (
	sllLen       = 16 // packet type 2, ARPHRD 2, address length 2, address 8, protocol 2
	sllAddrLen   = 4
	sllAddr      = 6
	sllProto     = 14
	sll2Len      = 20 // protocol 2, reserved 2, ifindex 4, ARPHRD 2, packet type 1, address length 1, address 8
	sll2Proto    = 0
	sll2AddrLen  = 11
	sll2Addr     = 12
	ethMACLength = 6
)

// toEthernet returns frame as an Ethernet frame: as is for Ethernet
// captures; for Linux cooked captures, an Ethernet header (destination
// unknown, so zero; source the captured link-layer address when it is a
// MAC) followed by the network-layer packet, written into scratch. ok is
// false for cooked frames too short to hold their header.
func toEthernet(lt layers.LinkType, frame, scratch []byte) (eth []byte, ok bool) {
	var proto uint16
	var addr []byte
	var payload []byte
	switch lt {
	case layers.LinkTypeLinuxSLL:
		if len(frame) < sllLen {
			return nil, false
		}
		proto = binary.BigEndian.Uint16(frame[sllProto:])
		if n := int(binary.BigEndian.Uint16(frame[sllAddrLen:])); n == ethMACLength {
			addr = frame[sllAddr : sllAddr+n]
		}
		payload = frame[sllLen:]
	case layers.LinkTypeLinuxSLL2:
		if len(frame) < sll2Len {
			return nil, false
		}
		proto = binary.BigEndian.Uint16(frame[sll2Proto:])
		if n := int(frame[sll2AddrLen]); n == ethMACLength {
			addr = frame[sll2Addr : sll2Addr+n]
		}
		payload = frame[sll2Len:]
	default:
		return frame, true
	}
	eth = append(scratch[:0], make([]byte, roce.EthernetLen)...)
	copy(eth[roce.EthSrcOff:roce.EthSrcOff+ethMACLength], addr)
	binary.BigEndian.PutUint16(eth[roce.EthTypeOff:], proto)
	return append(eth, payload...), true
}

// decodeStats counts the frames of a capture by outcome.
type decodeStats struct {
	frames, roce, badICRC, malformed, skipped int
}

// decodeCapture prints every RoCEv2 frame of the capture in r to w.
func decodeCapture(r io.Reader, w io.Writer, asJSON bool) (decodeStats, error) {
	var st decodeStats
	src, err := openCapture(r)
	if err != nil {
		return st, err
	}
	var p roce.Packet
	var line, scratch []byte
	lt := src.LinkType()
	for n := 1; ; n++ {
		raw, ci, err := src.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("frame %d: %w", n, err)
		}
		st.frames++
		data, ok := toEthernet(lt, raw, scratch)
		if !ok {
			st.skipped++
			continue
		}
		if lt != layers.LinkTypeEthernet {
			scratch = data[:0]
		}
		perr := roce.ParseInto(&p, data)
		if errors.Is(perr, roce.ErrNotRoCE) || (perr != nil && isForeignPrefix(data)) {
			st.skipped++ // isForeignPrefix: too short to tell, not ours to report
			continue
		}
		if perr != nil {
			st.malformed++
		} else {
			st.roce++
			if !p.ICRCOK() {
				st.badICRC++
			}
		}
		line = line[:0]
		switch {
		case perr != nil && asJSON:
			line, err = appendJSON(line, decodeError{Frame: n, Error: errText(perr, ci)})
		case perr != nil:
			line = fmt.Appendf(line, "frame=%d error=%s", n, strconv.Quote(errText(perr, ci)))
		case asJSON:
			line, err = appendJSON(line, recordOf(&p))
		default:
			line = appendText(line, recordOf(&p))
		}
		if err != nil {
			return st, err
		}
		line = append(line, '\n')
		if _, err := w.Write(line); err != nil {
			return st, err
		}
	}
}

// isForeignPrefix reports frames too short to carry an EtherType or an IPv4
// header that are not IPv4: Parse calls them truncated, but they are not
// RoCEv2, so decode skips them.
func isForeignPrefix(data []byte) bool {
	if len(data) < roce.EthernetLen {
		return true
	}
	return roce.Ethernet(data).EtherType() != roce.EtherTypeIPv4
}

func errText(err error, ci captureInfo) string {
	s := err.Error()
	if ci.capLen < ci.wireLen {
		s += fmt.Sprintf(" (capture truncated: %d of %d bytes)", ci.capLen, ci.wireLen)
	}
	return s
}

type decodeError struct {
	Frame int    `json:"frame"`
	Error string `json:"error"`
}

// record is one decoded frame, in output order. Optional fields are nil
// when the packet does not carry them.
type record struct {
	Opcode   string  `json:"opcode"`
	QP       string  `json:"qp"`
	PSN      uint32  `json:"psn"`
	AckReq   int     `json:"ack_req"`
	ICRC     string  `json:"icrc"`
	VA       *string `json:"va,omitempty"`
	RKey     *string `json:"rkey,omitempty"`
	Len      *uint32 `json:"len,omitempty"`
	Swap     *string `json:"swap,omitempty"`
	Cmp      *string `json:"cmp,omitempty"`
	Orig     *string `json:"orig,omitempty"`
	Syndrome *string `json:"syndrome,omitempty"`
	MSN      *uint32 `json:"msn,omitempty"`
	Imm      *string `json:"imm,omitempty"`
}

func hexp(v uint64) *string {
	s := "0x" + strconv.FormatUint(v, 16)
	return &s
}

func recordOf(p *roce.Packet) record {
	r := record{
		Opcode: p.Opcode.String(),
		QP:     fmt.Sprintf("0x%06x", p.BTH.DestQP()),
		PSN:    p.BTH.PSN(),
		ICRC:   "bad",
	}
	if p.BTH.AckReq() {
		r.AckReq = 1
	}
	if p.ICRCOK() {
		r.ICRC = "ok"
	}
	if p.RETH != nil {
		r.VA, r.RKey = hexp(p.RETH.VA()), hexp(uint64(p.RETH.RKey()))
		l := p.RETH.DMALen()
		r.Len = &l
	}
	if p.AtomicETH != nil {
		r.VA, r.RKey = hexp(p.AtomicETH.VA()), hexp(uint64(p.AtomicETH.RKey()))
		r.Swap, r.Cmp = hexp(p.AtomicETH.SwapAdd()), hexp(p.AtomicETH.Compare())
	}
	if p.IETH != nil {
		r.RKey = hexp(uint64(p.IETH.RKey()))
	}
	if p.AtomicAckETH != nil {
		r.Orig = hexp(p.AtomicAckETH.Orig())
	}
	if p.AETH != nil {
		r.Syndrome = hexp(uint64(p.AETH.Syndrome()))
		m := p.AETH.MSN()
		r.MSN = &m
	}
	if p.ImmDt != nil {
		r.Imm = hexp(uint64(p.ImmDt.Imm()))
	}
	return r
}

func appendText(b []byte, r record) []byte {
	b = fmt.Appendf(b, "opcode=%s qp=%s psn=%d ack_req=%d icrc=%s", r.Opcode, r.QP, r.PSN, r.AckReq, r.ICRC)
	opt := func(k string, v *string) {
		if v != nil {
			b = append(b, ' ')
			b = append(b, k...)
			b = append(b, '=')
			b = append(b, *v...)
		}
	}
	num := func(k string, v *uint32) {
		if v != nil {
			b = fmt.Appendf(b, " %s=%d", k, *v)
		}
	}
	opt("va", r.VA)
	opt("rkey", r.RKey)
	num("len", r.Len)
	opt("swap", r.Swap)
	opt("cmp", r.Cmp)
	opt("orig", r.Orig)
	opt("syndrome", r.Syndrome)
	num("msn", r.MSN)
	opt("imm", r.Imm)
	return b
}

func appendJSON(b []byte, v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
