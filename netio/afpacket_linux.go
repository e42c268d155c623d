package netio

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// afMaxBurst is the most frames one recvmmsg or sendmmsg call moves.
const afMaxBurst = 64

// AFPacketConfig configures an AF_PACKET port.
type AFPacketConfig struct {
	// Interface is the name of the network interface to bind to.
	Interface string
	// NoPromisc leaves the interface out of promiscuous mode. By default
	// the port turns it on, because the components behind a port (a soft
	// RNIC, a switch, a middlebox) use MAC addresses of their own.
	NoPromisc bool
	// SocketBuffer is the size in bytes asked for the socket's receive and
	// send buffers (SO_RCVBUFFORCE as root, else SO_RCVBUF capped by
	// net.core.rmem_max). Zero means DefaultAFPacketSocketBuffer. The
	// kernel's default (about 200 KiB) holds fewer than 32 jumbo frames.
	SocketBuffer int

	// userFilterOnly skips PACKET_IGNORE_OUTGOING so tests exercise the
	// filter in Recv that older kernels rely on.
	userFilterOnly bool
}

// DefaultAFPacketSocketBuffer is the default AFPacketConfig.SocketBuffer.
const DefaultAFPacketSocketBuffer = 4 << 20

// AFPacketStats counts what an AF_PACKET port moved.
type AFPacketStats struct {
	RxFrames uint64 // frames handed to the caller
	TxFrames uint64 // frames the kernel accepted
	// TxDropped counts frames the kernel refused because the device queue
	// was full (ENOBUFS); Send reports them accepted, as a NIC does.
	TxDropped uint64
	// SkippedOutgoing counts frames the socket saw leave the interface
	// (PACKET_OUTGOING), which the port never returns: a forwarder would
	// otherwise receive what it just sent.
	SkippedOutgoing uint64
	Truncated       uint64 // frames longer than the caller's buffer
	// KernelDrops is the kernel's count of frames dropped because the
	// socket's receive queue was full (PACKET_STATISTICS, cumulative).
	KernelDrops uint64
}

// AFPacketPort is a Port on a Linux network interface through an AF_PACKET
// raw socket. Bursts map to single recvmmsg and sendmmsg calls, a blocked
// Recv waits in the Go netpoller (no thread is parked, and Close wakes it),
// and the steady state allocates nothing. It needs CAP_NET_RAW.
//
// Receive-side VLAN tags the kernel strips into metadata are not restored;
// the racks this project builds do not use VLANs.
type AFPacketPort struct {
	name string
	file *os.File
	raw  syscall.RawConn

	rmu    sync.Mutex
	rhdrs  [afMaxBurst]unix.Mmsghdr
	riov   [afMaxBurst]unix.Iovec
	raddr  [afMaxBurst]unix.RawSockaddrLinklayer
	rn     int
	rerr   error
	readFn func(fd uintptr) bool

	wmu     sync.Mutex
	whdrs   [afMaxBurst]unix.Mmsghdr
	wiov    [afMaxBurst]unix.Iovec
	wcount  int
	wn      int
	werr    error
	writeFn func(fd uintptr) bool

	rx, tx, txDropped, skipped, truncated, kdrops atomic.Uint64
	closed                                        atomic.Bool
	closeOnce                                     sync.Once
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// NewAFPacketPort opens an AF_PACKET port on cfg.Interface.
func NewAFPacketPort(cfg AFPacketConfig) (*AFPacketPort, error) {
	ifi, err := net.InterfaceByName(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("netio: af_packet %s: %w", cfg.Interface, err)
	}
	// Protocol 0 receives nothing until bind, so no frame of another
	// interface slips in between socket and bind.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netio: af_packet %s: socket: %w", cfg.Interface, err)
	}
	fail := func(what string, err error) (*AFPacketPort, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("netio: af_packet %s: %s: %w", cfg.Interface, what, err)
	}
	// Best effort: kernels before 4.20 lack it, and Recv filters anyway.
	if !cfg.userFilterOnly {
		_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}
	sb := cfg.SocketBuffer
	if sb <= 0 {
		sb = DefaultAFPacketSocketBuffer
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, sb) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, sb)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, sb) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, sb)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	if !cfg.NoPromisc {
		mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
			return fail("promiscuous mode", err)
		}
	}
	f := os.NewFile(uintptr(fd), "af_packet:"+cfg.Interface)
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("netio: af_packet %s: %w", cfg.Interface, err)
	}
	p := &AFPacketPort{name: cfg.Interface, file: f, raw: raw}
	for i := range afMaxBurst {
		p.rhdrs[i].Hdr.Iov = &p.riov[i]
		p.rhdrs[i].Hdr.SetIovlen(1)
		p.rhdrs[i].Hdr.Name = (*byte)(unsafe.Pointer(&p.raddr[i]))
		p.whdrs[i].Hdr.Iov = &p.wiov[i]
		p.whdrs[i].Hdr.SetIovlen(1)
	}
	p.readFn = p.doRead
	p.writeFn = p.doWrite
	return p, nil
}

// Name implements Port: the interface name.
func (p *AFPacketPort) Name() string { return p.name }

