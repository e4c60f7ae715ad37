package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// Triton as it really exports: per-request series per GPU (gpu_uuid), a response cache on one
// model (hits are successes with queue time and no compute), summaries off for that model, a
// first-response histogram in milliseconds, the vLLM backend's vllm:* with Triton's labels.
// Each naming on a real Prometheus answers with the scenario's truth.

// startTriton starts a Prometheus holding one Triton naming and an engine that detects it.
func startTriton(t *testing.T, naming string) bed {
	t.Helper()
	days := 0 // the naming's default
	if naming == expo.TritonSummaries {
		days = 1 // its request summary's quantiles are the slowest history to compute
	}
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: naming, Days: days})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Config{Prom: c, WarmupWindow: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if e.Profile.Name != "triton" || len(e.Fleet.Servers) != 1 {
		t.Fatalf("%s: detected %s, fleet %+v", naming, e.Profile.Name, e.Fleet.Assignment())
	}
	return bed{e: e, s: s}
}

// tritonTruth is the scenario's mean of segment g over the rate window ending at t, as Triton's
// counters give it: for the cached model, the request time of a hit is its queue time alone.
func tritonTruth(s *testbed.Scenario, g testbed.Segment, inst, model, version string, t time.Time) float64 {
	mean := func(g testbed.Segment) float64 {
		_, n, sum := s.SampledHistogramIncrease(g, inst, model, version, nil, t.Add(-window), t, testbed.DefaultHistoryStep)
		return sum / n
	}
	if g == testbed.E2E && model == expo.TritonCachedModel {
		return mean(testbed.Queue) + (1-expo.TritonCacheHitRatio)*mean(testbed.Compute)
	}
	return mean(g)
}

func tritonLabels(model, version, inst string) map[string]string {
	return map[string]string{"model": model, "version": version, "instance": inst}
}

// TestTritonMeansMatchTruth: on the default configuration (µs counters, GPU instances, the
// response cache on text-embedder) the latency mean, the split's queue and compute and the
// throughput equal the truth for every model version of an instance; the compute mean divides
// by the executed requests (success − cache hits): over all successes it would be 25 % low for
// the cached model.
func TestTritonMeansMatchTruth(t *testing.T) {
	b := startTriton(t, "triton")
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	inst := surge.Instance
	from, to := surge.Start.Add(-20*time.Minute), surge.End.Add(20*time.Minute)
	q := func(typ string) *Result {
		return b.run(t, fmt.Sprintf(`{"queryType":%q,"instance":%q,"by":"instance","warmupFilter":false}`, typ, inst), from, to, time.Minute)
	}
	lat, split, tput := q("latency"), q("split"), q("throughput")
	checked := 0
	for _, model := range s.Models() {
		for _, version := range s.Versions(model) {
			l := tritonLabels(model, version, inst)
			if version != s.StableVersion(model) {
				continue // the canaries run on node-c only
			}
			mean := pick(t, lat, "mean", l)
			queue, compute := pick(t, split, "queue", l), pick(t, split, "compute", l)
			for i, ms := range mean.T {
				ts := msTime(ms)
				if model == surge.Model && (straddlesEdge(surge.Start, ts) || straddlesEdge(surge.End, ts)) {
					// The surge's timeout share changes inside the rate window: Triton's durations
					// count successes only, the truth's mean every request.
					continue
				}
				for _, c := range []struct {
					what string
					got  float64
					g    testbed.Segment
				}{{"mean latency", mean.V[i], testbed.E2E}, {"queue", queue.V[i], testbed.Queue}, {"compute", compute.V[i], testbed.Compute}} {
					if want := tritonTruth(s, c.g, inst, model, version, ts); !near(c.got, want, relTol) {
						t.Errorf("%s %s %s at %s: %.9g, truth %.9g", model, version, c.what, ts.Format(time.RFC3339), c.got, want)
					}
					checked++
				}
				if model == expo.TritonCachedModel {
					// What the mean over every success would show: the hits' missing compute time.
					if old := (1 - expo.TritonCacheHitRatio) * compute.V[i]; near(old, compute.V[i], 0.1) {
						t.Errorf("the cache should make the old compute mean measurably wrong")
					}
				}
			}
		}
	}
	if checked < 2*3*50 {
		t.Errorf("%d points checked", checked)
	}
	for _, se := range tput.Series {
		if se.Name != "qps" {
			continue
		}
		model, version := se.Labels["model"], se.Labels["version"]
		for i, ms := range se.T {
			ts := msTime(ms)
			if want := s.SampledMeanQPS(inst, model, version, ts.Add(-window), ts, testbed.DefaultHistoryStep); !near(se.V[i], want, relTol) {
				t.Errorf("QPS %s %s at %s: %.9g (summed over gpu_uuid), truth %.9g", model, version, ts.Format(time.RFC3339), se.V[i], want)
				break
			}
		}
	}
}

