package expo

import (
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The sglang profile is SGLang's Prometheus metrics (--enable-metrics, prometheus_client in
// multiprocess mode, so no process_start_time_seconds): one server per model and instance, no
// version label, so a model's versions on an instance are one series set (their sums). The
// tokenizer manager's series carry model_name and engine_type; the scheduler's (one scheduler:
// TP 1, no data-parallel attention, no priority scheduling) add tp_rank, pp_rank and
// moe_ep_rank. The scenario's requests produce a single output token, so time to first token is
// the end-to-end latency and no inter-token gap is observed (that histogram stays empty).
// Timeouts are clients that gave up (aborted requests); errors end as finished requests, which
// SGLang does not tell apart. The sglang:cache_hit_rate gauge (the last prefill batch's share)
// is not played: the engine reads the token counters instead.
//
//	sglang:num_requests_total{model_name,engine_type}          counter: every finished request
//	sglang:num_aborted_requests_total{…}                       counter: timeouts
//	sglang:prompt_tokens_total / _generation_tokens_total{…}   counters (one output token each)
//	sglang:cached_tokens_total{…,cache_source="device"}        counter: prefix cache hits, tokens
//	sglang:e2e_request_latency_seconds{…}                      histogram (SGLangE2EBuckets)
//	sglang:time_to_first_token_seconds{…}                      histogram (SGLangTTFTBuckets)
//	sglang:inter_token_latency_seconds{…}                      histogram (empty)
//	sglang:prompt_tokens_histogram{…}                          histogram (SGLangPromptTokenBuckets)
//	sglang:queue_time_seconds{model_name,engine_type,tp_rank,pp_rank,moe_ep_rank}  histogram
//	                                                           (SGLangQueueTimeBuckets)
//	sglang:num_running_reqs / _num_queue_reqs{…scheduler…}     gauges
//	sglang:token_usage{…scheduler…}                            gauge, 0..1
//	sglang:num_retracted_requests_total{…scheduler…}           counter: preemptions
type sglang struct{ n sglangNames }

type sglangNames struct {
	model                                        string
	requests, aborted, prompt, cached, retracted string
	e2e, queue, ttft, itl, promptHist            string
	running, waiting, usage                      string
}

// SGLang's default bucket layouts (TokenizerMetricsCollector and SchedulerMetricsCollector).
var (
	SGLangE2EBuckets       = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	SGLangTTFTBuckets      = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	SGLangInterTokenBucket = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
		0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1, 2, 4, 6, 8}
	SGLangQueueTimeBuckets = []float64{0, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50,
		60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
	SGLangPromptTokenBuckets = []float64{100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000,
		12500, 15000, 17500, 20000, 22500, 25000, 27500, 30000, 35000, 40000, 60000, 80000, 100000, 200000, 300000, 400000,
		600000, 800000, 1000000, 1100000}
)

// sglangEngineType is the engine_type label of a server without prefill/decode disaggregation.
const sglangEngineType = "unified"

func init() {
	n := profileNames("sglang")
	compute := n.measure(profile.ComputeTime, profile.MicrosecondCounter)
	sg := sglangNames{
		model:      n.label("model", n.p.ModelLabel),
		requests:   n.metric(profile.Requests, profile.Counter),
		aborted:    n.metric(profile.Timeouts, profile.Counter),
		prompt:     n.metric(profile.CacheQueries, profile.Counter),
		cached:     n.metric(profile.CacheHits, profile.Counter),
		retracted:  n.metric(profile.Preemptions, profile.Counter),
		e2e:        n.metric(profile.Latency, profile.Histogram),
		queue:      n.metric(profile.QueueTime, profile.Histogram),
		ttft:       n.metric(profile.TimeToFirst, profile.Histogram),
		itl:        n.metric(profile.InterToken, profile.Histogram),
		promptHist: n.metric(profile.InputLength, profile.Histogram),
		running:    n.metric(profile.Running, profile.Gauge),
		waiting:    n.metric(profile.Waiting, profile.Gauge),
		usage:      n.metric(profile.KVCacheUsage, profile.Gauge),
	}
	// Compute is e2e − queue over the e2e count: the histograms' own _sum and _count.
	if compute.Metrics[0] != sg.e2e+"_sum" || compute.Minus[0] != sg.queue+"_sum" || compute.Count[0] != sg.e2e+"_count" {
		n.errs = append(n.errs, "compute must be the e2e sum minus the queue sum over the e2e count")
	}
	register(sglang{sg}, n.err())
}

func (sglang) Name() string { return "sglang" }

func (sg sglang) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		gs := groups(src, inst, false)
		out = append(out, Target{Instance: inst, Families: append(sg.tokenizer(src, gs), sg.scheduler(src, inst, gs)...)})
	}
	return out
}

