package p4rt_test

import (
	"context"
	"fmt"
	"net"
	"os"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/swordbox/swordbox/netio"
	"github.com/swordbox/swordbox/p4/p4rt"
)

// A switch with two in-memory ports, swordbox.p4 preloaded, serving
// P4Runtime on loopback.
func ExampleServer() {
	sw1, host1 := netio.Pipe()
	sw2, host2 := netio.Pipe()
	defer host1.Close()
	defer host2.Close()
	srv := p4rt.New(p4rt.Options{DeviceID: 1, Ports: map[uint32]netio.Port{1: sw1, 2: sw2}})
	defer srv.Close()
	src, err := os.ReadFile("../swordbox.p4")
	if err != nil {
		panic(err)
	}
	if err := srv.LoadPipeline("swordbox.p4", src); err != nil {
		panic(err)
	}
	srv.Start()

	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	gs := grpc.NewServer()
	srv.Register(gs)
	go gs.Serve(lis)
	defer gs.Stop()

	cc, _ := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer cc.Close()
	cl := p4v1.NewP4RuntimeClient(cc)
	caps, _ := cl.Capabilities(context.Background(), &p4v1.CapabilitiesRequest{})
	cfg, _ := cl.GetForwardingPipelineConfig(context.Background(), &p4v1.GetForwardingPipelineConfigRequest{
		DeviceId: 1, ResponseType: p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE,
	})
	fmt.Println("P4Runtime", caps.GetP4RuntimeApiVersion())
	fmt.Println("tables:", len(cfg.GetConfig().GetP4Info().GetTables()))
	// Output:
	// P4Runtime 1.5.0
	// tables: 3
}
