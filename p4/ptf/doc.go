// Package ptf holds packet tests in the style of PTF (the Packet Test
// Framework used with BMv2): they run p4/swordbox.p4 on the Go v1model
// target (p4/target) behind the P4Runtime server (p4/p4rt), program it over
// real gRPC on loopback exactly as a controller would (by P4Info names),
// send RoCEv2 frames built with roce into in-memory netio ports and check
// the frames that come out and the registers and counters the controller
// reads.
//
// It also guards the committed P4Info (p4/swordbox.p4info.txtpb): the test
// fails when the file no longer matches what the target derives from
// p4/swordbox.p4; `go test ./p4/ptf -run P4Info -update` rewrites it.
//
// The package has no non-test code.
package ptf
