package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The baseline on every latency measure a server has: the mean where a server (or a model)
// exports no percentiles, and the model's history where a version has too little of its own.
// Each on a real Prometheus with the test bed's history, against the scenario's truth.

// startNaming starts a Prometheus holding the test bed in a naming (days of history: 0 = the
// naming's default) and an engine that detects its server.
func startNaming(t *testing.T, naming, server string, days int) bed {
	t.Helper()
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
	if e.Profile.Name != server || len(e.Fleet.Servers) != 1 {
		t.Fatalf("%s: detected %s, fleet %+v", naming, e.Profile.Name, e.Fleet.Assignment())
	}
	return bed{e: e, s: s}
}

// dayMeansTruth is the baseline the scenario implies at t for the statistic f: the mean, over
// the previous days (up to days) whose ±10-minute window has values, of f's mean over that
// window sampled every minute (the history step); and how many days had values.
func dayMeansTruth(f func(time.Time) float64, t time.Time, days int) (float64, int) {
	var sum float64
	n := 0
	for d := 1; d <= days; d++ {
		c := t.Add(-time.Duration(d) * 24 * time.Hour)
		ws, k := 0.0, 0
		for u := c.Add(-10 * time.Minute); !u.After(c.Add(10 * time.Minute)); u = u.Add(time.Minute) {
			if v := f(u); !math.IsNaN(v) && !math.IsInf(v, 0) {
				ws += v
				k++
			}
		}
		if k > 0 {
			sum += ws / float64(k)
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

func hasNotice(res *Result, parts ...string) bool {
	for _, n := range res.Notices {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(n.Text, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestBaselineOnMeanOnlyServers: Triton without summaries and TorchServe export only a mean
// latency; the baseline compares that mean with its own same-time-of-day mean over the previous
// 7 days, says so in a notice and labels its series measure=mean. Around the queue surge the
// current mean, the baseline and their ratio equal the scenario's (Triton's durations count
// successes, TorchServe's answered requests over every request received).
func TestBaselineOnMeanOnlyServers(t *testing.T) {
	for _, server := range []string{"triton", "torchserve"} {
		t.Run(server, func(t *testing.T) {
			b := startNaming(t, server, server, 0)
			s := b.s
			surge := incident(t, s, testbed.QueueSurge)
			inst, model := surge.Instance, surge.Model
			version := s.StableVersion(model)
			mean := func(ts time.Time) float64 {
				from := ts.Add(-window)
				if server == "torchserve" {
					return s.AnsweredTotal(testbed.E2E, inst, model, version, from, ts, testbed.DefaultHistoryStep) /
						s.Increase(testbed.Requests, inst, model, version, from, ts, testbed.DefaultHistoryStep)
				}
				return tritonTruth(s, testbed.E2E, inst, model, version, ts)
			}
			from, to := surge.Start.Add(-20*time.Minute), surge.Start.Add(20*time.Minute)
			res := b.run(t, fmt.Sprintf(`{"queryType":"baseline","model":%q,"instance":%q,"by":"instance"}`, model, inst), from, to, time.Minute)
			if !hasNotice(res, "exports no latency percentiles", "measure=mean") {
				t.Errorf("no notice that the baseline is a mean: %v", res.Notices)
			}
			l := map[string]string{MeasureLabel: "mean", ReferenceLabel: ReferenceVersion}
			l["model"], l["version"] = model, version
			if server == "torchserve" {
				l = map[string]string{MeasureLabel: "mean", ReferenceLabel: ReferenceVersion, "model_name": model, "model_version": version}
			}
			current, base, ratio, days := pick(t, res, "current", l), pick(t, res, "baseline", l), pick(t, res, "ratio", l), pick(t, res, "days", l)
			if !strings.Contains(ratio.DisplayName, "mean / baseline") {
				t.Errorf("ratio display name %q does not say it is the mean's", ratio.DisplayName)
			}
			checked, maxRatio := 0, 0.0
			for i, ms := range ratio.T {
				ts := msTime(ms)
				if server == "triton" && straddlesEdge(surge.Start, ts) {
					continue // Triton's mean is over successes, the truth's over every request
				}
				cur := mean(ts)
				want, n := dayMeansTruth(mean, ts, 7)
				if n != 7 || days.V[i] != 7 {
					t.Fatalf("at %s: %v days with data, truth %d", ts.Format(time.RFC3339), days.V[i], n)
				}
				if !near(current.V[i], cur, relTol) || !near(base.V[i], want, relTol) || !near(ratio.V[i], cur/want, 10*relTol) {
					t.Errorf("at %s: current %.9g / baseline %.9g = %.6g; truth %.9g / %.9g", ts.Format(time.RFC3339), current.V[i], base.V[i], ratio.V[i], cur, want)
				}
				maxRatio = max(maxRatio, ratio.V[i])
				checked++
			}
			if checked < 30 {
				t.Errorf("%d points checked", checked)
			}
			// The surge multiplies the queue ~8×: the mean must show it against its baseline.
			if maxRatio < 1.5 {
				t.Errorf("the mean's ratio peaks at %.3g inside the surge", maxRatio)
			}
			t.Logf("%s: ratio of the mean up to %.3g", server, maxRatio)
		})
	}
}

// TestBaselineNewVersionAgainstItsModel: recsys-ranker's canary v1.5.0 was deployed on node-c
// 4 hours before the end, so it has no previous day of its own; it is judged against the
// model's baseline on node-c (all versions together: v1.4.0's days there), with
// reference=model and a notice, and its ratio is the scenario's (about 1.15: the canary is 15 %
// slower). The stable version keeps its own baseline (reference=version). Without the model's
// reference the canary's ratio is empty (0 days) and no rule can fire on it.
func TestBaselineNewVersionAgainstItsModel(t *testing.T) {
	b := startBed(t)
	s := b.s
	const model = "recsys-ranker"
	inst, canary, stable := s.CanaryInstance(model), s.CanaryVersion(model), s.StableVersion(model)
	from, to := s.End().Add(-3*time.Hour), s.End().Add(-2*time.Hour)
	res := b.run(t, fmt.Sprintf(`{"queryType":"baseline","model":%q,"instance":%q,"by":"instance"}`, model, inst), from, to, time.Minute)
	if !hasNotice(res, model+" "+canary, "judged against the model's baseline") {
		t.Errorf("no notice naming the new version: %v", res.Notices)
	}
	p95 := func(version string) func(time.Time) float64 {
		return func(u time.Time) float64 {
			return s.BucketQuantile(testbed.E2E, inst, model, version, 0.95, u.Add(-window), u)
		}
	}
	for _, c := range []struct {
		version, ref string
		reference    func(time.Time) float64 // the statistic the baseline averages
	}{
		{stable, ReferenceVersion, p95(stable)},
		{canary, ReferenceModel, p95("")}, // every version of the model on the instance
	} {
		l := mv(model, c.version)
		l["instance"], l[MeasureLabel], l[ReferenceLabel] = inst, "p95", c.ref
		current, base, ratio, days := pick(t, res, "current", l), pick(t, res, "baseline", l), pick(t, res, "ratio", l), pick(t, res, "days", l)
		minR, maxR := math.Inf(1), 0.0
		for i, ms := range ratio.T {
			ts := msTime(ms)
			cur := p95(c.version)(ts)
			want, n := dayMeansTruth(c.reference, ts, 7)
			if days.V[i] != float64(n) || n != 7 {
				t.Errorf("%s at %s: %v days, truth %d", c.version, ts.Format(time.RFC3339), days.V[i], n)
			}
			if !near(current.V[i], cur, relTol) || !near(base.V[i], want, relTol) || !near(ratio.V[i], cur/want, 10*relTol) {
				t.Errorf("%s at %s: current %.9g / baseline %.9g = %.6g; truth %.9g / %.9g", c.version, ts.Format(time.RFC3339), current.V[i], base.V[i], ratio.V[i], cur, want)
			}
			minR, maxR = min(minR, ratio.V[i]), max(maxR, ratio.V[i])
		}
		t.Logf("%s (reference %s): ratio %.3g .. %.3g", c.version, c.ref, minR, maxR)
		if c.version == canary && !(minR > 1 && maxR < 1.5) {
			t.Errorf("canary against its model: ratio %.3g .. %.3g, want above 1 (15 %% slower) and below the P1 line", minR, maxR)
		}
	}
}

// TestTritonCachedModelPerModelMeasure: with summaries on, text-embedder (response cache on, so
// no request summary) gets a baseline of its mean, equal to the scenario's over the previous day,
// while recsys-ranker keeps its summary's P95 per GPU; jitter says it is not measured for
// text-embedder, with the reason, and gives no number; split answers both models.
func TestTritonCachedModelPerModelMeasure(t *testing.T) {
	b := startNaming(t, expo.TritonSummaries, "triton", 0)
	s := b.s
	surge := incident(t, s, testbed.QueueSurge)
	inst := surge.Instance
	emb := s.StableVersion(expo.TritonCachedModel)
	from, to := surge.Start.Add(-10*time.Minute), surge.Start.Add(10*time.Minute)
	q := func(typ, extra string) *Result {
		return b.run(t, fmt.Sprintf(`{"queryType":%q,"instance":%q,"by":"instance","warmupFilter":false%s}`, typ, inst, extra), from, to, time.Minute)
	}
	base := q("baseline", `,"days":1,"minDays":1`)
	if !hasNotice(base, expo.TritonCachedModel, "showing the mean of nv_inference_request_duration_us") {
		t.Errorf("baseline: no notice naming the cached model's measure: %v", base.Notices)
	}
	l := tritonLabels(expo.TritonCachedModel, emb, inst)
	l[MeasureLabel], l[ReferenceLabel] = "mean", ReferenceVersion
	current, mean, ratio := pick(t, base, "current", l), pick(t, base, "baseline", l), pick(t, base, "ratio", l)
	truth := func(ts time.Time) float64 { return tritonTruth(s, testbed.E2E, inst, expo.TritonCachedModel, emb, ts) }
	for i, ms := range ratio.T {
		ts := msTime(ms)
		cur := truth(ts)
		want, n := dayMeansTruth(truth, ts, 1)
		if n != 1 || math.IsNaN(ratio.V[i]) {
			t.Fatalf("at %s: no baseline for the cached model (ratio %v, %d days of truth)", ts.Format(time.RFC3339), ratio.V[i], n)
		}
		if !near(current.V[i], cur, relTol) || !near(mean.V[i], want, relTol) {
			t.Errorf("at %s: current %.9g, baseline %.9g; truth %.9g, %.9g", ts.Format(time.RFC3339), current.V[i], mean.V[i], cur, want)
		}
	}
	ranker := 0
	for _, se := range base.Series {
		if se.Name == "ratio" && se.Labels["model"] == "recsys-ranker" {
			if se.Labels[MeasureLabel] != "p95" || se.Labels["gpu_uuid"] == "" {
				t.Errorf("recsys-ranker's baseline %v: want the summary's p95 per GPU", se.Labels)
			}
			ranker++
		}
	}
	if ranker != len(s.ModelGPUs("recsys-ranker")) {
		t.Errorf("%d recsys-ranker ratio series, want one per GPU", ranker)
	}

	jit := q("jitter", "")
	if !hasNotice(jit, "jitter not measured for "+expo.TritonCachedModel, "has no P99/P50") {
		t.Errorf("jitter: no not-measured notice for the cached model: %v", jit.Notices)
	}
	for _, se := range jit.Series {
		if se.Labels["model"] == expo.TritonCachedModel {
			t.Errorf("jitter: a %s series for the cached model", se.Name)
		}
	}
	if len(jit.Series) == 0 {
		t.Error("jitter: no series for recsys-ranker, whose summary gives P99 and P50")
	}

	split := q("split", "")
	for _, model := range s.Models() {
		l := tritonLabels(model, s.StableVersion(model), inst)
		for _, seg := range []struct {
			name string
			g    testbed.Segment
		}{{"queue", testbed.Queue}, {"compute", testbed.Compute}} {
			se := pick(t, split, seg.name, l)
			for i, ms := range se.T {
				ts := msTime(ms)
				if model == surge.Model && straddlesEdge(surge.Start, ts) {
					continue
				}
				if want := tritonTruth(s, seg.g, inst, model, s.StableVersion(model), ts); !near(se.V[i], want, relTol) {
					t.Errorf("split %s %s at %s: %.9g, truth %.9g", model, seg.name, ts.Format(time.RFC3339), se.V[i], want)
				}
			}
		}
	}
}

// An in-place upgrade, hand-made: model "ranker" on one instance served v1 for 4 days and 10
// hours, then v2 replaced it (v1's series stop, v2's start) and fell off a cliff. Every request
// of v1 lies in the (0.025, 0.05] bucket and every request of v2 in (0.25, 0.5], 60 a minute,
// so the bucket P95 is exactly 0.04875 s before and 0.4875 s after: a ratio of 10.
var upgradeT0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const (
	upgradeAt  = 4*24*60 + 10*60 // minutes from upgradeT0
	upgradeEnd = upgradeAt + 60
)

func upgradeHistory() string {
	bounds := []string{"0.025", "0.05", "0.1", "0.25", "0.5", "1", "+Inf"}
	type version struct {
		name     string
		from, to int     // minutes
		bucket   int     // index of the bucket every request falls in
		latency  float64 // each request's latency, for _sum
		perMin   float64
		instance string
	}
	vs := []version{
		{"v1", 0, upgradeAt, 1, 0.04, 60, "node-x:8000"},
		{"v2", upgradeAt, upgradeEnd, 4, 0.4, 60, "node-x:8000"},
	}
	var b strings.Builder
	ts := func(m int) int64 { return upgradeT0.Unix() + int64(m)*60 }
	b.WriteString("# TYPE inference_latency_seconds histogram\n")
	for _, v := range vs {
		labels := fmt.Sprintf(`model_name="ranker",model_version=%q,instance=%q,job="inference"`, v.name, v.instance)
		for i, le := range bounds {
			for m := v.from; m <= v.to; m++ {
				n := 0.0
				if i >= v.bucket {
					n = float64(m-v.from) * v.perMin
				}
				fmt.Fprintf(&b, "inference_latency_seconds_bucket{%s,le=%q} %g %d\n", labels, le, n, ts(m))
			}
		}
		for m := v.from; m <= v.to; m++ {
			fmt.Fprintf(&b, "inference_latency_seconds_count{%s} %g %d\n", labels, float64(m-v.from)*v.perMin, ts(m))
		}
		for m := v.from; m <= v.to; m++ {
			fmt.Fprintf(&b, "inference_latency_seconds_sum{%s} %g %d\n", labels, float64(m-v.from)*v.perMin*v.latency, ts(m))
		}
	}
	b.WriteString("# TYPE inference_requests counter\n")
	for _, v := range vs {
		labels := fmt.Sprintf(`model_name="ranker",model_version=%q,instance=%q,job="inference",status="ok"`, v.name, v.instance)
		for m := v.from; m <= v.to; m++ {
			fmt.Fprintf(&b, "inference_requests_total{%s} %g %d\n", labels, float64(m-v.from)*v.perMin, ts(m))
		}
	}
	b.WriteString("# EOF\n")
	return b.String()
}

// TestBaselineInPlaceUpgradeFallsOffACliff is the brief's headline case: the new version has 0
// days of its own history, yet its baseline has a ratio (10, exactly the P95s' ratio), judged
// against the model's previous days on the instance (reference=model), and status P0 at once.
// Without the model's reference its ratio is empty and nothing can fire.
func TestBaselineInPlaceUpgradeFallsOffACliff(t *testing.T) {
	srv := promtest.StartWithHistory(t, upgradeHistory(), promtest.Options{})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Config{Prom: c, Profile: "custom", WarmupWindow: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b := bed{e: e}
	at := func(m int) time.Time { return upgradeT0.Add(time.Duration(m) * time.Minute) }
	res := b.run(t, `{"queryType":"baseline","model":"ranker","instance":"node-x:8000","by":"instance","days":3,"minDays":3,"warmupFilter":false}`,
		at(upgradeAt+10), at(upgradeAt+40), time.Minute)
	if !hasNotice(res, "ranker v2", "judged against the model's baseline") {
		t.Errorf("no notice naming the new version: %v", res.Notices)
	}
	l := map[string]string{"model_name": "ranker", "model_version": "v2", "instance": "node-x:8000", MeasureLabel: "p95", ReferenceLabel: ReferenceModel}
	current, base, ratio, status, days := pick(t, res, "current", l), pick(t, res, "baseline", l), pick(t, res, "ratio", l), pick(t, res, "status", l), pick(t, res, "days", l)
	for i, ms := range ratio.T {
		ts := msTime(ms).Format(time.RFC3339)
		if !near(current.V[i], 0.4875, relTol) || !near(base.V[i], 0.04875, relTol) || !near(ratio.V[i], 10, relTol) {
			t.Errorf("at %s: current %.9g / baseline %.9g = %.6g, want 0.4875 / 0.04875 = 10", ts, current.V[i], base.V[i], ratio.V[i])
		}
		if days.V[i] != 3 || status.V[i] != 2 {
			t.Errorf("at %s: %v days, status %v; want 3 days of the model and P0", ts, days.V[i], status.V[i])
		}
	}
	if len(ratio.T) != 31 {
		t.Errorf("%d points", len(ratio.T))
	}
}
