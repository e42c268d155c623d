package ycsb

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
)

// TestFNVHash64 checks YCSB's fnvhash64 against the standard library's
// FNV-1a over the 8 little-end octets, followed by Java's Math.abs, and
// against two key names every YCSB user has seen in a basic-binding log.
func TestFNVHash64(t *testing.T) {
	for _, v := range []int64{0, 1, 2, 123, 1 << 40, -1, math.MaxInt64, math.MinInt64, 6284781860667377211} {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
		want := int64(h.Sum64())
		if want < 0 {
			want = -want
		}
		if got := FNVHash64(v); got != want {
			t.Errorf("FNVHash64(%d) = %d, want %d", v, got, want)
		}
	}
	if FNVHash64(0) != 6284781860667377211 || FNVHash64(1) != 8517097267634966620 {
		t.Errorf("FNVHash64(0), (1) = %d, %d: not user6284781860667377211, user8517097267634966620", FNVHash64(0), FNVHash64(1))
	}
}

// TestZeta checks the exact sum against closed forms and the Euler-Maclaurin
// tail against the exact sum.
func TestZeta(t *testing.T) {
	if got := Zeta(2, 0.99); math.Abs(got-(1+math.Pow(2, -0.99))) > 1e-15 {
		t.Errorf("Zeta(2) = %v", got)
	}
	// YCSB's precomputed ZETAN is zeta(10^10, 0.99).
	if got := Zeta(ScrambledItemCount, 0.99); math.Abs(got-ScrambledZetan) > 1e-6 {
		t.Errorf("Zeta(1e10, 0.99) = %.12f, YCSB ZETAN = %.12f", got, ScrambledZetan)
	}
	// The tail formula against an exact sum over the same range.
	for _, s := range []float64{0.5, 0.99, 1, 1.5} {
		exact := 0.0
		for i := 1001; i <= 200000; i++ {
			exact += math.Pow(float64(i), -s)
		}
		if got := eulerMaclaurinTail(1000, 200000, s); math.Abs(got-exact) > 1e-10 {
			t.Errorf("tail(s=%v) = %.15f, exact %.15f", s, got, exact)
		}
	}
}

// chiSquareCritical is the upper 1e-6 quantile of chi-square with df degrees
// of freedom (Wilson-Hilferty), so a correct generator fails with p < 1e-6.
func chiSquareCritical(df int) float64 {
	k := float64(df)
	const z = 4.753 // standard normal upper 1e-6 quantile
	return k * math.Pow(1-2/(9*k)+z*math.Sqrt(2/(9*k)), 3)
}

// chiSquare compares counts with expected probabilities, pooling every bin
// whose expectation is under 5 into one.
func chiSquare(t *testing.T, counts []int64, probs []float64, n int64) {
	t.Helper()
	var stat, poolE, poolO, total float64
	df := -1
	for i := range counts {
		e := probs[i] * float64(n)
		total += probs[i]
		if e < 5 {
			poolE += e
			poolO += float64(counts[i])
			continue
		}
		d := float64(counts[i]) - e
		stat += d * d / e
		df++
	}
	if poolE > 0 {
		d := poolO - poolE
		stat += d * d / math.Max(poolE, 1e-9)
		df++
	}
	if math.Abs(total-1) > 1e-6 {
		t.Fatalf("expected probabilities sum to %v, not 1", total)
	}
	if crit := chiSquareCritical(df); stat > crit {
		t.Errorf("chi-square %.1f > critical %.1f (df %d): distribution does not match", stat, crit, df)
	} else {
		t.Logf("chi-square %.1f <= critical %.1f (df %d)", stat, crit, df)
	}
}

