package expo

import (
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The triton profile is Triton Inference Server's metrics endpoint (v2.71) with its default
// metrics configuration: cumulative microsecond counters, no histograms and no summaries. Each
// model runs as GPU instances on the scenario's GPUs for it (ModelGPUs), so its per-request
// series carry gpu_uuid: GPU k of n holds the share (k+1)/(n(n+1)/2) of every count and
// duration, and the sums over gpu_uuid are the scenario's numbers exactly. The pending count
// carries no gpu_uuid, the load duration neither.
//
// TritonCachedModel runs with the response cache on: TritonCacheHitRatio of its successful
// requests are hits. A hit counts as a success and records its queue time, but no compute time
// and no inference or execution, so for that model
//
//	request duration = queue total + (1 − h) × compute total
//	compute duration = (1 − h) × compute total: its mean over the executed requests
//	                   (success − hits) is the scenario's compute mean
//
// and the other models have no cache series at all. Durations and request_success count
// successful requests only; request = queue + compute_input + compute_infer + compute_output
// exactly (no server overhead), compute split 5/88/7 %.
//
//	nv_inference_request_success{model,version,gpu_uuid}                  counter (ok)
//	nv_inference_request_failure{model,version,gpu_uuid,reason}           counter: BACKEND (errors),
//	                                                                      REJECTED (timeouts), CANCELED, OTHER (0)
//	nv_inference_count / nv_inference_exec_count{model,version,gpu_uuid}  counters: requests, batches
//	nv_inference_pending_request_count{model,version}                     gauge
//	nv_inference_request_duration_us{model,version,gpu_uuid}              counter, µs
//	nv_inference_queue_duration_us{…}                                     counter, µs
//	nv_inference_compute_{input,infer,output}_duration_us{…}              counters, µs
//	nv_cache_num_hits_per_model / _misses_per_model{…}                    counters (TritonCachedModel only)
//	nv_model_load_duration_secs{model,version}                            gauge, s (after the first load)
//	nv_gpu_utilization{gpu_uuid}                                          gauge, 0..1
//
// Its variants (VariantNames) are the same server with other settings:
//
//	triton-summaries  --metrics-config summary_latencies=true and histogram_latencies=true:
//	                  nv_inference_request_summary_us (not for TritonCachedModel: Triton turns it
//	                  off with the response cache) and nv_inference_queue_summary_us, quantiles
//	                  TritonSummaryObjectives of the scenario's continuous distribution, per GPU;
//	                  nv_inference_first_response_histogram_ms over TritonFirstResponseBuckets (ms)
//	triton-vllm       TritonVLLMModel served by the vLLM backend: vllm:* series with Triton's
//	                  model and version labels (running, waiting, KV cache, time to first token,
//	                  inter-token latency, end-to-end latency)
type triton struct {
	n   tritonNames
	cfg tritonConfig
}

type tritonNames struct {
	model, version                         string
	success, failure                       string
	rejected                               Label
	inferences, executions, pending        string
	request, queue                         string
	computeInput, computeInfer, computeOut string
	hits, misses, gpuUtil                  string
	requestSummary, queueSummary           string
	firstResponse, loadTime                string
	vllmRunning, vllmKV, vllmTTFT, vllmITL string
	vllmWaiting, vllmE2E                   string
}

// tritonConfig is what a Triton variant turns on.
type tritonConfig struct {
	name       string
	summaries  bool // summary_latencies=true
	histograms bool // histogram_latencies=true
	vllm       bool // TritonVLLMModel on the vLLM backend
}

// Triton's variants.
const (
	TritonSummaries = "triton-summaries"
	TritonVLLM      = "triton-vllm"
)

// The triton namings' response cache, vLLM-backend model and summary and histogram layouts.
const (
	TritonCachedModel   = "text-embedder"
	TritonCacheHitRatio = 0.25
	TritonVLLMModel     = "recsys-ranker"
)

var (
	// TritonSummaryObjectives are Triton's summary quantiles.
	TritonSummaryObjectives = []float64{0.5, 0.9, 0.95, 0.99, 0.999}
	// TritonFirstResponseBuckets are Triton's default first-response buckets, in milliseconds.
	TritonFirstResponseBuckets = []float64{100, 500, 2000, 5000}
)

// variants are namings of one server under other settings, kept apart from ProfileNames.
var variants = map[string]Profile{}

// VariantNames lists the variant namings.
func VariantNames() []string {
	out := make([]string, 0, len(variants))
	for n := range variants {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// VariantsOf lists the variant namings of a profile's server ("triton-summaries" for "triton").
func VariantsOf(profileName string) []string {
	var out []string
	for _, n := range VariantNames() {
		if strings.HasPrefix(n, profileName+"-") {
			out = append(out, n)
		}
	}
	return out
}

// computeSplit is the share of compute time in each of Triton's compute phases.
var computeSplit = [3]float64{0.05, 0.88, 0.07}

func init() {
	n := profileNames("triton")
	failure := n.metric(profile.Errors, profile.Counter)
	batch := n.measure(profile.BatchSize, profile.CounterRatio)
	latency := n.measure(profile.Latency, profile.MicrosecondCounter)
	compute := n.measure(profile.ComputeTime, profile.MicrosecondCounter)
	tr := tritonNames{
		model:          n.label("model", n.p.ModelLabel),
		version:        n.label("version", n.p.VersionLabel),
		success:        n.other(profile.Requests, profile.Counter, failure),
		failure:        failure,
		rejected:       n.matcher(profile.Timeouts, profile.Counter),
		inferences:     batch.Metrics[0],
		executions:     batch.Count[0],
		pending:        n.metric(profile.QueueDepth, profile.Gauge),
		request:        latency.Metrics[0],
		queue:          n.metric(profile.QueueTime, profile.MicrosecondCounter),
		hits:           n.metric(profile.CacheHits, profile.Counter),
		gpuUtil:        n.metric(profile.GPUUtil, profile.Gauge),
		requestSummary: n.metric(profile.Latency, profile.Summary),
		queueSummary:   n.metric(profile.QueueTime, profile.Summary),
		firstResponse:  n.metric(profile.TimeToFirst, profile.Histogram),
		vllmRunning:    n.metric(profile.Running, profile.Gauge),
		vllmKV:         n.metric(profile.KVCacheUsage, profile.Gauge),
		vllmITL:        n.metric(profile.InterToken, profile.Histogram),
		vllmWaiting:    "vllm:num_requests_waiting",
		vllmE2E:        "vllm:e2e_request_latency_seconds",
	}
	if ms, _ := n.p.Measures(profile.TimeToFirst); len(ms) > 1 {
		tr.vllmTTFT = ms[1].Metrics[0]
	}
	if len(n.p.LoadTime.Metrics) == 1 {
		tr.loadTime = n.p.LoadTime.Metrics[0]
	} else {
		n.errs = append(n.errs, "the profile has no load-time gauge")
	}
	tr.misses = n.other(profile.CacheQueries, profile.Counter, tr.hits)
	if len(compute.Metrics) == 3 {
		tr.computeInput, tr.computeInfer, tr.computeOut = compute.Metrics[0], compute.Metrics[1], compute.Metrics[2]
	} else {
		n.errs = append(n.errs, "compute time must be three µs counters (input, infer, output)")
	}
	if latency.Count[0] != tr.success {
		n.errs = append(n.errs, "latency must divide by the success counter")
	}
	if len(compute.CountMinus) != 1 || compute.CountMinus[0] != tr.hits {
		n.errs = append(n.errs, "the compute mean must divide by success − cache hits")
	}
	if n.p.DeviceLabel != "gpu_uuid" {
		n.errs = append(n.errs, "the profile's device label must be gpu_uuid")
	}
	err := n.err()
	register(triton{n: tr, cfg: tritonConfig{name: "triton"}}, err)
	for _, c := range []tritonConfig{{name: TritonSummaries, summaries: true, histograms: true}, {name: TritonVLLM, vllm: true}} {
		variants[c.name] = triton{n: tr, cfg: c}
		if err != nil {
			brokenErr[c.name] = err
		}
	}
}

func (tr triton) Name() string { return tr.cfg.name }

func (tr triton) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: tr.families(src, inst)})
	}
	return out
}

