package derive

import "math"

// DefaultJitterThreshold is the field report's line: P99/P50 above 5 means a
// jitter source sits on the critical path.
const DefaultJitterThreshold = 5.0

// Jitter returns P99/P50 per point. A point is NaN ("no data") when either
// quantile is NaN, when P50 <= 0 (an empty or all-zero histogram) or when the
// ratio would not be finite; it is never ±Inf.
func Jitter(p99, p50 Series) (Series, error) {
	if err := sameGrid(p99, p50); err != nil {
		return Series{}, err
	}
	out := Series{Labels: copyLabels(p99.Labels), T: p99.T, V: make([]float64, len(p99.V))}
	for i := range p99.V {
		r := math.NaN()
		if p50.V[i] > 0 && !math.IsNaN(p99.V[i]) {
			r = p99.V[i] / p50.V[i]
			if math.IsInf(r, 0) {
				r = math.NaN()
			}
		}
		out.V[i] = r
	}
	return out, nil
}

// JitterRuns reports the runs of points whose jitter ratio is above
// threshold (DefaultJitterThreshold when threshold is not positive).
func JitterRuns(ratio Series, threshold float64) []Interval {
	if !(threshold > 0) {
		threshold = DefaultJitterThreshold
	}
	return RunsAbove(ratio, threshold)
}
