package expo

import (
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The vllm profile is vLLM's V1 Prometheus logger (prometheus_client, one engine, engine="0").
// vLLM serves one model per process and has no version label: each model's versions on an
// instance are one series set (their sums), so the canary shows only as a shift of node-c's
// numbers. The scenario's requests produce a single output, so time to first token is the
// end-to-end latency and no inter-token gap is ever observed (that histogram stays empty).
//
//	vllm:request_success_total{model_name,engine,finished_reason}  counter: stop (ok), abort
//	                                                              (timeouts), error
//	vllm:e2e_request_latency_seconds{model_name,engine}            histogram (VLLMRequestLatencyBuckets)
//	vllm:request_queue_time_seconds{…}                             histogram (same buckets)
//	vllm:request_inference_time_seconds{…}                         histogram (same buckets)
//	vllm:time_to_first_token_seconds{…}                            histogram (VLLMTTFTBuckets)
//	vllm:inter_token_latency_seconds{…}                            histogram (empty)
//	vllm:request_prompt_tokens{…}                                  histogram (VLLMPromptTokenBuckets)
//	vllm:num_requests_running / _waiting{…}                        gauges
//	vllm:kv_cache_usage_perc{…}                                    gauge, 0..1
//	vllm:prefix_cache_queries_total / _hits_total{…}               counters, tokens
//	vllm:num_preemptions_total{…}                                  counter
//	process_start_time_seconds                                     gauge
type vllm struct{ n vllmNames }

type vllmNames struct {
	model                                        string
	success                                      string
	errReason                                    Label
	e2e, queue, inference, ttft, itl, prompt     string
	running, waiting, kv, hits, queries, preempt string
	start                                        string
}

// vLLM's bucket layouts (V1 loggers): requests from 0.3 s, so millisecond requests all fall in
// the first bucket and histogram_quantile interpolates inside (0, 0.3].
var (
	VLLMRequestLatencyBuckets = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	VLLMTTFTBuckets           = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	VLLMInterTokenBuckets     = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	// 1-2-5 up to max_model_len (8192).
	VLLMPromptTokenBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000}
)

func init() {
	n := profileNames("vllm")
	v := vllmNames{
		model:     n.label("model", n.p.ModelLabel),
		success:   n.metric(profile.Requests, profile.Counter),
		errReason: n.matcher(profile.Errors, profile.Counter),
		e2e:       n.metric(profile.Latency, profile.Histogram),
		queue:     n.metric(profile.QueueTime, profile.Histogram),
		inference: n.metric(profile.ComputeTime, profile.Histogram),
		ttft:      n.metric(profile.TimeToFirst, profile.Histogram),
		itl:       n.metric(profile.InterToken, profile.Histogram),
		prompt:    n.metric(profile.InputLength, profile.Histogram),
		running:   n.metric(profile.Running, profile.Gauge),
		waiting:   n.metric(profile.Waiting, profile.Gauge),
		kv:        n.metric(profile.KVCacheUsage, profile.Gauge),
		hits:      n.metric(profile.CacheHits, profile.Counter),
		queries:   n.metric(profile.CacheQueries, profile.Counter),
		preempt:   n.metric(profile.Preemptions, profile.Counter),
		start:     n.metric(profile.ProcessStart, profile.Gauge),
	}
	register(vllm{v}, n.err())
}

func (vllm) Name() string { return "vllm" }

func (v vllm) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: v.families(src, inst)})
	}
	return out
}

func (v vllm) families(src Source, inst string) []Family {
	n := v.n
	gs := groups(src, inst, false)
	labels := func(g group, extra ...Label) []Label {
		return append([]Label{{n.model, g.Model}, {"engine", "0"}}, extra...)
	}
	perGroup := func(name, help string, typ Type, at func(group) func(time.Time) Point) Family {
		f := Family{Name: name, Help: help, Type: typ}
		for _, g := range gs {
			f.Series = append(f.Series, Series{Labels: labels(g), Since: g.Since, At: at(g)})
		}
		return f
	}
	hist := func(name, help string, m Measure, bounds []float64) Family {
		f := perGroup(name, help, HistogramType, func(g group) func(time.Time) Point { return g.histogram(src, m, bounds) })
		f.Bounds = bounds
		return f
	}

	success := Family{Name: n.success, Help: "Count of successfully processed requests.", Type: CounterType}
	for _, g := range gs {
		for _, r := range []struct {
			reason string
			c      Counter
		}{{"stop", RequestsOK}, {"abort", Timeouts}, {n.errReason.Value, Errors}} {
			success.Series = append(success.Series, Series{Labels: labels(g, Label{n.errReason.Name, r.reason}), Since: g.Since, At: g.count(src, r.c)})
		}
	}
	itl := perGroup(n.itl, "Histogram of inter-token latency in seconds.", HistogramType,
		func(group) func(time.Time) Point { return emptyHistogram(VLLMInterTokenBuckets) })
	itl.Bounds = VLLMInterTokenBuckets
	kv := Family{Name: n.kv, Help: "KV-cache usage. 1 means 100 percent usage.", Type: GaugeType}
	for _, g := range gs {
		model := g.Model
		kv.Series = append(kv.Series, Series{Labels: labels(g), Since: g.Since,
			At: func(t time.Time) Point { return Point{Value: src.KVCacheUsage(inst, model, t)} }})
	}

	return []Family{
		perGroup(n.running, "Number of requests in model execution batches.", GaugeType, func(g group) func(time.Time) Point { return g.running(src) }),
		perGroup(n.waiting, "Number of requests waiting to be processed.", GaugeType, func(g group) func(time.Time) Point { return g.queued(src) }),
		kv,
		perGroup(n.queries, "Prefix cache queries, in terms of number of queried tokens.", CounterType, func(g group) func(time.Time) Point { return g.count(src, PromptTokens) }),
		perGroup(n.hits, "Prefix cache hits, in terms of number of cached tokens.", CounterType, func(g group) func(time.Time) Point { return g.count(src, CachedTokens) }),
		perGroup(n.preempt, "Cumulative number of preemption from the engine.", CounterType, func(g group) func(time.Time) Point { return g.count(src, Preemptions) }),
		success,
		hist(n.prompt, "Number of prefill tokens processed.", InputLength, VLLMPromptTokenBuckets),
		hist(n.ttft, "Histogram of time to first token in seconds.", Latency, VLLMTTFTBuckets),
		itl,
		hist(n.e2e, "Histogram of e2e request latency in seconds.", Latency, VLLMRequestLatencyBuckets),
		hist(n.queue, "Histogram of time spent in WAITING phase for request.", QueueTime, VLLMRequestLatencyBuckets),
		hist(n.inference, "Histogram of time spent in RUNNING phase for request.", ComputeTime, VLLMRequestLatencyBuckets),
		{Name: n.start, Help: "Start time of the process since unix epoch in seconds.", Type: GaugeType,
			Series: []Series{{At: processStart(src, inst)}}},
	}
}
