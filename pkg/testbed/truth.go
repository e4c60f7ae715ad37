package testbed

import (
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// Truth accessors. instance, model and version accept "" as "all" (a QPS-weighted mixture, the
// way sum by (le) pools histograms); a name that matches nothing gives 0 traffic and NaN
// latencies.

// QPS is the expected request rate at t.
func (s *Scenario) QPS(instance, model, version string, t time.Time) float64 {
	var q float64
	for _, st := range s.streamsFor(instance, model, version) {
		q += st.qps(t)
	}
	return q
}

// MeanQPS is the average request rate over [from, to]: every request served in the window,
// divided by its length. It is what rate() gives when the window's first sample is at from and
// its last at to and no restart falls inside (0, to]. Across a restart Prometheus cannot see the
// requests the old process served after its last sample (the sample at the restart already
// shows the new process's count), so rate() is lower: SampledMeanQPS is that figure.
func (s *Scenario) MeanQPS(instance, model, version string, from, to time.Time) float64 {
	return s.SampledMeanQPS(instance, model, version, from, to, 0)
}

// SampledMeanQPS is what rate() gives over [from, to] when the counters are sampled on the
// step grid (t.Truncate(step), as the written history is) and from and to are grid points:
// requests served between a restart and the last sample before it are lost, as in any
// Prometheus. step 0 counts every request (MeanQPS).
func (s *Scenario) SampledMeanQPS(instance, model, version string, from, to time.Time, step time.Duration) float64 {
	d := to.Sub(from).Seconds()
	if d <= 0 {
		return math.NaN()
	}
	return s.Increase(Requests, instance, model, version, from, to, step) / d
}

// Counter selects a cumulative count (see expo.Counter); the constants below name them.
type Counter = expo.Counter

// The counters Increase knows.
const (
	Requests       = expo.Requests
	RequestsOK     = expo.RequestsOK
	Errors         = expo.Errors
	Timeouts       = expo.Timeouts
	Fallbacks      = expo.Fallbacks
	PromptTokens   = expo.PromptTokens
	CachedTokens   = expo.CachedTokens
	Preemptions    = expo.Preemptions
	Batches        = expo.Batches
	CompileLookups = expo.CompileLookups
	CompileHits    = expo.CompileHits
	// The vLLM naming's admission rejections and HTTP answers (see expo.Rejections).
	Rejections       = expo.Rejections
	HTTPOK           = expo.HTTPOK
	HTTPServerErrors = expo.HTTPServerErrors
)

// Increase is the expected growth of a counter over [from, to], what increase() gives on
// samples every step (step 0: every event counted; see SampledMeanQPS for the restart edge).
// Ratios of increases are the windowed truths: Errors/Requests, CachedTokens/PromptTokens (prefix
// cache hit ratio), Requests/Batches (mean batch size), Preemptions/Requests. NaN for an unknown
// counter.
func (s *Scenario) Increase(c Counter, instance, model, version string, from, to time.Time, step time.Duration) float64 {
	f := counterFunc(c)
	if f == nil {
		return math.NaN()
	}
	var n float64
	for _, st := range s.streamsFor(instance, model, version) {
		for i, e := range s.exposure(st, from, to, step) {
			if e != 0 {
				n += e * f(st.regs[i])
			}
		}
	}
	return n
}

// AnsweredTotal is the expected growth over [from, to] of a duration counter that sums segment
// g over the answered requests only (errors and timeouts record no time), in seconds, sampled as
// Increase is: what TorchServe's latency counters hold. Divided by Increase(Requests, …) it is
// TorchServe's mean, biased low by the failed share.
func (s *Scenario) AnsweredTotal(g Segment, instance, model, version string, from, to time.Time, step time.Duration) float64 {
	var sum float64
	for _, st := range s.streamsFor(instance, model, version) {
		for i, e := range s.exposure(st, from, to, step) {
			if e != 0 {
				r := st.regs[i]
				sum += e * (1 - r.errRatio - r.timeout) * r.mean(g)
			}
		}
	}
	return sum
}

// CacheHitRatio is the expected share of input elements found in the prefix cache at t
// (0.35 recsys, 0.55 embedder; 0.05 while warming up after a restart).
func (s *Scenario) CacheHitRatio(instance, model, version string, t time.Time) float64 {
	var in, hit float64
	for _, st := range s.streamsFor(instance, model, version) {
		if r := st.regimeAt(t); r != nil {
			q := st.qps(t) * r.input.mean()
			in += q
			hit += q * r.cacheHit
		}
	}
	if in == 0 {
		return math.NaN()
	}
	return hit / in
}

// Requests is the exposed cumulative request count at t (since each process start), summed.
func (s *Scenario) Requests(instance, model, version string, t time.Time) float64 {
	var n float64
	for _, st := range s.streamsFor(instance, model, version) {
		n += st.cumulative(t, "counter:"+strconv.Itoa(int(expo.Requests)), func(*regime) float64 { return 1 })
	}
	return n
}

// ErrorRatio is the expected share of requests answered with an error (timeouts excluded).
func (s *Scenario) ErrorRatio(instance, model, version string, t time.Time) float64 {
	return s.weighted(instance, model, version, t, func(r *regime) float64 { return r.errRatio })
}

// TimeoutRatio is the expected share of requests that time out.
func (s *Scenario) TimeoutRatio(instance, model, version string, t time.Time) float64 {
	return s.weighted(instance, model, version, t, func(r *regime) float64 { return r.timeout })
}

// FallbackRatio is the expected share of requests served by the fallback path.
func (s *Scenario) FallbackRatio(instance, model, version string, t time.Time) float64 {
	return s.weighted(instance, model, version, t, func(r *regime) float64 { return r.fallback })
}

// ConfidenceMean is the expected mean prediction confidence.
func (s *Scenario) ConfidenceMean(instance, model, version string, t time.Time) float64 {
	return s.weighted(instance, model, version, t, func(r *regime) float64 { return r.confidence })
}

// SegmentMean is the expected value of a segment for one observation at t (BatchSize: per batch).
func (s *Scenario) SegmentMean(g Segment, instance, model, version string, t time.Time) float64 {
	if g == BatchSize { // batches, not requests, are the observations
		var obs, sum float64
		for _, st := range s.streamsFor(instance, model, version) {
			if r := st.regimeAt(t); r != nil {
				q := st.qps(t)
				obs += q * r.perRequest(g)
				sum += q
			}
		}
		if obs == 0 {
			return math.NaN()
		}
		return sum / obs
	}
	return s.weighted(instance, model, version, t, func(r *regime) float64 { return r.mean(g) })
}

// LatencyQuantile is the true continuous q-quantile of e2e latency (seconds) at t.
func (s *Scenario) LatencyQuantile(instance, model, version string, q float64, t time.Time) float64 {
	return s.SegmentQuantile(E2E, instance, model, version, q, t)
}

// SegmentQuantile is the true continuous q-quantile of a segment at t.
func (s *Scenario) SegmentQuantile(g Segment, instance, model, version string, q float64, t time.Time) float64 {
	return s.SegmentQuantileWithin(g, instance, model, version, q, 1e-12, t)
}

// SegmentQuantileWithin is SegmentQuantile to a relative precision rel: a reading of thousands
// of instants needs a tenth of a percent, not twelve digits, at a fifth of the cost.
func (s *Scenario) SegmentQuantileWithin(g Segment, instance, model, version string, q, rel float64, t time.Time) float64 {
	cdf := s.segmentCDF(g, instance, model, version, t)
	if cdf == nil {
		return math.NaN()
	}
	return invertWithin(cdf, q, rel)
}

// SegmentCDF is the true P(segment ≤ x) at t over the matching streams; NaN where none serve.
func (s *Scenario) SegmentCDF(g Segment, instance, model, version string, x float64, t time.Time) float64 {
	cdf := s.segmentCDF(g, instance, model, version, t)
	if cdf == nil {
		return math.NaN()
	}
	return cdf(x)
}

// segmentCDF is the segment's CDF at t, mixed over the matching streams by observation rate;
// nil where none serve.
func (s *Scenario) segmentCDF(g Segment, instance, model, version string, t time.Time) func(float64) float64 {
	ws, rs := s.mix(instance, model, version, t, g)
	if len(rs) == 0 {
		return nil
	}
	return func(x float64) float64 {
		var p float64
		for i, r := range rs {
			p += ws[i] * r.cdf(g, x)
		}
		return p
	}
}

// Jitter is P99/P50 of a segment at t (the brief's jitter ratio; > 5 means a jitter source).
func (s *Scenario) Jitter(g Segment, instance, model, version string, t time.Time) float64 {
	return s.SegmentQuantile(g, instance, model, version, 0.99, t) / s.SegmentQuantile(g, instance, model, version, 0.5, t)
}

// Histogram returns the exposed cumulative histogram at t (bucket counts for bounds, count, sum),
// summed over the matching series.
func (s *Scenario) Histogram(g Segment, instance, model, version string, bounds []float64, t time.Time) (cum []float64, count, sum float64) {
	cum = make([]float64, len(bounds))
	for _, st := range s.streamsFor(instance, model, version) {
		c, n, sm := st.histogram(g, s.boundsKey(g, bounds), bounds, t)
		for i := range c {
			cum[i] += c[i]
		}
		count += n
		sum += sm
	}
	return cum, count, sum
}

// HistogramIncrease is the expected growth of the histogram over [from, to] (restart-safe, like
// increase(), counting every observation: see SampledHistogramIncrease for the restart edge).
func (s *Scenario) HistogramIncrease(g Segment, instance, model, version string, bounds []float64, from, to time.Time) (cum []float64, count, sum float64) {
	return s.SampledHistogramIncrease(g, instance, model, version, bounds, from, to, 0)
}

// SampledHistogramIncrease is HistogramIncrease as increase() sees it on samples every step
// (see SampledMeanQPS). With a profile's bucket layout and HistogramQuantile it gives what
// histogram_quantile(q, sum by (le) (rate(x_bucket[w]))) returns for that profile, e.g. vLLM's
// coarse expo.VLLMRequestLatencyBuckets.
func (s *Scenario) SampledHistogramIncrease(g Segment, instance, model, version string, bounds []float64, from, to time.Time, step time.Duration) (cum []float64, count, sum float64) {
	cum = make([]float64, len(bounds))
	key := boundsKey(g, bounds)
	for _, st := range s.streamsFor(instance, model, version) {
		for i, e := range s.exposure(st, from, to, step) {
			if e == 0 {
				continue
			}
			r := st.regs[i]
			obs := e * r.perRequest(g)
			count += obs
			sum += obs * r.mean(g)
			for j, p := range r.bucketProbs(g, key, bounds) {
				cum[j] += obs * p
			}
		}
	}
	return cum, count, sum
}

// BucketQuantile is what histogram_quantile(q, sum by (le) (rate(x_bucket[w]))) gives over the
// brief's LatencyBuckets when the window's first sample is at from and its last at to: the
// bucket-interpolated quantile of the expected bucket increases.
func (s *Scenario) BucketQuantile(g Segment, instance, model, version string, q float64, from, to time.Time) float64 {
	cum, count, _ := s.HistogramIncrease(g, instance, model, version, LatencyBuckets, from, to)
	return HistogramQuantile(q, LatencyBuckets, cum, count)
}

// BucketQuantileAt is the bucket-interpolated quantile of the instantaneous bucket shares at t
// (the limit of BucketQuantile over a window inside one regime).
func (s *Scenario) BucketQuantileAt(g Segment, instance, model, version string, q float64, t time.Time) float64 {
	ws, rs := s.mix(instance, model, version, t, g)
	if len(rs) == 0 {
		return math.NaN()
	}
	cum := make([]float64, len(LatencyBuckets))
	key := boundsKey(g, LatencyBuckets)
	for i, r := range rs {
		for j, p := range r.bucketProbs(g, key, LatencyBuckets) {
			cum[j] += ws[i] * p
		}
	}
	return HistogramQuantile(q, LatencyBuckets, cum, 1)
}

// HistogramQuantile applies Prometheus' histogram_quantile interpolation to cumulative bucket
// counts (bounds ascending, +Inf implied with count observations).
func HistogramQuantile(q float64, bounds, cum []float64, count float64) float64 {
	switch {
	case math.IsNaN(q):
		return math.NaN()
	case q < 0:
		return math.Inf(-1)
	case q > 1:
		return math.Inf(1)
	}
	if len(bounds) == 0 || len(cum) != len(bounds) || count <= 0 || math.IsNaN(count) {
		return math.NaN()
	}
	upper := append(append([]float64(nil), bounds...), math.Inf(1))
	counts := append(append([]float64(nil), cum...), count)
	for i := 1; i < len(counts); i++ { // enforce monotonicity like Prometheus
		if counts[i] < counts[i-1] {
			counts[i] = counts[i-1]
		}
	}
	rank := q * counts[len(counts)-1]
	b := sort.Search(len(counts)-1, func(i int) bool { return counts[i] >= rank })
	if b == len(counts)-1 {
		return upper[len(upper)-2]
	}
	if b == 0 && upper[0] <= 0 {
		return upper[0]
	}
	start, end, c := 0.0, upper[b], counts[b]
	if b > 0 {
		start = upper[b-1]
		c -= counts[b-1]
		rank -= counts[b-1]
	}
	return start + (end-start)*(rank/c)
}

// weighted is the QPS-weighted mean of a per-request value over matching streams at t.
func (s *Scenario) weighted(instance, model, version string, t time.Time, f func(*regime) float64) float64 {
	var w, v float64
	for _, st := range s.streamsFor(instance, model, version) {
		r := st.regimeAt(t)
		if r == nil {
			continue
		}
		q := st.qps(t)
		w += q
		v += q * f(r)
	}
	if w == 0 {
		return math.NaN()
	}
	return v / w
}

// mix returns the observation-rate weights and regimes of matching streams at t.
func (s *Scenario) mix(instance, model, version string, t time.Time, g Segment) ([]float64, []*regime) {
	var ws []float64
	var rs []*regime
	var total float64
	for _, st := range s.streamsFor(instance, model, version) {
		r := st.regimeAt(t)
		q := st.qps(t)
		if r == nil || q == 0 {
			continue
		}
		w := q * r.perRequest(g)
		ws = append(ws, w)
		rs = append(rs, r)
		total += w
	}
	for i := range ws {
		ws[i] /= total
	}
	return ws, rs
}

// exposure returns, per local regime, the requests in [from, to] that samples every step see:
// all of them for step 0; otherwise those served between a restart and the last grid sample
// before it are missing, because the sample at (or first after) the restart shows the new
// process's count.
func (s *Scenario) exposure(st *stream, from, to time.Time, step time.Duration) []float64 {
	out := st.windowExposure(from, to)
	if step <= 0 {
		return out
	}
	in := s.instance(st.instance)
	for _, r := range in.starts {
		if !r.After(from) || r.After(to) {
			continue
		}
		last := r.Truncate(step)
		if last.Equal(r) {
			last = r.Add(-step)
		}
		if last.Before(from) {
			last = from
		}
		for i, e := range st.windowExposure(last, r) {
			out[i] -= e
		}
	}
	return out
}

// windowExposure returns, per local regime, the requests served in [from, to].
func (st *stream) windowExposure(from, to time.Time) []float64 {
	out := make([]float64, len(st.regs))
	a, b := unix(from), unix(to)
	if b <= a {
		return out
	}
	for i, p := range st.pieces {
		lo := math.Max(a, p.start)
		hi := b
		if i+1 < len(st.pieces) {
			hi = math.Min(b, st.pieces[i+1].start)
		}
		if hi > lo && p.qpsScale > 0 {
			out[p.reg] += p.qpsScale * st.m.diurnalIntegral(lo, hi)
		}
	}
	return out
}
