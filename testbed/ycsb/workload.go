package ycsb

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// OpType is the kind of one operation.
type OpType uint8

// Operation types (CoreWorkload's operation names, plus DELETE from traces).
const (
	OpRead OpType = iota + 1
	OpUpdate
	OpInsert
	OpScan
	OpReadModifyWrite
	OpDelete
)

var opTypeNames = [...]string{"", "READ", "UPDATE", "INSERT", "SCAN", "READMODIFYWRITE", "DELETE"}

func (t OpType) String() string {
	if int(t) < len(opTypeNames) && t != 0 {
		return opTypeNames[t]
	}
	return fmt.Sprintf("OpType(%d)", uint8(t))
}

// Distribution is the request distribution (requestdistribution).
type Distribution uint8

// Request distributions.
const (
	// DistDefault picks the workload's own distribution.
	DistDefault Distribution = iota
	DistZipfian
	DistUniform
	DistLatest
)

func (d Distribution) String() string {
	switch d {
	case DistZipfian:
		return "zipfian"
	case DistUniform:
		return "uniform"
	case DistLatest:
		return "latest"
	}
	return "default"
}

// ParseDistribution accepts zipfian, uniform and latest (YCSB's names).
func ParseDistribution(s string) (Distribution, error) {
	switch strings.ToLower(s) {
	case "", "default":
		return DistDefault, nil
	case "zipfian", "zipf":
		return DistZipfian, nil
	case "uniform":
		return DistUniform, nil
	case "latest":
		return DistLatest, nil
	}
	return 0, fmt.Errorf("ycsb: unknown request distribution %q (want zipfian, uniform or latest)", s)
}

// Kind names a core workload.
type Kind string

// The core workloads this package generates.
const (
	WorkloadA         Kind = "a"          // 50% read, 50% update, zipfian
	WorkloadB         Kind = "b"          // 95% read, 5% update, zipfian
	WorkloadC         Kind = "c"          // 100% read, zipfian
	WorkloadD         Kind = "d"          // 95% read, 5% insert, latest
	WorkloadF         Kind = "f"          // 50% read, 50% read-modify-write, zipfian
	WorkloadWriteOnly Kind = "write-only" // 100% update, zipfian
)

// Proportions are the operation mix (the *proportion properties).
type Proportions struct {
	Read, Update, Insert, Scan, ReadModifyWrite float64
}

// Preset returns the workload file's proportions and request distribution.
func Preset(k Kind) (Proportions, Distribution, error) {
	switch Kind(strings.ToLower(string(k))) {
	case WorkloadA:
		return Proportions{Read: 0.5, Update: 0.5}, DistZipfian, nil
	case WorkloadB:
		return Proportions{Read: 0.95, Update: 0.05}, DistZipfian, nil
	case WorkloadC:
		return Proportions{Read: 1}, DistZipfian, nil
	case WorkloadD:
		return Proportions{Read: 0.95, Insert: 0.05}, DistLatest, nil
	case WorkloadF:
		return Proportions{Read: 0.5, ReadModifyWrite: 0.5}, DistZipfian, nil
	case WorkloadWriteOnly, "writeonly", "w":
		return Proportions{Update: 1}, DistZipfian, nil
	}
	return Proportions{}, 0, fmt.Errorf("ycsb: unknown workload %q (want a, b, c, d, f or write-only)", k)
}

// Config describes a run. Zero values take YCSB's defaults where YCSB has
// one.
type Config struct {
	// Workload selects a core workload; Mix, when non-zero, overrides its
	// proportions.
	Workload Kind
	Mix      Proportions
	// Distribution overrides the workload's request distribution.
	Distribution Distribution
	// ZipfConstant is the zipfian constant (default 0.99).
	ZipfConstant float64
	// RecordCount is the number of loaded records (keys 0..RecordCount-1).
	RecordCount int64
	// OperationCount is the total number of operations over all clients;
	// 0 means unbounded (the harness stops on Duration).
	OperationCount int64
	// Duration bounds a run in time; the harness enforces it.
	Duration time.Duration
	// ValueSize is the size in bytes of every value written.
	ValueSize int
	// Clients is the number of client streams (default 1).
	Clients int
	// Seed makes every stream reproducible.
	Seed uint64
	// OrderedInserts uses key numbers as keys (insertorder=ordered); by
	// default keys are hashed (insertorder=hashed).
	OrderedInserts bool
}

