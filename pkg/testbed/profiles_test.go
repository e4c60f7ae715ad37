package testbed_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// Each engine's naming, imported into a real Prometheus, answers that engine's key queries with
// the scenario's truth. Counter rates and bucket-interpolated quantiles are exact up to float
// rounding (1e-9): the truth applies Prometheus' formulas to the same expected counts. Gauges
// are read at a history sample, so they are exact too.

const exact = 1e-9

// instants: an ordinary instant on node-a (the queue surge's time of day, a day earlier), the
// surge itself, and the compute slowdown on node-b, all on the history's minute grid.
type instant struct {
	name, instance, model string
	at                    time.Time
}

func instants(t *testing.T, s *testbed.Scenario) []instant {
	surge := mustIncident(t, s, testbed.QueueSurge)
	slow := mustIncident(t, s, testbed.ComputeSlowdown)
	return []instant{
		{"ordinary", surge.Instance, surge.Model, surge.Start.Add(15*time.Minute - 24*time.Hour)},
		{"queue surge", surge.Instance, surge.Model, surge.Start.Add(15 * time.Minute)},
		{"compute slowdown", slow.Instance, slow.Model, slow.Start.Add(20 * time.Minute)},
	}
}

// meanTruth is what rate(x_sum)/rate(x_count) (or a µs counter over a request counter) gives
// over [from, to].
func meanTruth(s *testbed.Scenario, g testbed.Segment, instance, model, version string, from, to time.Time) float64 {
	_, n, sum := s.SampledHistogramIncrease(g, instance, model, version, nil, from, to, testbed.DefaultHistoryStep)
	return sum / n
}

// quantileTruth is histogram_quantile over a naming's buckets.
func quantileTruth(s *testbed.Scenario, g testbed.Segment, instance, model string, bounds []float64, q float64, from, to time.Time) float64 {
	cum, n, _ := s.SampledHistogramIncrease(g, instance, model, "", bounds, from, to, testbed.DefaultHistoryStep)
	return testbed.HistogramQuantile(q, bounds, cum, n)
}

func increaseRatio(s *testbed.Scenario, num, den testbed.Counter, instance, model, version string, from, to time.Time) float64 {
	step := testbed.DefaultHistoryStep
	return s.Increase(num, instance, model, version, from, to, step) / s.Increase(den, instance, model, version, from, to, step)
}

