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
	if st == nil {
		return 0
	}
	var f func(*regime) float64
	key := "counter:" + strconv.Itoa(int(c))
	switch c {
	case expo.Requests:
		f = func(*regime) float64 { return 1 }
	case expo.RequestsOK:
		f = func(r *regime) float64 { return 1 - r.errRatio - r.timeout }
	case expo.Errors:
		f = func(r *regime) float64 { return r.errRatio }
	case expo.Timeouts:
		f = func(r *regime) float64 { return r.timeout }
	case expo.Fallbacks:
		f = func(r *regime) float64 { return r.fallback }
	default:
		return math.NaN()
	}
	return st.cumulative(t, key, f)
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
	g, ok := map[expo.Measure]Segment{
		expo.Latency: E2E, expo.QueueTime: Queue, expo.ComputeTime: Compute,
		expo.GatewayTime: Gateway, expo.InputLength: InputLength, expo.BatchSize: BatchSize,
	}[m]
	if !ok {
		return make([]float64, len(bounds)), math.NaN(), math.NaN()
	}
	return st.histogram(g, src.s.boundsKey(g, bounds), bounds, t)
}

func (src source) QueueDepth(instance, model string, t time.Time) float64 {
	return src.s.QueueDepth(instance, model, t)
}

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
	var d float64
	for _, st := range s.streamsFor(instance, model, "") {
		if r := st.regimeAt(t); r != nil {
			d += st.qps(t) * r.queue.mean()
		}
	}
	return d
}