// cachedModel reports whether a model (in the fleet: a server's copy of it) has the response
// cache on.
func cachedModel(model string) bool { return sameModel(model, TritonCachedModel) }

func sameModel(model, name string) bool { return model == name || strings.HasSuffix(model, "-"+name) }

// tritonGroup is one model version of an instance, spread over its GPUs.
type tritonGroup struct {
	group
	labels []Label // model, version
	uuids  []string
	shares []float64
	cached bool
}

// tritonGroups lists an instance's groups with their GPUs and shares.
func (tr triton) tritonGroups(src Source, inst string) []tritonGroup {
	var out []tritonGroup
	for _, g := range groups(src, inst, true) {
		tg := tritonGroup{group: g, labels: []Label{{tr.n.model, g.Model}, {tr.n.version, g.Version}}, cached: cachedModel(g.Model)}
		gpus := src.ModelGPUs(g.Model)
		total := float64(len(gpus)*(len(gpus)+1)) / 2
		for k, gpu := range gpus {
			tg.uuids = append(tg.uuids, src.GPUUUID(inst, gpu))
			tg.shares = append(tg.shares, float64(k+1)/total)
		}
		out = append(out, tg)
	}
	return out
}

// perGPU writes one series per GPU of the group, each the share of at's counts and sums
// (quantiles are the same on every GPU).
func (g tritonGroup) perGPU(at func(time.Time) Point, extra ...Label) []Series {
	out := make([]Series, len(g.uuids))
	for k, uuid := range g.uuids {
		share := g.shares[k]
		labels := append(append(append([]Label(nil), g.labels...), Label{"gpu_uuid", uuid}), extra...)
		out[k] = Series{Labels: labels, Since: g.Since, At: func(t time.Time) Point {
			p := at(t)
			p.Value *= share
			p.Count *= share
			p.Sum *= share
			if p.Buckets != nil {
				b := make([]float64, len(p.Buckets))
				for i := range b {
					b[i] = p.Buckets[i] * share
				}
				p.Buckets = b
			}
			return p
		}}
	}
	return out
}

