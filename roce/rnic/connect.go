package rnic

import (
	"fmt"

	"github.com/swordbox/swordbox/roce"
	"github.com/swordbox/swordbox/roce/verbs"
)

// ConnParams is what one side of an RC connection tells the other, as in
// rdma_cm's REQ and REP: its QPN, the PSN its requester starts at, its
// addresses and MTU, and (from a memory node) the regions it exposes.
type ConnParams struct {
	QPN     uint32               `json:"qpn"`
	PSN     uint32               `json:"psn"`
	MAC     [6]byte              `json:"mac"`
	IP      [4]byte              `json:"ip"`
	MTU     int                  `json:"mtu"`
	Regions []verbs.RemoteRegion `json:"regions,omitempty"`
}

// Params returns the local half of the connection parameters of q, with
// requester start PSN psn.
func (q *QP) Params(psn uint32) ConnParams {
	return ConnParams{QPN: q.qpn, PSN: psn & roce.MaxPSN, MAC: q.dev.cfg.MAC, IP: q.dev.cfg.IP, MTU: q.dev.cfg.MTU}
}

// ConnectTo brings q from RESET (or INIT) through INIT and RTR to RTS
// against the remote parameters: path MTU is the smaller of both sides.
// local must be the parameters q announced (its start PSN).
func (q *QP) ConnectTo(local, remote ConnParams) error {
	if q.State() == verbs.StateReset {
		if err := q.ToInit(); err != nil {
			return err
		}
	}
	mtu := local.MTU
	if remote.MTU != 0 && (mtu == 0 || remote.MTU < mtu) {
		mtu = remote.MTU
	}
	if err := q.ToRTR(Path{RemoteQPN: remote.QPN, RemoteMAC: remote.MAC, RemoteIP: remote.IP, RemotePSN: remote.PSN, MTU: mtu}); err != nil {
		return err
	}
	return q.ToRTS(local.PSN)
}

// Connect connects two queue pairs directly, without a connection manager
// (the in-process shortcut for tests and the rack): a's requester starts at
// psnA, b's at psnB.
func Connect(a, b *QP, psnA, psnB uint32) error {
	pa, pb := a.Params(psnA), b.Params(psnB)
	if err := a.ConnectTo(pa, pb); err != nil {
		return fmt.Errorf("connect %#x-%#x: %w", a.qpn, b.qpn, err)
	}
	if err := b.ConnectTo(pb, pa); err != nil {
		return fmt.Errorf("connect %#x-%#x: %w", a.qpn, b.qpn, err)
	}
	return nil
}
