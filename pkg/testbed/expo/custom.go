package expo

import (
	"strconv"
	"time"
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
//	inference_queue_size{model_name}                             gauge
//	model_loading_status{model_name}                             gauge (1 ready, 0 loading)
//	inference_gpu_util_percent{gpu_id}                           gauge (0-100)
//	process_start_time_seconds                                   gauge
type custom struct{}

func init() { register(custom{}) }

// Bucket layouts of the custom profile.
var (
	LatencyBuckets     = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	InputLengthBuckets = []float64{16, 32, 64, 128, 256, 512, 1024, 2048}
	BatchSizeBuckets   = []float64{1, 2, 4, 8, 16, 32, 64}
)

func (custom) Name() string { return "custom" }

func (custom) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: customFamilies(src, inst)})
	}
	return out
}

func customFamilies(src Source, inst string) []Family {
	streams := src.Streams(inst)
	var models []string
	seen := map[string]bool{}
	for _, st := range streams {
		if !seen[st.Model] {
			seen[st.Model] = true
			models = append(models, st.Model)
		}
	}
	mv := func(st Stream, extra ...Label) []Label {
		return append([]Label{{"model_name", st.Model}, {"model_version", st.Version}}, extra...)
	}
	counter := func(st Stream, c Counter) func(time.Time) Point {
		return func(t time.Time) Point { return Point{Value: src.Count(st, c, t)} }
	}
	hist := func(st Stream, m Measure, bounds []float64) func(time.Time) Point {
		return func(t time.Time) Point {
			cum, n, sum := src.Histogram(st, m, bounds, t)
			return Point{Buckets: cum, Count: n, Sum: sum}
		}
	}

	requests := Family{Name: "inference_requests_total", Help: "Inference requests by outcome.", Type: CounterType}
	fallback := Family{Name: "inference_fallback_total", Help: "Requests answered by the fallback path.", Type: CounterType}
	for _, st := range streams {
		for _, s := range []struct {
			status string
			c      Counter
		}{{"ok", RequestsOK}, {"error", Errors}, {"timeout", Timeouts}} {
			requests.Series = append(requests.Series, Series{Labels: mv(st, Label{"status", s.status}), Since: st.Since, At: counter(st, s.c)})
		}
		fallback.Series = append(fallback.Series, Series{Labels: mv(st), Since: st.Since, At: counter(st, Fallbacks)})
	}
	histFamily := func(name, help string, m Measure, bounds []float64) Family {
		f := Family{Name: name, Help: help, Type: HistogramType, Bounds: bounds}
		for _, st := range streams {
			f.Series = append(f.Series, Series{Labels: mv(st), Since: st.Since, At: hist(st, m, bounds)})
		}
		return f
	}
	confidence := Family{Name: "inference_prediction_confidence", Help: "Confidence of the returned prediction.", Type: SummaryType}
	for _, st := range streams {
		confidence.Series = append(confidence.Series, Series{Labels: mv(st), Since: st.Since, At: hist(st, Confidence, nil)})
	}

	queueSize := Family{Name: "inference_queue_size", Help: "Requests waiting for a batch slot.", Type: GaugeType}
	loading := Family{Name: "model_loading_status", Help: "1 when the model is loaded and serving, 0 while loading.", Type: GaugeType}
	for _, m := range models {
		m := m
		queueSize.Series = append(queueSize.Series, Series{Labels: []Label{{"model_name", m}},
			At: func(t time.Time) Point { return Point{Value: src.QueueDepth(inst, m, t)} }})
		loading.Series = append(loading.Series, Series{Labels: []Label{{"model_name", m}},
			At: func(t time.Time) Point { return Point{Value: boolValue(src.Ready(inst, t))} }})
	}
	gpuUtil := Family{Name: "inference_gpu_util_percent", Help: "GPU utilisation seen by the server, percent.", Type: GaugeType}
	for g := 0; g < src.GPUsPerInstance(); g++ {
		g := g
		gpuUtil.Series = append(gpuUtil.Series, Series{Labels: []Label{{"gpu_id", strconv.Itoa(g)}},
			At: func(t time.Time) Point { return Point{Value: 100 * src.GPUUtilRatio(inst, g, t)} }})
	}
	start := Family{Name: "process_start_time_seconds", Help: "Start time of the process since unix epoch in seconds.", Type: GaugeType,
		Series: []Series{{At: func(t time.Time) Point {
			st := src.ProcessStart(inst, t)
			if st.IsZero() {
				return Point{}
			}
			return Point{Value: float64(st.UnixNano()) / 1e9}
		}}}}

	return []Family{
		requests,
		histFamily("inference_latency_seconds", "End-to-end inference time in the service (queue + compute).", Latency, LatencyBuckets),
		histFamily("inference_queue_seconds", "Time a request waits before its batch runs.", QueueTime, LatencyBuckets),
		histFamily("inference_compute_seconds", "Model execution time of a request's batch.", ComputeTime, LatencyBuckets),
		histFamily("inference_gateway_upstream_seconds", "Upstream time measured at the gateway (service time + network).", GatewayTime, LatencyBuckets),
		histFamily("inference_input_length", "Input length (features or tokens) per request.", InputLength, InputLengthBuckets),
		histFamily("inference_batch_size", "Requests per executed batch.", BatchSize, BatchSizeBuckets),
		confidence,
		fallback,
		queueSize,
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