// keep scales a cumulative value by the share of requests that were not cache hits.
func keep(cached bool, at func(time.Time) Point) func(time.Time) Point {
	if !cached {
		return at
	}
	return func(t time.Time) Point {
		p := at(t)
		p.Value *= 1 - TritonCacheHitRatio
		return p
	}
}

func (tr triton) families(src Source, inst string) []Family {
	n := tr.n
	gs := tr.tritonGroups(src, inst)
	perGPU := func(name, help string, typ Type, at func(tritonGroup) func(time.Time) Point) Family {
		f := Family{Name: name, Help: help, Type: typ}
		for _, g := range gs {
			f.Series = append(f.Series, g.perGPU(at(g))...)
		}
		return f
	}
	micros := func(name, help string, m Measure, share float64, executed bool) Family {
		return perGPU(name, help, CounterType, func(g tritonGroup) func(time.Time) Point {
			return keep(executed && g.cached, g.total(src, m, RequestsOK, 1e6*share))
		})
	}
	request := perGPU(n.request, "Cumulative inference request duration in microseconds (includes cached requests)", CounterType,
		func(g tritonGroup) func(time.Time) Point {
			if !g.cached {
				return g.total(src, Latency, RequestsOK, 1e6)
			}
			queue, comp := g.total(src, QueueTime, RequestsOK, 1e6), g.total(src, ComputeTime, RequestsOK, 1e6)
			return func(t time.Time) Point {
				return Point{Value: queue(t).Value + (1-TritonCacheHitRatio)*comp(t).Value}
			}
		})
	pending := Family{Name: n.pending, Help: "Instantaneous number of pending requests awaiting execution per-model.", Type: GaugeType}
	for _, g := range gs {
		pending.Series = append(pending.Series, Series{Labels: g.labels, Since: g.Since, At: g.queued(src)})
	}
	out := []Family{
		perGPU(n.success, "Number of successful inference requests, all batch sizes", CounterType, func(g tritonGroup) func(time.Time) Point { return g.count(src, RequestsOK) }),
		tr.failures(src, gs),
		perGPU(n.inferences, "Number of inferences performed (does not include cached requests)", CounterType, func(g tritonGroup) func(time.Time) Point {
			return keep(g.cached, g.count(src, Requests))
		}),
		perGPU(n.executions, "Number of model executions performed (does not include cached requests)", CounterType, func(g tritonGroup) func(time.Time) Point {
			return keep(g.cached, g.count(src, Batches))
		}),
		pending,
		request,
		micros(n.queue, "Cumulative inference queuing duration in microseconds (includes cached requests)", QueueTime, 1, false),
		micros(n.computeInput, "Cumulative compute input duration in microseconds (does not include cached requests)", ComputeTime, computeSplit[0], true),
		micros(n.computeInfer, "Cumulative compute inference duration in microseconds (does not include cached requests)", ComputeTime, computeSplit[1], true),
		micros(n.computeOut, "Cumulative inference compute output duration in microseconds (does not include cached requests)", ComputeTime, computeSplit[2], true),
	}
	out = append(out, tr.cacheFamilies(src, gs)...)
	out = append(out, tr.loadTimes(src, inst, gs), tr.gpuUtil(src, inst))
	if tr.cfg.summaries {
		out = append(out, tr.summaries(src, gs)...)
	}
	if tr.cfg.histograms {
		out = append(out, tr.firstResponse(src, gs))
	}
	if tr.cfg.vllm {
		out = append(out, tr.vllmBackend(src, inst, gs)...)
	}
	return out
}