func TestZipfianMatchesItsLaw(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		theta float64
	}{{1024, 0.99}, {1000, 0.5}, {100000, 0.99}, {1024, 1.5}, {1024, 1.0}} {
		z, err := NewZipfian(0, tc.n-1, tc.theta)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		const samples = 1_000_000
		counts := make([]int64, tc.n)
		for i := 0; i < samples; i++ {
			v := z.Next(r)
			if v < 0 || v >= tc.n {
				t.Fatalf("n=%d theta=%v: draw %d out of range", tc.n, tc.theta, v)
			}
			counts[v]++
		}
		probs := make([]float64, tc.n)
		for k := range probs {
			probs[k] = z.RankProbability(int64(k))
		}
		t.Run("", func(t *testing.T) { chiSquare(t, counts, probs, samples) })
		// And against the zipf formula itself, rank by rank. Ranks 0 and 1
		// are exact in Gray's method (and every rank is exact for theta >= 1);
		// from rank 2 on Gray's closed form approximates the law, and YCSB's
		// generator over-weights ranks 2..9 by up to ~20% at 10^5 items. We
		// keep that behaviour (it is YCSB's), and bound it here.
		zn := Zeta(tc.n, tc.theta)
		for k := 0; k < 10; k++ {
			ideal := math.Pow(float64(k+1), -tc.theta) / zn
			got := float64(counts[k]) / samples
			tol := 0.03
			if k >= 2 && tc.theta < 1 {
				tol = 0.25
			}
			if rel := math.Abs(got-ideal) / ideal; rel > tol {
				t.Errorf("n=%d theta=%v rank %d: frequency %.5f vs zipf %.5f (%.1f%% off)", tc.n, tc.theta, k, got, ideal, 100*rel)
			}
		}
	}
}

// TestScrambledZipfianKeyFrequencies checks the scrambled generator against
// its exact law: rank i of the zipfian over 10^10+1 items lands on key
// fnvhash64(i) mod n. Ranks below 2^20 are placed exactly; the remaining mass
// (under 30% at 0.99) is spread evenly, which is what hashing does to it.
func TestScrambledZipfianKeyFrequencies(t *testing.T) {
	for _, theta := range []float64{0.99, 1.5} {
		const n = 1024
		s, err := NewScrambledZipfian(0, n-1, theta)
		if err != nil {
			t.Fatal(err)
		}
		probs := make([]float64, n)
		under := s.Underlying()
		placed := 0.0
		for i := int64(0); i < 1<<20; i++ {
			p := under.RankProbability(i)
			probs[FNVHash64(i)%n] += p
			placed += p
		}
		for k := range probs {
			probs[k] += (1 - placed) / n
		}
		r := rand.New(rand.NewPCG(3, 4))
		const samples = 2_000_000
		counts := make([]int64, n)
		for i := 0; i < samples; i++ {
			counts[s.Next(r)]++
		}
		t.Run("", func(t *testing.T) { chiSquare(t, counts, probs, samples) })
	}
}

func TestUniformAndLatest(t *testing.T) {
	w, err := New(Config{Workload: WorkloadC, Distribution: DistUniform, RecordCount: 500, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	s := w.Stream(0)
	const samples = 500_000
	counts := make([]int64, 500)
	var op Op
	for i := 0; i < samples; i++ {
		s.Next(&op)
		counts[op.KeyNum]++
	}
	probs := make([]float64, 500)
	for i := range probs {
		probs[i] = 1.0 / 500
	}
	t.Run("uniform", func(t *testing.T) { chiSquare(t, counts, probs, samples) })

	// Latest, read-only so the key set is fixed: key max-k has the law of
	// rank k of a zipfian over max items.
	w, err = New(Config{Workload: WorkloadD, Mix: Proportions{Read: 1}, RecordCount: 1001, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	s = w.Stream(0)
	counts = make([]int64, 1001)
	for i := 0; i < samples; i++ {
		s.Next(&op)
		counts[1000-op.KeyNum]++
	}
	z, _ := NewZipfian(0, 999, 0.99)
	probs = make([]float64, 1001)
	for k := range probs {
		probs[k] = z.RankProbability(int64(k))
	}
	if counts[1000] != 0 {
		t.Errorf("latest chose key 0, which YCSB never does")
	}
	t.Run("latest", func(t *testing.T) { chiSquare(t, counts, probs, samples) })
}

func BenchmarkZipfianNext(b *testing.B) {
	z, _ := NewZipfian(0, 1023, 0.99)
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		sink += z.Next(r)
	}
	_ = sink
}

func BenchmarkScrambledZipfianNext(b *testing.B) {
	s, _ := NewScrambledZipfian(0, 99999, 0.99)
	r := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	var sink int64
	for b.Loop() {
		sink += s.Next(r)
	}
	_ = sink
}
