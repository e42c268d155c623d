// Package clover is Clover (SepDS in its paper, pDPM-Sep in its authors'
// code): a key-value store on passive disaggregated memory in which every
// key is an append-only chain of immutable version nodes in memory-node
// memory, linked by CAS on the tail's header word, with a metadata server
// (MS) off the data path.
//
// It owns the memory-node layout (layout.go, the contract in
// docs/clover-layout.md), the metadata server, and the client. It programs
// only against roce/verbs, so it runs unchanged on the software RNIC or on an
// RDMA NIC, and with or without a steering switch in the path. It does not
// assemble racks, run benchmarks or know about the switch (testbed does).
package clover
