package ycsb

import (
	"fmt"
	"math"
	"testing"
)

func TestWorkloadMix(t *testing.T) {
	for _, k := range []Kind{WorkloadA, WorkloadB, WorkloadC, WorkloadD, WorkloadF, WorkloadWriteOnly} {
		w, err := New(Config{Workload: k, RecordCount: 1000, OperationCount: 200_000, ValueSize: 128, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		mix := w.Mix()
		want := map[OpType]float64{OpRead: mix.Read, OpUpdate: mix.Update, OpInsert: mix.Insert, OpReadModifyWrite: mix.ReadModifyWrite}
		got := map[OpType]int64{}
		s := w.Stream(0)
		var op Op
		var n int64
		for s.Next(&op) {
			got[op.Type]++
			n++
			if op.Type != OpRead && op.ValueLen != 128 {
				t.Fatalf("%s: write with ValueLen %d", k, op.ValueLen)
			}
		}
		if n != 200_000 {
			t.Fatalf("%s: %d operations, want 200000", k, n)
		}
		for typ, p := range want {
			// within 5 binomial standard deviations
			sd := math.Sqrt(float64(n) * p * (1 - p))
			if d := math.Abs(float64(got[typ]) - p*float64(n)); d > 5*sd+1 {
				t.Errorf("%s: %d %s ops, want %.0f ± %.0f", k, got[typ], typ, p*float64(n), 5*sd)
			}
		}
	}
}

func TestStreamsDeterministicAndIndependent(t *testing.T) {
	cfg := Config{Workload: WorkloadA, RecordCount: 100_000, OperationCount: 3000, ValueSize: 16, Clients: 3, Seed: 42}
	run := func(c int) []string {
		w, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := w.Stream(c)
		var out []string
		var op Op
		v := make([]byte, 16)
		for s.Next(&op) {
			s.FillValue(v)
			out = append(out, fmt.Sprintf("%v %d %d %q", op.Type, op.KeyNum, op.Key, v))
		}
		return out
	}
	a, b := run(1), run(1)
	if len(a) != 1000 {
		t.Fatalf("client 1 got %d ops, want 1000", len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("op %d differs between two runs with one seed: %s vs %s", i, a[i], b[i])
		}
	}
	c := run(2)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same > 50 {
		t.Errorf("clients 1 and 2 share %d of 1000 operations: streams are not independent", same)
	}
	cfg.Seed = 43
	d := run(1)
	if d[0] == a[0] && d[1] == a[1] && d[2] == a[2] {
		t.Errorf("a different seed gave the same stream")
	}
}

func TestInsertsPartitionedAndReadsOnlyExistingKeys(t *testing.T) {
	const clients, records = 4, 100
	w, err := New(Config{Workload: WorkloadD, Mix: Proportions{Read: 0.5, Insert: 0.5}, RecordCount: records, OperationCount: 4000, Clients: clients, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	inserted := map[int64]int{}
	for c := 0; c < clients; c++ {
		s := w.Stream(c)
		mine := map[int64]bool{}
		var op Op
		for s.Next(&op) {
			switch op.Type {
			case OpInsert:
				if op.KeyNum < records || (op.KeyNum-records)%clients != int64(c) {
					t.Fatalf("client %d inserted key %d outside its partition", c, op.KeyNum)
				}
				if _, dup := inserted[op.KeyNum]; dup {
					t.Fatalf("key %d inserted twice", op.KeyNum)
				}
				inserted[op.KeyNum] = c
				mine[op.KeyNum] = true
			case OpRead:
				if op.KeyNum >= records && !mine[op.KeyNum] {
					t.Fatalf("client %d read key %d it has not inserted", c, op.KeyNum)
				}
			}
			if op.Key != w.RecordKey(op.KeyNum) {
				t.Fatalf("Key %d != RecordKey(%d)", op.Key, op.KeyNum)
			}
		}
	}
	if len(inserted) < 1500 {
		t.Errorf("only %d inserts of ~2000", len(inserted))
	}
}

func TestConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{Workload: "e", RecordCount: 10},
		{Workload: WorkloadA},
		{Workload: WorkloadA, RecordCount: 10, ValueSize: -1},
		{Workload: WorkloadA, RecordCount: 10, Mix: Proportions{Read: -1, Update: 2}},
		{Workload: WorkloadA, RecordCount: 10, ZipfConstant: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
	if _, err := ParseDistribution("pareto"); err == nil {
		t.Error("ParseDistribution accepted pareto")
	}
}

func TestHashedKeys(t *testing.T) {
	w, _ := New(Config{Workload: WorkloadC, RecordCount: 10})
	if got, want := w.RecordKey(3), uint64(FNVHash64(3)); got != want {
		t.Errorf("RecordKey(3) = %d, want fnvhash64(3) = %d", got, want)
	}
	if KeyID([]byte(KeyName(w.RecordKey(3)))) != w.RecordKey(3) {
		t.Error("KeyID(KeyName(k)) != k")
	}
	w, _ = New(Config{Workload: WorkloadC, RecordCount: 10, OrderedInserts: true})
	if w.RecordKey(3) != 3 {
		t.Errorf("ordered RecordKey(3) = %d", w.RecordKey(3))
	}
}

func BenchmarkStreamNext(b *testing.B) {
	for _, k := range []Kind{WorkloadA, WorkloadC, WorkloadD} {
		for _, d := range []Distribution{DistDefault, DistUniform} {
			if k == WorkloadD && d == DistUniform {
				continue
			}
			b.Run(fmt.Sprintf("%s/%v", k, d), func(b *testing.B) {
				w, err := New(Config{Workload: k, Distribution: d, RecordCount: 100_000, ValueSize: 128, Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				s := w.Stream(0)
				var op Op
				b.ReportAllocs()
				for b.Loop() {
					s.Next(&op)
				}
			})
		}
	}
}

func BenchmarkFillValue128(b *testing.B) {
	w, _ := New(Config{Workload: WorkloadA, RecordCount: 10})
	s := w.Stream(0)
	v := make([]byte, 128)
	b.ReportAllocs()
	b.SetBytes(128)
	for b.Loop() {
		s.FillValue(v)
	}
}