func (tr triton) failures(src Source, gs []tritonGroup) Family {
	n := tr.n
	f := Family{Name: n.failure, Help: "Number of failed inference requests, all batch sizes", Type: CounterType}
	zero := func(time.Time) Point { return Point{} }
	for _, g := range gs {
		for _, r := range []struct {
			reason string
			at     func(time.Time) Point
		}{{n.rejected.Value, g.count(src, Timeouts)}, {"CANCELED", zero}, {"BACKEND", g.count(src, Errors)}, {"OTHER", zero}} {
			f.Series = append(f.Series, g.perGPU(r.at, Label{n.rejected.Name, r.reason})...)
		}
	}
	return f
}

// cacheFamilies are the response cache's counters, for the cached model only: every request
// looks the cache up, TritonCacheHitRatio of the successful ones hit.
func (tr triton) cacheFamilies(src Source, gs []tritonGroup) []Family {
	hits := Family{Name: tr.n.hits, Help: "Number of response cache hits per model", Type: CounterType}
	misses := Family{Name: tr.n.misses, Help: "Number of response cache misses per model", Type: CounterType}
	for _, g := range gs {
		if !g.cached {
			continue
		}
		ok, all := g.count(src, RequestsOK), g.count(src, Requests)
		hits.Series = append(hits.Series, g.perGPU(func(t time.Time) Point { return Point{Value: TritonCacheHitRatio * ok(t).Value} })...)
		misses.Series = append(misses.Series, g.perGPU(func(t time.Time) Point {
			return Point{Value: all(t).Value - TritonCacheHitRatio*ok(t).Value}
		})...)
	}
	return []Family{hits, misses}
}

// loadTimes is nv_model_load_duration_secs: how long the model's last load took, from the
// process start to the first ready instant; absent until the first load completes.
func (tr triton) loadTimes(src Source, inst string, gs []tritonGroup) Family {
	f := Family{Name: tr.n.loadTime, Help: "Model load time in seconds", Type: GaugeType}
	for _, g := range gs {
		f.Series = append(f.Series, Series{Labels: g.labels, Since: g.Since, At: func(t time.Time) Point {
			d, ok := lastLoad(src, inst, t)
			if !ok {
				return Point{Absent: true}
			}
			return Point{Value: d.Seconds()}
		}})
	}
	return f
}