// Workload is a validated Config with its shared, read-only generator state.
// Streams for each client come from Stream.
type Workload struct {
	cfg   Config
	mix   Proportions
	dist  Distribution
	zipf  *Zipfian // the latest generator's zipfian
	szipf *ScrambledZipfian
}

// New validates cfg and precomputes the generators.
func New(cfg Config) (*Workload, error) {
	if cfg.Workload == "" {
		cfg.Workload = WorkloadA
	}
	mix, dist, err := Preset(cfg.Workload)
	if err != nil {
		return nil, err
	}
	if cfg.Mix != (Proportions{}) {
		mix = cfg.Mix
	}
	if cfg.Distribution != DistDefault {
		dist = cfg.Distribution
	}
	if cfg.ZipfConstant == 0 {
		cfg.ZipfConstant = DefaultZipfConstant
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 1
	}
	if cfg.RecordCount <= 0 {
		return nil, fmt.Errorf("ycsb: record count %d: must be > 0", cfg.RecordCount)
	}
	if cfg.ValueSize < 0 {
		return nil, fmt.Errorf("ycsb: value size %d: must be >= 0", cfg.ValueSize)
	}
	if cfg.OperationCount < 0 {
		return nil, fmt.Errorf("ycsb: operation count %d: must be >= 0", cfg.OperationCount)
	}
	if mix.Read < 0 || mix.Update < 0 || mix.Insert < 0 || mix.Scan < 0 || mix.ReadModifyWrite < 0 ||
		mix.Read+mix.Update+mix.Insert+mix.Scan+mix.ReadModifyWrite <= 0 {
		return nil, fmt.Errorf("ycsb: operation mix %+v: proportions must be >= 0 and not all zero", mix)
	}
	w := &Workload{cfg: cfg, mix: mix, dist: dist}
	switch dist {
	case DistZipfian:
		// CoreWorkload: expectednewkeys = opcount * insertproportion * 2,
		// chooser over [0, recordcount + expectednewkeys] (max inclusive).
		expected := int64(float64(cfg.OperationCount) * mix.Insert / sumMix(mix) * 2)
		w.szipf, err = NewScrambledZipfian(0, cfg.RecordCount+expected, cfg.ZipfConstant)
	case DistLatest:
		// SkewedLatestGenerator: ZipfianGenerator(basis.lastValue()), i.e.
		// over recordcount-1 items.
		n := cfg.RecordCount - 1
		if n < 1 {
			n = 1
		}
		w.zipf, err = NewZipfian(0, n-1, cfg.ZipfConstant)
	case DistUniform:
	default:
		err = fmt.Errorf("ycsb: distribution %v not supported", dist)
	}
	if err != nil {
		return nil, fmt.Errorf("ycsb: workload %s: %w", cfg.Workload, err)
	}
	return w, nil
}

func sumMix(m Proportions) float64 {
	return m.Read + m.Update + m.Insert + m.Scan + m.ReadModifyWrite
}

// Config returns the effective configuration (defaults filled in).
func (w *Workload) Config() Config { return w.cfg }

// Mix returns the effective operation mix.
func (w *Workload) Mix() Proportions { return w.mix }

// Distribution returns the effective request distribution.
func (w *Workload) Distribution() Distribution { return w.dist }

// RecordKey is the store key of loaded record i (what the load phase
// inserts): fnvhash64(i) with hashed insert order, i with ordered inserts.
func (w *Workload) RecordKey(i int64) uint64 { return w.keyOf(i) }

func (w *Workload) keyOf(keynum int64) uint64 {
	if w.cfg.OrderedInserts {
		return uint64(keynum)
	}
	return uint64(FNVHash64(keynum))
}

// KeyName is YCSB's buildKeyName with zeropadding 1: "user" + the key.
func KeyName(key uint64) string { return fmt.Sprintf("user%d", key) }

// Op is one operation. Key is the store key; KeyNum is YCSB's key number
// (dense, 0-based: useful to index arrays). Value bytes come from
// Stream.FillValue.
type Op struct {
	Type   OpType
	KeyNum int64
	Key    uint64
	// ScanLen is the scan length of OpScan.
	ScanLen int
	// ValueLen is the number of value bytes for writes.
	ValueLen int
}

