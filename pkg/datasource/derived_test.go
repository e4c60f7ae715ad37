package datasource

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/testbed"
)

// frameSeries is one frame of an engine answer, decoded.
type frameSeries struct {
	labels data.Labels
	config *data.FieldConfig
	t      []time.Time
	v      []float64 // NaN for null
}

func decodeFrames(t *testing.T, ref string, r backend.DataResponse) []frameSeries {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("%s: %v", ref, r.Error)
	}
	var out []frameSeries
	for _, f := range r.Frames {
		if f.Meta == nil || f.Meta.Type != data.FrameTypeTimeSeriesMulti || f.Meta.TypeVersion != (data.FrameTypeVersion{0, 1}) {
			t.Fatalf("%s: frame meta %+v", ref, f.Meta)
		}
		if f.RefID != ref {
			t.Errorf("%s: frame refId %q", ref, f.RefID)
		}
		if len(f.Fields) == 0 {
			continue
		}
		if len(f.Fields) != 2 || f.Fields[0].Type() != data.FieldTypeTime || f.Fields[1].Type() != data.FieldTypeNullableFloat64 {
			t.Fatalf("%s: fields %v", ref, f.Fields)
		}
		fs := frameSeries{labels: f.Fields[1].Labels, config: f.Fields[1].Config}
		for i := 0; i < f.Rows(); i++ {
			fs.t = append(fs.t, f.Fields[0].At(i).(time.Time))
			v := math.NaN()
			if p := f.Fields[1].At(i).(*float64); p != nil {
				v = *p
			}
			fs.v = append(fs.v, v)
		}
		out = append(out, fs)
	}
	return out
}

func findSeries(t *testing.T, ref string, fs []frameSeries, name string, labels map[string]string) frameSeries {
	t.Helper()
	for _, f := range fs {
		if f.labels["series"] != name {
			continue
		}
		ok := true
		for k, v := range labels {
			if f.labels[k] != v {
				ok = false
			}
		}
		if ok {
			return f
		}
	}
	t.Fatalf("%s: no %s series with %v", ref, name, labels)
	return frameSeries{}
}

func (f frameSeries) at(t *testing.T, ts time.Time) float64 {
	t.Helper()
	for i, x := range f.t {
		if x.Equal(ts) {
			return f.v[i]
		}
	}
	t.Fatalf("no point at %s", ts.Format(time.RFC3339))
	return math.NaN()
}

