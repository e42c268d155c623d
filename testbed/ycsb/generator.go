package ycsb

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// YCSB constants (site.ycsb.generator).
const (
	// DefaultZipfConstant is ZipfianGenerator.ZIPFIAN_CONSTANT.
	DefaultZipfConstant = 0.99
	// ScrambledItemCount is ScrambledZipfianGenerator.ITEM_COUNT: the
	// scrambled generator draws a zipfian over [0, ScrambledItemCount].
	ScrambledItemCount = 10_000_000_000
	// ScrambledZetan is ScrambledZipfianGenerator.ZETAN, the precomputed
	// zeta for ScrambledItemCount items and constant 0.99.
	ScrambledZetan = 26.46902820178302

	fnvOffsetBasis64 = 0xCBF29CE484222325
	fnvPrime64       = 1099511628211
	// exactZetaTerms bounds the terms zeta sums one by one; beyond it the
	// Euler-Maclaurin tail is used.
	exactZetaTerms = 10_000_000
)

// FNVHash64 is YCSB's Utils.fnvhash64: FNV-1a over the 8 octets of v, lowest
// first, then Math.abs (which leaves math.MinInt64 negative, as in Java).
func FNVHash64(v int64) int64 {
	h := int64(-3750763034362895579) // 0xCBF29CE484222325 as a Java long
	for i := 0; i < 8; i++ {
		octet := v & 0xff
		v >>= 8
		h ^= octet
		h *= fnvPrime64
	}
	if h < 0 {
		h = -h // Java Math.abs: MinInt64 stays negative
	}
	return h
}

// Zeta returns sum_{i=1..n} 1/i^theta, YCSB's zetastatic(n, theta). Up to
// 10^7 terms it sums exactly in YCSB's order; beyond, it adds the
// Euler-Maclaurin tail of the remaining terms.
func Zeta(n int64, theta float64) float64 {
	return zetaFrom(0, n, theta, 0)
}

// zetaFrom is YCSB's zetastatic(st, n, theta, initialsum): initialsum plus
// the terms st+1 .. n.
func zetaFrom(st, n int64, theta, sum float64) float64 {
	end := n
	if end-st > exactZetaTerms {
		end = st + exactZetaTerms
	}
	for i := st; i < end; i++ {
		sum += 1 / math.Pow(float64(i+1), theta)
	}
	if end < n {
		sum += eulerMaclaurinTail(float64(end), float64(n), theta)
	}
	return sum
}

// eulerMaclaurinTail approximates sum_{i=a+1..b} i^-s for large a with
// integral + endpoint and derivative corrections (error O(a^-s-3)).
func eulerMaclaurinTail(a, b, s float64) float64 {
	f := func(x float64) float64 { return math.Pow(x, -s) }
	df := func(x float64) float64 { return -s * math.Pow(x, -s-1) }
	d3f := func(x float64) float64 { return -s * (s + 1) * (s + 2) * math.Pow(x, -s-3) }
	var integral float64
	if s == 1 {
		integral = math.Log(b / a)
	} else {
		integral = (math.Pow(b, 1-s) - math.Pow(a, 1-s)) / (1 - s)
	}
	// sum_{a<i<=b} f(i) = integral + (f(b)-f(a))/2 + (f'(b)-f'(a))/12 - (f'''(b)-f'''(a))/720
	return integral + (f(b)-f(a))/2 + (df(b)-df(a))/12 - (d3f(b)-d3f(a))/720
}

// Zipfian draws integers in [min, max] with item min the most popular,
// as YCSB's ZipfianGenerator does for constants in (0, 1), and with exact
// rejection-inversion sampling for constants >= 1 (see the package doc).
// A Zipfian is not safe for concurrent use; Clone gives each stream its own.
type Zipfian struct {
	base, items   int64
	theta         float64
	alpha, zetan  float64
	eta           float64
	zeta2theta    float64
	halfPowTheta  float64
	countForZeta  int64
	ri            *rejectionInversion // non-nil when theta >= 1
	lastItemCount int64
}

// NewZipfian returns YCSB's ZipfianGenerator(min, max, theta), computing
// zeta(max-min+1, theta).
func NewZipfian(min, max int64, theta float64) (*Zipfian, error) {
	if theta >= 1 || math.IsNaN(theta) {
		return newZipfianZeta(min, max, theta, 0)
	}
	return newZipfianZeta(min, max, theta, Zeta(max-min+1, theta))
}

