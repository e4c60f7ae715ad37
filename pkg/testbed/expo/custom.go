package expo

import (
	"strconv"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The custom profile is the brief's own instrumentation: a Python prometheus_client service.
// Counters carry a status label ("ok", "error", "timeout") the way such a service labels its
// outcomes; inference_requests_total summed over status is every request.
//
//	inference_requests_total{model_name,model_version,status}   counter
//	inference_fallback_total{model_name,model_version}          counter
//	inference_latency_seconds{model_name,model_version}          histogram (brief buckets)
//	inference_queue_seconds{model_name,model_version}            histogram (brief buckets)
//	inference_compute_seconds{model_name,model_version}          histogram (brief buckets)
//	inference_gateway_upstream_seconds{model_name,model_version} histogram (brief buckets)
//	inference_input_length{model_name,model_version}             histogram (elements)
//	inference_batch_size{model_name,model_version}               histogram (per batch)
//	inference_prediction_confidence{model_name,model_version}    summary (count, sum)
//	inference_compile_cache_requests_total{model_name,model_version} counter: compiled-graph
//	                                                             cache lookups, one per batch
//	inference_compile_cache_hits_total{model_name,model_version} counter: lookups found compiled
//	inference_queue_size{model_name}                             gauge
//	inference_requests_running{model_name,model_version}         gauge (executing now)
//	model_loading_status{model_name}                             gauge (1 ready, 0 loading)
//	inference_gpu_util_percent{gpu_id}                           gauge (0-100)
//	process_start_time_seconds                                   gauge
type custom struct{ n customNames }

// customNames are the custom profile's names, read from pkg/profile.
type customNames struct {
	model, version                             string
	requests, fallback                         string
	errStatus, timeoutStatus                   Label
	latency, queue, compute, gateway, input    string
	batch, confidence, queueSize, loading, gpu string
	start                                      string
	cacheHits, cacheLookups, running           string
}

func init() {
	n := profileNames("custom")
	c := customNames{
		model:         n.label("model", n.p.ModelLabel),
		version:       n.label("version", n.p.VersionLabel),
		requests:      n.metric(profile.Requests, profile.Counter),
		fallback:      n.metric(profile.Fallback, profile.Counter),
		errStatus:     n.matcher(profile.Errors, profile.Counter),
		timeoutStatus: n.matcher(profile.Timeouts, profile.Counter),
		latency:       n.metric(profile.Latency, profile.Histogram),
		queue:         n.metric(profile.QueueTime, profile.Histogram),
		compute:       n.metric(profile.ComputeTime, profile.Histogram),
		gateway:       n.metric(profile.NetworkTime, profile.Histogram),
		input:         n.metric(profile.InputLength, profile.Histogram),
		batch:         n.metric(profile.BatchSize, profile.Histogram),
		confidence:    n.metric(profile.Confidence, profile.Summary),
		queueSize:     n.metric(profile.QueueDepth, profile.Gauge),
		loading:       n.metric(profile.LoadState, profile.Gauge),
		gpu:           n.metric(profile.GPUUtil, profile.Gauge),
		start:         n.metric(profile.ProcessStart, profile.Gauge),
		cacheHits:     n.metric(profile.CacheHits, profile.Counter),
		cacheLookups:  n.metric(profile.CacheQueries, profile.Counter),
		running:       n.metric(profile.Running, profile.Gauge),
	}
	if c.errStatus.Name != c.timeoutStatus.Name {
		n.errs = append(n.errs, "errors and timeouts must be values of one status label")
	}
	register(custom{c}, n.err())
}

// Bucket layouts of the custom profile.
var (
	LatencyBuckets     = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	InputLengthBuckets = []float64{16, 32, 64, 128, 256, 512, 1024, 2048}
	BatchSizeBuckets   = []float64{1, 2, 4, 8, 16, 32, 64}
)

func (custom) Name() string { return "custom" }

func (c custom) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: c.families(src, inst)})
	}
	return out
}

