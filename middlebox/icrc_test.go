package middlebox

import (
	"math/rand/v2"
	"testing"

	"github.com/swordbox/swordbox/roce"
)

// A rewrite carries the received frame's ICRC error (icrc.go): the same
// rewrite of an intact frame and of a copy with one byte corrupted that the
// rewrite keeps (VA, rkey or payload) must leave with the same ICRC, the
// intact one's correct and the corrupted one's wrong. This is checked for
// the fast path's helpers (icrcErrAt, roce.AtomicToWrite20, putICRC) and the general
// ones (icrcErrOf, casToWrite, finish, with and without a VLAN tag), for
// WRITE, READ, CMP_SWAP and FETCH_ADD (the atomics turned into WRITEs,
// roce.ICRCErrorShorter4), against a full computation by the roce package.
func TestCarriedICRCError(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := []roce.Opcode{roce.OpRCWriteOnly, roce.OpRCReadRequest, roce.OpRCCompareSwap, roce.OpRCFetchAdd}
	for trial := 0; trial < 400; trial++ {
		op := ops[trial%len(ops)]
		general := trial%8 >= 4
		f := roce.Fields{Opcode: op, TTL: 64, SrcPort: uint16(rng.Uint32()), PKey: 0xffff, DestQP: rng.Uint32() & 0xffffff,
			PSN: rng.Uint32() & roce.MaxPSN, VA: rng.Uint64(), RKey: rng.Uint32(), VLAN: general && trial%3 == 0}
		switch op {
		case roce.OpRCWriteOnly:
			f.Payload = make([]byte, 4*(1+rng.IntN(64)))
			for i := range f.Payload {
				f.Payload[i] = byte(rng.Uint32())
			}
			f.DMALen = uint32(len(f.Payload))
		case roce.OpRCReadRequest:
			f.DMALen = rng.Uint32() & 0xffff
		default:
			f.SwapAdd, f.Compare = rng.Uint64(), rng.Uint64()
		}
		intact := buildFrame(t, &f)
		var p roce.Packet
		if err := roce.ParseInto(&p, append([]byte(nil), intact...)); err != nil {
			t.Fatal(err)
		}
		kept := p.ExtOff + 12 + rng.IntN(len(intact)-roce.ICRCLen-p.ExtOff-12+1) // payload (or, below, VA and rkey)
		if op != roce.OpRCWriteOnly || rng.IntN(2) == 0 {
			kept = p.ExtOff + rng.IntN(12)
		}
		corrupt := append([]byte(nil), intact...)
		corrupt[kept] ^= byte(1 + rng.IntN(255))

		o := conn{cliIP: [4]byte{10, 9, 8, byte(trial)}, srvIP: [4]byte{10, 0, 0, 2}, cliPort: uint16(rng.Uint32()), srvQP: rng.Uint32() & 0xffffff}
		newPSN, v := rng.Uint32()&roce.MaxPSN, rng.Uint64()
		conv := op == roce.OpRCCompareSwap || op == roce.OpRCFetchAdd
		rewrite := func(frame []byte) []byte {
			if general {
				var q roce.Packet
				if err := roce.ParseInto(&q, frame); err != nil {
					t.Fatal(err)
				}
				bad := icrcErrOf(&q)
				if conv {
					casToWrite(&q, v)
					bad = roce.ICRCErrorShorter4(bad)
				}
				retargetRequest(q.Frame, q.L3Off, q.L4Off, q.BTHOff, &o)
				q.BTH.SetPSN(newPSN)
				finish(&q, bad)
				return q.Frame
			}
			bad := icrcErrAt(frame, xIP, len(frame)-roce.ICRCLen)
			icrcOff := len(frame) - roce.ICRCLen
			if conv {
				frame = roce.AtomicToWrite20(frame, xIP, v)
				icrcOff = xIP + roce.AtomicWriteLen20 - roce.ICRCLen
				bad = roce.ICRCErrorShorter4(bad)
			}
			retargetRequest(frame, xIP, xUDP, xBTH, &o)
			put24(frame[xBTH+roce.BTHAckPSNOff+1:], newPSN)
			roce.IPv4(frame[xIP:xUDP]).UpdateChecksum()
			putICRC(frame, xIP, icrcOff, bad)
			return frame
		}
		good, bad := rewrite(intact), rewrite(corrupt)
		var pg, pb roce.Packet
		if err := roce.ParseInto(&pg, good); err != nil {
			t.Fatal(err)
		}
		if err := roce.ParseInto(&pb, bad); err != nil {
			t.Fatal(err)
		}
		if !pg.ICRCOK() || !pg.IP.ChecksumOK() {
			t.Fatalf("trial %d (%v, general %v): the intact frame left with a wrong ICRC or IPv4 checksum", trial, op, general)
		}
		if pb.ICRCOK() {
			t.Fatalf("trial %d (%v, general %v, byte %d): the corruption was laundered", trial, op, general, kept)
		}
		if pb.StoredICRC() != pg.StoredICRC() {
			t.Fatalf("trial %d (%v, general %v, byte %d): ICRC %#x, want the intact frame's %#x", trial, op, general, kept, pb.StoredICRC(), pg.StoredICRC())
		}
	}
}
