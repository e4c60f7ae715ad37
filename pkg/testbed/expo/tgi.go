package expo

import (
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The tgi profile is Text Generation Inference's router (metrics-exporter-prometheus: counters
// without _total, histograms in seconds with 35 geometric duration buckets). TGI serves one
// model per process and labels nothing with it; the scenario's two models per instance are two
// TGI routers whose scrape configuration adds TGIModelLabel (relabelling, as the profile's label
// note recommends), so an engine reading this naming sets its model label to TGIModelLabel.
// Versions of a model are merged (no version label). The scenario's requests produce one token,
// so no per-token time is observed (that histogram stays empty). Timeouts are clients giving up:
// TGI counts them as successes.
//
//	tgi_request_count / tgi_request_success{model_name}   counters
//	tgi_request_failure{model_name,err="generation"}      counter (errors)
//	tgi_queue_size / tgi_batch_current_size{model_name}   gauges (queued, running)
//	tgi_request_duration{model_name}                      histogram (TGIDurationBuckets)
//	tgi_request_queue_duration / _inference_duration{…}   histograms (same buckets)
//	tgi_request_mean_time_per_token_duration{…}           histogram (empty)
//	tgi_request_input_length{model_name}                  histogram (TGIInputLengthBuckets)
type tgi struct{ n tgiNames }

// TGIModelLabel is the model label the test bed's scrape configuration puts on TGI's series.
const TGIModelLabel = "model_name"

type tgiNames struct {
	requests, failure, queueSize, batch         string
	duration, queue, inference, perToken, input string
}

// TGI's bucket layouts: durations 0.0001·1.5^k for k = 1..35 (0.15 ms to 146 s), input length
// in 100 steps up to max_input_tokens (4096).
var (
	TGIDurationBuckets    = tgiDurationBuckets()
	TGIInputLengthBuckets = tgiInputBuckets(4096)
)

func tgiDurationBuckets() []float64 {
	out := make([]float64, 0, 35)
	v := 0.0001
	for range 35 {
		v *= 1.5
		out = append(out, v)
	}
	return out
}

func tgiInputBuckets(maxInput float64) []float64 {
	out := make([]float64, 0, 100)
	for x := range 100 {
		out = append(out, maxInput/100*float64(x+1))
	}
	return out
}

func init() {
	n := profileNames("tgi")
	tg := tgiNames{
		requests:  n.metric(profile.Requests, profile.Counter),
		failure:   n.metric(profile.Errors, profile.Counter),
		queueSize: n.metric(profile.QueueDepth, profile.Gauge),
		batch:     n.metric(profile.Running, profile.Gauge),
		duration:  n.metric(profile.Latency, profile.Histogram),
		queue:     n.metric(profile.QueueTime, profile.Histogram),
		inference: n.metric(profile.ComputeTime, profile.Histogram),
		perToken:  n.metric(profile.InterToken, profile.Histogram),
		input:     n.metric(profile.InputLength, profile.Histogram),
	}
	register(tgi{tg}, n.err())
}

func (tgi) Name() string { return "tgi" }

func (tg tgi) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: tg.families(src, inst)})
	}
	return out
}

func (tg tgi) families(src Source, inst string) []Family {
	n := tg.n
	gs := groups(src, inst, false)
	perGroup := func(name string, typ Type, at func(group) func(time.Time) Point, extra ...Label) Family {
		f := Family{Name: name, Type: typ}
		for _, g := range gs {
			f.Series = append(f.Series, Series{Labels: append([]Label{{TGIModelLabel, g.Model}}, extra...), Since: g.Since, At: at(g)})
		}
		return f
	}
	hist := func(name string, bounds []float64, at func(group) func(time.Time) Point) Family {
		f := perGroup(name, HistogramType, at)
		f.Bounds, f.FormatLe = bounds, formatRust
		return f
	}
	measure := func(m Measure, bounds []float64) func(group) func(time.Time) Point {
		return func(g group) func(time.Time) Point { return g.histogram(src, m, bounds) }
	}
	success := func(g group) func(time.Time) Point {
		ok, timeouts := g.count(src, RequestsOK), g.count(src, Timeouts)
		return func(t time.Time) Point { return Point{Value: ok(t).Value + timeouts(t).Value} }
	}
	return []Family{
		perGroup(n.requests, CounterType, func(g group) func(time.Time) Point { return g.count(src, Requests) }),
		perGroup("tgi_request_success", CounterType, success),
		perGroup(n.failure, CounterType, func(g group) func(time.Time) Point { return g.count(src, Errors) }, Label{"err", "generation"}),
		perGroup(n.queueSize, GaugeType, func(g group) func(time.Time) Point { return g.queued(src) }),
		perGroup(n.batch, GaugeType, func(g group) func(time.Time) Point { return g.running(src) }),
		hist(n.duration, TGIDurationBuckets, measure(Latency, TGIDurationBuckets)),
		hist(n.queue, TGIDurationBuckets, measure(QueueTime, TGIDurationBuckets)),
		hist(n.inference, TGIDurationBuckets, measure(ComputeTime, TGIDurationBuckets)),
		hist(n.perToken, TGIDurationBuckets, func(group) func(time.Time) Point { return emptyHistogram(TGIDurationBuckets) }),
		hist(n.input, TGIInputLengthBuckets, measure(InputLength, TGIInputLengthBuckets)),
	}
}
