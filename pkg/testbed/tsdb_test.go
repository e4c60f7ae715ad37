package testbed_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// promQuery runs an instant query and returns the values by their labels' string form.
func promQuery(t *testing.T, base, expr string, at time.Time) map[string]float64 {
	t.Helper()
	u := base + "/api/v1/query?" + url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("query %s: %v", expr, err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("query %s: decode: %v", expr, err)
	}
	if body.Status != "success" {
		t.Fatalf("query %s: %s", expr, body.Error)
	}
	out := map[string]float64{}
	for _, r := range body.Data.Result {
		v, err := strconv.ParseFloat(r.Value[1].(string), 64)
		if err != nil {
			t.Fatalf("query %s: value %v: %v", expr, r.Value[1], err)
		}
		out[fmt.Sprint(r.Metric)] = v
	}
	return out
}

// scalar runs a query expected to return exactly one series.
func scalar(t *testing.T, base, expr string, at time.Time) float64 {
	t.Helper()
	res := promQuery(t, base, expr, at)
	if len(res) != 1 {
		t.Fatalf("query %s at %s: want 1 series, got %d: %v", expr, at.Format(time.RFC3339), len(res), res)
	}
	for _, v := range res {
		return v
	}
	return math.NaN()
}

func within(t *testing.T, what string, got, want, relTol float64) {
	t.Helper()
	t.Logf("%s: Prometheus %.9g, truth %.9g", what, got, want)
	if math.IsNaN(got) || math.IsNaN(want) || math.Abs(got-want) > relTol*math.Abs(want) {
		t.Errorf("%s: Prometheus %.9g, truth %.9g (rel. tolerance %g)", what, got, want, relTol)
	}
}

// Prometheus 2.42 selects range samples in [t-range, t] (both ends), so with samples on the
// step grid a 5m rate covers exactly [t-5m, t] and rate() needs no extrapolation.
const window = 5 * time.Minute

func TestHistoryInPrometheusMatchesTruth(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	const model = "recsys-ranker"

	// Tolerances: rates of expected-value counters are exact up to float rounding (1e-9);
	// bucket-interpolated quantiles likewise, since the truth applies Prometheus' own formula to
	// the same expected bucket counts.
	const exact = 1e-9

	type check struct {
		name     string
		at       time.Time
		instance string
	}
	surge, _ := s.Incident(testbed.QueueSurge)
	ordinary := surge.Start.Add(15*time.Minute - 24*time.Hour) // same time of day, a clean day
	checks := []check{
		{"ordinary", ordinary, surge.Instance},
		{"queue surge", surge.Start.Add(15 * time.Minute), surge.Instance},
	}
	means := map[string][2]float64{}
	for _, c := range checks {
		from := c.at.Add(-window)
		sel := fmt.Sprintf(`model_name=%q,instance=%q`, model, c.instance)

		within(t, c.name+": fleet QPS", scalar(t, srv.URL, `sum(rate(inference_requests_total[5m]))`, c.at),
			s.MeanQPS("", "", "", from, c.at), exact)
		within(t, c.name+": instance QPS", scalar(t, srv.URL, `sum(rate(inference_requests_total{`+sel+`}[5m]))`, c.at),
			s.MeanQPS(c.instance, model, "", from, c.at), exact)
		p95 := scalar(t, srv.URL, `histogram_quantile(0.95, sum by (le) (rate(inference_latency_seconds_bucket{`+sel+`}[5m])))`, c.at)
		within(t, c.name+": P95 vs bucket-interpolated truth", p95, s.BucketQuantile(testbed.E2E, c.instance, model, "", 0.95, from, c.at), exact)
		// The brief's buckets are coarse: interpolation inside one bucket is within 35 % of the
		// continuous quantile here.
		within(t, c.name+": P95 vs continuous truth", p95, s.LatencyQuantile(c.instance, model, "", 0.95, c.at), 0.35)

		var m [2]float64
		for i, seg := range []struct {
			metric string
			g      testbed.Segment
		}{{"inference_queue_seconds", testbed.Queue}, {"inference_compute_seconds", testbed.Compute}} {
			got := scalar(t, srv.URL, fmt.Sprintf(`sum(rate(%s_sum{%s}[5m])) / sum(rate(%s_count{%s}[5m]))`, seg.metric, sel, seg.metric, sel), c.at)
			_, n, sum := s.HistogramIncrease(seg.g, c.instance, model, "", nil, from, c.at)
			within(t, c.name+": mean "+seg.g.String(), got, sum/n, exact)
			within(t, c.name+": mean "+seg.g.String()+" vs instant truth", got, s.SegmentMean(seg.g, c.instance, model, "", c.at), 1e-3)
			m[i] = got
		}
		e2e := scalar(t, srv.URL, `sum(rate(inference_latency_seconds_sum{`+sel+`}[5m])) / sum(rate(inference_latency_seconds_count{`+sel+`}[5m]))`, c.at)
		within(t, c.name+": e2e mean = queue + compute", e2e, m[0]+m[1], exact)
		means[c.name] = m
	}
	// The surge's signature: queue ~8x or more, compute flat.
	q := means["queue surge"][0] / means["ordinary"][0]
	c := means["queue surge"][1] / means["ordinary"][1]
	if q < 7 || c < 0.9 || c > 1.1 {
		t.Errorf("queue surge: queue x%.2f (want ≥ 7), compute x%.2f (want ~1)", q, c)
	}

	// Eight days of history: data one hour after the start, none an hour before it.
	start := s.End().Add(-8 * 24 * time.Hour)
	if v := scalar(t, srv.URL, `count(inference_requests_total)`, start.Add(time.Hour)); v < 20 {
		t.Errorf("history start: %v series, want all request series", v)
	}
	if res := promQuery(t, srv.URL, `count(inference_requests_total)`, start.Add(-time.Hour)); len(res) != 0 {
		t.Errorf("data before the history start: %v", res)
	}

	// The restart: not ready for the first minute, a new process start time, a counter reset.
	warm, _ := s.Incident(testbed.WarmupRestart)
	ready := func(at time.Time) float64 {
		return scalar(t, srv.URL, `min(model_loading_status{instance="`+warm.Instance+`"})`, at)
	}
	if ready(warm.Start) != 0 || ready(warm.Start.Add(testbed.LoadDuration)) != 1 {
		t.Errorf("model_loading_status around the restart: %v then %v, want 0 then 1", ready(warm.Start), ready(warm.Start.Add(testbed.LoadDuration)))
	}
	if got := scalar(t, srv.URL, `process_start_time_seconds{instance="`+warm.Instance+`"}`, warm.Start.Add(time.Minute)); got != float64(warm.Start.Unix()) {
		t.Errorf("process_start_time_seconds after the restart: %v, want %v", got, warm.Start.Unix())
	}
	if got := scalar(t, srv.URL, `sum(resets(inference_requests_total{instance="`+warm.Instance+`",status="ok"}[10m]))`, warm.Start.Add(5*time.Minute)); got < 1 {
		t.Errorf("no counter reset seen at the restart")
	}

	// GPU idle under traffic: utilisation 0 on the incident's GPU, traffic normal.
	idle, _ := s.Incident(testbed.GPUIdle)
	mid := idle.Start.Add(idle.End.Sub(idle.Start) / 2).Truncate(time.Minute)
	util := scalar(t, srv.URL, fmt.Sprintf(`inference_gpu_util_percent{instance=%q,gpu_id="%d"}`, idle.Instance, idle.GPUs[0]), mid)
	if util != 0 {
		t.Errorf("GPU idle: utilisation %v%%, want 0", util)
	}
}

