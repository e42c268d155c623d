package rnic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// The connection manager: the rdma_cm exchange over TCP, so separate
// processes can connect RC queue pairs.
//
//	client                      server (Listener + Acceptor)
//	  REQ {QPN, PSN, MAC, IP, MTU}  ->   create QP, INIT, RTR
//	                                <-   REP {QPN, PSN, MAC, IP, MTU, Regions}
//	  RTR, RTS; RTU                 ->   RTS
//
// Messages are JSON objects, one per line. Both sides use the smaller MTU.
// Start PSNs are derived from the QPN and the device address (rdma_cm picks
// random ones; deterministic ones make runs reproducible).

type cmMsg struct {
	Type   string      `json:"type"` // REQ, REP, REJ, RTU
	Params *ConnParams `json:"params,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// startPSN derives a start PSN for a QP.
func startPSN(d *Device, qpn uint32) uint32 {
	x := uint64(qpn)<<32 | uint64(d.cfg.IP[0])<<24 | uint64(d.cfg.IP[1])<<16 | uint64(d.cfg.IP[2])<<8 | uint64(d.cfg.IP[3])
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return uint32(x) & roce.MaxPSN
}

// Acceptor is the passive side of connection setup, without transport: it
// creates a QP for each request, connects it, and answers with its
// parameters and the regions it exposes.
type Acceptor struct {
	Dev *Device
	// QP configures accepted QPs; nil CQs get one shared CQ.
	QP verbs.QPConfig
	// Regions are announced in every reply.
	Regions []verbs.RemoteRegion
	// OnAccept, if set, runs for every accepted QP once it is in RTS
	// (for instance to post receives).
	OnAccept func(*QP)

	once sync.Once
	cq   *CQ
}

// Accept handles one connection request: the returned QP is in RTR; call
// q.ToRTS(reply.PSN) once the requester confirms (Listener does on RTU).
func (a *Acceptor) Accept(req ConnParams) (ConnParams, *QP, error) {
	cfg := a.QP
	if cfg.SendCQ == nil || cfg.RecvCQ == nil {
		a.once.Do(func() { a.cq = a.Dev.NewCQ(1024) })
		if cfg.SendCQ == nil {
			cfg.SendCQ = a.cq
		}
		if cfg.RecvCQ == nil {
			cfg.RecvCQ = a.cq
		}
	}
	q, err := a.Dev.NewQP(cfg)
	if err != nil {
		return ConnParams{}, nil, err
	}
	local := q.Params(startPSN(a.Dev, q.qpn))
	if err := q.ToInit(); err != nil {
		return ConnParams{}, nil, err
	}
	mtu := local.MTU
	if req.MTU != 0 && req.MTU < mtu {
		mtu = req.MTU
	}
	if err := q.ToRTR(Path{RemoteQPN: req.QPN, RemoteMAC: req.MAC, RemoteIP: req.IP, RemotePSN: req.PSN, MTU: mtu}); err != nil {
		return ConnParams{}, nil, err
	}
	local.MTU = mtu
	local.Regions = a.Regions
	return local, q, nil
}

func (a *Acceptor) established(q *QP, psn uint32) error {
	if err := q.ToRTS(psn); err != nil {
		return err
	}
	if a.OnAccept != nil {
		a.OnAccept(q)
	}
	return nil
}

// connect runs the active side against an exchange function.
func dialWith(d *Device, cfg verbs.QPConfig, exchange func(ConnParams) (ConnParams, error), rtu func() error) (verbs.Conn, error) {
	q, err := d.NewQP(cfg)
	if err != nil {
		return verbs.Conn{}, err
	}
	local := q.Params(startPSN(d, q.qpn))
	if err := q.ToInit(); err != nil {
		return verbs.Conn{}, err
	}
	rep, err := exchange(local)
	if err != nil {
		q.ToErr()
		return verbs.Conn{}, err
	}
	if err := q.ConnectTo(local, rep); err != nil {
		return verbs.Conn{}, err
	}
	if err := rtu(); err != nil {
		q.ToErr()
		return verbs.Conn{}, err
	}
	return verbs.Conn{QP: q, Remote: rep.Regions}, nil
}

// LocalDialer connects to acceptors in the same process without TCP: the
// in-process shortcut for tests and the software rack. Addresses name the
// acceptors in Nodes.
type LocalDialer struct {
	Dev   *Device
	Nodes map[string]*Acceptor
}

// Dial implements verbs.Dialer.
func (l *LocalDialer) Dial(ctx context.Context, addr string, cfg verbs.QPConfig) (verbs.Conn, error) {
	a := l.Nodes[addr]
	if a == nil {
		return verbs.Conn{}, fmt.Errorf("rnic %s: dial %s: no such in-process node", l.Dev.cfg.Name, addr)
	}
	var sq *QP
	var rep ConnParams
	c, err := dialWith(l.Dev, cfg, func(req ConnParams) (ConnParams, error) {
		var err error
		rep, sq, err = a.Accept(req)
		return rep, err
	}, func() error { return a.established(sq, rep.PSN) })
	if err != nil {
		return c, fmt.Errorf("rnic %s: dial %s: %w", l.Dev.cfg.Name, addr, err)
	}
	return c, nil
}

// Dialer connects to Listeners over TCP; it implements verbs.Dialer.
type Dialer struct {
	Dev *Device
}

// Dial implements verbs.Dialer.
func (dl *Dialer) Dial(ctx context.Context, addr string, cfg verbs.QPConfig) (verbs.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return verbs.Conn{}, fmt.Errorf("rnic %s: dial %s: %w", dl.Dev.cfg.Name, addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	} else {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
	}
	enc, dec := json.NewEncoder(conn), json.NewDecoder(bufio.NewReader(conn))
	c, err := dialWith(dl.Dev, cfg, func(req ConnParams) (ConnParams, error) {
		if err := enc.Encode(cmMsg{Type: "REQ", Params: &req}); err != nil {
			return ConnParams{}, err
		}
		var m cmMsg
		if err := dec.Decode(&m); err != nil {
			return ConnParams{}, err
		}
		switch {
		case m.Type == "REJ":
			return ConnParams{}, fmt.Errorf("rejected: %s", m.Error)
		case m.Type != "REP" || m.Params == nil:
			return ConnParams{}, fmt.Errorf("unexpected %q message", m.Type)
		}
		return *m.Params, nil
	}, func() error {
		if err := enc.Encode(cmMsg{Type: "RTU"}); err != nil {
			return err
		}
		// Wait for the server to close: it has moved its QP to RTS.
		var m cmMsg
		if err := dec.Decode(&m); err != nil && !errors.Is(err, net.ErrClosed) && err.Error() != "EOF" {
			return err
		}
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("rnic %s: dial %s: %w", dl.Dev.cfg.Name, addr, err)
	}
	return c, nil
}

// Listener serves connection requests for an Acceptor over TCP.
type Listener struct {
	ln net.Listener
	a  *Acceptor
	wg sync.WaitGroup
}

// Listen starts serving connection requests on addr (host:port).
func Listen(addr string, a *Acceptor) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("rnic %s: listen %s: %w", a.Dev.cfg.Name, addr, err)
	}
	l := &Listener{ln: ln, a: a}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Addr returns the listening address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close stops accepting connections.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

func (l *Listener) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			enc, dec := json.NewEncoder(c), json.NewDecoder(bufio.NewReader(c))
			var m cmMsg
			if err := dec.Decode(&m); err != nil || m.Type != "REQ" || m.Params == nil {
				enc.Encode(cmMsg{Type: "REJ", Error: "expected REQ"})
				return
			}
			rep, q, err := l.a.Accept(*m.Params)
			if err != nil {
				enc.Encode(cmMsg{Type: "REJ", Error: err.Error()})
				return
			}
			if err := enc.Encode(cmMsg{Type: "REP", Params: &rep}); err != nil {
				q.ToErr()
				return
			}
			if err := dec.Decode(&m); err != nil || m.Type != "RTU" {
				q.ToErr()
				return
			}
			if err := l.a.established(q, rep.PSN); err != nil {
				q.ToErr()
			}
		}()
	}
}
