package testbed

import (
	"math"
)

// Latency segments are modelled with distributions whose CDF is cheap and exact (lognormal
// mixtures, discrete atoms) so that the expected histogram buckets, and the quantiles a test
// compares against, are computed rather than sampled.

// lognormal is a lognormal component: median exp(mu), shape sigma.
type lognormal struct {
	weight float64
	median float64 // seconds (or the unit of what it measures)
	sigma  float64
}

func (c lognormal) cdf(x float64) float64 {
	if x <= 0 {
		return 0
	}
	z := (math.Log(x) - math.Log(c.median)) / c.sigma
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}

func (c lognormal) mean() float64 { return c.median * math.Exp(c.sigma*c.sigma/2) }

// mixture is a weighted sum of lognormals; weights sum to 1.
type mixture []lognormal

func (m mixture) cdf(x float64) float64 {
	var p float64
	for _, c := range m {
		p += c.weight * c.cdf(x)
	}
	return clamp01(p)
}

func (m mixture) mean() float64 {
	var s float64
	for _, c := range m {
		s += c.weight * c.mean()
	}
	return s
}

// scaled returns the mixture of k·X.
func (m mixture) scaled(k float64) mixture {
	out := make(mixture, len(m))
	for i, c := range m {
		c.median *= k
		out[i] = c
	}
	return out
}

// atoms is a discrete distribution: value with probability.
type atom struct{ value, prob float64 }
type atoms []atom

func (a atoms) cdf(x float64) float64 {
	var p float64
	for _, at := range a {
		if at.value <= x {
			p += at.prob
		}
	}
	return clamp01(p)
}

func (a atoms) mean() float64 {
	var s float64
	for _, at := range a {
		s += at.value * at.prob
	}
	return s
}

// sumCDF is P(Q + C ≤ x) for independent mixtures Q and C. It integrates over Q in the
// standard-normal variable of each component (q = median·e^{σz}) with Simpson's rule; the
// integrand is smooth because C's CDF vanishes smoothly at 0.
func sumCDF(q, c mixture, x float64) float64 {
	if x <= 0 {
		return 0
	}
	const (
		zLo = -8.5
		n   = 400 // even
	)
	var total float64
	for _, qc := range q {
		zHi := 8.5
		if zx := (math.Log(x) - math.Log(qc.median)) / qc.sigma; zx < zHi {
			zHi = zx
		}
		if zHi <= zLo {
			continue
		}
		h := (zHi - zLo) / n
		var s float64
		for i := 0; i <= n; i++ {
			z := zLo + float64(i)*h
			w := 2.0
			switch {
			case i == 0 || i == n:
				w = 1
			case i%2 == 1:
				w = 4
			}
			qv := qc.median * math.Exp(qc.sigma*z)
			s += w * math.Exp(-z*z/2) * c.cdf(x-qv)
		}
		total += qc.weight * s * h / 3 / math.Sqrt(2*math.Pi)
	}
	return clamp01(total)
}

// invert finds x with cdf(x) = p by bisection on a log scale; cdf must be non-decreasing.
func invert(cdf func(float64) float64, p float64) float64 { return invertWithin(cdf, p, 1e-12) }

// invertWithin is invert to a relative precision rel.
func invertWithin(cdf func(float64) float64, p, rel float64) float64 {
	if p <= 0 || p >= 1 || math.IsNaN(p) {
		return math.NaN()
	}
	lo, hi := 1e-7, 1e4
	if cdf(hi) < p {
		return math.Inf(1)
	}
	for i := 0; i < 200 && hi/lo > 1+rel; i++ {
		mid := math.Sqrt(lo * hi)
		if cdf(mid) >= p {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func clamp01(p float64) float64 {
	switch {
	case p < 0:
		return 0
	case p > 1:
		return 1
	}
	return p
}
