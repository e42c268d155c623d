package testbed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/swordbox/swordbox/clover"
	"github.com/swordbox/swordbox/roce/rnic"
	"github.com/swordbox/swordbox/roce/verbs"
	"github.com/swordbox/swordbox/testbed/ycsb"
)

// CloverConfig describes Clover on a software rack: one memory node, one
// metadata server host and ClientHosts client hosts running Threads client
// threads in all (each its own Clover client with its own QPs).
type CloverConfig struct {
	Rack        Config
	ClientHosts int // default 4
	Threads     int // default 32
	ValueSize   int // default 128
	Keys        int // default 1024
	// Chunks of 1 MiB the memory node offers for version nodes (default
	// CloverChunks of the keys, value size and threads).
	Chunks int
	// ReadTimeout (T_r, default DefaultReadTimeout) and EpochPeriod (T_e,
	// default 30s) of Clover's GC.
	ReadTimeout, EpochPeriod time.Duration
	// CursorCache is each client's cursor cache size (default: all keys).
	CursorCache int
}

// DefaultReadTimeout is Clover's T_r on the software rack (as the clover
// package's default): 50ms. T_r bounds the time a READ or CAS may spend in
// flight before its slot could be reused, and the switch steers to a tail
// for T_r/2. Measured side by side at 240 threads (YCSB A), 250ms instead
// cost more verbs per operation in every mode and steered no better.
const DefaultReadTimeout = 50 * time.Millisecond

// CloverRack is Clover running on a Rack.
type CloverRack struct {
	*Rack
	cfg     CloverConfig
	MS      *clover.MetadataServer
	Clients []*clover.Client
	msErr   chan error
	cancel  context.CancelFunc
}

// NewCloverRack builds the rack, lays out Clover's region on the memory node,
// starts the metadata server and connects every client thread.
func NewCloverRack(ctx context.Context, cfg CloverConfig) (_ *CloverRack, err error) {
	if cfg.ClientHosts <= 0 {
		cfg.ClientHosts = 4
	}
	if cfg.Threads <= 0 {
		cfg.Threads = 32
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 128
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 1024
	}
	if cfg.Chunks <= 0 {
		n, err := CloverChunks(cfg.Keys, cfg.ValueSize, cfg.Threads)
		if err != nil {
			return nil, fmt.Errorf("testbed: %w", err)
		}
		cfg.Chunks = n
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.EpochPeriod <= 0 {
		// T_e must outlast a benchmark cell: clients drop cursors idle
		// for two epochs, which would turn cached gets into MS lookups.
		cfg.EpochPeriod = 30 * time.Second
	}
	if cfg.CursorCache <= 0 {
		cfg.CursorCache = cfg.Keys
	}
	layout := CloverLayout(cfg.Keys, cfg.Chunks)
	if err := layout.Validate(); err != nil {
		return nil, fmt.Errorf("testbed: clover layout: %w", err)
	}
	rc := cfg.Rack
	rc.Hosts = 1 + cfg.ClientHosts
	if rc.TailTTL <= 0 {
		// A steered request must never land on a reclaimed slot: the
		// switch steers to a tail for at most half of T_r after the CAS
		// that linked it (docs/swordbox-p4.md).
		rc.TailTTL = cfg.ReadTimeout / 2
	}
	rc.ObjectSize = cfg.ValueSize
	rc.MemorySize = layout.Size()
	rc.MemoryInit = func(buf []byte) error { return clover.InitRegion(buf, 0, layout) }
	r, err := NewRack(ctx, rc)
	if err != nil {
		return nil, err
	}
	cr := &CloverRack{Rack: r, cfg: cfg, msErr: make(chan error, 1)}
	defer func() {
		if err != nil {
			cr.Close()
		}
	}()

	msDev := r.Hosts[0]
	msCQ := msDev.NewCQ(4 * 64 * cfg.Threads)
	cr.MS, err = clover.NewMetadataServer(clover.MSConfig{Regions: []clover.RegionLayout{layout},
		ReadTimeout: cfg.ReadTimeout, EpochPeriod: cfg.EpochPeriod}, msDev, msCQ)
	if err != nil {
		return nil, fmt.Errorf("testbed: clover metadata server: %w", err)
	}
	region := r.MemoryMR.Remote()
	memCQ := r.Memory.NewCQ(1024)
	for i := 0; i < cfg.Threads; i++ {
		host := r.Hosts[1+i%cfg.ClientHosts]
		cq := host.NewCQ(1024)
		qpMN, err := host.NewQP(qpConfig(cq, 256))
		if err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: %w", i, err)
		}
		mnQP, err := r.Memory.NewQP(qpConfig(memCQ, 256))
		if err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: memory QP: %w", i, err)
		}
		if err := rnic.Connect(qpMN, mnQP, uint32(i*7919)&0xffffff, uint32(i*104729+5)&0xffffff); err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: connect memory node: %w", i, err)
		}
		qpMS, err := host.NewQP(qpConfig(cq, 256))
		if err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: %w", i, err)
		}
		msQP, err := msDev.NewQP(qpConfig(msCQ, 256))
		if err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: MS QP: %w", i, err)
		}
		if err := rnic.Connect(qpMS, msQP, uint32(i*31), uint32(i*37)); err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: connect MS: %w", i, err)
		}
		if err := cr.MS.AddClient(msQP); err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: %w", i, err)
		}
		c, err := clover.NewClient(clover.ClientConfig{ID: i, ValueSize: cfg.ValueSize, Device: host, CQ: cq, MS: qpMS,
			CursorCache: cfg.CursorCache, ReadTimeout: cfg.ReadTimeout,
			MemoryNodes: []clover.MemoryNodeConn{{QP: qpMN, Region: region}}})
		if err != nil {
			return nil, fmt.Errorf("testbed: clover client %d: %w", i, err)
		}
		cr.Clients = append(cr.Clients, c)
	}
	mctx, cancel := context.WithCancel(context.Background())
	cr.cancel = cancel
	go func() { cr.msErr <- cr.MS.Serve(mctx) }()
	return cr, nil
}