func TestVLLMHistoryInPrometheus(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: "vllm"})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	p99 := map[string]float64{}
	for _, c := range instants(t, s) {
		from := c.at.Add(-window)
		sel := fmt.Sprintf(`model_name=%q,instance=%q`, c.model, c.instance)
		q := func(expr string) float64 { return scalar(t, srv.URL, expr, c.at) }

		within(t, c.name+": QPS", q(`sum(rate(vllm:request_success_total{`+sel+`}[5m]))`),
			s.SampledMeanQPS(c.instance, c.model, "", from, c.at, testbed.DefaultHistoryStep), exact)
		within(t, c.name+": error ratio", q(`sum(rate(vllm:request_success_total{`+sel+`,finished_reason="error"}[5m])) / sum(rate(vllm:request_success_total{`+sel+`}[5m]))`),
			increaseRatio(s, testbed.Errors, testbed.Requests, c.instance, c.model, "", from, c.at), exact)
		p99[c.name] = q(`histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket{` + sel + `}[5m])))`)
		within(t, c.name+": e2e P99 over vLLM's buckets", p99[c.name],
			quantileTruth(s, testbed.E2E, c.instance, c.model, expo.VLLMRequestLatencyBuckets, 0.99, from, c.at), exact)
		within(t, c.name+": queue P95 over vLLM's buckets", q(`histogram_quantile(0.95, sum by (le) (rate(vllm:request_queue_time_seconds_bucket{`+sel+`}[5m])))`),
			quantileTruth(s, testbed.Queue, c.instance, c.model, expo.VLLMRequestLatencyBuckets, 0.95, from, c.at), exact)
		ttft := q(`histogram_quantile(0.5, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{` + sel + `}[5m])))`)
		within(t, c.name+": TTFT P50", ttft, quantileTruth(s, testbed.E2E, c.instance, c.model, expo.VLLMTTFTBuckets, 0.5, from, c.at), exact)
		// The TTFT buckets are fine enough to land near the continuous median.
		within(t, c.name+": TTFT P50 vs continuous truth", ttft, s.LatencyQuantile(c.instance, c.model, "", 0.5, c.at), 0.25)
		within(t, c.name+": mean inference time", q(`sum(rate(vllm:request_inference_time_seconds_sum{`+sel+`}[5m])) / sum(rate(vllm:request_inference_time_seconds_count{`+sel+`}[5m]))`),
			meanTruth(s, testbed.Compute, c.instance, c.model, "", from, c.at), exact)
		hit := q(`sum(rate(vllm:prefix_cache_hits_total{` + sel + `}[5m])) / sum(rate(vllm:prefix_cache_queries_total{` + sel + `}[5m]))`)
		within(t, c.name+": prefix cache hit ratio", hit, increaseRatio(s, testbed.CachedTokens, testbed.PromptTokens, c.instance, c.model, "", from, c.at), exact)
		within(t, c.name+": prefix cache hit ratio vs instant truth", hit, s.CacheHitRatio(c.instance, c.model, "", c.at), 1e-9)
		within(t, c.name+": running", q(`sum(vllm:num_requests_running{`+sel+`})`), s.Running(c.instance, c.model, "", c.at), exact)
		within(t, c.name+": waiting", q(`sum(vllm:num_requests_waiting{`+sel+`})`), s.QueueDepth(c.instance, c.model, c.at), exact)
		within(t, c.name+": KV cache usage", q(`sum(vllm:kv_cache_usage_perc{`+sel+`})`), s.KVCacheUsage(c.instance, c.model, c.at), exact)
		preempt := q(`sum(rate(vllm:num_preemptions_total{` + sel + `}[5m])) / sum(rate(vllm:request_success_total{` + sel + `}[5m]))`)
		if c.name == "compute slowdown" {
			within(t, c.name+": preemptions per request", preempt, increaseRatio(s, testbed.Preemptions, testbed.Requests, c.instance, c.model, "", from, c.at), exact)
		} else if preempt != 0 {
			t.Errorf("%s: preemptions %v, want none", c.name, preempt)
		}
	}
	// vLLM's first bucket is 0.3 s: ordinary millisecond requests interpolate inside it, the
	// slowdown's reallocation tail (350 ms) crosses it.
	if p99["ordinary"] >= 0.3 || p99["compute slowdown"] <= 0.3 {
		t.Errorf("e2e P99: ordinary %v (want < 0.3 s), slowdown %v (want > 0.3 s)", p99["ordinary"], p99["compute slowdown"])
	}
	// One series set per model and instance: the canary's version has no label of its own.
	if v := scalar(t, srv.URL, `count(vllm:e2e_request_latency_seconds_count{instance="node-c:8000"})`, end); v != 2 {
		t.Errorf("node-c: %v vLLM series sets, want one per model", v)
	}
}

