package roce

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

func baseFields(op Opcode) Fields {
	return Fields{
		DstMAC: [6]byte{2, 0, 0, 0, 0, 2}, SrcMAC: [6]byte{2, 0, 0, 0, 0, 1},
		SrcIP: [4]byte{10, 0, 0, 1}, DstIP: [4]byte{10, 0, 0, 2},
		IPID: 7, DontFragment: true, TTL: 64, SrcPort: 49152,
		Opcode: op, PKey: 0xffff, DestQP: 0x1234, AckReq: true, PSN: 77,
	}
}

func build(t testing.TB, f *Fields, extraCap int) []byte {
	t.Helper()
	buf := make([]byte, FrameLen(f), FrameLen(f)+extraCap)
	n, err := Build(buf, f)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestAtomicToWrite(t *testing.T) {
	for _, op := range []Opcode{OpRCCompareSwap, OpRCFetchAdd} {
		for _, fix := range []bool{true, false} {
			f := baseFields(op)
			f.VA, f.RKey, f.SwapAdd, f.Compare = 0x7f0000002000, 0xabc, 0x1111, 0x2222
			frame := build(t, &f, 0)
			oldICRC := append([]byte(nil), frame[len(frame)-4:]...)

			var store uint64 = 0x0102030405060708
			got, err := AtomicToWrite(frame, store, fix)
			if err != nil {
				t.Fatal(err)
			}
			w := baseFields(OpRCWriteOnly)
			w.VA, w.RKey, w.DMALen = f.VA, f.RKey, 8
			w.Payload = binary.LittleEndian.AppendUint64(nil, store)
			want := build(t, &w, 0)
			if len(got) != len(frame)-4 {
				t.Errorf("%v: length %d, want %d", op, len(got), len(frame)-4)
			}
			if fix {
				if !bytes.Equal(got, want) {
					t.Errorf("%v fix: got\n%x\nwant\n%x", op, got, want)
				}
			} else {
				if !bytes.Equal(got[:len(got)-4], want[:len(want)-4]) || !bytes.Equal(got[len(got)-4:], oldICRC) {
					t.Errorf("%v nofix: got\n%x\nwant\n%x with old ICRC %x", op, got, want, oldICRC)
				}
			}
			p, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if p.IP.TotalLen() != 68 || p.UDP.Length() != 48 || !p.IP.ChecksumOK() || p.ICRCOK() != fix {
				t.Errorf("%v: ip len %d udp len %d ipcsum %v icrc %v", op, p.IP.TotalLen(), p.UDP.Length(), p.IP.ChecksumOK(), p.ICRCOK())
			}
		}
	}
}

// TestAtomicToWriteStale checks that the stale variant makes the same
// WRITE as AtomicToWrite but for the two checksums, which it leaves alone.
func TestAtomicToWriteStale(t *testing.T) {
	for _, op := range []Opcode{OpRCCompareSwap, OpRCFetchAdd} {
		f := baseFields(op)
		f.VA, f.RKey, f.SwapAdd, f.Compare = 0x7f0000002000, 0xabc, 0x1111, 0x2222
		frame := build(t, &f, 0)
		ref := append([]byte(nil), frame...)
		want, err := AtomicToWrite(ref, 42, true)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(frame)
		if err != nil {
			t.Fatal(err)
		}
		oldSum := p.IP.Checksum()
		if err := p.AtomicToWriteStale(42); err != nil {
			t.Fatal(err)
		}
		got := p.Frame
		if len(got) != len(want) || p.IP.Checksum() != oldSum || p.IP.ChecksumOK() {
			t.Fatalf("%v: length %d (want %d), IPv4 checksum %#04x (old %#04x) ok=%v: want it left stale", op, len(got), len(want), p.IP.Checksum(), oldSum, p.IP.ChecksumOK())
		}
		p.IP.UpdateChecksum()
		p.SetICRC()
		if !bytes.Equal(got, want) {
			t.Errorf("%v: after fixing the checksums got\n%x\nwant\n%x", op, got, want)
		}
		if p.Opcode != OpRCWriteOnly || p.RETH == nil || p.AtomicETH != nil || p.RETH.DMALen() != 8 || len(p.Payload) != 8 || p.ICRCOff != len(got)-ICRCLen {
			t.Errorf("%v: packet view not updated: %v reth=%v atomic=%v payload %d icrc at %d", op, p.Opcode, p.RETH != nil, p.AtomicETH != nil, len(p.Payload), p.ICRCOff)
		}
	}
	w := baseFields(OpRCWriteOnly)
	w.Payload = make([]byte, 8)
	p, _ := Parse(build(t, &w, 0))
	if err := p.AtomicToWriteStale(1); err == nil {
		t.Errorf("a WRITE was accepted")
	}
}

func TestAckToAtomicAck(t *testing.T) {
	for _, fix := range []bool{true, false} {
		f := baseFields(OpRCAcknowledge)
		f.Syndrome, f.MSN = ACKSyndrome(CreditInvalid), 42
		frame := build(t, &f, 8)
		oldICRC := append([]byte(nil), frame[len(frame)-4:]...)
		got, err := AckToAtomicAck(frame, 0xcafef00d12345678, fix)
		if err != nil {
			t.Fatal(err)
		}
		a := baseFields(OpRCAtomicAcknowledge)
		a.Syndrome, a.MSN, a.Orig = f.Syndrome, f.MSN, 0xcafef00d12345678
		want := build(t, &a, 0)
		if fix && !bytes.Equal(got, want) {
			t.Errorf("fix: got\n%x\nwant\n%x", got, want)
		}
		if !fix && (!bytes.Equal(got[:len(got)-4], want[:len(want)-4]) || !bytes.Equal(got[len(got)-4:], oldICRC)) {
			t.Errorf("nofix: got\n%x\nwant\n%x with old ICRC %x", got, want, oldICRC)
		}
		p, err := Parse(got)
		if err != nil {
			t.Fatal(err)
		}
		if p.IP.TotalLen() != 56 || p.UDP.Length() != 36 || !p.IP.ChecksumOK() || p.ICRCOK() != fix {
			t.Errorf("ip len %d udp len %d ipcsum %v icrc %v", p.IP.TotalLen(), p.UDP.Length(), p.IP.ChecksumOK(), p.ICRCOK())
		}
	}
}

func TestRewriteErrors(t *testing.T) {
	ack := baseFields(OpRCAcknowledge)
	frame := build(t, &ack, 0) // no spare capacity
	if _, err := AckToAtomicAck(frame, 1, true); err == nil {
		t.Error("AckToAtomicAck without capacity succeeded")
	}
	if _, err := AtomicToWrite(frame, 1, true); err == nil {
		t.Error("AtomicToWrite on an ACK succeeded")
	}
	nak := baseFields(OpRCAcknowledge)
	nak.Syndrome = NAKSyndrome(NAKPSNSequenceError)
	if _, err := AckToAtomicAck(build(t, &nak, 8), 1, true); err == nil {
		t.Error("AckToAtomicAck on a NAK succeeded")
	}
	cas := baseFields(OpRCCompareSwap)
	frame = build(t, &cas, 8)
	if _, err := AckToAtomicAck(frame, 1, true); err == nil {
		t.Error("AckToAtomicAck on a CAS succeeded")
	}
	p, _ := Parse(frame)
	if err := p.SetMSN(1); err == nil {
		t.Error("SetMSN on a CAS succeeded")
	}
	if _, err := AtomicToWrite(frame[:20], 1, true); err == nil {
		t.Error("AtomicToWrite on a truncated frame succeeded")
	}
}

func TestFieldSetters(t *testing.T) {
	tests := []struct {
		op Opcode
	}{{OpRCWriteOnly}, {OpRCReadRequest}, {OpRCCompareSwap}, {OpRCFetchAdd}}
	for _, tc := range tests {
		f := baseFields(tc.op)
		if tc.op == OpRCWriteOnly {
			f.Payload = make([]byte, 16)
			f.DMALen = 16
		}
		frame := build(t, &f, 0)
		p, err := Parse(frame)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SetVA(0x1122334455667788); err != nil {
			t.Fatal(err)
		}
		if err := p.SetRKey(0x99); err != nil {
			t.Fatal(err)
		}
		p.SetDestQP(0xabcdef)
		p.SetPSN(0xfffffe)
		if p.ICRCOK() {
			t.Errorf("%v: ICRC still valid after rewriting", tc.op)
		}
		p.SetICRC()
		f.VA, f.RKey, f.DestQP, f.PSN = 0x1122334455667788, 0x99, 0xabcdef, 0xfffffe
		if want := build(t, &f, 0); !bytes.Equal(frame, want) {
			t.Errorf("%v: got\n%x\nwant\n%x", tc.op, frame, want)
		}
		va, _ := p.VA()
		rk, _ := p.RKey()
		if va != 0x1122334455667788 || rk != 0x99 {
			t.Errorf("%v: VA %x rkey %x", tc.op, va, rk)
		}
	}
	f := baseFields(OpRCReadResponseOnly)
	f.Payload = make([]byte, 8)
	frame := build(t, &f, 0)
	p, _ := Parse(frame)
	if err := p.SetMSN(0x123456); err != nil {
		t.Fatal(err)
	}
	if p.AETH.MSN() != 0x123456 {
		t.Errorf("MSN %x", p.AETH.MSN())
	}
	if err := p.SetVA(1); err == nil {
		t.Error("SetVA on a READ response succeeded")
	}
}

func TestRewriteDropsTrailerAndUDPChecksum(t *testing.T) {
	f := baseFields(OpRCCompareSwap)
	frame := build(t, &f, 16)
	frame = frame[:len(frame)+6] // Ethernet trailer
	UDP(frame[34:]).SetChecksum(0xbeef)
	got, err := AtomicToWrite(frame, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Trailer) != 0 || p.UDP.Checksum() != 0 || !p.ICRCOK() || len(got) != 82 {
		t.Errorf("trailer %d udp csum %x icrc %v len %d", len(p.Trailer), p.UDP.Checksum(), p.ICRCOK(), len(got))
	}
}

// TestAtomicToWrite20 checks the fixed-layout conversion against the
// parsed one (Packet.AtomicToWriteStale): the same bytes.
func TestAtomicToWrite20(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		op := OpRCCompareSwap
		if trial%2 == 1 {
			op = OpRCFetchAdd
		}
		f := Fields{Opcode: op, TTL: 64, PKey: 0xffff, DestQP: rng.Uint32() & MaxQP, PSN: rng.Uint32() & MaxPSN,
			VA: rng.Uint64(), RKey: rng.Uint32(), SwapAdd: rng.Uint64(), Compare: rng.Uint64(), SrcPort: uint16(rng.Uint32())}
		frame := build(t, &f, 0)
		var a Packet
		if err := ParseInto(&a, append([]byte(nil), frame...)); err != nil {
			t.Fatal(err)
		}
		v := rng.Uint64()
		if err := a.AtomicToWriteStale(v); err != nil {
			t.Fatal(err)
		}
		got := AtomicToWrite20(append([]byte(nil), frame...), EthernetLen, v)
		if string(got) != string(a.Frame) {
			t.Fatalf("trial %d: frame\n%x\nwant\n%x", trial, got, a.Frame)
		}
		if len(got) != EthernetLen+AtomicWriteLen20 {
			t.Fatalf("trial %d: %d bytes, want %d", trial, len(got), EthernetLen+AtomicWriteLen20)
		}
	}
}
