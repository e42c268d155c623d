// Command swordbox is the one CLI of the project: the A/B benchmark on the
// software rack (bench), the rack's parts as processes (switch, ctrl,
// middlebox, memnode), microbenchmarks (perf) and tools (decode, p4info).
//
// Every subcommand lives in its own file and registers itself with the root
// command in an init function. Configuration comes from one typed struct per
// subcommand, filled by viper from (lowest to highest precedence) defaults,
// the YAML file given with --config, SWORDBOX_* environment variables and
// flags; see config.go.
package main

import (
	"fmt"
	"os"
)

func main() {
	documentSettings(rootCmd)
	err := rootCmd.Execute()
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "swordbox:", err)
		os.Exit(1)
	}
}
