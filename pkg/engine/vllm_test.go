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
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// startVLLMBed serves the scenario in vLLM's naming from a real Prometheus, with the profile
// detected from the names it holds.
func startVLLMBed(t *testing.T) bed {
	t.Helper()
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: "vllm"})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.LabelValues(context.Background(), "__name__", nil, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p, det := profile.Detect(names)
	if !det.Found || p.Name != "vllm" {
		t.Fatalf("detected %+v", det)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	return bed{e: &Engine{Prom: c, Profile: p, Present: present, WarmupWindow: 2 * time.Minute}, s: s}
}

// TestVLLMOnRealPrometheus: vLLM's current names answer with the scenario's truth.
//   - split: prefill and decode (testbed.PrefillShare of compute and the rest in steady state)
//     equal the phases' exact window means, add up to compute, and in the compute slowdown
//     decode alone grows: prefill stays at its steady mean;
//   - errors: admission rejections over the requests that arrived, and HTTP 5xx of the
//     inference routes over their answers (the /health route's 5xx left out), equal the
//     counters' exact increases;
//   - warm-up: the restart's load minute is read from vllm:engine_sleep_state (model not ready).
func TestVLLMOnRealPrometheus(t *testing.T) {
	b := startVLLMBed(t)
	t.Run("split phases", func(t *testing.T) { testVLLMPhases(t, b) })
	t.Run("errors", func(t *testing.T) { testVLLMErrors(t, b) })
	t.Run("sleep state", func(t *testing.T) { testVLLMSleepState(t, b) })
	t.Run("KV cache as memory", func(t *testing.T) { testVLLMKVCacheMemory(t, b) })
}

// testVLLMKVCacheMemory: with kvCacheMemory (what the memory alert rules ask for) each GPU's
// memory on a vLLM node is the node's fullest KV cache; without it, GPU memory used.
func testVLLMKVCacheMemory(t *testing.T, b bed) {
	s := b.s
	slow := incident(t, s, testbed.ComputeSlowdown)
	at := slow.Start.Add(10 * time.Minute)
	from, to := at.Add(-5*time.Minute), at
	node := InstanceNode(slow.Instance)
	kv := b.run(t, fmt.Sprintf(`{"queryType":"gpu","metrics":["memory"],"instance":%q,"kvCacheMemory":true}`, slow.Instance), from, to, time.Minute)
	plain := b.run(t, fmt.Sprintf(`{"queryType":"gpu","metrics":["memory"],"instance":%q}`, slow.Instance), from, to, time.Minute)
	want := 0.0
	for _, m := range s.Models() {
		want = math.Max(want, s.KVCacheUsage(slow.Instance, m, at))
	}
	if len(kv.Series) != s.GPUsPerInstance() || len(plain.Series) != len(kv.Series) {
		t.Fatalf("%d series with the KV cache, %d without", len(kv.Series), len(plain.Series))
	}
	for i, sr := range kv.Series {
		last := len(sr.V) - 1
		if sr.Labels["node"] != node || !near(sr.V[last], want, 1e-9) {
			t.Errorf("%v: memory %.6g with the KV cache, want the node's fullest KV cache %.6g", sr.Labels, sr.V[last], want)
		}
		gpu := s.GPU(slow.Instance, i, at).MemUsedRatio
		if p := plain.Series[i]; p.Labels["gpu"] == sr.Labels["gpu"] && math.Abs(p.V[len(p.V)-1]-want) < 1e-6 && math.Abs(gpu-want) > 1e-3 {
			t.Errorf("%v: without kvCacheMemory the memory is the KV cache too", p.Labels)
		}
	}
}

func testVLLMPhases(t *testing.T, b bed) {
	s := b.s
	slow := incident(t, s, testbed.ComputeSlowdown)
	from, to := slow.Start.Add(-30*time.Minute), slow.End.Add(15*time.Minute)
	res := b.run(t, fmt.Sprintf(`{"queryType":"split","model":%q,"instance":%q}`, slow.Model, slow.Instance), from, to, time.Minute)
	l := map[string]string{"model_name": slow.Model}
	pre, dec, comp := pick(t, res, "prefill", l), pick(t, res, "decode", l), pick(t, res, "compute", l)
	preShare := pick(t, res, "prefill_compute_share", l)
	checked := 0
	var steadyPre, slowPre, steadyDec, slowDec float64
	for i, ms := range pre.T {
		ts := msTime(ms)
		wantP := windowMean(s, testbed.Prefill, slow.Instance, slow.Model, "", ts)
		wantD := windowMean(s, testbed.Decode, slow.Instance, slow.Model, "", ts)
		if !near(pre.V[i], wantP, relTol) || !near(dec.V[i], wantD, relTol) {
			t.Errorf("at %s: prefill %.9g decode %.9g, truth %.9g %.9g", ts.Format(time.RFC3339), pre.V[i], dec.V[i], wantP, wantD)
		}
		if !near(pre.V[i]+dec.V[i], comp.V[i], relTol) {
			t.Errorf("at %s: prefill + decode %.9g, compute %.9g", ts.Format(time.RFC3339), pre.V[i]+dec.V[i], comp.V[i])
		}
		switch {
		case ts.Before(slow.Start):
			if !near(preShare.V[i], testbed.PrefillShare, relTol) {
				t.Errorf("steady prefill share of compute at %s: %.9g, want %g", ts.Format(time.RFC3339), preShare.V[i], testbed.PrefillShare)
			}
			steadyPre, steadyDec = pre.V[i], dec.V[i]
		case !ts.Add(-window).Before(slow.Start) && ts.Before(slow.End):
			slowPre, slowDec = pre.V[i], dec.V[i]
		}
		checked++
	}
	if checked < 60 {
		t.Fatalf("%d points checked", checked)
	}
	t.Logf("steady prefill %.4g s decode %.4g s; in the slowdown prefill %.4g s decode %.4g s", steadyPre, steadyDec, slowPre, slowDec)
	// The slowdown grows decode only (the day's latency scale moves prefill by a few per cent).
	if r := slowPre / steadyPre; !(r > 0.9 && r < 1.1) {
		t.Errorf("prefill in the slowdown ×%.3f (%.4g against %.4g)", r, slowPre, steadyPre)
	}
	if r := slowDec / steadyDec; !(r > 3) {
		t.Errorf("decode in the slowdown ×%.3f (%.4g against %.4g)", r, slowDec, steadyDec)
	}
}

func testVLLMErrors(t *testing.T, b bed) {
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	restart := incident(t, s, testbed.WarmupRestart).Start
	from, to := surge.Start.Add(-time.Hour), surge.End.Add(time.Hour)
	if restart.After(from.Add(-window)) && restart.Before(to) {
		t.Fatalf("the restart at %s falls in the checked range", restart)
	}
	for _, inst := range s.Instances() {
		res := b.run(t, fmt.Sprintf(`{"queryType":"errors","instance":%q}`, inst), from, to, time.Minute)
		rejected, http, surgeRejected := 0, 0, 0
		for _, sr := range res.Series {
			model := sr.Labels["model_name"]
			for i, ms := range sr.T {
				ts := msTime(ms)
				inc := func(c testbed.Counter, model string) float64 {
					return s.Increase(c, inst, model, "", ts.Add(-window), ts, time.Minute)
				}
				var want float64
				switch sr.Name {
				case "rejection_ratio":
					want = inc(testbed.Rejections, model) / (inc(testbed.Requests, model) + inc(testbed.Rejections, model))
					rejected++
					if surge.Active(ts.Add(-window)) && model == surge.Model && inst == surge.Instance {
						surgeRejected++
					}
				case "http_error_ratio":
					bad := inc(testbed.HTTPServerErrors, "")
					want = bad / (inc(testbed.HTTPOK, "") + bad)
					http++
				default:
					continue
				}
				if !near(sr.V[i], want, 1e-6) {
					t.Errorf("%s %s %s at %s: %.9g, truth %.9g", inst, model, sr.Name, ts.Format(time.RFC3339), sr.V[i], want)
				}
			}
		}
		t.Logf("%s: %d rejection points (%d in the surge), %d HTTP 5xx points", inst, rejected, surgeRejected, http)
		if rejected == 0 || http == 0 || (inst == surge.Instance && surgeRejected < 20) {
			t.Errorf("%s: %d rejection points, %d HTTP points, %d in the surge", inst, rejected, http, surgeRejected)
		}
	}
	res := b.run(t, fmt.Sprintf(`{"queryType":"errors","instance":%q}`, surge.Instance), from, to, time.Minute)
	notes := ""
	for _, n := range res.Notices {
		notes += n.Text + "\n"
	}
	for _, want := range []string{"refused at admission", "HTTP 5xx answers of the inference endpoints", "finished_reason"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notices lack %q: %s", want, notes)
		}
	}
}

func testVLLMSleepState(t *testing.T, b bed) {
	restart := incident(t, b.s, testbed.WarmupRestart).Start
	res := b.run(t, `{"queryType":"latency","instance":"node-c:8000","model":"recsys-ranker","quantiles":[0.95]}`,
		restart.Add(-20*time.Minute), restart.Add(30*time.Minute), time.Minute)
	if len(res.Warmup) != 1 || !strings.Contains(res.Warmup[0].Reason, "model not ready") || !strings.Contains(res.Warmup[0].Reason, "process restarted") {
		t.Fatalf("warm-up intervals %+v: the load minute should be read from vllm:engine_sleep_state", res.Warmup)
	}
	if w := res.Warmup[0]; w.Start.After(restart) || w.End.Before(restart.Add(testbed.LoadDuration+testbed.WarmupDuration)) {
		t.Errorf("warm-up interval %+v (restart at %s)", w, restart.Format(time.RFC3339))
	}
	if v := pick(t, res, "p95", map[string]string{"model_name": "recsys-ranker"}); !math.IsNaN(v.V[20]) {
		t.Errorf("p95 at the restart: %.4g, want no data", v.V[20])
	}
}