// newZipfianZeta is ZipfianGenerator(min, max, theta, zetan).
func newZipfianZeta(min, max int64, theta, zetan float64) (*Zipfian, error) {
	if max < min {
		return nil, fmt.Errorf("ycsb: zipfian over [%d, %d]: empty range", min, max)
	}
	if !(theta > 0) || math.IsInf(theta, 0) {
		return nil, fmt.Errorf("ycsb: zipfian constant %v: must be > 0", theta)
	}
	z := &Zipfian{base: min, items: max - min + 1, theta: theta}
	z.countForZeta = z.items
	z.lastItemCount = z.items
	if theta >= 1 {
		z.ri = newRejectionInversion(z.items, theta)
		return z, nil
	}
	z.zeta2theta = Zeta(2, theta)
	z.alpha = 1 / (1 - theta)
	z.zetan = zetan
	z.halfPowTheta = math.Pow(0.5, theta)
	z.eta = (1 - math.Pow(2.0/float64(z.items), 1-theta)) / (1 - z.zeta2theta/z.zetan)
	return z, nil
}

// Clone returns an independent copy (its own incremental-zeta state).
func (z *Zipfian) Clone() *Zipfian {
	c := *z
	if z.ri != nil {
		ri := *z.ri
		c.ri = &ri
	}
	return &c
}

// Items is the number of items the generator was built for.
func (z *Zipfian) Items() int64 { return z.items }

// Next draws from the full range (YCSB nextValue).
func (z *Zipfian) Next(r *rand.Rand) int64 { return z.NextN(r, z.items) }

// NextN is YCSB's nextLong(itemcount): a draw over the first itemcount items.
// When itemcount grows, zeta is extended incrementally as YCSB does; a
// smaller itemcount keeps the old zeta (allowitemcountdecrease = false).
func (z *Zipfian) NextN(r *rand.Rand, itemcount int64) int64 {
	if z.ri != nil {
		if itemcount != z.ri.n {
			z.ri = newRejectionInversion(itemcount, z.theta)
		}
		return z.base + z.ri.sample(r) - 1
	}
	if itemcount > z.countForZeta {
		z.zetan = zetaFrom(z.countForZeta, itemcount, z.theta, z.zetan)
		z.countForZeta = itemcount
		// YCSB recomputes eta from the original item count (sic).
		z.eta = (1 - math.Pow(2.0/float64(z.items), 1-z.theta)) / (1 - z.zeta2theta/z.zetan)
	}
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1.0 {
		return z.base
	}
	if uz < 1.0+z.halfPowTheta {
		return z.base + 1
	}
	return z.base + int64(float64(itemcount)*math.Pow(z.eta*u-z.eta+1, z.alpha))
}

// RankProbability is the exact probability that Next returns base+k (k >= 0)
// for this generator over its full item count: for theta < 1 the law of
// Gray's method as implemented (not the ideal zipf law), for theta >= 1 the
// ideal law k^-theta / zeta(n). Tests use it as the expected distribution.
func (z *Zipfian) RankProbability(k int64) float64 {
	if k < 0 || k >= z.items {
		return 0
	}
	if z.ri != nil {
		return math.Pow(float64(k+1), -z.theta) / z.ri.zeta()
	}
	p0 := 1 / z.zetan
	p1 := (1 + z.halfPowTheta) / z.zetan
	if k == 0 {
		return p0
	}
	if k == 1 {
		return p1 - p0
	}
	// ret >= k  <=>  u >= ((k/n)^(1-theta) - 1 + eta) / eta, for u >= p1.
	n := float64(z.items)
	uAt := func(k float64) float64 {
		v := (math.Pow(k/n, 1-z.theta) - 1 + z.eta) / z.eta
		return math.Min(math.Max(v, p1), 1)
	}
	return uAt(float64(k+1)) - uAt(float64(k))
}

// rejectionInversion samples k in [1, n] with P(k) ∝ k^-s for any s > 0
// (Hörmann and Derflinger, "Rejection-inversion to generate variates from
// monotone discrete distributions", 1996).
type rejectionInversion struct {
	n                 int64
	s                 float64
	hX1, hN, sThresh  float64
	zetaCache         float64
	zetaCacheComputed bool
}