// doRead runs one recvmmsg; it reports false to wait for readability.
func (p *AFPacketPort) doRead(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&p.rhdrs[0])), uintptr(p.rn), unix.MSG_TRUNC, 0, 0)
		switch errno {
		case 0:
			p.rn, p.rerr = int(n), nil
			return true
		case unix.EINTR:
			continue // retry now: the netpoller is edge-triggered
		case unix.EAGAIN:
			return false
		default:
			p.rn, p.rerr = 0, errno
			return true
		}
	}
}

// Recv implements Port.
func (p *AFPacketPort) Recv(bufs [][]byte) (int, error) {
	if len(bufs) == 0 {
		return 0, nil
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	want := min(len(bufs), afMaxBurst)
	for {
		for i := range want {
			b := bufs[i][:cap(bufs[i])]
			if len(b) > 0 {
				p.riov[i].Base = &b[0]
			} else {
				p.riov[i].Base = nil
			}
			p.riov[i].SetLen(len(b))
			p.rhdrs[i].Hdr.Namelen = uint32(unsafe.Sizeof(p.raddr[i]))
			p.rhdrs[i].Hdr.Flags = 0
		}
		p.rn = want
		err := p.raw.Read(p.readFn)
		for i := range want {
			p.riov[i].Base = nil // do not keep the caller's buffers alive
		}
		if err == nil {
			err = p.rerr
		}
		if err != nil {
			if p.closed.Load() || errors.Is(err, os.ErrClosed) {
				return 0, ErrClosed
			}
			return 0, fmt.Errorf("netio: af_packet %s: recvmmsg: %w", p.name, err)
		}
		k := 0
		for i := range p.rn {
			if p.raddr[i].Pkttype == unix.PACKET_OUTGOING {
				p.skipped.Add(1)
				continue
			}
			l := int(p.rhdrs[i].Len) // with MSG_TRUNC: the real length
			c := cap(bufs[i])
			if l > c {
				p.truncated.Add(1)
				l = c
			}
			if k != i {
				bufs[k] = bufs[k][:cap(bufs[k])]
				bufs[k] = bufs[k][:copy(bufs[k], bufs[i][:l])]
			} else {
				bufs[k] = bufs[i][:l]
			}
			k++
		}
		if k > 0 {
			p.rx.Add(uint64(k))
			return k, nil
		}
	}
}

// doWrite runs one sendmmsg over the pending frames.
// It waits (reports false) only while the socket's send buffer is full;
// when the device queue is full (ENOBUFS) the frame is dropped, as a NIC
// drops on a full ring.
func (p *AFPacketPort) doWrite(fd uintptr) bool {
	for p.wn < p.wcount {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&p.whdrs[p.wn])), uintptr(p.wcount-p.wn), 0, 0, 0)
		switch errno {
		case 0:
			p.wn += int(n)
			p.tx.Add(uint64(n))
		case unix.EINTR:
		case unix.ENOBUFS:
			p.wn++
			p.txDropped.Add(1)
		case unix.EAGAIN:
			return false
		default:
			p.werr = errno
			return true
		}
	}
	return true
}

// Send implements Port. It blocks only while the socket's send buffer is
// full; frames the device queue refuses are dropped and counted
// (AFPacketStats.TxDropped). A frame shorter than an Ethernet header is refused by the kernel,
// and Send returns how many frames went out before it.
func (p *AFPacketPort) Send(frames [][]byte) (int, error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	sent := 0
	for sent < len(frames) {
		chunk := frames[sent:min(len(frames), sent+afMaxBurst)]
		for i, f := range chunk {
			if len(f) > MaxFrameSize {
				p.clearWrite(i)
				return sent, fmt.Errorf("netio: af_packet %s: frame of %d bytes exceeds MaxFrameSize", p.name, len(f))
			}
			if len(f) > 0 {
				p.wiov[i].Base = &f[0]
			} else {
				p.wiov[i].Base = nil
			}
			p.wiov[i].SetLen(len(f))
		}
		p.wcount, p.wn, p.werr = len(chunk), 0, nil
		err := p.raw.Write(p.writeFn)
		p.clearWrite(len(chunk))
		sent += p.wn
		if err == nil {
			err = p.werr
		}
		if err != nil {
			if p.closed.Load() || errors.Is(err, os.ErrClosed) {
				return sent, ErrClosed
			}
			return sent, fmt.Errorf("netio: af_packet %s: sendmmsg frame %d: %w", p.name, sent, err)
		}
	}
	return sent, nil
}

func (p *AFPacketPort) clearWrite(n int) {
	for i := range n {
		p.wiov[i].Base = nil
	}
}

// Stats returns the port's counters.
func (p *AFPacketPort) Stats() AFPacketStats {
	var kd uint32
	p.raw.Control(func(fd uintptr) {
		if st, err := unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
			kd = st.Drops // the kernel resets the counter on every read
		}
	})
	p.kdrops.Add(uint64(kd))
	return AFPacketStats{
		RxFrames: p.rx.Load(), TxFrames: p.tx.Load(), TxDropped: p.txDropped.Load(), SkippedOutgoing: p.skipped.Load(),
		Truncated: p.truncated.Load(), KernelDrops: p.kdrops.Load(),
	}
}

// Close implements Port. A Recv blocked in the netpoller returns ErrClosed.
func (p *AFPacketPort) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.closed.Store(true)
		err = p.file.Close()
	})
	return err
}

var _ Port = (*AFPacketPort)(nil)
