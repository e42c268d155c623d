package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// benchConfig is the typed configuration of `swordbox bench`.
type benchConfig struct {
	Scenario string        `mapstructure:"scenario"`
	Keys     int           `mapstructure:"keys"`
	Value    int           `mapstructure:"value-size"`
	Zipf     float64       `mapstructure:"zipf"`
	Duration time.Duration `mapstructure:"duration"`
	Seed     int64         `mapstructure:"seed"`
	JSON     bool          `mapstructure:"json"`
}

var benchCmd = &cobra.Command{
	Use:   "bench",
	Short: "Run the A/B benchmark of swordbox on the in-process software rack",
	Long: `bench assembles a software rack (memory nodes, Clover metadata server,
clients, the switch target running swordbox.p4 under the controller) and runs
the same workload with swordbox off, with write steering, and with write and
read steering, side by side.`,
	Args: cobra.NoArgs,
	RunE: func(cmd *cobra.Command, _ []string) error {
		var cfg benchConfig
		if err := loadConfig(cmd, "bench", &cfg); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "swordbox bench: scenario %q, Clover, %d keys, %d-byte values, zipf %.2f, %s per cell, seed %d\n",
			cfg.Scenario, cfg.Keys, cfg.Value, cfg.Zipf, cfg.Duration, cfg.Seed)
		fmt.Fprintln(cmd.OutOrStdout(), "the software rack is not assembled yet (issue 8): nothing was measured")
		return nil
	},
}

func init() {
	f := benchCmd.Flags()
	f.String("scenario", "default", "default | partial | zipf | size | cas-mux")
	f.Int("keys", 1024, "number of Clover keys")
	f.Int("value-size", 128, "value size in bytes")
	f.Float64("zipf", 0.99, "zipfian constant of key popularity")
	f.Duration("duration", 5*time.Second, "measured time per cell")
	f.Int64("seed", 1, "seed of every random choice")
	f.Bool("json", false, "print the results as JSON on stdout")
	rootCmd.AddCommand(benchCmd)
}