// TestTritonSummariesPerModelAndGPU: with summary_latencies on, recsys-ranker's latency is the
// request summary's quantiles, one series per GPU (they cannot be aggregated, and the notice
// says so), each the scenario's quantile; text-embedder, whose request summary Triton turns
// off with the response cache, gets the mean instead, with a notice naming it. The
// first-response histogram in milliseconds reads as a time to first token in seconds.
func TestTritonSummariesPerModelAndGPU(t *testing.T) {
	b := startTriton(t, expo.TritonSummaries)
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	inst := surge.Instance
	from, to := surge.Start, surge.Start.Add(20*time.Minute)
	res := b.run(t, fmt.Sprintf(`{"queryType":"latency","instance":%q,"quantiles":[0.5,0.95,0.99],"warmupFilter":false}`, inst), from, to, time.Minute)
	var perGPU, fallback bool
	for _, n := range res.Notices {
		perGPU = perGPU || strings.Contains(n.Text, "per GPU (gpu_uuid)")
		fallback = fallback || (strings.Contains(n.Text, expo.TritonCachedModel) && strings.Contains(n.Text, "showing the mean of nv_inference_request_duration_us"))
	}
	if !perGPU || !fallback {
		t.Errorf("notices %v: want the per-GPU and the per-model ones", res.Notices)
	}
	gpus := s.ModelGPUs("recsys-ranker")
	quantiles := 0
	for _, gpu := range gpus {
		l := tritonLabels("recsys-ranker", "v1.4.0", inst)
		l["gpu_uuid"] = testbed.GPUUUID(inst, gpu)
		for _, q := range []float64{0.5, 0.95, 0.99} {
			se := pick(t, res, quantileName(q), l)
			for i, ms := range se.T {
				ts := msTime(ms)
				if want := s.SegmentQuantile(testbed.E2E, inst, "recsys-ranker", "v1.4.0", q, ts); !near(se.V[i], want, relTol) {
					t.Errorf("GPU %d %s at %s: %.9g, truth %.9g", gpu, quantileName(q), ts.Format(time.RFC3339), se.V[i], want)
				}
				quantiles++
			}
		}
	}
	if quantiles != len(gpus)*3*21 {
		t.Errorf("%d quantile points", quantiles)
	}
	emb := s.StableVersion(expo.TritonCachedModel)
	mean := pick(t, res, "mean", map[string]string{"model": expo.TritonCachedModel, "version": emb})
	for i, ms := range mean.T {
		ts := msTime(ms)
		if want := tritonTruth(s, testbed.E2E, inst, expo.TritonCachedModel, emb, ts); !near(mean.V[i], want, relTol) {
			t.Errorf("%s mean at %s: %.9g, truth %.9g", expo.TritonCachedModel, ts.Format(time.RFC3339), mean.V[i], want)
		}
	}
	for _, se := range res.Series {
		if se.Labels["model"] == expo.TritonCachedModel && se.Name != "mean" {
			t.Errorf("%s has a %s series: its request summary is off", expo.TritonCachedModel, se.Name)
		}
	}

	// Time to first token: the histogram is in ms, the role in seconds (Scale 0.001), for the
	// mean and for quantiles alike.
	m, ok, why := b.e.Profile.Resolve(profile.TimeToFirst, b.e.Present)
	if !ok || m.Metrics[0] != "nv_inference_first_response_histogram_ms" {
		t.Fatalf("time to first token: %v %s", m.Metrics, why)
	}
	ttft, why, err := b.e.Reader().RoleReading(context.Background(), RoleQuery{Num: profile.TimeToFirst, Model: "recsys-ranker",
		Instances: []string{inst}, Rate: window, Start: from, End: to, Step: time.Minute})
	if err != nil || len(ttft) != 1 {
		t.Fatalf("time to first token: %v %s %d series", err, why, len(ttft))
	}
	for i, ms := range ttft[0].T {
		ts := msTime(ms)
		// recsys-ranker is not cached: its first response is its whole response.
		if want := tritonTruth(s, testbed.E2E, inst, "recsys-ranker", "", ts); !near(ttft[0].V[i], want, relTol) {
			t.Errorf("TTFT mean at %s: %.9g s, truth %.9g s", ts.Format(time.RFC3339), ttft[0].V[i], want)
		}
	}
	// Batch size: inferences / executions, two counters (a counter ratio), per instance.
	bs, why, err := b.e.Reader().RoleReading(context.Background(), RoleQuery{Num: profile.BatchSize, Model: "recsys-ranker",
		Instances: []string{inst}, Rate: window, Start: from, End: to, Step: time.Minute})
	if err != nil || len(bs) != 1 {
		t.Fatalf("batch size: %v %s %d series", err, why, len(bs))
	}
	checked := 0
	for i, ms := range bs[0].T {
		ts := msTime(ms)
		if ts.Before(from.Add(window)) {
			continue // the rate window still holds the minutes before the surge's batches
		}
		checked++
		if want := s.SegmentMean(testbed.BatchSize, inst, "recsys-ranker", "", ts); !near(bs[0].V[i], want, 0.05) {
			t.Errorf("batch size at %s: %.4g, truth %.4g", ts.Format(time.RFC3339), bs[0].V[i], want)
		}
	}
	if checked < 10 {
		t.Errorf("batch size: %d points checked", checked)
	}
	x, err := b.e.newExec(Common{Instance: []string{inst}, Model: []string{"recsys-ranker"}, Version: []string{"v1.4.0"}}, b.e.Profile, Range{Start: from, End: to, MinStep: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	st, err := x.readLatency(context.Background(), m, []float64{0.5, 0}, x.groupLabels())
	if err != nil || len(st) != 2 {
		t.Fatalf("TTFT statistics: %v, %d", err, len(st))
	}
	bounds := make([]float64, len(expo.TritonFirstResponseBuckets))
	for i, ms := range expo.TritonFirstResponseBuckets {
		bounds[i] = ms / 1000
	}
	for _, sr := range st {
		for i, ms := range sr.T {
			ts := msTime(ms)
			want := tritonTruth(s, testbed.E2E, inst, "recsys-ranker", "v1.4.0", ts)
			if sr.Q == 0.5 {
				cum, n, _ := s.SampledHistogramIncrease(testbed.E2E, inst, "recsys-ranker", "v1.4.0", bounds, ts.Add(-window), ts, testbed.DefaultHistoryStep)
				want = testbed.HistogramQuantile(0.5, bounds, cum, n)
			}
			if i < len(sr.V) && !near(sr.V[i], want, relTol) && !math.IsNaN(sr.V[i]) {
				t.Errorf("TTFT %s at %s: %.9g s, truth %.9g s", quantileName(sr.Q), ts.Format(time.RFC3339), sr.V[i], want)
			}
		}
	}
}

// TestTritonVLLMBackend: a model on Triton's vLLM backend is Triton's (not a vLLM server's), and
// its vllm:* series are read with Triton's labels: running and KV cache usage as the scenario's.
func TestTritonVLLMBackend(t *testing.T) {
	b := startTriton(t, expo.TritonVLLM)
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	inst := surge.Instance
	from, to := surge.Start, surge.Start.Add(20*time.Minute)
	for _, c := range []struct {
		role   profile.Role
		metric string
		truth  func(time.Time) float64
	}{
		{profile.Running, "vllm:num_requests_running", func(ts time.Time) float64 { return s.Running(inst, expo.TritonVLLMModel, "v1.4.0", ts) }},
		{profile.KVCacheUsage, "vllm:kv_cache_usage_perc", func(ts time.Time) float64 { return s.KVCacheUsage(inst, expo.TritonVLLMModel, ts) }},
	} {
		if m, ok, _ := b.e.Profile.Resolve(c.role, b.e.Present); !ok || m.Metrics[0] != c.metric {
			t.Fatalf("%s resolves to %v", c.role, m.Metrics)
		}
		got, why, err := b.e.Reader().RoleReading(context.Background(), RoleQuery{Num: c.role, Model: expo.TritonVLLMModel,
			Instances: []string{inst}, Rate: window, Start: from, End: to, Step: time.Minute})
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %s %d series", c.role, err, why, len(got))
		}
		for i, ms := range got[0].T {
			ts := msTime(ms)
			// One series per version on the instance: node-a serves the stable version only.
			if want := c.truth(ts); !near(got[0].V[i], want, relTol) {
				t.Errorf("%s at %s: %.9g, truth %.9g", c.role, ts.Format(time.RFC3339), got[0].V[i], want)
			}
		}
	}
}

// TestTritonLoadTimeInWarmup: node-c's restart is found from Triton's counter resets, and the
// warm-up interval says how long each model's load took (nv_model_load_duration_secs): the
// scenario's LoadDuration.
func TestTritonLoadTimeInWarmup(t *testing.T) {
	b := startTriton(t, "triton")
	restart := incident(t, b.s, testbed.WarmupRestart).Start
	res := b.run(t, `{"queryType":"latency","instance":"node-c:8000"}`, restart.Add(-20*time.Minute), restart.Add(30*time.Minute), time.Minute)
	if len(res.Warmup) == 0 {
		t.Fatal("no warm-up interval at node-c's restart")
	}
	for _, w := range res.Warmup {
		for _, model := range b.s.Models() {
			if want := fmt.Sprintf("%s %s s", model, formatFloat(testbed.LoadDuration.Seconds())); !strings.Contains(w.Reason, want) ||
				!strings.Contains(w.Reason, "nv_model_load_duration_secs") {
				t.Errorf("warm-up %+v: reason lacks %q", w, want)
			}
		}
	}
}

// straddlesEdge reports whether the rate window ending at t holds the instant e.
func straddlesEdge(e, t time.Time) bool { return e.After(t.Add(-window)) && e.Before(t) }