func sameFloat(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// TestEngineQueryTypesOverGRPC runs every engine query type through the built plugin over the
// gRPC plugin protocol against the test bed's Prometheus, and checks the frames (types, units,
// display names, thresholds, value mappings, notices) and their numbers against the scenario.
func TestEngineQueryTypesOverGRPC(t *testing.T) {
	p, pc, s := startPluginOnBed(t, nil)
	ctx := context.Background()

	surge, _ := s.Incident(testbed.QueueSurge)
	restart, _ := s.Incident(testbed.WarmupRestart)
	from, to := surge.Start.Add(-30*time.Minute), surge.End.Add(30*time.Minute)
	const window = 5 * time.Minute
	sel := map[string]any{"model": "recsys-ranker", "version": "v1.4.0", "instance": "node-a:8000"}
	q := func(ref, typ string, from, to time.Time, step time.Duration, extra map[string]any) backend.DataQuery {
		m := map[string]any{"refId": ref}
		for k, v := range sel {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		dq := dataQuery(ref, from, to, step, m)
		dq.QueryType = typ
		return dq
	}
	resp, err := p.QueryData(ctx, pc,
		q("latency", "latency", from, to, time.Minute, map[string]any{"quantiles": []float64{0.5, 0.95}}),
		q("split", "split", from, to, time.Minute, nil),
		q("jitter", "jitter", from, to, time.Minute, nil),
		q("baseline", "baseline", from, to, time.Minute, nil),
		q("throughput", "throughput", s.End().Add(-24*time.Hour), s.End(), window, map[string]any{"by": "instance", "instance": nil, "model": nil, "version": nil, "warmupFilter": false}),
		q("errors", "errors", from, to, time.Minute, nil),
		q("warmup", "latency", restart.Start.Add(-10*time.Minute), restart.Start.Add(20*time.Minute), time.Minute,
			map[string]any{"instance": "node-c:8000|node-b:8000", "quantiles": []float64{0.95}}),
		q("bad", "baseline", from, to, time.Minute, map[string]any{"quantile": 1.5}),
	)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"model_name": "recsys-ranker", "model_version": "v1.4.0"}
	inside := surge.Start.Add(10 * time.Minute)
	before := surge.Start.Add(-10 * time.Minute)

	// latency: P50 and P95 equal the scenario's bucket quantiles over the rate window.
	lat := decodeFrames(t, "latency", resp.Responses["latency"])
	if len(lat) != 2 {
		t.Fatalf("latency: %d frames", len(lat))
	}
	for _, qn := range []struct {
		name string
		q    float64
	}{{"p50", 0.5}, {"p95", 0.95}} {
		f := findSeries(t, "latency", lat, qn.name, labels)
		if f.config.Unit != "s" || f.config.DisplayNameFromDS != "recsys-ranker v1.4.0 "+qn.name {
			t.Errorf("latency %s: config %+v", qn.name, f.config)
		}
		for i, ts := range f.t {
			want := s.BucketQuantile(testbed.E2E, "node-a:8000", "recsys-ranker", "v1.4.0", qn.q, ts.Add(-window), ts)
			if !sameFloat(f.v[i], want, 1e-6) {
				t.Errorf("latency %s at %s: %.9g, truth %.9g", qn.name, ts.Format(time.RFC3339), f.v[i], want)
			}
		}
	}

	// split: queue-dominated during the surge, with the regime's value mapping.
	split := decodeFrames(t, "split", resp.Responses["split"])
	regime := findSeries(t, "split", split, "regime", labels)
	if got := regime.at(t, inside); got != 1 {
		t.Errorf("split: regime %v inside the surge, want 1 (queue-dominated)", got)
	}
	mj, _ := json.Marshal(regime.config.Mappings)
	if !strings.Contains(string(mj), `"1":{"text":"queue-dominated"`) || !strings.Contains(string(mj), `"2":{"text":"compute-dominated"`) {
		t.Errorf("split: regime mappings %s", mj)
	}
	if share := findSeries(t, "split", split, "queue_share", labels); share.config.Unit != "percentunit" || share.at(t, inside) < 0.5 {
		t.Errorf("split: queue share %v (%s)", share.at(t, inside), share.config.Unit)
	}

	// jitter: the 5x line in the field config, crossed inside the surge only.
	jit := findSeries(t, "jitter", decodeFrames(t, "jitter", resp.Responses["jitter"]), "jitter", labels)
	th := jit.config.Thresholds
	if th == nil || th.Mode != data.ThresholdsModeAbsolute || len(th.Steps) != 2 || float64(th.Steps[1].Value) != 5 {
		t.Errorf("jitter: thresholds %+v", th)
	}
	if jit.at(t, inside) <= 5 || jit.at(t, before) >= 5 {
		t.Errorf("jitter: %.3g inside the surge, %.3g before", jit.at(t, inside), jit.at(t, before))
	}

	// baseline: P0 inside the surge, ok before; ratio thresholds 1.5 and 3.
	base := decodeFrames(t, "baseline", resp.Responses["baseline"])
	status := findSeries(t, "baseline", base, "status", labels)
	ratio := findSeries(t, "baseline", base, "ratio", labels)
	if status.at(t, inside) != 2 || status.at(t, before) != 0 || math.Abs(ratio.at(t, before)-1) > 0.05 || ratio.at(t, inside) <= 3 {
		t.Errorf("baseline: status %v/%v, ratio %.3g/%.3g (before/inside)", status.at(t, before), status.at(t, inside), ratio.at(t, before), ratio.at(t, inside))
	}
	if ts := ratio.config.Thresholds; ts == nil || len(ts.Steps) != 3 || float64(ts.Steps[1].Value) != 1.5 || float64(ts.Steps[2].Value) != 3 || ts.Steps[2].Color != "red" {
		t.Errorf("baseline: ratio thresholds %+v", ts)
	}
	if days := findSeries(t, "baseline", base, "days", labels); days.at(t, inside) != 7 {
		t.Errorf("baseline: %v days with data", days.at(t, inside))
	}

	// throughput: per instance, the exact mean rate over the window.
	tp := decodeFrames(t, "throughput", resp.Responses["throughput"])
	if len(tp) != 3 {
		t.Fatalf("throughput: %d frames", len(tp))
	}
	checked := 0
	for _, f := range tp {
		inst := f.labels["instance"]
		if f.config.Unit != "reqps" || f.config.DisplayNameFromDS != inst+" req/s" {
			t.Errorf("throughput: config %+v", f.config)
		}
		for i, ts := range f.t {
			if inst == "node-c:8000" && !ts.Before(restart.Start) && ts.Before(restart.Start.Add(window)) {
				continue // requests between the last scrape and the restart are lost with the reset
			}
			if want := s.MeanQPS(inst, "", "", ts.Add(-window), ts); !sameFloat(f.v[i], want, 1e-9) {
				t.Errorf("throughput %s at %s: %.9g, truth %.9g", inst, ts.Format(time.RFC3339), f.v[i], want)
			}
			checked++
		}
	}
	if checked < 3*280 {
		t.Errorf("throughput: %d points checked", checked)
	}

	// errors: 1 % timeouts inside the surge, the error ratio as the scenario says.
	errs := decodeFrames(t, "errors", resp.Responses["errors"])
	timeouts := findSeries(t, "errors", errs, "timeout_ratio", labels)
	errRatio := findSeries(t, "errors", errs, "error_ratio", labels)
	if !sameFloat(timeouts.at(t, inside), 0.01, 1e-9) || !sameFloat(errRatio.at(t, inside), s.ErrorRatio("node-a:8000", "recsys-ranker", "v1.4.0", inside), 1e-9) ||
		timeouts.config.Unit != "percentunit" {
		t.Errorf("errors: timeouts %.6g errors %.6g (%s)", timeouts.at(t, inside), errRatio.at(t, inside), timeouts.config.Unit)
	}

	// Warm-up: node-c's restart is dropped (nulls), named in a notice and listed in Meta.Custom.
	r := resp.Responses["warmup"]
	wf := decodeFrames(t, "warmup", r)
	// The multi-value selects node-b and node-c; while node-c warms up, the P95 is node-b's alone.
	both := findSeries(t, "warmup", wf, "p95", labels)
	pooled := func(ts time.Time, insts ...string) float64 {
		cum := make([]float64, len(testbed.LatencyBuckets))
		var n float64
		for _, in := range insts {
			c, k, _ := s.HistogramIncrease(testbed.E2E, in, "recsys-ranker", "v1.4.0", testbed.LatencyBuckets, ts.Add(-window), ts)
			for i := range c {
				cum[i] += c[i]
			}
			n += k
		}
		return testbed.HistogramQuantile(0.95, testbed.LatencyBuckets, cum, n)
	}
	warm, steady := restart.Start.Add(3*time.Minute), restart.Start.Add(-time.Minute)
	if !sameFloat(both.at(t, warm), pooled(warm, "node-b:8000"), 1e-6) || !sameFloat(both.at(t, steady), pooled(steady, "node-b:8000", "node-c:8000"), 1e-6) ||
		sameFloat(pooled(warm, "node-b:8000", "node-c:8000"), pooled(warm, "node-b:8000"), 1e-3) {
		t.Errorf("warmup: P95 %.6g during node-c's warm-up (node-b alone %.6g, both %.6g)", both.at(t, warm), pooled(warm, "node-b:8000"), pooled(warm, "node-b:8000", "node-c:8000"))
	}
	meta := r.Frames[0].Meta
	noticed := false
	for _, n := range meta.Notices {
		noticed = noticed || strings.HasPrefix(n.Text, "warm-up samples dropped (recorded, not alerted on): node-c:8000 recsys-ranker ")
	}
	custom, _ := json.Marshal(meta.Custom)
	if !noticed || !strings.Contains(string(custom), `"instance":"node-c:8000"`) {
		t.Errorf("warmup: notices %+v custom %s", meta.Notices, custom)
	}
	if !strings.Contains(meta.ExecutedQueryString, "inference_latency_seconds_bucket") {
		t.Errorf("warmup: executed %q", meta.ExecutedQueryString)
	}

	if r := resp.Responses["bad"]; r.Error == nil || r.Error.Error() != "field quantile must be above 0 and at most 1, got 1.5" || r.Status != backend.StatusBadRequest {
		t.Errorf("bad: %v %v", r.Status, r.Error)
	}
	if p.Exited() {
		t.Error("the plugin process exited")
	}
}
