// Package p4 holds swordbox's switch program: swordbox.p4 (P4_16, v1model)
// and tna/swordbox.p4 (the same rules for Tofino's TNA), their P4Info, and
// (in subpackages) the Go target that executes both (target), the
// P4Runtime server in front of that target (p4rt) and the packet tests
// (ptf, with the differential tests of the two programs). This file embeds
// the programs so that binaries carry them and run from any working
// directory.
package p4

import _ "embed"

// SwordboxSource is p4/swordbox.p4 as built into this binary.
//
//go:embed swordbox.p4
var SwordboxSource []byte

// SwordboxFile is the name under which SwordboxSource is compiled, so that
// compiler messages point at the file in the repository.
const SwordboxFile = "p4/swordbox.p4"

// TNASource is p4/tna/swordbox.p4 as built into this binary: the same
// steering program for Tofino's TNA.
//
//go:embed tna/swordbox.p4
var TNASource []byte

// TNAFile is the name under which TNASource is compiled.
const TNAFile = "p4/tna/swordbox.p4"
