package ctrl

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are what the controller exports on /metrics. Each Controller has
// its own registry, so several controllers can live in one process (tests).
type Metrics struct {
	Registry         *prometheus.Registry
	EntriesInstalled *prometheus.CounterVec // by table: entries inserted or modified
	EntriesDeleted   *prometheus.CounterVec // by table
	RepairsSent      prometheus.Counter
	RepairsRefused   prometheus.Counter // outstanding CAS not towards a configured memory node/region
	RepairsAbandoned prometheus.Counter
	Outstanding      prometheus.Gauge       // outstanding CAS seen at the last poll
	RPCErrors        *prometheus.CounterVec // by operation
	Role             prometheus.Gauge       // 0 disconnected, 1 backup, 2 primary
	InCharge         prometheus.Gauge       // 1 while primary with the switch reconciled
	RepairEnabled    prometheus.Gauge       // 0 once the server refused register reads (Controller.RepairOff)
	TrackedKeys      prometheus.Gauge
	HotKeyChanges    prometheus.Counter
	SwitchCounter    *prometheus.GaugeVec // mirrored switch counters, by counter and index
	KeyActivity      *prometheus.GaugeVec // mirrored per-key counters of tracked keys, by counter and key
	RepairLatency    prometheus.Histogram // first sight of an outstanding CAS to its retransmission
}

// NewMetrics creates and registers the metrics.
func NewMetrics() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	ns := "swordbox_ctrl"
	m.EntriesInstalled = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "entries_installed_total",
		Help: "Table entries (the config default entry included) and register cells written (insert or modify), by table or register."}, []string{"table"})
	m.EntriesDeleted = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "entries_deleted_total",
		Help: "Table entries deleted, by table."}, []string{"table"})
	m.RepairsSent = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "repairs_sent_total",
		Help: "Outstanding CAS retransmitted as PacketOut."})
	m.RepairsRefused = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "repairs_refused_total",
		Help: "Outstanding CAS not retransmitted because their destination is not a configured memory node or steered region."})
	m.RepairsAbandoned = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "repairs_abandoned_total",
		Help: "Outstanding CAS given up after the maximum number of retransmissions."})
	m.Outstanding = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "outstanding_cas",
		Help: "Outstanding CAS registers valid at the last poll."})
	m.RPCErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "rpc_errors_total",
		Help: "Failed P4Runtime RPCs and stream errors, by operation."}, []string{"op"})
	m.Role = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "arbitration_role",
		Help: "Arbitration role: 0 disconnected, 1 backup, 2 primary."})
	m.InCharge = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "in_charge",
		Help: "1 while this controller is primary and has reconciled the switch (its loops run)."})
	m.RepairEnabled = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "repair_enabled",
		Help: "1 while CAS repair runs; 0 once the switch's P4Runtime server answered the register read with UNIMPLEMENTED (PI-based servers: BMv2, bf_switchd)."})
	m.RepairEnabled.Set(1)
	m.TrackedKeys = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "tracked_keys",
		Help: "Keys in the tracked-keys table."})
	m.HotKeyChanges = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "hot_key_changes_total",
		Help: "Keys entering or leaving the tracked-keys table through hot-key steering."})
	m.SwitchCounter = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "switch_counter_packets",
		Help: "Switch counters mirrored from the stats counter array."}, []string{"counter", "index"})
	m.KeyActivity = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "key_counter_packets",
		Help: "Per-key switch counters of tracked keys."}, []string{"counter", "key"})
	m.RepairLatency = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "repair_delay_seconds",
		Help:    "Time from the first poll that saw an outstanding CAS to its retransmission.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)})
	m.Registry.MustRegister(m.EntriesInstalled, m.EntriesDeleted, m.RepairsSent, m.RepairsRefused,
		m.RepairsAbandoned, m.Outstanding, m.RPCErrors, m.Role, m.InCharge, m.RepairEnabled, m.TrackedKeys, m.HotKeyChanges,
		m.SwitchCounter, m.KeyActivity, m.RepairLatency)
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