func TestTritonHistoryInPrometheus(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: "triton", GPUNaming: testbed.GPUNamingDCGM})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	for _, c := range instants(t, s) {
		from := c.at.Add(-window)
		version := s.StableVersion(c.model)
		sel := fmt.Sprintf(`model=%q,version=%q,instance=%q`, c.model, version, c.instance)
		q := func(expr string) float64 { return scalar(t, srv.URL, expr, c.at) }
		rate := func(metric string) string { return `sum(rate(` + metric + `{` + sel + `}[5m]))` }

		within(t, c.name+": QPS = success + failure", q(rate("nv_inference_request_success")+" + "+rate("nv_inference_request_failure")),
			s.SampledMeanQPS(c.instance, c.model, version, from, c.at, testbed.DefaultHistoryStep), exact)
		// Triton's mean latency: the µs counter over the success counter.
		within(t, c.name+": mean request time", q(rate("nv_inference_request_duration_us")+" / "+rate("nv_inference_request_success")+" / 1e6"),
			meanTruth(s, testbed.E2E, c.instance, c.model, version, from, c.at), exact)
		within(t, c.name+": mean queue time", q(rate("nv_inference_queue_duration_us")+" / "+rate("nv_inference_request_success")+" / 1e6"),
			meanTruth(s, testbed.Queue, c.instance, c.model, version, from, c.at), exact)
		within(t, c.name+": mean compute time", q("("+rate("nv_inference_compute_input_duration_us")+" + "+rate("nv_inference_compute_infer_duration_us")+
			" + "+rate("nv_inference_compute_output_duration_us")+") / "+rate("nv_inference_request_success")+" / 1e6"),
			meanTruth(s, testbed.Compute, c.instance, c.model, version, from, c.at), exact)
		within(t, c.name+": batch size", q(rate("nv_inference_count")+" / "+rate("nv_inference_exec_count")),
			increaseRatio(s, testbed.Requests, testbed.Batches, c.instance, c.model, version, from, c.at), exact)
		within(t, c.name+": rejected (timeouts) ratio", q(`sum(rate(nv_inference_request_failure{`+sel+`,reason="REJECTED"}[5m])) / (`+
			rate("nv_inference_request_success")+" + "+rate("nv_inference_request_failure")+")"),
			increaseRatio(s, testbed.Timeouts, testbed.Requests, c.instance, c.model, version, from, c.at), exact)
		within(t, c.name+": pending requests", q(`sum(nv_inference_pending_request_count{model="`+c.model+`",instance="`+c.instance+`"})`),
			s.QueueDepth(c.instance, c.model, c.at), exact)
	}
	// The canary is a version of its own.
	slowCanary := mustIncident(t, s, testbed.CanarySlower)
	at := slowCanary.Start.Add(time.Hour)
	sel := fmt.Sprintf(`model=%q,instance=%q`, slowCanary.Model, slowCanary.Instance)
	canary := scalar(t, srv.URL, `sum(rate(nv_inference_request_duration_us{`+sel+`,version="v1.5.0"}[5m])) / sum(rate(nv_inference_request_success{`+sel+`,version="v1.5.0"}[5m]))`, at)
	stable := scalar(t, srv.URL, `sum(rate(nv_inference_request_duration_us{`+sel+`,version="v1.4.0"}[5m])) / sum(rate(nv_inference_request_success{`+sel+`,version="v1.4.0"}[5m]))`, at)
	within(t, "canary / stable mean latency", canary/stable, 1.15, 1e-6)

	// Triton's own GPU metric, per gpu_uuid, and the dcgm-exporter naming of the probes.
	idle := mustIncident(t, s, testbed.GPUIdle)
	mid := idle.Start.Add(idle.End.Sub(idle.Start) / 2).Truncate(time.Minute)
	gpu := idle.GPUs[0]
	if v := scalar(t, srv.URL, fmt.Sprintf(`nv_gpu_utilization{instance=%q,gpu_uuid=%q}`, idle.Instance, testbed.GPUUUID(idle.Instance, gpu)), mid); v != 0 {
		t.Errorf("Triton's GPU utilisation of the idle GPU: %v", v)
	}
	node := testbed.Node(idle.Instance)
	probe := fmt.Sprintf(`job=%q,instance=%q,node=%q,hostname=%q,gpu="%d",UUID=%q`, testbed.ProbeJob, testbed.ProbeInstance(idle.Instance), node, node, gpu, testbed.GPUUUID(idle.Instance, gpu))
	if v := scalar(t, srv.URL, `DCGM_FI_DEV_GPU_UTIL{`+probe+`,modelName="NVIDIA A100-SXM4-40GB",pod="inference-3",namespace="inference"}`, mid); v != 0 {
		t.Errorf("dcgm utilisation of the idle GPU: %v%%", v)
	}
	if v := scalar(t, srv.URL, `DCGM_FI_DEV_XID_ERRORS{`+probe+`}`, mid); v != 43 {
		t.Errorf("dcgm last XID of the idle GPU: %v, want 43", v)
	}
	if v := scalar(t, srv.URL, `DCGM_FI_DEV_GPU_UTIL{`+probe+`}`, idle.Start.Add(-time.Hour)); math.Abs(v-math.Round(100*s.GPU(idle.Instance, gpu, idle.Start.Add(-time.Hour)).UtilRatio)) > 0 || v == 0 {
		t.Errorf("dcgm utilisation before the incident: %v%%", v)
	}
	slow := mustIncident(t, s, testbed.ComputeSlowdown)
	at = slow.Start.Add(20 * time.Minute)
	for _, g := range slow.GPUs {
		sel := fmt.Sprintf(`node=%q,gpu="%d"`, testbed.Node(slow.Instance), g)
		used := scalar(t, srv.URL, `DCGM_FI_DEV_FB_USED{`+sel+`} / DCGM_FI_DEV_FB_TOTAL{`+sel+`}`, at)
		// FB_USED is in whole MiB: 1 MiB of 40 GiB is 2.4e-5.
		within(t, fmt.Sprintf("slowdown GPU %d: dcgm memory used", g), used, s.GPU(slow.Instance, g, at).MemUsedRatio, 1e-4)
		if used < 0.92 {
			t.Errorf("slowdown GPU %d: memory %v, want near full", g, used)
		}
	}
	if res := promQuery(t, srv.URL, `{__name__=~"inferscope_gpu_.*"}`, at); len(res) != 0 {
		t.Errorf("the dcgm variant holds inferscope GPU series: %d", len(res))
	}
}