// FillValue fills val with the printable bytes a loaded record of key
// holds, so that a reader can tell one key's value from another's.
func FillValue(val []byte, key uint64) {
	for j := range val {
		val[j] = byte(32 + (int(key)+j)%95)
	}
}

// Load creates every record of the workload (key w.RecordKey(i) for i <
// Keys) with a value of the configured size, spread over the clients.
func (cr *CloverRack) Load(ctx context.Context, w *ycsb.Workload) error {
	n := len(cr.Clients)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			val := make([]byte, cr.cfg.ValueSize)
			for i := c; i < cr.cfg.Keys; i += n {
				key := w.RecordKey(int64(i))
				FillValue(val, key)
				if err := cr.Clients[c].Create(ctx, key, val); err != nil && !errors.Is(err, clover.ErrExists) {
					errs[c] = fmt.Errorf("testbed: load key %d: %w", key, err)
					return
				}
			}
		}(c)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// KVs returns the clients as harness KVs.
func (cr *CloverRack) KVs() []KV {
	out := make([]KV, len(cr.Clients))
	for i, c := range cr.Clients {
		out[i] = CloverKV(c)
	}
	return out
}

// Metrics sums the clients' counters.
func (cr *CloverRack) Metrics() clover.Metrics {
	var s clover.Metrics
	for _, c := range cr.Clients {
		s.Add(c.Metrics())
	}
	return s
}

// Close stops the metadata server and the rack.
func (cr *CloverRack) Close() error {
	if cr.cancel != nil {
		cr.cancel()
		select {
		case <-cr.msErr:
		case <-time.After(5 * time.Second):
		}
	}
	return cr.Rack.Close()
}

// CloverKV adapts a Clover client to the harness's KV.
func CloverKV(c *clover.Client) KV { return cloverKV{c} }

type cloverKV struct{ c *clover.Client }

func (k cloverKV) Get(ctx context.Context, key uint64, buf []byte) ([]byte, error) {
	v := buf[:k.c.ValueSize()]
	return v, k.c.Get(ctx, key, v)
}

func (k cloverKV) Put(ctx context.Context, key uint64, value []byte) error {
	return k.c.Put(ctx, key, value)
}

var _ verbs.QP = (*rnic.QP)(nil)
