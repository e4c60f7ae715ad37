package datasource

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// TestEngineEveryProfileOverGRPC runs every engine query type through the plugin over gRPC for
// every naming the test bed plays (custom, vLLM, Triton, TorchServe, TGI, SGLang), each on its own
// Prometheus, around the queue surge on node-a's recsys-ranker. Numbers are checked against the
// scenario where the profile measures them (quantiles from the profile's own buckets, means
// from µs counters, rates, failure ratios), and a notice must say why where it cannot.
func TestEngineEveryProfileOverGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable and five Prometheus servers")
	}
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	const (
		inst   = "node-a:8000"
		model  = "recsys-ranker"
		window = 5 * time.Minute
	)
	type ratioTruth func(s *testbed.Scenario, t time.Time) float64
	cases := []struct {
		profile     string
		settings    map[string]any
		modelLabel  string
		versionLbl  string            // "" when the server has no version label
		bounds      []float64         // the latency histogram's buckets; nil for µs counters (means only)
		errors      ratioTruth        // what error_ratio measures; nil: not measured
		timeouts    ratioTruth        // nil: not measured
		errorsNote  string            // a notice the errors query must carry
		extraNotice map[string]string // query type → a notice it must carry
		answered    bool              // durations over answered requests, divided by every request (TorchServe)
	}{
		{profile: "custom", modelLabel: "model_name", versionLbl: "model_version", bounds: testbed.LatencyBuckets,
			errors:   func(s *testbed.Scenario, t time.Time) float64 { return s.ErrorRatio(inst, model, "", t) },
			timeouts: func(s *testbed.Scenario, t time.Time) float64 { return s.TimeoutRatio(inst, model, "", t) }},
		{profile: "vllm", modelLabel: "model_name", bounds: expo.VLLMRequestLatencyBuckets,
			errors:     func(s *testbed.Scenario, t time.Time) float64 { return s.ErrorRatio(inst, model, "", t) },
			errorsNote: "vLLM has no timeout counter",
			extraNotice: map[string]string{"latency": "coarse buckets from 0.3 s", "throughput": "",
				"split": "the network segment needs a gateway"}},
		{profile: "triton", modelLabel: "model", versionLbl: "version",
			errors: func(s *testbed.Scenario, t time.Time) float64 {
				return s.ErrorRatio(inst, model, "", t) + s.TimeoutRatio(inst, model, "", t)
			},
			timeouts: func(s *testbed.Scenario, t time.Time) float64 { return s.TimeoutRatio(inst, model, "", t) },
			extraNotice: map[string]string{"latency": "Triton exports cumulative µs counters, not histograms",
				"jitter": "Triton Inference Server exports no latency percentiles"}},
		{profile: "torchserve", modelLabel: "model_name", versionLbl: "model_version",
			errors: func(s *testbed.Scenario, t time.Time) float64 {
				// Host-wide 5xx over all requests of the host: each model's failure share
				// weighted by its requests over the rate window.
				var fails, reqs float64
				for _, m := range s.Models() {
					q := s.MeanQPS(inst, m, "", t.Add(-window), t)
					fails += q * (s.ErrorRatio(inst, m, "", t) + s.TimeoutRatio(inst, m, "", t))
					reqs += q
				}
				return fails / reqs
			},
			errorsNote: "the errors counter carries no model or version label", answered: true,
			extraNotice: map[string]string{"latency": "so under errors the mean is biased low",
				"jitter": "TorchServe exports no latency percentiles"}},
		{profile: "tgi", settings: map[string]any{"modelLabel": expo.TGIModelLabel}, modelLabel: expo.TGIModelLabel, bounds: expo.TGIDurationBuckets,
			errors:      func(s *testbed.Scenario, t time.Time) float64 { return s.ErrorRatio(inst, model, "", t) },
			errorsNote:  "TGI has no timeout counter",
			extraNotice: map[string]string{"baseline": "some of the 7 previous days have no data"}},
		{profile: "sglang", modelLabel: "model_name", bounds: expo.SGLangE2EBuckets,
			timeouts:   func(s *testbed.Scenario, t time.Time) float64 { return s.TimeoutRatio(inst, model, "", t) },
			errorsNote: "SGLang has no failure counter",
			extraNotice: map[string]string{"latency": "default buckets from 0.1 s",
				"split": "SGLang exports no execution-time histogram"}},
	}
	types := []string{"latency", "split", "jitter", "baseline", "throughput", "errors"}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: c.profile})
			srv := promtest.Start(t, promtest.Options{DataDir: dir})
			settings := instanceSettings(t, srv.URL, c.settings, nil)
			settings.UID = "profile-" + c.profile
			pc := plugintest.PluginContext(PluginID, settings)
			surge, _ := s.Incident(testbed.QueueSurge)
			from, to := surge.Start.Add(-30*time.Minute), surge.End.Add(10*time.Minute)
			inside, before := surge.Start.Add(10*time.Minute), surge.Start.Add(-10*time.Minute)
			edge := func(ts time.Time) bool { // the rate window straddles a start or end of the surge (see latency below)
				return c.profile == "triton" && (straddle(surge.Start, ts, window) || straddle(surge.End, ts, window))
			}
			// meanOf is a segment's mean over the rate window ending at ts, as the profile measures
			// it: TorchServe sums the durations of answered requests and divides by every request.
			meanOf := func(g testbed.Segment, ts time.Time) float64 {
				if c.answered {
					return s.AnsweredTotal(g, inst, model, "", ts.Add(-window), ts, 0) / s.Increase(testbed.Requests, inst, model, "", ts.Add(-window), ts, 0)
				}
				_, n, sum := s.HistogramIncrease(g, inst, model, "", nil, ts.Add(-window), ts)
				return sum / n
			}
			var queries []backend.DataQuery
			for _, typ := range types {
				m := map[string]any{"model": model, "instance": inst, "version": "v1.4.0"}
				dq := dataQuery(typ, from, to, time.Minute, m)
				dq.QueryType = typ
				queries = append(queries, dq)
			}
			resp, err := p.QueryData(context.Background(), pc, queries...)
			if err != nil {
				t.Fatal(err)
			}
			labels := map[string]string{c.modelLabel: model}
			if c.versionLbl != "" {
				labels[c.versionLbl] = "v1.4.0"
			}
			notices := map[string]string{}
			for _, typ := range types {
				r := resp.Responses[typ]
				if r.Error != nil {
					t.Fatalf("%s: %v", typ, r.Error)
				}
				var texts []string
				for _, n := range r.Frames[0].Meta.Notices {
					texts = append(texts, n.Text)
				}
				notices[typ] = strings.Join(texts, "\n")
				if c.versionLbl == "" && !strings.Contains(notices[typ], "the version filter is ignored") {
					t.Errorf("%s: no notice that the version filter is ignored: %q", typ, notices[typ])
				}
				if want, ok := c.extraNotice[typ]; ok && !strings.Contains(notices[typ], want) {
					t.Errorf("%s: notices %q, want one containing %q", typ, notices[typ], want)
				}
			}
			frames := func(typ string) []frameSeries { return decodeFrames(t, typ, resp.Responses[typ]) }

			// throughput: the exact mean rate.
			qps := findSeries(t, "throughput", frames("throughput"), "qps", map[string]string{c.modelLabel: model})
			for i, ts := range qps.t {
				if want := s.MeanQPS(inst, model, "", ts.Add(-window), ts); !sameFloat(qps.v[i], want, 1e-9) {
					t.Errorf("throughput at %s: %.9g, truth %.9g", ts.Format(time.RFC3339), qps.v[i], want)
				}
			}

			// latency: quantiles from the profile's buckets, or the mean of µs counters.
			lat := frames("latency")
			if c.bounds != nil {
				p95 := findSeries(t, "latency", lat, "p95", labels)
				for i, ts := range p95.t {
					cum, n, _ := s.HistogramIncrease(testbed.E2E, inst, model, "", c.bounds, ts.Add(-window), ts)
					if want := testbed.HistogramQuantile(0.95, c.bounds, cum, n); !sameFloat(p95.v[i], want, 1e-6) {
						t.Errorf("latency p95 at %s: %.9g, truth %.9g", ts.Format(time.RFC3339), p95.v[i], want)
					}
				}
			} else {
				// Triton records the durations of successful requests only: where the rate window
				// straddles a change of the failure share (the surge's edges), the mean over
				// successes is not the mean over every request.
				if len(lat) != 1 {
					t.Errorf("latency: %d series for µs counters, want the mean alone", len(lat))
				}
				mean := findSeries(t, "latency", lat, "mean", labels)
				for i, ts := range mean.t {
					if want := meanOf(testbed.E2E, ts); !edge(ts) && !sameFloat(mean.v[i], want, 1e-6) {
						t.Errorf("latency mean at %s: %.9g, truth %.9g", ts.Format(time.RFC3339), mean.v[i], want)
					}
				}
			}

			// split: mean queue and compute time; queue-dominated inside the surge.
			split := frames("split")
			for _, seg := range []struct {
				name string
				g    testbed.Segment
			}{{"queue", testbed.Queue}, {"compute", testbed.Compute}} {
				f := findSeries(t, "split", split, seg.name, labels)
				for i, ts := range f.t {
					want := meanOf(seg.g, ts)
					if c.answered && seg.g == testbed.Compute { // inference latency − queue latency
						want = meanOf(testbed.E2E, ts) - meanOf(testbed.Queue, ts)
					}
					if !edge(ts) && !sameFloat(f.v[i], want, 1e-6) {
						t.Errorf("split %s at %s: %.9g, truth %.9g", seg.name, ts.Format(time.RFC3339), f.v[i], want)
					}
				}
			}
			if r := findSeries(t, "split", split, "regime", labels).at(t, inside); r != 1 {
				t.Errorf("split: regime %v inside the surge, want 1", r)
			}

			// jitter: from the buckets where there are some, else nothing but the notice.
			jit := frames("jitter")
			if c.bounds != nil {
				j := findSeries(t, "jitter", jit, "jitter", labels)
				for i, ts := range j.t {
					cum, n, _ := s.HistogramIncrease(testbed.E2E, inst, model, "", c.bounds, ts.Add(-window), ts)
					want := testbed.HistogramQuantile(0.99, c.bounds, cum, n) / testbed.HistogramQuantile(0.5, c.bounds, cum, n)
					if !sameFloat(j.v[i], want, 1e-6) {
						t.Errorf("jitter at %s: %.9g, truth %.9g", ts.Format(time.RFC3339), j.v[i], want)
					}
				}
			} else if len(jit) != 0 {
				t.Errorf("jitter: %d series from µs counters", len(jit))
			}

			// baseline: the profile's own P95 (or mean) against the same window of the previous
			// days the history holds; judged only with at least 3 of them.
			stat := func(u time.Time) float64 {
				if c.bounds == nil {
					return meanOf(testbed.E2E, u)
				}
				cum, n, _ := s.HistogramIncrease(testbed.E2E, inst, model, "", c.bounds, u.Add(-window), u)
				return testbed.HistogramQuantile(0.95, c.bounds, cum, n)
			}
			truthRatio := func(ts time.Time) (float64, int) {
				var means []float64
				for d := 1; d <= 7; d++ {
					center := ts.Add(-time.Duration(d) * 24 * time.Hour)
					if center.Add(-20 * time.Minute).Before(s.End().AddDate(0, 0, -testbed.DefaultTSDBDays(c.profile))) {
						continue
					}
					sum, n := 0.0, 0
					for u := center.Add(-10 * time.Minute); !u.After(center.Add(10 * time.Minute)); u = u.Add(time.Minute) {
						sum += stat(u)
						n++
					}
					means = append(means, sum/float64(n))
				}
				m := 0.0
				for _, x := range means {
					m += x
				}
				return stat(ts) / (m / float64(len(means))), len(means)
			}
			base := frames("baseline")
			ratio, status, days := findSeries(t, "baseline", base, "ratio", labels), findSeries(t, "baseline", base, "status", labels), findSeries(t, "baseline", base, "days", labels)
			for _, ts := range []time.Time{before, inside} {
				want, n := truthRatio(ts)
				wantStatus := 0.0
				switch {
				case n < 3:
				case want > 3:
					wantStatus = 2
				case want > 1.5:
					wantStatus = 1
				}
				if !sameFloat(ratio.at(t, ts), want, 1e-6) || days.at(t, ts) != float64(n) || status.at(t, ts) != wantStatus {
					t.Errorf("baseline at %s: ratio %.6g days %v status %v, truth %.6g over %d days, status %v",
						ts.Format(time.RFC3339), ratio.at(t, ts), days.at(t, ts), status.at(t, ts), want, n, wantStatus)
				}
			}

			// errors: the failure ratios the profile measures.
			errs := frames("errors")
			errLabels := labels
			if c.errorsNote == "the errors counter carries no model or version label" {
				errLabels = nil
			}
			hasErrors, hasTimeouts := false, false
			for _, f := range errs {
				hasErrors = hasErrors || f.labels["series"] == "error_ratio"
				hasTimeouts = hasTimeouts || f.labels["series"] == "timeout_ratio"
			}
			if c.errors != nil {
				er := findSeries(t, "errors", errs, "error_ratio", errLabels)
				if want := c.errors(s, inside); !sameFloat(er.at(t, inside), want, 1e-9) {
					t.Errorf("error ratio inside the surge: %.9g, truth %.9g", er.at(t, inside), want)
				}
			} else if hasErrors {
				t.Error("an error ratio from a profile without errors")
			}
			if c.timeouts != nil {
				to := findSeries(t, "errors", errs, "timeout_ratio", labels)
				if want := c.timeouts(s, inside); !sameFloat(to.at(t, inside), want, 1e-9) {
					t.Errorf("timeout ratio inside the surge: %.9g, truth %.9g", to.at(t, inside), want)
				}
			} else if hasTimeouts {
				t.Error("a timeout ratio from a profile without timeouts")
			}
			if c.errorsNote != "" && !strings.Contains(notices["errors"], c.errorsNote) {
				t.Errorf("errors: notices %q, want %q", notices["errors"], c.errorsNote)
			}
		})
	}
	if p.Exited() {
		t.Error("the plugin process exited")
	}
}

// straddle reports whether the window (t − w, t) holds the instant e.
func straddle(e, t time.Time, w time.Duration) bool { return e.After(t.Add(-w)) && e.Before(t) }
