// Package p4 holds swordbox's switch program: swordbox.p4 (P4_16, v1model),
// its P4Info, and (in subpackages) the Go v1model target that executes it
// (target), the P4Runtime server in front of that target (p4rt) and the
// packet tests (ptf). This file embeds the program so that binaries carry it
// and run from any working directory.
package p4

import _ "embed"

// SwordboxSource is p4/swordbox.p4 as built into this binary.
//
//go:embed swordbox.p4
var SwordboxSource []byte

// SwordboxFile is the name under which SwordboxSource is compiled, so that
// compiler messages point at the file in the repository.
const SwordboxFile = "p4/swordbox.p4"
