// Package netns is the namespace mode of the software rack (`swordbox bench
// --netns`): every host is its own process in its own network namespace,
// hosts reach the switch over veth pairs with real Ethernet frames on
// AF_PACKET, and every process is the swordbox binary a real rack runs.
//
// It owns the orchestration (namespaces, links, processes, readiness,
// results, teardown) and the two Clover roles that have no command of
// their own elsewhere: the metadata server host (RunMS, `swordbox clover
// ms`) and the client host (RunClients, `swordbox clover clients`). It owns
// no protocol: the switch (`swordbox switch`), the memory node (`swordbox
// memnode`), the controller (`swordbox ctrl run`), Clover and the RNIC are
// the project's components, unmodified; the harness (testbed.Drive,
// testbed.Percentile) and the report types (testbed/report) are testbed's.
//
// # The rack of one cell
//
//	namespace     process                         data port   management
//	<id>-sw       swordbox switch --ports N=pN    p1..pK      m0 10.99.0.1 (gRPC :9559)
//	<id>-mem      swordbox memnode                d0 (port 1) m0 10.99.0.2 (CM :7471)
//	<id>-ms       swordbox clover ms              d0 (port 2) m0 10.99.0.3 (CM :7472)
//	<id>-cH       swordbox clover clients         d0 (port 3+H-1) m0 10.99.0.(4+H-1)
//	<id>-mgmt     swordbox ctrl run               (bridge br0 10.99.0.254 joins every m0)
//
// <id> is Options.Prefix (default "sbx" + 6 random hex digits, unique per
// run) and a per-rack sequence number. Every cell gets a fresh rack. The
// rack is a testbed.CellRack (NewCellRack), so testbed.RunCellOn, the cell
// runner of every rack, drives it and derives the cell's figures.
//
// Decisions where the brief and the paper are silent:
//
//   - A separate management network. The switch forwards by destination MAC
//     only, so kernel TCP over the data plane would need static neighbours
//     and would mix connection-manager and gRPC bytes into the counted
//     traffic. Real racks have a management network; here it is a kernel
//     bridge in its own namespace, joined by one veth per host. Data veths
//     carry only the RNICs' RoCEv2 frames: they have no IP address and IPv6
//     is off in every namespace, so the kernel sends nothing on them. No
//     kernel UDP/TCP crosses the userspace switch, so `ethtool -K tx off` is
//     not needed (the bridge is the kernel's).
//   - Veths are created with both ends already inside their namespaces
//     (`ip link add X netns A type veth peer name Y netns B`), so interface
//     names are fixed (p1.., d0, m0) and nothing appears in the caller's
//     namespace. The orchestrator has no address anywhere: it reads the
//     switch over a loopback proxy whose upstream socket is opened inside
//     the management namespace (setns on a locked thread), and it reads
//     the switch ports' byte counters with `ip -n <ns> -s -j link`.
//   - The Clover region: `swordbox memnode` registers zeroed memory of the
//     layout's size, which is what clover.InitRegion leaves everywhere but
//     the 64-byte region header; the metadata server host writes that
//     header with one RDMA WRITE before it serves (same bytes as in
//     process).
//   - Bytes per operation are the kernel's rx_bytes of the switch's ports
//     (Ethernet header to ICRC, as testbed counts at the switch's
//     ingress), read right before the measured phase starts and right
//     after every host reported.
//   - Operation streams: each client host drives its threads with
//     testbed.Drive, whose thread j takes the workload's stream j; host h
//     uses the seed HostSeed(seed, h) (host 0: the seed itself), so every
//     thread has its own stream and one seed gives the same operation
//     sequences in every mode. They are not the in-process rack's
//     sequences thread for thread (there thread g takes stream g).
//   - Client hosts connect one after another, so the memory node and the
//     metadata server number their QPs in the same order on every run: the
//     switch's connection slots hash the QPN, and with hosts racing the
//     collisions (slot takeovers) changed from run to run and from mode to
//     mode.
//   - The metadata server's and client hosts' RNICs use a 67 ms local ACK
//     timeout (Options.AckTimeout; a ConnectX's default code 14) instead of
//     the RNIC's 8 ms, which is made for in-memory links: processes on a
//     loaded 2-core machine see scheduling delays of tens of milliseconds,
//     and 8 ms made QPs fail with RETRY_EXC_ERR during the load phase.
//   - The orchestrator drives the client hosts over their stdin/stdout
//     (commands load, warmup, run, quit; JSON event lines back), so the
//     measured phases of all hosts start within a few milliseconds.
//   - Teardown: processes get their own process group (a terminal's Ctrl-C
//     reaches only the orchestrator) and SIGKILL if the orchestrator dies
//     (Pdeathsig). On return, error, SIGINT or SIGTERM the orchestrator
//     stops them (SIGTERM, SIGKILL after 3 s) and deletes its namespaces.
//     Only a SIGKILL of the orchestrator itself can leave namespaces
//     behind; `ip netns list | grep ^sbx` finds them.
package netns