func (c custom) families(src Source, inst string) []Family {
	n := c.n
	gs := groups(src, inst, true)
	mv := func(g group, extra ...Label) []Label {
		return append([]Label{{n.model, g.Model}, {n.version, g.Version}}, extra...)
	}

	requests := Family{Name: n.requests, Help: "Inference requests by outcome.", Type: CounterType}
	fallback := Family{Name: n.fallback, Help: "Requests answered by the fallback path.", Type: CounterType}
	lookups := Family{Name: n.cacheLookups, Help: "Compiled-graph cache lookups (one per executed batch).", Type: CounterType}
	hits := Family{Name: n.cacheHits, Help: "Compiled-graph cache lookups that found a compiled graph.", Type: CounterType}
	running := Family{Name: n.running, Help: "Requests executing now.", Type: GaugeType}
	for _, g := range gs {
		running.Series = append(running.Series, Series{Labels: mv(g), Since: g.Since, At: g.running(src)})
		lookups.Series = append(lookups.Series, Series{Labels: mv(g), Since: g.Since, At: g.count(src, CompileLookups)})
		hits.Series = append(hits.Series, Series{Labels: mv(g), Since: g.Since, At: g.count(src, CompileHits)})
		for _, s := range []struct {
			status string
			c      Counter
		}{{"ok", RequestsOK}, {n.errStatus.Value, Errors}, {n.timeoutStatus.Value, Timeouts}} {
			requests.Series = append(requests.Series, Series{Labels: mv(g, Label{n.errStatus.Name, s.status}), Since: g.Since, At: g.count(src, s.c)})
		}
		fallback.Series = append(fallback.Series, Series{Labels: mv(g), Since: g.Since, At: g.count(src, Fallbacks)})
	}
	histFamily := func(name, help string, m Measure, bounds []float64) Family {
		f := Family{Name: name, Help: help, Type: HistogramType, Bounds: bounds}
		for _, g := range gs {
			f.Series = append(f.Series, Series{Labels: mv(g), Since: g.Since, At: g.histogram(src, m, bounds)})
		}
		return f
	}
	confidence := Family{Name: n.confidence, Help: "Confidence of the returned prediction.", Type: SummaryType}
	for _, g := range gs {
		confidence.Series = append(confidence.Series, Series{Labels: mv(g), Since: g.Since, At: g.histogram(src, Confidence, nil)})
	}

	queueSize := Family{Name: n.queueSize, Help: "Requests waiting for a batch slot.", Type: GaugeType}
	loading := Family{Name: n.loading, Help: "1 when the model is loaded and serving, 0 while loading.", Type: GaugeType}
	for _, mg := range groups(src, inst, false) {
		queueSize.Series = append(queueSize.Series, Series{Labels: []Label{{n.model, mg.Model}}, At: mg.queued(src)})
		loading.Series = append(loading.Series, Series{Labels: []Label{{n.model, mg.Model}},
			At: func(t time.Time) Point { return Point{Value: boolValue(src.Ready(inst, t))} }})
	}
	gpuUtil := Family{Name: n.gpu, Help: "GPU utilisation seen by the server, percent.", Type: GaugeType}
	for g := 0; g < src.GPUsPerInstance(); g++ {
		g := g
		gpuUtil.Series = append(gpuUtil.Series, Series{Labels: []Label{{"gpu_id", strconv.Itoa(g)}},
			At: func(t time.Time) Point { return Point{Value: 100 * src.GPUUtilRatio(inst, g, t)} }})
	}
	start := Family{Name: n.start, Help: "Start time of the process since unix epoch in seconds.", Type: GaugeType,
		Series: []Series{{At: processStart(src, inst)}}}

	return []Family{
		requests,
		histFamily(n.latency, "End-to-end inference time in the service (queue + compute).", Latency, LatencyBuckets),
		histFamily(n.queue, "Time a request waits before its batch runs.", QueueTime, LatencyBuckets),
		histFamily(n.compute, "Model execution time of a request's batch.", ComputeTime, LatencyBuckets),
		histFamily(n.gateway, "Upstream time measured at the gateway (service time + network).", GatewayTime, LatencyBuckets),
		histFamily(n.input, "Input length (features or tokens) per request.", InputLength, InputLengthBuckets),
		histFamily(n.batch, "Requests per executed batch.", BatchSize, BatchSizeBuckets),
		confidence,
		fallback,
		lookups,
		hits,
		queueSize,
		running,
		loading,
		gpuUtil,
		start,
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
