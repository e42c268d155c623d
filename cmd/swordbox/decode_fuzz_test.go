package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// FuzzDecodeLinkTypes decodes one fuzzed frame stored in a pcap or pcapng
// capture of each supported link type. Properties: a well-formed capture
// never fails to decode; its one frame is counted exactly once (RoCEv2,
// malformed or skipped), with one output line unless skipped; and a Linux
// cooked capture (SLL or SLL2) of an Ethernet frame decodes to the same
// output as the Ethernet frame with its destination MAC zeroed (a cooked
// header does not carry it).
func FuzzDecodeLinkTypes(f *testing.F) {
	ex, err := hex.DecodeString(workedExample)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(byte(0), false, ex)
	f.Add(byte(1), true, ex)
	f.Add(byte(2), false, ex)
	f.Add(byte(5), false, ex[:40])
	f.Add(byte(1), false, []byte{0, 1, 2})
	f.Add(byte(2), true, ex[:20])
	f.Fuzz(func(t *testing.T, kind byte, ng bool, frame []byte) {
		asJSON := kind&4 != 0
		if len(frame) > 9216 {
			frame = frame[:9216] // a jumbo frame at most, well inside the captures' snap length
		}
		decode := func(lt layers.LinkType, data []byte) (decodeStats, string) {
			path := filepath.Join(t.TempDir(), "c.pcap")
			writeCaptureLink(t, path, []capFrame{{data: data}}, ng, lt)
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			var out bytes.Buffer
			st, err := decodeCapture(in, &out, asJSON)
			if err != nil {
				t.Fatalf("link type %v, frame %x: %v", lt, data, err)
			}
			if st.frames != 1 || st.roce+st.malformed+st.skipped != 1 || st.badICRC > st.roce {
				t.Fatalf("link type %v, frame %x: counts %+v", lt, data, st)
			}
			if lines := strings.Count(out.String(), "\n"); lines != st.roce+st.malformed {
				t.Fatalf("link type %v, frame %x: %d output lines for %+v", lt, data, lines, st)
			}
			return st, out.String()
		}
		lts := []layers.LinkType{layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2}
		lt := lts[int(kind)%len(lts)]
		decode(lt, frame) // the frame as a capture of that link type, whatever it holds
		if lt == layers.LinkTypeEthernet || len(frame) < 14 {
			return
		}
		eth := append([]byte(nil), frame...)
		clear(eth[:6])
		wantSt, want := decode(layers.LinkTypeEthernet, eth)
		gotSt, got := decode(lt, cooked(lt, capFrame{data: frame}).data)
		if gotSt != wantSt || got != want {
			t.Fatalf("%v capture of %x: %+v %q; as Ethernet: %+v %q", lt, frame, gotSt, got, wantSt, want)
		}
	})
}