// A history cut in more parts than workers (each worker imports several, one after another)
// reads in Prometheus as the truth does, across the parts' seams: a counter's rate over a
// window that spans three parts, and one inside a part.
func TestHistoryInManyParts(t *testing.T) {
	if testing.Short() {
		t.Skip("writes three hours of the test bed and serves them from Prometheus")
	}
	defer func(n int) { *testbed.MaxPartSamples = n }(*testbed.MaxPartSamples)
	*testbed.MaxPartSamples = 20 // 181 samples a series: ten parts of 18-19
	s := testbed.Default(testbed.DefaultEnd)
	opt := expo.HistoryOptions{From: s.End().Add(-3 * time.Hour), To: s.End(), Step: time.Minute, Job: "inference"}
	if got := len(testbed.HistoryParts(181, 4, *testbed.MaxPartSamples)); got != 10 {
		t.Fatalf("%d parts, want 10", got)
	}
	targets, err := s.HistoryTargets("custom", testbed.GPUNamingInferscope, opt.From, opt.To, opt.To)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "tsdb")
	if err := testbed.BuildHistoryTSDB(t.Context(), targets, promtest.RequireBinary(t, "promtool"), dir, opt); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) != 1 {
		t.Errorf("beside the TSDB, the build left %v", left)
	}
	base := promtest.Start(t, promtest.Options{DataDir: dir}).URL
	for _, w := range []struct {
		name     string
		from, to time.Time
	}{
		{"across three parts", opt.From.Add(50 * time.Minute), opt.From.Add(110 * time.Minute)},
		{"inside a part", opt.From.Add(62 * time.Minute), opt.From.Add(70 * time.Minute)},
	} {
		expr := fmt.Sprintf("sum(rate(inference_requests_total[%dm]))", int(w.to.Sub(w.from).Minutes()))
		within(t, w.name+": "+expr, scalar(t, base, expr, w.to), s.MeanQPS("", "", "", w.from, w.to), 1e-9)
	}
}

// A part that fails stops the build with its own error, not the cancellation of the others, and
// leaves nothing beside where the TSDB would have been.
func TestHistoryBuildReportsTheFailingPart(t *testing.T) {
	failing, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) to stand for a promtool that fails")
	}
	defer func(n int) { *testbed.MaxPartSamples = n }(*testbed.MaxPartSamples)
	*testbed.MaxPartSamples = 10
	s := testbed.Default(testbed.DefaultEnd)
	opt := expo.HistoryOptions{From: s.End().Add(-time.Hour), To: s.End(), Step: time.Minute, Job: "inference"}
	targets, err := s.HistoryTargets("custom", testbed.GPUNamingInferscope, opt.From, opt.To, opt.To)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	err = testbed.BuildHistoryTSDB(t.Context(), targets, failing, filepath.Join(parent, "tsdb"), opt)
	if err == nil || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "promtool tsdb create-blocks-from openmetrics") {
		t.Errorf("error %v, want the failing part's", err)
	}
	if left, _ := filepath.Glob(filepath.Join(parent, "*")); len(left) != 0 {
		t.Errorf("the failed build left %v", left)
	}
}
