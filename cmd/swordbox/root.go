package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the whole command tree of one swordbox CLI: the root
// with its persistent flags (--config, --cpuprofile) and every subcommand,
// each from its own constructor, with each numeric flag's range appended to
// its help text (documentSettings). Two calls share no state: each tree has
// its own flags, and prof is the CPU profile --cpuprofile starts, which the
// caller stops after Execute.
func newRootCmd(prof *cpuProfile) *cobra.Command {
	root := &cobra.Command{
		Use:   "swordbox",
		Short: "In-network acceleration of shared RDMA disaggregated memory",
		Long: `swordbox puts the top-of-rack switch to work for RDMA disaggregated memory:
a P4 program that steers Clover's CAS and READ requests to the cached tail of
each hot key, a P4Runtime controller that programs it and repairs broken
chains, and a middlebox that multiplexes RC connections and rewrites CAS into
WRITE. Everything runs on a software rack in one process.

Configuration: every subcommand reads its settings from, in rising precedence,
built-in defaults, the YAML file named by --config (keys as the flag names,
under a section named after the subcommand), SWORDBOX_<SECTION>_<FLAG>
environment variables (upper case, '-' as '_'), and flags.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: prof.start,
	}
	root.PersistentFlags().String("config", "", "YAML configuration file")
	root.PersistentFlags().String("cpuprofile", "", "write a CPU profile of the command to this file (pprof format)")
	root.AddCommand(
		newBenchCmd(),
		newCloverCmd(),
		newCtrlCmd(),
		newDecodeCmd(),
		newMemnodeCmd(),
		newMiddleboxCmd(),
		newP4infoCmd(),
		newPerfCmd(),
		newSwitchCmd(),
	)
	documentSettings(root)
	return root
}
