// Command swordbox is the one CLI of the project: the A/B benchmark on the
// software rack (bench), the rack's parts as processes (switch, ctrl,
// middlebox, memnode, and Clover's metadata server and client threads:
// clover ms, clover clients), microbenchmarks (perf) and tools (decode,
// p4info).
//
// Every subcommand lives in its own file and is built by its constructor
// (newBenchCmd, newCtrlCmd, ...); newRootCmd assembles the tree, so that
// each call builds a CLI with its own commands and flags. Configuration
// comes from one typed struct per subcommand, filled by viper from (lowest
// to highest precedence) defaults, the YAML file given with --config,
// SWORDBOX_* environment variables and flags; see config.go. The ranges of
// the numbers are one static table (settings.go).
package main

import (
	"fmt"
	"os"
)

func main() {
	var prof cpuProfile
	err := newRootCmd(&prof).Execute()
	if perr := prof.stop(); err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "swordbox:", err)
		os.Exit(1)
	}
}
