package testbed

import (
	"math"
	"strconv"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// LatencyBuckets are the brief's latency bucket bounds (seconds), +Inf implied.
var LatencyBuckets = expo.LatencyBuckets

// Source is the scenario seen as what its servers measure, for the naming layer (expo).
func (s *Scenario) Source() expo.Source { return source{s} }

type source struct{ s *Scenario }

func (src source) Instances() []string  { return src.s.Instances() }
func (src source) GPUsPerInstance() int { return src.s.GPUsPerInstance() }

func (src source) Streams(instance string) []expo.Stream {
	var out []expo.Stream
	for _, st := range src.s.streamsFor(instance, "", "") {
		since := time.Unix(0, int64(math.Round(st.pieces[0].start*1e9))).UTC()
		out = append(out, expo.Stream{Instance: st.instance, Model: st.model, Version: st.version, Since: since})
	}
	return out
}

func (src source) stream(x expo.Stream) *stream {
	for _, st := range src.s.streams {
		if st.instance == x.Instance && st.model == x.Model && st.version == x.Version {
			return st
		}
	}
	return nil
}

func (src source) Count(x expo.Stream, c expo.Counter, t time.Time) float64 {
	st := src.stream(x)
	f := counterFunc(c)
	if st == nil || f == nil {
		return math.NaN()
	}
	return st.cumulative(t, "counter:"+strconv.Itoa(int(c)), f)
}

// counterFunc is a counter's expected growth per request in a regime (nil for an unknown one).
func counterFunc(c expo.Counter) func(*regime) float64 {
	switch c {
	case expo.Requests:
		return func(*regime) float64 { return 1 }
	case expo.RequestsOK:
		return func(r *regime) float64 { return 1 - r.errRatio - r.timeout }
	case expo.Errors:
		return func(r *regime) float64 { return r.errRatio }
	case expo.Timeouts:
		return func(r *regime) float64 { return r.timeout }
	case expo.Fallbacks:
		return func(r *regime) float64 { return r.fallback }
	case expo.PromptTokens:
		return func(r *regime) float64 { return r.input.mean() }
	case expo.CachedTokens:
		return func(r *regime) float64 { return r.input.mean() * r.cacheHit }
	case expo.Preemptions:
		return func(r *regime) float64 { return r.preempt }
	case expo.Batches, expo.CompileLookups:
		return func(r *regime) float64 { return r.perRequest(BatchSize) }
	case expo.CompileHits:
		return func(r *regime) float64 { return r.perRequest(BatchSize) * r.compileHit }
	case expo.Rejections:
		return func(r *regime) float64 { return r.rejected }
	case expo.HTTPOK:
		return func(r *regime) float64 { return 1 - r.errRatio }
	case expo.HTTPServerErrors:
		return func(r *regime) float64 { return r.errRatio + r.rejected }
	}
	return nil
}

// measureSegments maps the naming layer's measures onto the scenario's segments.
var measureSegments = map[expo.Measure]Segment{
	expo.Latency: E2E, expo.QueueTime: Queue, expo.ComputeTime: Compute,
	expo.GatewayTime: Gateway, expo.InputLength: InputLength, expo.BatchSize: BatchSize,
	expo.PrefillTime: Prefill, expo.DecodeTime: Decode,
}

func (src source) Total(x expo.Stream, m expo.Measure, c expo.Counter, t time.Time) float64 {
	st := src.stream(x)
	g, ok := measureSegments[m]
	share := counterFunc(c)
	if st == nil || !ok || g == BatchSize || share == nil || c > expo.Fallbacks {
		return math.NaN()
	}
	key := "total:" + strconv.Itoa(int(m)) + ":" + strconv.Itoa(int(c))
	return st.cumulative(t, key, func(r *regime) float64 { return share(r) * r.mean(g) })
}

func (src source) Histogram(x expo.Stream, m expo.Measure, bounds []float64, t time.Time) ([]float64, float64, float64) {
	st := src.stream(x)
	if st == nil {
		return make([]float64, len(bounds)), 0, 0
	}
	if m == expo.Confidence {
		n := st.cumulative(t, "counter:"+strconv.Itoa(int(expo.Requests)), func(*regime) float64 { return 1 })
		sum := st.cumulative(t, "confidence", func(r *regime) float64 { return r.confidence })
		return make([]float64, len(bounds)), n, sum
	}
	g, ok := measureSegments[m]
	if !ok {
		return make([]float64, len(bounds)), math.NaN(), math.NaN()
	}
	return st.histogram(g, src.s.boundsKey(g, bounds), bounds, t)
}

func (src source) ModelGPUs(model string) []int { return src.s.ModelGPUs(model) }

// Quantile is the stream's continuous quantile of the measure's segment at t.
func (src source) Quantile(x expo.Stream, m expo.Measure, q float64, t time.Time) float64 {
	g, ok := measureSegments[m]
	if !ok {
		return math.NaN()
	}
	return src.s.SegmentQuantile(g, x.Instance, x.Model, x.Version, q, t)
}

func (src source) Queued(x expo.Stream, t time.Time) float64 {
	if st := src.stream(x); st != nil {
		return st.inFlight(Queue, t)
	}
	return math.NaN()
}

func (src source) Running(x expo.Stream, t time.Time) float64 {
	if st := src.stream(x); st != nil {
		return st.inFlight(Compute, t)
	}
	return math.NaN()
}

func (src source) KVCacheUsage(instance, model string, t time.Time) float64 {
	return src.s.KVCacheUsage(instance, model, t)
}

func (src source) GPUUUID(instance string, gpu int) string { return GPUUUID(instance, gpu) }

func (src source) Ready(instance string, t time.Time) bool { return src.s.Ready(instance, t) }

func (src source) ProcessStart(instance string, t time.Time) time.Time {
	return src.s.ProcessStart(instance, t)
}

func (src source) GPUUtilRatio(instance string, gpu int, t time.Time) float64 {
	return src.s.GPU(instance, gpu, t).UtilRatio
}

// QueueDepth is the expected number of queued requests of a model on an instance (Little's law:
// arrival rate × mean queue time).
func (s *Scenario) QueueDepth(instance, model string, t time.Time) float64 {
	return s.inFlight(Queue, instance, model, "", t)
}

// Running is the expected number of executing requests (arrival rate × mean compute time), what
// vLLM's num_requests_running and TGI's batch_current_size show.
func (s *Scenario) Running(instance, model, version string, t time.Time) float64 {
	return s.inFlight(Compute, instance, model, version, t)
}

// kvSlots is how many concurrently running requests fill a model's KV cache on an instance.
const kvSlots = 8

// kvDuringStall is the KV-cache usage of the slowed model while the compute slowdown lasts: its
// memory is near full, which is what makes the scheduler preempt.
const kvDuringStall = 0.97

// KVCacheUsage is the share of a model's KV cache in use on an instance: Running / 8, capped at
// 1 (about 0.2-0.3 in steady state), and kvDuringStall for the slowed model in the compute
// slowdown.
func (s *Scenario) KVCacheUsage(instance, model string, t time.Time) float64 {
	if s.ext != nil {
		return s.ext.kvUsage(s, instance, model, t)
	}
	if _, ok := s.incidentAt(ComputeSlowdown, instance, model, "", t); ok {
		return kvDuringStall
	}
	return math.Min(1, s.Running(instance, model, "", t)/kvSlots)
}

func (s *Scenario) inFlight(g Segment, instance, model, version string, t time.Time) float64 {
	var d float64
	for _, st := range s.streamsFor(instance, model, version) {
		d += st.inFlight(g, t)
	}
	return d
}

// inFlight is Little's law for one stream: arrival rate × mean time in the segment.
func (st *stream) inFlight(g Segment, t time.Time) float64 {
	if r := st.regimeAt(t); r != nil {
		return st.qps(t) * r.mean(g)
	}
	return 0
}
