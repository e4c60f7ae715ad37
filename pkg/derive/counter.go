package derive

import (
	"fmt"
	"math"
	"time"
)

// CounterResets returns the timestamps of the samples where a raw counter
// went down compared with its previous non-NaN sample: the process behind it
// restarted (or the counter was recreated) between the two samples.
func CounterResets(counter Series) []int64 {
	var out []int64
	prev := math.NaN()
	for i, v := range counter.V {
		if math.IsNaN(v) {
			continue
		}
		if v < prev {
			out = append(out, counter.T[i])
		}
		prev = v
	}
	return out
}

// Rate is PromQL's rate(counter[rng]) evaluated at each timestamp of out,
// on the raw samples of a counter (for engines whose counters are fetched
// raw and for checks against Prometheus). It follows Prometheus 2.x: the
// range is [t − rng, t] with both ends included, resets add the value before
// the drop, and the increase is extrapolated towards the range ends (not
// beyond half an average sample interval when the first or last sample is
// far from the end, and never below a zero counter). Fewer than two samples
// in the range give NaN. Work is linear: prefix sums of the reset
// corrections and two moving pointers.
func Rate(counter Series, out []int64, rng time.Duration) (Series, error) {
	return extrapolated(counter, out, rng, true)
}

// Increase is PromQL's increase(counter[rng]), see Rate.
func Increase(counter Series, out []int64, rng time.Duration) (Series, error) {
	return extrapolated(counter, out, rng, false)
}

func extrapolated(counter Series, out []int64, rng time.Duration, isRate bool) (Series, error) {
	if rng <= 0 {
		return Series{}, fmt.Errorf("rate range must be positive, got %s", rng)
	}
	if err := counter.Validate(); err != nil {
		return Series{}, fmt.Errorf("rate: %w", err)
	}
	if err := ascending(out, "rate output"); err != nil {
		return Series{}, err
	}
	// Keep the real samples only.
	ts := make([]int64, 0, len(counter.T))
	vs := make([]float64, 0, len(counter.V))
	for i, v := range counter.V {
		if !math.IsNaN(v) {
			ts = append(ts, counter.T[i])
			vs = append(vs, v)
		}
	}
	// corr[i]: sum of the values before each drop among samples 0..i.
	corr := make([]float64, len(vs))
	for i := 1; i < len(vs); i++ {
		corr[i] = corr[i-1]
		if vs[i] < vs[i-1] {
			corr[i] += vs[i-1]
		}
	}
	res := Series{Labels: copyLabels(counter.Labels), T: out, V: make([]float64, len(out))}
	r := rng.Milliseconds()
	lo, hi := 0, 0 // samples lo..hi-1 lie in [t-r, t]
	for j, t := range out {
		for lo < len(ts) && ts[lo] < t-r {
			lo++
		}
		if hi < lo {
			hi = lo
		}
		for hi < len(ts) && ts[hi] <= t {
			hi++
		}
		if hi-lo < 2 {
			res.V[j] = math.NaN()
			continue
		}
		first, last := lo, hi-1
		result := vs[last] - vs[first] + corr[last] - corr[first]
		durToStart := float64(ts[first]-(t-r)) / 1000
		durToEnd := float64(t-ts[last]) / 1000
		sampled := float64(ts[last]-ts[first]) / 1000
		avg := sampled / float64(last-first)
		if result > 0 && vs[first] >= 0 {
			if durToZero := sampled * (vs[first] / result); durToZero < durToStart {
				durToStart = durToZero
			}
		}
		threshold := avg * 1.1
		interval := sampled
		if durToStart < threshold {
			interval += durToStart
		} else {
			interval += avg / 2
		}
		if durToEnd < threshold {
			interval += durToEnd
		} else {
			interval += avg / 2
		}
		// One factor, applied once, as Prometheus does: the same real
		// number as dividing afterwards, but the same float64 too.
		factor := interval / sampled
		if isRate {
			factor /= rng.Seconds()
		}
		res.V[j] = result * factor
	}
	return res, nil
}

// Ratio returns scale·num/den per point, NaN where either side is NaN or the
// denominator is not positive (no traffic is "no data", not 0 and not Inf).
func Ratio(num, den Series, scale float64) (Series, error) {
	if err := sameGrid(num, den); err != nil {
		return Series{}, err
	}
	out := Series{Labels: copyLabels(num.Labels), T: num.T, V: make([]float64, len(num.V))}
	for i := range num.V {
		r := math.NaN()
		if den.V[i] > 0 && !math.IsNaN(num.V[i]) {
			r = scale * num.V[i] / den.V[i]
			if math.IsInf(r, 0) {
				r = math.NaN()
			}
		}
		out.V[i] = r
	}
	return out, nil
}

// MicrosPerSecond converts microsecond counters (Triton, TorchServe) to seconds.
const MicrosPerSecond = 1e-6

// MeanLatency is the mean time per request from a cumulative duration
// counter and a request counter, both already turned into rates (or
// increases) over the same window: Δduration / Δcount × unitScale, e.g.
// MicrosPerSecond for Triton's and TorchServe's µs counters. A window with
// no requests is NaN.
func MeanLatency(durationRate, countRate Series, unitScale float64) (Series, error) {
	return Ratio(durationRate, countRate, unitScale)
}

// ErrorRatio is errors/requests per point (both rates). Zero or missing
// traffic gives NaN. A missing error sample while requests flow counts as no
// errors (0): error counters with labels often appear only after the first
// error.
func ErrorRatio(errors, requests Series) (Series, error) {
	return failureRatio(errors, requests)
}

// TimeoutRatio is timeouts/requests per point, with ErrorRatio's rules.
func TimeoutRatio(timeouts, requests Series) (Series, error) {
	return failureRatio(timeouts, requests)
}

func failureRatio(failures, requests Series) (Series, error) {
	if err := sameGrid(failures, requests); err != nil {
		return Series{}, err
	}
	out := Series{Labels: copyLabels(requests.Labels), T: requests.T, V: make([]float64, len(requests.V))}
	for i, req := range requests.V {
		f := failures.V[i]
		switch {
		case !(req > 0):
			out.V[i] = math.NaN()
		case math.IsNaN(f):
			out.V[i] = 0
		default:
			out.V[i] = f / req
		}
		if math.IsInf(out.V[i], 0) {
			out.V[i] = math.NaN()
		}
	}
	return out, nil
}
