package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/swordbox/swordbox/p4/target"
)

// p4infoConfig is the typed configuration of `swordbox p4info`.
type p4infoConfig struct {
	Out string `mapstructure:"out"`
}

// newP4infoCmd builds `swordbox p4info` and its flags.
func newP4infoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "p4info FILE.p4",
		Short: "Compile a P4_16 program (v1model or tna) and write its P4Info (text format)",
		Long: `p4info compiles FILE.p4 with the swordbox target (the same front end that
executes it in the software switch; v1model or tna, by the architecture the
program includes) and writes its P4Info as protobuf text, with p4c's names
and IDs (for a tna program, those of bf-p4c --p4runtime-force-std-externs),
in p4c's layout (byte-stable, so the file can be committed). By default it writes FILE.p4info.txtpb next to FILE.p4
(p4/swordbox.p4 -> p4/swordbox.p4info.txtpb); --out - writes to stdout.
A program the target cannot run is refused with file:line:col and a reason.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var cfg p4infoConfig
			if err := loadConfig(cmd, "p4info", &cfg); err != nil {
				return err
			}
			src, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("p4info: %w", err)
			}
			prog, err := target.Compile(args[0], src)
			if err != nil {
				return fmt.Errorf("p4info: %w", err)
			}
			text := target.FormatText(prog.P4Info())
			if cfg.Out == "" {
				cfg.Out = strings.TrimSuffix(args[0], ".p4") + ".p4info.txtpb"
			}
			if cfg.Out == "-" {
				_, err = cmd.OutOrStdout().Write(text)
				return err
			}
			if err := os.WriteFile(cfg.Out, text, 0o644); err != nil {
				return fmt.Errorf("p4info: %w", err)
			}
			return nil
		},
	}
	c.Flags().StringP("out", "o", "", "output file (default: FILE.p4info.txtpb next to FILE.p4; - for stdout)")
	return c
}