// Source yields operations; Stream and TraceSource implement it.
type Source interface {
	// Next fills op with the next operation; false when the source is
	// exhausted.
	Next(op *Op) bool
}

// Stream is one client's operation stream. Not safe for concurrent use; make
// one per client.
type Stream struct {
	w        *Workload
	client   int64
	rng      *rand.Rand
	chooser  Discrete
	szipf    *ScrambledZipfian
	latest   *Zipfian
	limit    int64 // operations this stream yields; -1 = unbounded
	done     int64
	inserted int64 // this client's own inserts
}

// Stream returns client c's stream (0 <= c < Clients). Streams for the same
// (Seed, c) yield the same operations.
func (w *Workload) Stream(c int) *Stream {
	s := &Stream{
		w:      w,
		client: int64(c),
		rng:    rand.New(rand.NewPCG(w.cfg.Seed, splitmix64(uint64(c)+0x9e3779b97f4a7c15))),
		limit:  -1,
	}
	if w.cfg.OperationCount > 0 {
		n := int64(w.cfg.Clients)
		s.limit = w.cfg.OperationCount / n
		if int64(c) < w.cfg.OperationCount%n {
			s.limit++
		}
	}
	s.chooser.Add(w.mix.Read, OpRead)
	s.chooser.Add(w.mix.Update, OpUpdate)
	s.chooser.Add(w.mix.Insert, OpInsert)
	s.chooser.Add(w.mix.Scan, OpScan)
	s.chooser.Add(w.mix.ReadModifyWrite, OpReadModifyWrite)
	if w.szipf != nil {
		s.szipf = w.szipf.Clone()
	}
	if w.zipf != nil {
		s.latest = w.zipf.Clone()
	}
	return s
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// visible is how many keys this client knows exist.
func (s *Stream) visible() int64 { return s.w.cfg.RecordCount + s.inserted }

// keynumAt maps an index of this client's key sequence (loaded records, then
// its own inserts) to a global key number.
func (s *Stream) keynumAt(j int64) int64 {
	rc := s.w.cfg.RecordCount
	if j < rc {
		return j
	}
	return rc + (j-rc)*int64(s.w.cfg.Clients) + s.client
}

// nextKeyIndex is CoreWorkload.nextKeynum over the per-client sequence.
func (s *Stream) nextKeyIndex() int64 {
	switch s.w.dist {
	case DistUniform:
		return s.rng.Int64N(s.w.cfg.RecordCount)
	case DistLatest:
		max := s.visible() - 1
		if max < 1 {
			return 0
		}
		return max - s.latest.NextN(s.rng, max)
	default:
		for {
			j := s.szipf.Next(s.rng)
			if j < s.visible() {
				return j
			}
		}
	}
}

// Next fills op with the next operation. It allocates nothing.
func (s *Stream) Next(op *Op) bool {
	if s.limit >= 0 && s.done >= s.limit {
		return false
	}
	s.done++
	*op = Op{Type: s.chooser.Next(s.rng)}
	if op.Type == OpInsert {
		j := s.visible()
		s.inserted++
		op.KeyNum = s.keynumAt(j)
	} else {
		op.KeyNum = s.keynumAt(s.nextKeyIndex())
	}
	op.Key = s.w.keyOf(op.KeyNum)
	switch op.Type {
	case OpUpdate, OpInsert, OpReadModifyWrite:
		op.ValueLen = s.w.cfg.ValueSize
	case OpScan:
		// CoreWorkload: maxscanlength 1000, uniform scan length.
		op.ScanLen = 1 + s.rng.IntN(1000)
	}
	return true
}

// Done reports whether this stream has yielded its share of OperationCount.
func (s *Stream) Done() bool { return s.limit >= 0 && s.done >= s.limit }

// FillValue fills dst with pseudo-random value bytes from this stream's
// generator (YCSB's RandomByteIterator alphabet: bytes 32..127).
func (s *Stream) FillValue(dst []byte) {
	var buf [8]byte
	for i := 0; i < len(dst); i += 8 {
		binary.LittleEndian.PutUint64(buf[:], s.rng.Uint64())
		for j := 0; j < 8 && i+j < len(dst); j++ {
			dst[i+j] = ' ' + buf[j]&95
		}
	}
}