func TestTorchServeHistoryInPrometheus(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: "torchserve"})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	for _, c := range instants(t, s) {
		from := c.at.Add(-window)
		sel := fmt.Sprintf(`model_name=%q,instance=%q`, c.model, c.instance)
		q := func(expr string) float64 { return scalar(t, srv.URL, expr, c.at) }
		rate := func(metric, sel string) string { return `sum(rate(` + metric + `{` + sel + `}[5m]))` }

		within(t, c.name+": QPS", q(rate("ts_inference_requests_total", sel)), s.SampledMeanQPS(c.instance, c.model, "", from, c.at, testbed.DefaultHistoryStep), exact)
		// The durations count answered requests only, the request counter every request: the
		// mean is biased low by the failed share.
		step := testbed.DefaultHistoryStep
		answered := func(g testbed.Segment) float64 {
			return s.AnsweredTotal(g, c.instance, c.model, "", from, c.at, step) / s.Increase(testbed.Requests, c.instance, c.model, "", from, c.at, step)
		}
		mean := q(rate("ts_inference_latency_microseconds", sel) + " / " + rate("ts_inference_requests_total", sel) + " / 1e6")
		within(t, c.name+": mean latency over answered requests", mean, answered(testbed.E2E), exact)
		failed := increaseRatio(s, testbed.Errors, testbed.Requests, c.instance, c.model, "", from, c.at) +
			increaseRatio(s, testbed.Timeouts, testbed.Requests, c.instance, c.model, "", from, c.at)
		within(t, c.name+": biased low by the failed share", mean, meanTruth(s, testbed.E2E, c.instance, c.model, "", from, c.at)*(1-failed), 1e-6)
		if !(failed > 0) || !(mean < meanTruth(s, testbed.E2E, c.instance, c.model, "", from, c.at)) {
			t.Errorf("%s: failed share %v, mean %v: want a failed share and a mean below the true one", c.name, failed, mean)
		}
		within(t, c.name+": mean compute = latency - queue", q("("+rate("ts_inference_latency_microseconds", sel)+" - "+rate("ts_queue_latency_microseconds", sel)+") / "+rate("ts_inference_requests_total", sel)+" / 1e6"),
			answered(testbed.E2E)-answered(testbed.Queue), 1e-6)
		inst := fmt.Sprintf(`instance=%q`, c.instance)
		within(t, c.name+": host 5xx ratio", q(rate("Requests5XX", inst)+" / "+rate("ts_inference_requests_total", inst)),
			(s.Increase(testbed.Errors, c.instance, "", "", from, c.at, testbed.DefaultHistoryStep)+s.Increase(testbed.Timeouts, c.instance, "", "", from, c.at, testbed.DefaultHistoryStep))/
				s.Increase(testbed.Requests, c.instance, "", "", from, c.at, testbed.DefaultHistoryStep), exact)
	}
	idle := mustIncident(t, s, testbed.GPUIdle)
	mid := idle.Start.Add(idle.End.Sub(idle.Start) / 2).Truncate(time.Minute)
	if v := scalar(t, srv.URL, fmt.Sprintf(`GPUUtilization{Hostname=%q,DeviceId="%d"}`, testbed.Node(idle.Instance), idle.GPUs[0]), mid); v != 0 {
		t.Errorf("TorchServe GPU utilisation of the idle GPU: %v%%", v)
	}
}

