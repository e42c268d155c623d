// Package ptf holds packet tests in the style of PTF (the Packet Test
// Framework used with BMv2): they run p4/swordbox.p4 on the Go v1model
// target (p4/target) behind the P4Runtime server (p4/p4rt), program it over
// real gRPC on loopback exactly as a controller would (by P4Info names),
// send RoCEv2 frames built with roce into in-memory netio ports and check
// the frames that come out and the registers and counters the controller
// reads: one test per rule of docs/swordbox-p4.md, "Semantics" (chain
// mode's in chain_test.go), tshark's decoding of the frames the switch
// sends (tshark_test.go), and AF_PACKET ports on veth as root (veth_test.go).
//
// The differential tests (tna_*_test.go) run the Tofino program,
// p4/tna/swordbox.p4, beside the v1model one under the same entries and
// require the same frames, PacketIns, registers and counters: every packet
// test with a TNA twin, random traffic on a controlled clock, and a trace
// recorded at a software rack's switch (testdata/rack-trace.pcapng); they
// also check the TNA program against the target's Tofino placement rules.
//
// It also guards the committed P4Info files (p4/swordbox.p4info.txtpb and
// p4/tna/swordbox.p4info.txtpb): a test fails when one no longer matches
// what the target derives from its program; `go test ./p4/ptf -run P4Info
// -update` rewrites both.
//
// The package has no non-test code.
package ptf
