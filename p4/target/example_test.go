package target_test

import (
	"fmt"
	"os"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"

	"github.com/swordbox/swordbox/p4/target"
)

// Compile a program, install a route by P4Info names, and run a frame.
func Example() {
	src, err := os.ReadFile("../testdata/basic_router.p4")
	if err != nil {
		panic(err)
	}
	prog, err := target.Compile("basic_router.p4", src)
	if err != nil {
		panic(err) // "file:line:col: reason" for programs the target refuses
	}
	ids := map[string]uint32{}
	for _, t := range prog.P4Info().Tables {
		ids[t.Preamble.Name] = t.Preamble.Id
	}
	for _, a := range prog.P4Info().Actions {
		ids[a.Preamble.Name] = a.Preamble.Id
	}
	dev := target.NewDevice(prog, target.Options{CPUPort: 255})
	err = dev.WriteTableEntry(p4v1.Update_INSERT, &p4v1.TableEntry{
		TableId: ids["MyIngress.ipv4_lpm"],
		Match: []*p4v1.FieldMatch{{FieldId: 1, FieldMatchType: &p4v1.FieldMatch_Lpm{
			Lpm: &p4v1.FieldMatch_LPM{Value: []byte{10, 0, 0, 0}, PrefixLen: 8}}}},
		Action: &p4v1.TableAction{Type: &p4v1.TableAction_Action{Action: &p4v1.Action{
			ActionId: ids["MyIngress.ipv4_forward"],
			Params: []*p4v1.Action_Param{
				{ParamId: 1, Value: []byte{2, 0, 0, 0, 0, 2}},
				{ParamId: 2, Value: []byte{3}},
			}}}},
	})
	if err != nil {
		panic(err)
	}
	frame := []byte{
		2, 0, 0, 0, 0, 0xfe, 2, 0, 0, 0, 0, 1, 0x08, 0x00, // Ethernet
		0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0x5b, 0xc4, 10, 9, 9, 9, 10, 1, 2, 3, // IPv4, TTL 64
	}
	dev.Process(1, frame, func(port uint32, out []byte) {
		fmt.Printf("port %d, dst %x, ttl %d, checksum %x\n", port, out[0:6], out[22], out[24:26])
	})
	// Output: port 3, dst 020000000002, ttl 63, checksum 5cc4
}

// Compile a TNA program whose user includes come from an include path (as
// bf-p4c -I), and list what its P4Info offers a controller.
func ExampleCompileFile() {
	prog, err := target.CompileFile("testdata/tna/open-p4studio/tna_register/tna_register.p4",
		target.CompileOptions{IncludeDirs: []string{"testdata/tna/open-p4studio"}})
	if err != nil {
		panic(err)
	}
	info := prog.P4Info()
	fmt.Println(info.PkgInfo.Arch)
	for _, t := range info.Tables {
		fmt.Println("table", t.Preamble.Name)
	}
	for _, r := range info.Registers {
		fmt.Println("register", r.Preamble.Name, r.Size)
	}
	// Output:
	// tna
	// table SwitchIngress.reg_match
	// table SwitchIngress.reg_match_dir
	// register SwitchIngress.bool_register_table 1024
	// register SwitchIngress.test_reg 1024
}
