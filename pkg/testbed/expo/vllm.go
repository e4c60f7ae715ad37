package expo

import (
	"math"
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
//	vllm:request_prefill_time_seconds / _decode_time_seconds{…}    histograms (same buckets): compute
//	                                                              split by testbed.PrefillShare
//	vllm:time_to_first_token_seconds{…}                            histogram (VLLMTTFTBuckets)
//	vllm:inter_token_latency_seconds{…}                            histogram (empty)
//	vllm:request_prompt_tokens{…}                                  histogram (VLLMPromptTokenBuckets)
//	vllm:num_requests_running / _waiting{…}                        gauges
//	vllm:num_requests_waiting_by_reason{…,reason}                  gauge: capacity + deferred = waiting,
//	                                                              deferred = VLLMDeferredShare of it
//	vllm:engine_sleep_state{…,sleep_state}                         gauge: awake 1 when ready; the load
//	                                                              minute after a restart is played as
//	                                                              sleep level 1 (weights_offloaded 1)
//	vllm:admission_rejections_total{…,reason}                      counter (reason="queue_full")
//	http_requests_total{handler,method,status}                     counter, per instance: the chat
//	                                                              route's 2xx and 5xx (status grouped),
//	                                                              /health's 2xx and 5xx (not inference)
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
	prefill, decode, byReason, sleep, rejected   string
	http                                         string
	deferred, awake                              Label
}

// VLLMDeferredShare is the share of the waiting requests the vLLM naming writes as
// reason="deferred" (blocked, not waiting for capacity); the rest is reason="capacity".
const VLLMDeferredShare = 0.1

// VLLMHealth5xxPerSecond is how fast the vLLM naming's /health route answers 5xx: errors of a
// route that serves no inference, which the errors query must leave out.
const VLLMHealth5xxPerSecond = 0.05

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
		prefill:   n.metric(profile.PrefillTime, profile.Histogram),
		decode:    n.metric(profile.DecodeTime, profile.Histogram),
		byReason:  n.metric(profile.WaitingDeferred, profile.Gauge),
		deferred:  n.matcher(profile.WaitingDeferred, profile.Gauge),
		sleep:     n.metric(profile.LoadState, profile.Gauge),
		awake:     n.matcher(profile.LoadState, profile.Gauge),
		rejected:  n.metric(profile.Rejections, profile.Counter),
		http:      n.metric(profile.HTTPErrors, profile.Counter),
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

	return append([]Family{
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
		hist(n.prefill, "Histogram of time spent in PREFILL phase for request.", PrefillTime, VLLMRequestLatencyBuckets),
		hist(n.decode, "Histogram of time spent in DECODE phase for request.", DecodeTime, VLLMRequestLatencyBuckets),
	}, v.stateFamilies(src, inst, gs, labels)...)
}

// stateFamilies are the current releases' scheduler, sleep, admission and HTTP families.
func (v vllm) stateFamilies(src Source, inst string, gs []group, labels func(group, ...Label) []Label) []Family {
	n := v.n
	byReason := Family{Name: n.byReason, Help: "Number of requests waiting to be processed, by reason.", Type: GaugeType}
	sleep := Family{Name: n.sleep, Help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; " +
		"weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.", Type: GaugeType}
	rejected := Family{Name: n.rejected, Help: "Requests rejected at admission, by reason.", Type: CounterType}
	for _, g := range gs {
		queued := g.queued(src)
		for _, r := range []struct {
			reason string
			share  float64
		}{{"capacity", 1 - VLLMDeferredShare}, {n.deferred.Value, VLLMDeferredShare}} {
			byReason.Series = append(byReason.Series, Series{Labels: labels(g, Label{n.deferred.Name, r.reason}), Since: g.Since,
				At: func(t time.Time) Point { return Point{Value: r.share * queued(t).Value} }})
		}
		for _, st := range []struct {
			state string
			when  bool // the value is 1 when Ready equals when
		}{{n.awake.Value, true}, {"weights_offloaded", false}} {
			sleep.Series = append(sleep.Series, Series{Labels: labels(g, Label{n.awake.Name, st.state}), Since: g.Since,
				At: func(t time.Time) Point { return Point{Value: boolValue(src.Ready(inst, t) == st.when)} }})
		}
		sleep.Series = append(sleep.Series, Series{Labels: labels(g, Label{n.awake.Name, "discard_all"}), Since: g.Since,
			At: func(time.Time) Point { return Point{} }})
		rejected.Series = append(rejected.Series, Series{Labels: labels(g, Label{"reason", "queue_full"}), Since: g.Since, At: g.count(src, Rejections)})
	}
	// The API server's routes, summed over the instance's models (the instrumentator has no
	// model label).
	perInstance := func(c Counter) func(time.Time) Point {
		return func(t time.Time) Point {
			var p Point
			for _, g := range gs {
				p.Value += g.count(src, c)(t).Value
			}
			return p
		}
	}
	health := func(t time.Time) Point {
		st := src.ProcessStart(inst, t)
		if st.IsZero() {
			return Point{}
		}
		return Point{Value: math.Floor(VLLMHealth5xxPerSecond * t.Sub(st).Seconds())}
	}
	http := Family{Name: n.http, Help: "Total number of requests by method, status and handler.", Type: CounterType}
	route := func(handler, method, status string, at func(time.Time) Point) Series {
		return Series{Labels: []Label{{"handler", handler}, {"method", method}, {"status", status}}, At: at}
	}
	http.Series = append(http.Series,
		route("/v1/chat/completions", "POST", "2xx", perInstance(HTTPOK)),
		route("/v1/chat/completions", "POST", "5xx", perInstance(HTTPServerErrors)),
		route("/health", "GET", "5xx", health))
	return []Family{byReason, sleep, rejected, http}
}
