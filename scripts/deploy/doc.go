// Package deploy holds the tests of the deploy scripts beside it (bmv2.sh,
// tofino.sh, tofino-devconfig.sh, dpdk-host.sh, rack-host.sh,
// tracked-keys.sh; lib.sh is their shared part). The scripts put swordbox on a real rack: a BMv2 or
// Tofino switch with the controller pointed at it, a DPDK host running the
// middlebox, memory nodes and Clover hosts; docs/deploy.md walks through
// them. This machine has no switch, no SDE and no NIC to bind, so the tests
// run every script's dry run (the plan: every command and every file it
// would write, nothing run) and hold the plan to the real swordbox binary:
// every swordbox command of a plan names a subcommand and flags that
// `swordbox <command> --help` lists, the controller's command loads the rack
// file and builds its plan against the committed P4Info, the middlebox's
// generated config file passes the middlebox's own validation, and the
// memory node's command runs. A renamed flag or a changed range breaks them.
// tracked-keys.sh is held to the Clover clients' own key names
// (TestTrackedKeys). As root, TestOneHostRack runs rack-host.sh for real on a
// one-host rack (veth pairs for cables, `swordbox switch` in the switch's
// place): memory node, metadata server and a client host through load,
// warmup and run.
//
// It owns no Go code besides the tests: the scripts are the product.
package deploy
