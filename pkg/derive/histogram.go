package derive

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// BucketLabel is the label that carries a classic histogram bucket's upper bound.
const BucketLabel = "le"

// Bucket is one cumulative bucket of a classic histogram: Count observations
// were <= UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// HistogramQuantile estimates the q-quantile from cumulative buckets with the
// semantics of PromQL's histogram_quantile on classic histograms:
//
//   - q NaN gives NaN, q < 0 gives -Inf, q > 1 gives +Inf (as Prometheus does);
//   - buckets may come in any order; buckets with the same upper bound are
//     added together; a NaN count means the bucket is absent at this point;
//   - without a +Inf bucket, or with fewer than two buckets, or with zero
//     observations, the result is NaN;
//   - counts that decrease with a higher bound are raised to the running
//     maximum (monotonicity fix);
//   - the value is interpolated linearly inside the bucket holding the rank,
//     the lowest bucket starting at 0 (or, if its upper bound is <= 0,
//     answering that bound); a rank in the +Inf bucket answers the upper
//     bound of the highest finite bucket.
//
// The input is not modified. Sorted input with distinct bounds (the normal
// case) costs no allocation.
func HistogramQuantile(q float64, buckets []Bucket) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(+1)
	}
	if len(buckets) == 0 {
		return math.NaN()
	}
	if !normalised(buckets) {
		buckets = normalise(buckets)
		if len(buckets) == 0 {
			return math.NaN()
		}
	}
	return quantileNormalised(q, buckets)
}

// normalised reports buckets sorted by strictly ascending bound with no NaN.
func normalised(b []Bucket) bool {
	for i := range b {
		if math.IsNaN(b[i].Count) || math.IsNaN(b[i].UpperBound) {
			return false
		}
		if i > 0 && b[i].UpperBound <= b[i-1].UpperBound {
			return false
		}
	}
	return true
}

// normalise copies, drops absent (NaN) buckets, sorts and coalesces equal bounds.
func normalise(in []Bucket) []Bucket {
	b := make([]Bucket, 0, len(in))
	for _, x := range in {
		if !math.IsNaN(x.Count) && !math.IsNaN(x.UpperBound) {
			b = append(b, x)
		}
	}
	if len(b) == 0 {
		return b
	}
	sort.SliceStable(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	w := 0
	for i := 1; i < len(b); i++ {
		if b[i].UpperBound == b[w].UpperBound {
			b[w].Count += b[i].Count
			continue
		}
		w++
		b[w] = b[i]
	}
	return b[:w+1]
}

// quantileNormalised runs the PromQL algorithm on sorted, distinct, NaN-free
// buckets, applying the monotonicity fix on the fly instead of in place.
func quantileNormalised(q float64, b []Bucket) float64 {
	n := len(b)
	if !math.IsInf(b[n-1].UpperBound, +1) || n < 2 {
		return math.NaN()
	}
	observations := math.Inf(-1)
	for i := range b {
		observations = math.Max(observations, b[i].Count)
	}
	if observations == 0 {
		return math.NaN()
	}
	rank := q * observations
	// First bucket (among all but +Inf) whose fixed count reaches the rank.
	prev := math.Inf(-1) // fixed count of bucket i-1
	running := math.Inf(-1)
	idx := n - 1
	for i := 0; i < n-1; i++ {
		running = math.Max(running, b[i].Count)
		if running >= rank {
			idx = i
			break
		}
		prev = running
	}
	if idx == n-1 {
		return b[n-2].UpperBound
	}
	if idx == 0 && b[0].UpperBound <= 0 {
		return b[0].UpperBound
	}
	start, end, count := 0.0, b[idx].UpperBound, running
	if idx > 0 {
		start = b[idx-1].UpperBound
		count -= prev
		rank -= prev
	}
	return start + (end-start)*(rank/count)
}

// Histogram is a classic histogram over time: one cumulative count series per
// upper bound (typically summed bucket rates), all on the timestamps T.
type Histogram struct {
	Labels map[string]string // the series' labels without le
	Bounds []float64         // ascending and distinct; the last is +Inf for a complete histogram
	T      []int64
	Counts [][]float64 // Counts[i][j] is bucket Bounds[i] at T[j]; NaN = absent
}

// Histograms groups bucket series by their labels other than le into
// histograms. Every series needs a parseable le label; series of one group
// with numerically equal bounds ("1" and "1.0") are added together, as
// Prometheus does. All series must share one grid.
func Histograms(buckets []Series) ([]Histogram, error) {
	if err := sameGrid(buckets...); err != nil {
		return nil, err
	}
	type group struct {
		labels map[string]string
		bounds map[float64][]float64
	}
	groups := map[string]*group{}
	var order []string
	for _, s := range buckets {
		le, ok := s.Labels[BucketLabel]
		if !ok {
			return nil, fmt.Errorf("bucket series %s has no %q label", labelString(s.Labels), BucketLabel)
		}
		bound, err := strconv.ParseFloat(strings.TrimSpace(le), 64)
		if err != nil || math.IsNaN(bound) {
			return nil, fmt.Errorf("bucket series %s: %q is not a bucket upper bound", labelString(s.Labels), le)
		}
		rest := make(map[string]string, len(s.Labels))
		for k, v := range s.Labels {
			if k != BucketLabel {
				rest[k] = v
			}
		}
		key := labelString(rest)
		g, ok := groups[key]
		if !ok {
			g = &group{labels: rest, bounds: map[float64][]float64{}}
			groups[key] = g
			order = append(order, key)
		}
		acc, ok := g.bounds[bound]
		if !ok {
			g.bounds[bound] = append([]float64(nil), s.V...)
			continue
		}
		for i, v := range s.V {
			switch {
			case math.IsNaN(v):
			case math.IsNaN(acc[i]):
				acc[i] = v
			default:
				acc[i] += v
			}
		}
	}
	sort.Strings(order)
	out := make([]Histogram, 0, len(order))
	for _, key := range order {
		g := groups[key]
		h := Histogram{Labels: g.labels}
		if len(buckets) > 0 {
			h.T = buckets[0].T
		}
		for b := range g.bounds {
			h.Bounds = append(h.Bounds, b)
		}
		sort.Float64s(h.Bounds)
		for _, b := range h.Bounds {
			h.Counts = append(h.Counts, g.bounds[b])
		}
		out = append(out, h)
	}
	return out, nil
}

// Quantile evaluates HistogramQuantile at every timestamp. It allocates the
// result and one scratch slice, nothing per point.
func (h Histogram) Quantile(q float64) Series {
	out := Series{Labels: copyLabels(h.Labels), T: h.T, V: make([]float64, len(h.T))}
	scratch := make([]Bucket, 0, len(h.Bounds))
	for j := range h.T {
		scratch = scratch[:0]
		for i, b := range h.Bounds {
			if c := h.Counts[i][j]; !math.IsNaN(c) {
				scratch = append(scratch, Bucket{UpperBound: b, Count: c})
			}
		}
		out.V[j] = HistogramQuantile(q, scratch)
	}
	return out
}

// QuantileSeries is the whole path from (already summed) bucket series to one
// quantile series per histogram.
func QuantileSeries(q float64, buckets []Series) ([]Series, error) {
	hs, err := Histograms(buckets)
	if err != nil {
		return nil, err
	}
	out := make([]Series, len(hs))
	for i, h := range hs {
		out[i] = h.Quantile(q)
	}
	return out, nil
}
