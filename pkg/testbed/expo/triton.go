package expo

import (
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The triton profile is Triton Inference Server's metrics endpoint with its default
// configuration: cumulative microsecond counters, no histograms and no summaries, and the
// response cache enabled but never hit (every input is new). Durations and request_success
// count successful requests only, so rate(duration)/rate(success) is the mean latency of
// answered requests; request = queue + compute_input + compute_infer + compute_output exactly
// (no server overhead), compute split 5/88/7 %.
//
//	nv_inference_request_success{model,version}                 counter (ok)
//	nv_inference_request_failure{model,version,reason}          counter: BACKEND (errors), REJECTED
//	                                                            (timeouts), CANCELED and OTHER (0)
//	nv_inference_count / nv_inference_exec_count{model,version} counters: requests, batches
//	nv_inference_pending_request_count{model,version}           gauge
//	nv_inference_request_duration_us{model,version}             counter, µs
//	nv_inference_queue_duration_us{…}                           counter, µs
//	nv_inference_compute_{input,infer,output}_duration_us{…}    counters, µs
//	nv_cache_num_hits_per_model / nv_cache_num_misses_per_model counters
//	nv_gpu_utilization{gpu_uuid}                                gauge, 0..1
type triton struct{ n tritonNames }

type tritonNames struct {
	model, version                         string
	success, failure                       string
	rejected                               Label
	inferences, executions, pending        string
	request, queue                         string
	computeInput, computeInfer, computeOut string
	hits, misses, gpuUtil                  string
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
		model:      n.label("model", n.p.ModelLabel),
		version:    n.label("version", n.p.VersionLabel),
		success:    n.other(profile.Requests, profile.Counter, failure),
		failure:    failure,
		rejected:   n.matcher(profile.Timeouts, profile.Counter),
		inferences: batch.Metrics[0],
		executions: batch.Count[0],
		pending:    n.metric(profile.QueueDepth, profile.Gauge),
		request:    latency.Metrics[0],
		queue:      n.metric(profile.QueueTime, profile.MicrosecondCounter),
		hits:       n.metric(profile.CacheHits, profile.Counter),
		gpuUtil:    n.metric(profile.GPUUtil, profile.Gauge),
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
	register(triton{tr}, n.err())
}

func (triton) Name() string { return "triton" }

func (tr triton) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: tr.families(src, inst)})
	}
	return out
}

func (tr triton) families(src Source, inst string) []Family {
	n := tr.n
	gs := groups(src, inst, true)
	labels := func(g group, extra ...Label) []Label {
		return append([]Label{{n.model, g.Model}, {n.version, g.Version}}, extra...)
	}
	perGroup := func(name, help string, typ Type, at func(group) func(time.Time) Point) Family {
		f := Family{Name: name, Help: help, Type: typ}
		for _, g := range gs {
			f.Series = append(f.Series, Series{Labels: labels(g), Since: g.Since, At: at(g)})
		}
		return f
	}
	micros := func(name, help string, m Measure, share float64) Family {
		return perGroup(name, help, CounterType, func(g group) func(time.Time) Point { return g.total(src, m, RequestsOK, 1e6*share) })
	}

	failure := Family{Name: n.failure, Help: "Number of failed inference requests, all batch sizes", Type: CounterType}
	zero := func(time.Time) Point { return Point{} }
	for _, g := range gs {
		for _, r := range []struct {
			reason string
			at     func(time.Time) Point
		}{{n.rejected.Value, g.count(src, Timeouts)}, {"CANCELED", zero}, {"BACKEND", g.count(src, Errors)}, {"OTHER", zero}} {
			failure.Series = append(failure.Series, Series{Labels: labels(g, Label{n.rejected.Name, r.reason}), Since: g.Since, At: r.at})
		}
	}
	gpuUtil := Family{Name: n.gpuUtil, Help: "GPU utilization rate [0.0 - 1.0)", Type: GaugeType}
	for i := 0; i < src.GPUsPerInstance(); i++ {
		gpu := i
		gpuUtil.Series = append(gpuUtil.Series, Series{Labels: []Label{{"gpu_uuid", src.GPUUUID(inst, gpu)}},
			At: func(t time.Time) Point { return Point{Value: src.GPUUtilRatio(inst, gpu, t)} }})
	}

	return []Family{
		perGroup(n.success, "Number of successful inference requests, all batch sizes", CounterType, func(g group) func(time.Time) Point { return g.count(src, RequestsOK) }),
		failure,
		perGroup(n.inferences, "Number of inferences performed (does not include cached requests)", CounterType, func(g group) func(time.Time) Point { return g.count(src, Requests) }),
		perGroup(n.executions, "Number of model executions performed (does not include cached requests)", CounterType, func(g group) func(time.Time) Point { return g.count(src, Batches) }),
		perGroup(n.pending, "Instantaneous number of pending requests awaiting execution per-model.", GaugeType, func(g group) func(time.Time) Point { return g.queued(src) }),
		micros(n.request, "Cumulative inference request duration in microseconds (includes cached requests)", Latency, 1),
		micros(n.queue, "Cumulative inference queuing duration in microseconds (includes cached requests)", QueueTime, 1),
		micros(n.computeInput, "Cumulative compute input duration in microseconds (does not include cached requests)", ComputeTime, computeSplit[0]),
		micros(n.computeInfer, "Cumulative compute inference duration in microseconds (does not include cached requests)", ComputeTime, computeSplit[1]),
		micros(n.computeOut, "Cumulative inference compute output duration in microseconds (does not include cached requests)", ComputeTime, computeSplit[2]),
		perGroup(n.hits, "Number of response cache hits per model", CounterType, func(group) func(time.Time) Point { return zero }),
		perGroup(n.misses, "Number of response cache misses per model", CounterType, func(g group) func(time.Time) Point { return g.count(src, Requests) }),
		gpuUtil,
	}
}
