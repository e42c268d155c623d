//go:build dpdk

package dpdk

/*
#cgo pkg-config: libdpdk
#include <stdlib.h>
#include "sbdpdk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/swordbox/swordbox/netio"
)

// Available reports whether this build includes the DPDK layer.
const Available = true

// MaxPorts is the most Ethernet ports (vdevs included) this DPDK build
// holds: its RTE_MAX_ETHPORTS (32 in Debian's). A vdev past it fails to
// probe.
const MaxPorts = C.RTE_MAX_ETHPORTS

var eal struct {
	mu      sync.Mutex
	args    []string // nil until Init succeeded
	cleaned bool     // Cleanup ran: Init must not run again
}

// ErrNotInitialized is returned by functions that need the EAL before Init.
var ErrNotInitialized = errors.New("dpdk: EAL not initialised (call dpdk.Init)")

// errno turns a negative DPDK return code or rte_errno into an error.
func errno(rc C.int) error {
	if rc < 0 {
		rc = -rc
	}
	return syscall.Errno(rc)
}

// Init initialises the EAL with args (without the program name), once per
// process. A second call with the same arguments does nothing; with other
// arguments it fails, since the EAL cannot be initialised twice.
func Init(args []string) error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if eal.cleaned {
		return errors.New("dpdk: EAL cleaned up; it cannot be initialised again in this process")
	}
	if eal.args != nil {
		if slices.Equal(eal.args, args) {
			return nil
		}
		return fmt.Errorf("dpdk: EAL already initialised with %q, cannot re-initialise with %q", eal.args, args)
	}
	argv := append([]string{"swordbox"}, args...)
	cargs := make([]*C.char, len(argv))
	for i, a := range argv {
		cargs[i] = C.CString(a)
	}
	// rte_eal_init keeps pointers into argv; the strings stay allocated.
	cargv := (**C.char)(C.malloc(C.size_t(len(cargs)) * C.size_t(unsafe.Sizeof(cargs[0]))))
	copy(unsafe.Slice(cargv, len(cargs)), cargs)
	done := make(chan error, 1)
	go func() {
		// rte_eal_init pins the calling thread to the main lcore's CPU:
		// run it on a locked thread, restore the thread's CPU set after,
		// and let the thread go with the goroutine (a locked goroutine
		// that returns without unlocking takes its thread with it; the
		// main thread is parked for good instead).
		runtime.LockOSThread()
		var cpus unix.CPUSet
		cpuErr := unix.SchedGetaffinity(0, &cpus)
		rc := C.rte_eal_init(C.int(len(cargs)), cargv)
		if cpuErr == nil {
			unix.SchedSetaffinity(0, &cpus)
		}
		if rc < 0 {
			done <- fmt.Errorf("dpdk: rte_eal_init %q: %w", args, errno(C.sb_errno()))
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		return err
	}
	eal.args = slices.Clone(args)
	if eal.args == nil {
		eal.args = []string{}
	}
	return nil
}

// Cleanup releases the EAL (rte_eal_cleanup) and removes its runtime
// directory when empty. Call it last, once every port is closed: no DPDK
// function may be used afterwards, and the EAL cannot be initialised again
// in this process.
func Cleanup() error {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	if eal.args == nil {
		return nil
	}
	dir := C.GoString(C.rte_eal_get_runtime_dir())
	if rc := C.rte_eal_cleanup(); rc != 0 {
		return fmt.Errorf("dpdk: rte_eal_cleanup: %w", errno(rc))
	}
	eal.args = nil
	eal.cleaned = true
	if dir != "" {
		os.Remove(dir) // only if empty: never another process's files
	}
	return nil
}

// Initialized reports whether Init has succeeded.
func Initialized() bool {
	eal.mu.Lock()
	defer eal.mu.Unlock()
	return eal.args != nil
}

// VirtualArgs returns EAL arguments for a process without hugepages or PCI
// devices, with the given vdevs (for example "net_ring0" or
// "net_af_packet0,iface=veth0"): --no-huge -m 256 --no-pci --no-shconf
// --no-telemetry --file-prefix prefix -l 0 --log-level *:warning. With
// --no-shconf nothing is left in /var/run/dpdk.
func VirtualArgs(prefix string, vdevs ...string) []string {
	args := []string{"--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--no-telemetry",
		"--file-prefix", prefix, "-l", "0", "--log-level", "*:warning"}
	for _, v := range vdevs {
		args = append(args, "--vdev", v)
	}
	return args
}

// Probe adds a device after Init from a devargs string such as
// "net_af_packet1,iface=veth0" (rte_dev_probe). It runs on the calling OS
// thread: lock the goroutine to a thread inside a network namespace to bind
// an af_packet vdev there.
func Probe(devargs string) error {
	if !Initialized() {
		return ErrNotInitialized
	}
	cs := C.CString(devargs)
	defer C.free(unsafe.Pointer(cs))
	if rc := C.rte_dev_probe(cs); rc != 0 {
		return fmt.Errorf("dpdk: probe %q: %w", devargs, errno(rc))
	}
	return nil
}

// PortByName returns the ethdev port id of a device ("net_ring0").
func PortByName(name string) (uint16, error) {
	if !Initialized() {
		return 0, ErrNotInitialized
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var id C.uint16_t
	if rc := C.rte_eth_dev_get_port_by_name(cs, &id); rc != 0 {
		return 0, fmt.Errorf("dpdk: port %q: %w", name, errno(rc))
	}
	return uint16(id), nil
}

// RegisterThread makes the calling OS thread an EAL lcore
// (rte_thread_register), so that mempool per-lcore caches serve its
// allocations and frees instead of the pool's shared ring. Lock the
// goroutine to its thread first (runtime.LockOSThread) and call
// UnregisterThread on that same thread before unlocking it. It returns the
// lcore id; when the EAL has no lcore left it fails and the thread keeps
// working uncached.
func RegisterThread() (int, error) {
	if !Initialized() {
		return 0, ErrNotInitialized
	}
	if C.rte_thread_register() != 0 {
		return 0, fmt.Errorf("dpdk: register thread: %w", errno(C.sb_errno()))
	}
	id := C.rte_lcore_id()
	if id == C.LCORE_ID_ANY {
		C.rte_thread_unregister()
		return 0, errors.New("dpdk: register thread: no lcore left")
	}
	return int(id), nil
}

// UnregisterThread releases the lcore of a thread registered with
// RegisterThread (rte_thread_unregister); it does nothing on another thread.
func UnregisterThread() {
	if Initialized() {
		C.rte_thread_unregister()
	}
}

// Mempool is a DPDK packet mbuf pool.
type Mempool struct {
	mp   *C.struct_rte_mempool
	name string
}

// DefaultDataRoom is the mbuf data room NewMempool uses when given 0: the
// headroom plus netio.MaxFrameSize, so any netio frame fits one segment.
const DefaultDataRoom = C.RTE_PKTMBUF_HEADROOM + netio.MaxFrameSize

// NewMempool creates a pool of n mbufs (n = 2^k - 1 is most efficient) with
// a per-lcore cache of cache mbufs and dataRoom bytes of buffer each
// (headroom included; 0 means DefaultDataRoom).
func NewMempool(name string, n, cache, dataRoom int) (*Mempool, error) {
	if !Initialized() {
		return nil, ErrNotInitialized
	}
	if dataRoom == 0 {
		dataRoom = DefaultDataRoom
	}
	if n <= 0 || cache < 0 || dataRoom <= C.RTE_PKTMBUF_HEADROOM || dataRoom > 0xffff {
		return nil, fmt.Errorf("dpdk: mempool %s: bad size n=%d cache=%d data room=%d", name, n, cache, dataRoom)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	mp := C.rte_pktmbuf_pool_create(cs, C.uint(n), C.uint(cache), 0, C.uint16_t(dataRoom), C.int(C.SOCKET_ID_ANY))
	if mp == nil {
		return nil, fmt.Errorf("dpdk: mempool %s: %w", name, errno(C.sb_errno()))
	}
	return &Mempool{mp: mp, name: name}, nil
}

// Name returns the pool's name.
func (p *Mempool) Name() string { return p.name }

// Available returns how many mbufs are free in the pool.
func (p *Mempool) Available() int { return int(C.rte_mempool_avail_count(p.mp)) }

// Alloc takes one mbuf from the pool, empty, with the default headroom.
func (p *Mempool) Alloc() (*Mbuf, error) {
	m := C.sb_pktmbuf_alloc(p.mp)
	if m == nil {
		return nil, fmt.Errorf("dpdk: mempool %s: empty", p.name)
	}
	return (*Mbuf)(m), nil
}

// AllocBulk fills ms with empty mbufs, all or none.
func (p *Mempool) AllocBulk(ms []*Mbuf) error {
	if len(ms) == 0 {
		return nil
	}
	if rc := C.sb_pktmbuf_alloc_bulk(p.mp, mbufArray(ms), C.uint(len(ms))); rc != 0 {
		return fmt.Errorf("dpdk: mempool %s: %d mbufs: %w", p.name, len(ms), errno(rc))
	}
	return nil
}

// Free releases the pool. Every mbuf must have been returned to it.
func (p *Mempool) Free() {
	if p.mp != nil {
		C.rte_mempool_free(p.mp)
		p.mp = nil
	}
}