// lastLoad is how long the load after the process start before t took (to the millisecond),
// when it has completed by t.
func lastLoad(src Source, inst string, t time.Time) (time.Duration, bool) {
	start := src.ProcessStart(inst, t)
	if start.IsZero() || !src.Ready(inst, t) {
		return 0, false
	}
	lo, hi := time.Duration(0), t.Sub(start) // not ready before lo (or lo = 0), ready at hi
	if src.Ready(inst, start) {
		return 0, true
	}
	for hi-lo > time.Millisecond {
		mid := lo + (hi-lo)/2
		if src.Ready(inst, start.Add(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

func (tr triton) gpuUtil(src Source, inst string) Family {
	f := Family{Name: tr.n.gpuUtil, Help: "GPU utilization rate [0.0 - 1.0)", Type: GaugeType}
	for i := 0; i < src.GPUsPerInstance(); i++ {
		gpu := i
		f.Series = append(f.Series, Series{Labels: []Label{{"gpu_uuid", src.GPUUUID(inst, gpu)}},
			At: func(t time.Time) Point { return Point{Value: src.GPUUtilRatio(inst, gpu, t)} }})
	}
	return f
}

// summaries are the request and queue summaries (summary_latencies=true): per GPU, quantiles of
// the scenario's continuous distribution at t in µs, _sum and _count over successful requests.
// The cached model has no request summary.
func (tr triton) summaries(src Source, gs []tritonGroup) []Family {
	sum := func(name, help string, m Measure, skipCached bool) Family {
		f := Family{Name: name, Help: help, Type: SummaryType, Objectives: TritonSummaryObjectives}
		for _, g := range gs {
			if skipCached && g.cached {
				continue
			}
			total, count := g.total(src, m, RequestsOK, 1e6), g.count(src, RequestsOK)
			st := g.streams[0]
			quantiles := lastAt(func(t time.Time) []float64 { // the same on every GPU: computed once
				out := make([]float64, len(TritonSummaryObjectives))
				for i, q := range TritonSummaryObjectives {
					out[i] = 1e6 * src.Quantile(st, m, q, t)
				}
				return out
			})
			f.Series = append(f.Series, g.perGPU(func(t time.Time) Point {
				return Point{Count: count(t).Value, Sum: total(t).Value, Quantiles: quantiles(t)}
			})...)
		}
		return f
	}
	return []Family{
		sum(tr.n.requestSummary, "Summary of inference request duration in microseconds (includes cached requests)", Latency, true),
		sum(tr.n.queueSummary, "Summary of inference queuing duration in microseconds (includes cached requests)", QueueTime, false),
	}
}

// lastAt remembers f's answers (the GPUs of a group are written one after the other, each
// asking for the same instants), up to a bound; safe for concurrent use.
func lastAt(f func(time.Time) []float64) func(time.Time) []float64 {
	const bound = 1 << 17
	var mu sync.Mutex
	memo := map[int64][]float64{}
	return func(t time.Time) []float64 {
		k := t.UnixNano()
		mu.Lock()
		v, ok := memo[k]
		mu.Unlock()
		if ok {
			return v
		}
		v = f(t)
		mu.Lock()
		if len(memo) >= bound {
			clear(memo)
		}
		memo[k] = v
		mu.Unlock()
		return v
	}
}

// firstResponse is the first-response histogram (histogram_latencies=true) in milliseconds: a
// request's first response is its whole response (no model here is decoupled), a cache hit's
// after its queue time alone.
func (tr triton) firstResponse(src Source, gs []tritonGroup) Family {
	bounds := make([]float64, len(TritonFirstResponseBuckets))
	for i, b := range TritonFirstResponseBuckets {
		bounds[i] = b / 1000
	}
	f := Family{Name: tr.n.firstResponse, Help: "Duration from request to first response in milliseconds", Type: HistogramType,
		Bounds: TritonFirstResponseBuckets}
	for _, g := range gs {
		e2e, queue, cached := g.histogram(src, Latency, bounds), g.histogram(src, QueueTime, bounds), g.cached
		f.Series = append(f.Series, g.perGPU(func(t time.Time) Point {
			p := e2e(t)
			if cached {
				q := queue(t)
				for i := range p.Buckets {
					p.Buckets[i] = (1-TritonCacheHitRatio)*p.Buckets[i] + TritonCacheHitRatio*q.Buckets[i]
				}
				p.Count = (1-TritonCacheHitRatio)*p.Count + TritonCacheHitRatio*q.Count
				p.Sum = (1-TritonCacheHitRatio)*p.Sum + TritonCacheHitRatio*q.Sum
			}
			p.Sum *= 1000
			return p
		})...)
	}
	return f
}

// vllmBackend is what Triton's vLLM backend adds for TritonVLLMModel, with Triton's model and
// version labels and no gpu_uuid (one engine per model instance).
func (tr triton) vllmBackend(src Source, inst string, gs []tritonGroup) []Family {
	n := tr.n
	gauge := func(name, help string, at func(tritonGroup) func(time.Time) Point) Family {
		f := Family{Name: name, Help: help, Type: GaugeType}
		for _, g := range gs {
			if sameModel(g.Model, TritonVLLMModel) {
				f.Series = append(f.Series, Series{Labels: g.labels, Since: g.Since, At: at(g)})
			}
		}
		return f
	}
	hist := func(name, help string, m Measure, bounds []float64, empty bool) Family {
		f := gauge(name, help, func(g tritonGroup) func(time.Time) Point {
			if empty {
				return emptyHistogram(bounds)
			}
			return g.histogram(src, m, bounds)
		})
		f.Type, f.Bounds = HistogramType, bounds
		return f
	}
	return []Family{
		gauge(n.vllmRunning, "Number of requests currently running on GPU.", func(g tritonGroup) func(time.Time) Point { return g.running(src) }),
		gauge(n.vllmWaiting, "Number of requests waiting to be processed.", func(g tritonGroup) func(time.Time) Point { return g.queued(src) }),
		gauge(n.vllmKV, "GPU KV-cache usage. 1 means 100 percent usage.", func(g tritonGroup) func(time.Time) Point {
			model := g.Model
			return func(t time.Time) Point { return Point{Value: src.KVCacheUsage(inst, model, t)} }
		}),
		hist(n.vllmTTFT, "Histogram of time to first token in seconds.", Latency, VLLMTTFTBuckets, false),
		hist(n.vllmITL, "Histogram of inter-token latency in seconds.", Latency, VLLMInterTokenBuckets, true),
		hist(n.vllmE2E, "Histogram of end to end request latency in seconds.", Latency, VLLMRequestLatencyBuckets, false),
	}
}