func newRejectionInversion(n int64, s float64) *rejectionInversion {
	ri := &rejectionInversion{n: n, s: s}
	ri.hX1 = ri.hIntegral(1.5) - 1
	ri.hN = ri.hIntegral(float64(n) + 0.5)
	ri.sThresh = 2 - ri.hIntegralInverse(ri.hIntegral(2.5)-ri.h(2))
	return ri
}

func (ri *rejectionInversion) sample(r *rand.Rand) int64 {
	for {
		u := ri.hN + r.Float64()*(ri.hX1-ri.hN)
		x := ri.hIntegralInverse(u)
		k := int64(x + 0.5)
		if k < 1 {
			k = 1
		} else if k > ri.n {
			k = ri.n
		}
		if float64(k)-x <= ri.sThresh || u >= ri.hIntegral(float64(k)+0.5)-ri.h(float64(k)) {
			return k
		}
	}
}

func (ri *rejectionInversion) zeta() float64 {
	if !ri.zetaCacheComputed {
		ri.zetaCache = Zeta(ri.n, ri.s)
		ri.zetaCacheComputed = true
	}
	return ri.zetaCache
}

func (ri *rejectionInversion) h(x float64) float64 { return math.Exp(-ri.s * math.Log(x)) }

func (ri *rejectionInversion) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return helper2((1-ri.s)*lx) * lx
}

func (ri *rejectionInversion) hIntegralInverse(x float64) float64 {
	t := x * (1 - ri.s)
	if t < -1 {
		t = -1
	}
	return math.Exp(helper1(t) * x)
}

// helper1 is log1p(x)/x, continuous at 0.
func helper1(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Log1p(x) / x
	}
	return 1 - x*(0.5-x*(1.0/3-0.25*x))
}

// helper2 is expm1(x)/x, continuous at 0.
func helper2(x float64) float64 {
	if math.Abs(x) > 1e-8 {
		return math.Expm1(x) / x
	}
	return 1 + x*0.5*(1+x*(1.0/3)*(1+0.25*x))
}

// ScrambledZipfian is YCSB's ScrambledZipfianGenerator(min, max, theta).
type ScrambledZipfian struct {
	min, itemcount int64
	gen            *Zipfian
}

// NewScrambledZipfian returns a generator over [min, max] whose popular items
// are scattered by fnvhash64.
func NewScrambledZipfian(min, max int64, theta float64) (*ScrambledZipfian, error) {
	if max < min {
		return nil, fmt.Errorf("ycsb: scrambled zipfian over [%d, %d]: empty range", min, max)
	}
	var gen *Zipfian
	var err error
	if theta == DefaultZipfConstant {
		gen, err = newZipfianZeta(0, ScrambledItemCount, theta, ScrambledZetan)
	} else {
		gen, err = NewZipfian(0, ScrambledItemCount, theta)
	}
	if err != nil {
		return nil, err
	}
	return &ScrambledZipfian{min: min, itemcount: max - min + 1, gen: gen}, nil
}

// Clone returns an independent copy.
func (s *ScrambledZipfian) Clone() *ScrambledZipfian {
	c := *s
	c.gen = s.gen.Clone()
	return &c
}

// Next draws one value in [min, max].
func (s *ScrambledZipfian) Next(r *rand.Rand) int64 {
	return s.min + FNVHash64(s.gen.Next(r))%s.itemcount
}

// Underlying is the zipfian over ScrambledItemCount+1 items that Next hashes.
func (s *ScrambledZipfian) Underlying() *Zipfian { return s.gen }

// Discrete is YCSB's DiscreteGenerator over operation types.
type Discrete struct {
	weights []float64
	values  []OpType
	sum     float64
}

// Add appends a weighted value (weights <= 0 are ignored, as CoreWorkload
// does).
func (d *Discrete) Add(weight float64, v OpType) {
	if weight <= 0 {
		return
	}
	d.weights = append(d.weights, weight)
	d.values = append(d.values, v)
	d.sum += weight
}

// Next walks a uniform double over the normalised weights.
func (d *Discrete) Next(r *rand.Rand) OpType {
	val := r.Float64()
	for i, w := range d.weights {
		p := w / d.sum
		if val < p {
			return d.values[i]
		}
		val -= p
	}
	return d.values[len(d.values)-1]
}
