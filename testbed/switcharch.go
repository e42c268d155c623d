package testbed

import (
	"fmt"
	"os"
	"strings"

	"github.com/swordbox/swordbox/ctrl"
	"github.com/swordbox/swordbox/ctrl/p4rtc"
	"github.com/swordbox/swordbox/netio"
	swp4 "github.com/swordbox/swordbox/p4"
	"github.com/swordbox/swordbox/p4/target"
)

// The switch architectures a rack's switch can run. Both programs are
// executed by the Go target and implement the same steering rules
// (docs/swordbox-p4.md); the controller finds their objects by the same
// P4Info names.
const (
	// ArchV1Model is p4/swordbox.p4, for BMv2's v1model (the default).
	ArchV1Model = "v1model"
	// ArchTNA is p4/tna/swordbox.p4, for Tofino's TNA.
	ArchTNA = "tna"
)

// SwitchArchs are the accepted values of Config.SwitchArch (and of the
// CLI's --arch and --switch-arch).
var SwitchArchs = []string{ArchV1Model, ArchTNA}

// CheckSwitchArch refuses an architecture that is not one of SwitchArchs.
func CheckSwitchArch(arch string) error {
	for _, a := range SwitchArchs {
		if arch == a {
			return nil
		}
	}
	return fmt.Errorf("switch architecture %q: want %s", arch, strings.Join(SwitchArchs, " or "))
}

// switchProgramName names the program of arch for reports.
func switchProgramName(arch string) string {
	if arch == ArchTNA {
		return swp4.TNAFile + " (TNA)"
	}
	return swp4.SwordboxFile + " (v1model)"
}

// SwitchProgram compiles the switch program of architecture arch ("" is
// v1model): the file at path if path is set, else the program built into
// the binary for arch. It returns the program, the file name compiler
// messages use and the source (the P4Runtime device config). A program
// written for another architecture than arch is refused, and so is a
// built-in Tofino program that fails the Tofino placement check.
func SwitchProgram(arch, path string) (*target.Program, string, []byte, error) {
	if arch == "" {
		arch = ArchV1Model
	}
	if err := CheckSwitchArch(arch); err != nil {
		return nil, "", nil, err
	}
	file, src := swp4.SwordboxFile, swp4.SwordboxSource
	if arch == ArchTNA {
		file, src = swp4.TNAFile, swp4.TNASource
	}
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, "", nil, fmt.Errorf("switch program: %w", err)
		}
		file, src = path, b
	}
	prog, err := target.Compile(file, src)
	if err != nil {
		return nil, "", nil, fmt.Errorf("switch program: %w", err)
	}
	if got := prog.P4Info().GetPkgInfo().GetArch(); got != arch {
		return nil, "", nil, fmt.Errorf("switch program %s is a %s program, not %s", file, got, arch)
	}
	if arch == ArchTNA && path == "" {
		// The built-in Tofino program must also place on Tofino's stages
		// (docs/swordbox-p4.md); a user's program is the user's to check.
		if err := prog.TofinoPlacement(); err != nil {
			return nil, "", nil, fmt.Errorf("switch program %s: %w", file, err)
		}
	}
	return prog, file, src, nil
}

// SwitchKeySlots is the number of keys the built-in switch program of
// architecture arch ("" is v1model) can steer at once (ctrl.KeySlots).
func SwitchKeySlots(arch string) (int, error) {
	prog, _, _, err := SwitchProgram(arch, "")
	if err != nil {
		return 0, err
	}
	schema, err := p4rtc.NewSchema(prog.P4Info())
	if err != nil {
		return 0, fmt.Errorf("switch program: %w", err)
	}
	return ctrl.KeySlots(schema)
}

// SwitchTap receives every frame that enters the switch, with the switch
// port it entered on, from the ports' receive loops (concurrently: it must
// lock what it shares). The frame is only valid during the call.
type SwitchTap func(port uint32, frame []byte)

// tapPort calls tap on every frame received from the inner port.
type tapPort struct {
	netio.Port
	port uint32
	tap  SwitchTap
}

// tapped returns p with tap on its received frames (p itself if tap is nil).
func tapped(p netio.Port, port uint32, tap SwitchTap) netio.Port {
	if tap == nil {
		return p
	}
	return &tapPort{Port: p, port: port, tap: tap}
}

func (p *tapPort) Recv(bufs [][]byte) (int, error) {
	n, err := p.Port.Recv(bufs)
	for i := 0; i < n; i++ {
		p.tap(p.port, bufs[i])
	}
	return n, err
}