// sglangSeries writes one family with a series per group, labelled by labels.
func sglangSeries(name, help string, typ Type, gs []group, labels func(group) []Label, at func(group) func(time.Time) Point) Family {
	f := Family{Name: name, Help: help, Type: typ}
	for _, g := range gs {
		f.Series = append(f.Series, Series{Labels: labels(g), Since: g.Since, At: at(g)})
	}
	return f
}

// tokenizer is the tokenizer manager's families: request counters and latency histograms.
func (sg sglang) tokenizer(src Source, gs []group) []Family {
	n := sg.n
	labels := func(g group) []Label { return []Label{{n.model, g.Model}, {"engine_type", sglangEngineType}} }
	count := func(c Counter) func(group) func(time.Time) Point {
		return func(g group) func(time.Time) Point { return g.count(src, c) }
	}
	hist := func(name, help string, m Measure, bounds []float64) Family {
		f := sglangSeries(name, help, HistogramType, gs, labels, func(g group) func(time.Time) Point { return g.histogram(src, m, bounds) })
		f.Bounds = bounds
		return f
	}
	cachedLabels := func(g group) []Label { return append(labels(g), Label{"cache_source", "device"}) }
	itl := sglangSeries(n.itl, "Histogram of inter-token latency in seconds.", HistogramType, gs, labels,
		func(group) func(time.Time) Point { return emptyHistogram(SGLangInterTokenBucket) })
	itl.Bounds = SGLangInterTokenBucket
	return []Family{
		sglangSeries(n.prompt, "Number of prefill tokens processed.", CounterType, gs, labels, count(PromptTokens)),
		sglangSeries("sglang:generation_tokens_total", "Number of generation tokens processed.", CounterType, gs, labels, count(Requests)),
		sglangSeries(n.cached, "Number of cached prompt tokens by source (device/host/storage).", CounterType, gs, cachedLabels, count(CachedTokens)),
		sglangSeries(n.requests, "Number of requests processed.", CounterType, gs, labels, count(Requests)),
		sglangSeries(n.aborted, "Number of requests aborted.", CounterType, gs, labels, count(Timeouts)),
		hist(n.ttft, "Histogram of time to first token in seconds.", Latency, SGLangTTFTBuckets),
		itl,
		hist(n.e2e, "Histogram of End-to-end request latency in seconds", Latency, SGLangE2EBuckets),
		hist(n.promptHist, "Histogram of prompt token length.", InputLength, SGLangPromptTokenBuckets),
	}
}

// scheduler is the scheduler's families: queue and running gauges, token usage, queue time.
func (sg sglang) scheduler(src Source, inst string, gs []group) []Family {
	n := sg.n
	labels := func(g group) []Label {
		return []Label{{n.model, g.Model}, {"engine_type", sglangEngineType}, {"tp_rank", "0"}, {"pp_rank", "0"}, {"moe_ep_rank", "0"}}
	}
	queue := sglangSeries(n.queue, "Histogram of queueing time in seconds.", HistogramType, gs, labels,
		func(g group) func(time.Time) Point { return g.histogram(src, QueueTime, SGLangQueueTimeBuckets) })
	queue.Bounds = SGLangQueueTimeBuckets
	return []Family{
		sglangSeries(n.running, "The number of running requests.", GaugeType, gs, labels, func(g group) func(time.Time) Point { return g.running(src) }),
		sglangSeries(n.waiting, "The number of requests in the waiting queue.", GaugeType, gs, labels, func(g group) func(time.Time) Point { return g.queued(src) }),
		sglangSeries(n.usage, "The token usage.", GaugeType, gs, labels, func(g group) func(time.Time) Point {
			model := g.Model
			return func(t time.Time) Point { return Point{Value: src.KVCacheUsage(inst, model, t)} }
		}),
		sglangSeries(n.retracted, "Total number of retracted requests.", CounterType, gs, labels,
			func(g group) func(time.Time) Point { return g.count(src, Preemptions) }),
		queue,
	}
}