func TestTGIHistoryInPrometheus(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: "tgi"})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	for _, c := range instants(t, s) {
		from := c.at.Add(-window)
		sel := fmt.Sprintf(`%s=%q,instance=%q`, expo.TGIModelLabel, c.model, c.instance)
		q := func(expr string) float64 { return scalar(t, srv.URL, expr, c.at) }

		within(t, c.name+": QPS", q(`sum(rate(tgi_request_count{`+sel+`}[5m]))`), s.SampledMeanQPS(c.instance, c.model, "", from, c.at, testbed.DefaultHistoryStep), exact)
		for _, h := range []struct {
			metric string
			g      testbed.Segment
			q      float64
		}{{"tgi_request_duration", testbed.E2E, 0.99}, {"tgi_request_queue_duration", testbed.Queue, 0.95}, {"tgi_request_inference_duration", testbed.Compute, 0.5}} {
			got := q(fmt.Sprintf(`histogram_quantile(%g, sum by (le) (rate(%s_bucket{%s}[5m])))`, h.q, h.metric, sel))
			within(t, fmt.Sprintf("%s: %s P%g", c.name, h.metric, 100*h.q), got, quantileTruth(s, h.g, c.instance, c.model, expo.TGIDurationBuckets, h.q, from, c.at), exact)
			// Geometric buckets 1.5x apart keep interpolation within 20 % of the continuous quantile.
			within(t, fmt.Sprintf("%s: %s P%g vs continuous truth", c.name, h.metric, 100*h.q), got, s.SegmentQuantile(h.g, c.instance, c.model, "", h.q, c.at), 0.2)
		}
		within(t, c.name+": queue size", q(`sum(tgi_queue_size{`+sel+`})`), s.QueueDepth(c.instance, c.model, c.at), exact)
		within(t, c.name+": batch size (running)", q(`sum(tgi_batch_current_size{`+sel+`})`), s.Running(c.instance, c.model, "", c.at), exact)
	}
}

// The restart edge: at node-c's restart the sample already shows the new process's count, so
// the requests the old process served after its last sample are lost to Prometheus. rate()
// over a window holding the restart equals SampledMeanQPS, and MeanQPS (every request served)
// is higher by those lost requests.
func TestRestartEdgeRate(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	warm := mustIncident(t, s, testbed.WarmupRestart)
	sel := fmt.Sprintf(`instance=%q`, warm.Instance)
	for _, at := range []time.Time{warm.Start, warm.Start.Add(2 * time.Minute), warm.Start.Add(4 * time.Minute)} {
		from := at.Add(-window)
		got := scalar(t, srv.URL, `sum(rate(inference_requests_total{`+sel+`}[5m]))`, at)
		sampled := s.SampledMeanQPS(warm.Instance, "", "", from, at, testbed.DefaultHistoryStep)
		within(t, "rate() at restart +"+at.Sub(warm.Start).String(), got, sampled, exact)
		if all := s.MeanQPS(warm.Instance, "", "", from, at); all < sampled*1.05 {
			t.Errorf("+%s: every request served %v/s, sampled %v/s: the lost minute should show", at.Sub(warm.Start), all, sampled)
		}
	}
	// Away from restarts the two agree.
	at := warm.Start.Add(-time.Hour)
	if a, b := s.MeanQPS(warm.Instance, "", "", at.Add(-window), at), s.SampledMeanQPS(warm.Instance, "", "", at.Add(-window), at, testbed.DefaultHistoryStep); a != b {
		t.Errorf("no restart in the window: MeanQPS %v, SampledMeanQPS %v", a, b)
	}
}

// SGLang's naming: histograms over SGLang's default buckets, compute as e2e − queue over the
// e2e count, aborted requests as timeouts, the token counters' prefix-cache hit ratio, and the
// scheduler's gauges (with tp_rank, pp_rank, moe_ep_rank, summed away).
func TestSGLangHistoryInPrometheus(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: "sglang"})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	for _, c := range instants(t, s) {
		from := c.at.Add(-window)
		sel := fmt.Sprintf(`model_name=%q,instance=%q`, c.model, c.instance)
		q := func(expr string) float64 { return scalar(t, srv.URL, expr, c.at) }
		rate := func(metric string) string { return `sum(rate(` + metric + `{` + sel + `}[5m]))` }

		within(t, c.name+": QPS", q(rate("sglang:num_requests_total")), s.SampledMeanQPS(c.instance, c.model, "", from, c.at, testbed.DefaultHistoryStep), exact)
		within(t, c.name+": aborted (timeout) ratio", q(rate("sglang:num_aborted_requests_total")+" / "+rate("sglang:num_requests_total")),
			increaseRatio(s, testbed.Timeouts, testbed.Requests, c.instance, c.model, "", from, c.at), exact)
		for _, h := range []struct {
			metric string
			g      testbed.Segment
			bounds []float64
			q      float64
		}{
			{"sglang:e2e_request_latency_seconds", testbed.E2E, expo.SGLangE2EBuckets, 0.99},
			{"sglang:time_to_first_token_seconds", testbed.E2E, expo.SGLangTTFTBuckets, 0.5},
			{"sglang:queue_time_seconds", testbed.Queue, expo.SGLangQueueTimeBuckets, 0.95},
		} {
			got := q(fmt.Sprintf(`histogram_quantile(%g, sum by (le) (rate(%s_bucket{%s}[5m])))`, h.q, h.metric, sel))
			within(t, fmt.Sprintf("%s: %s P%g", c.name, h.metric, 100*h.q), got, quantileTruth(s, h.g, c.instance, c.model, h.bounds, h.q, from, c.at), exact)
		}
		within(t, c.name+": mean compute = e2e - queue", q("("+rate("sglang:e2e_request_latency_seconds_sum")+" - "+rate("sglang:queue_time_seconds_sum")+") / "+
			rate("sglang:e2e_request_latency_seconds_count")), meanTruth(s, testbed.Compute, c.instance, c.model, "", from, c.at), 1e-6)
		hit := q(rate("sglang:cached_tokens_total") + " / " + rate("sglang:prompt_tokens_total"))
		within(t, c.name+": prefix cache hit ratio", hit, increaseRatio(s, testbed.CachedTokens, testbed.PromptTokens, c.instance, c.model, "", from, c.at), exact)
		within(t, c.name+": running", q(`sum(sglang:num_running_reqs{`+sel+`,priority=""})`), s.Running(c.instance, c.model, "", c.at), exact)
		within(t, c.name+": queued", q(`sum(sglang:num_queue_reqs{`+sel+`,priority=""})`), s.QueueDepth(c.instance, c.model, c.at), exact)
		within(t, c.name+": token usage", q(`sum(sglang:token_usage{`+sel+`})`), s.KVCacheUsage(c.instance, c.model, c.at), exact)
		retracted := q(rate("sglang:num_retracted_requests_total") + " / " + rate("sglang:num_requests_total"))
		if c.name == "compute slowdown" {
			within(t, c.name+": retractions per request", retracted, increaseRatio(s, testbed.Preemptions, testbed.Requests, c.instance, c.model, "", from, c.at), exact)
		} else if retracted != 0 {
			t.Errorf("%s: retractions %v, want none", c.name, retracted)
		}
	}
	// The scheduler's series carry its ranks; one series set per model and instance.
	if v := scalar(t, srv.URL, `count(sglang:queue_time_seconds_count{instance="node-c:8000",tp_rank="0",pp_rank="0",engine_type="unified"})`, end); v != 2 {
		t.Errorf("node-c: %v SGLang scheduler series sets, want one per model", v)
	}
}
