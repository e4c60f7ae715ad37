package engine

import (
	"sort"
	"strings"
	"testing"
	"time"
)

// seriesKey names a result series by its name and labels, to match series across stores.
func seriesKey(s Series) string {
	keys := make([]string, 0, len(s.Labels))
	for k, v := range s.Labels {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	return s.Name + "{" + strings.Join(keys, ",") + "}"
}

// TestStoresAgreeOnLatencySeries is the regression test of VictoriaMetrics 1.79's label_replace:
// with the source label equal to the destination it answers a stale value, and the quantile
// queries (one withLabel per part) lost about 80 % of their series there. Every store must
// answer the same series as Prometheus 2, and values within the store's tolerance.
func TestStoresAgreeOnLatencySeries(t *testing.T) {
	ref := startBedOn(t, storePrometheus)
	end := ref.s.End()
	from := end.Add(-6 * time.Hour)
	queries := []string{
		`{"queryType":"latency"}`,
		`{"queryType":"latency","by":"instance"}`,
		`{"queryType":"jitter"}`,
		// Under a day: VictoriaMetrics answered days = 0 with the old part labels.
		`{"queryType":"baseline"}`,
	}
	want := map[string]*Result{}
	for _, raw := range queries {
		want[raw] = ref.run(t, raw, from, end, window)
		if len(want[raw].Series) == 0 {
			t.Fatalf("%s: no series on Prometheus", raw)
		}
	}
	// Tolerances, at a step equal to the 5-minute window over one sample a minute:
	//  - VictoriaMetrics: every window starts and ends on a sample, so MetricsQL's rate (last
	//    sample before the window, no extrapolation) and PromQL's (both ends inside, nothing to
	//    extrapolate) take the same two samples; only float summation order differs.
	//  - Prometheus 3: windows are left-open, so the sample at t − 5m is out and the rate
	//    covers the last 4 of the 5 minutes, extrapolated. Quantiles are ratios of bucket rates
	//    (the extrapolation cancels) but of 4 minutes' observations instead of 5: within 5 %.
	tolerance := map[string]float64{storeVictoria: relTol, storePrometheus3: 0.05}
	for _, st := range stores[1:] {
		t.Run(st, func(t *testing.T) {
			b := startBedOn(t, st)
			for _, raw := range queries {
				ref := want[raw]
				byKey := map[string]Series{}
				for _, sr := range ref.Series {
					byKey[seriesKey(sr)] = sr
				}
				res := b.run(t, raw, from, end, window)
				if len(res.Series) != len(ref.Series) {
					t.Errorf("%s on %s: %d series, Prometheus %d", raw, st, len(res.Series), len(ref.Series))
				}
				compared := 0
				for _, sr := range res.Series {
					w, ok := byKey[seriesKey(sr)]
					if !ok {
						t.Errorf("%s on %s: series %s not on Prometheus", raw, st, seriesKey(sr))
						continue
					}
					compared += compareValues(t, raw+" on "+st+" "+seriesKey(sr), w, sr, tolerance[st])
				}
				if compared < len(ref.Series)*(int(end.Sub(from)/window)-1) {
					t.Errorf("%s on %s: %d points compared", raw, st, compared)
				}
			}
		})
	}
}

// compareValues checks b against a at the timestamps both hold and returns how many it compared.
func compareValues(t *testing.T, what string, a, b Series, rel float64) int {
	t.Helper()
	at := map[int64]float64{}
	for i, ms := range a.T {
		at[ms] = a.V[i]
	}
	n := 0
	for i, ms := range b.T {
		v, ok := at[ms]
		if !ok {
			continue
		}
		if !near(b.V[i], v, rel) {
			t.Errorf("%s at %s: %.9g, Prometheus %.9g", what, msTime(ms).Format(time.RFC3339), b.V[i], v)
		}
		n++
	}
	return n
}

// TestStoresRateAtOnsetDiffersByDesign pins the by-design difference of MetricsQL's rate: at a
// step that is not aligned to the samples, PromQL extrapolates the increase between the
// window's first and last samples to the window's length, while MetricsQL takes the last sample
// before the window and does not extrapolate. Where the rate is steady the two agree within the
// spread of one sample interval; at an onset (the traffic surge) they part by more, and the
// engine passes each store's answer through: the tolerance below is the one the issue's
// measurements showed (up to 79 % apart at onsets with 15 s steps).
func TestStoresRateAtOnsetDiffersByDesign(t *testing.T) {
	prom, vm := startBedOn(t, storePrometheus), startBedOn(t, storeVictoria)
	s := prom.s
	end := s.End()
	from := end.Add(-2 * time.Hour)
	const raw = `{"queryType":"throughput"}`
	step := 15 * time.Second
	a := prom.run(t, raw, from, end, step)
	b := vm.run(t, raw, from, end, step)
	if len(a.Series) == 0 || len(a.Series) != len(b.Series) {
		t.Fatalf("throughput: %d series on Prometheus, %d on VictoriaMetrics", len(a.Series), len(b.Series))
	}
	byKey := map[string]Series{}
	for _, sr := range a.Series {
		byKey[seriesKey(sr)] = sr
	}
	points, apart := 0, 0
	for _, sr := range b.Series {
		w, ok := byKey[seriesKey(sr)]
		if !ok {
			t.Errorf("series %s not on Prometheus", seriesKey(sr))
			continue
		}
		at := map[int64]float64{}
		for i, ms := range w.T {
			at[ms] = w.V[i]
		}
		for i, ms := range sr.T {
			v, ok := at[ms]
			if !ok {
				continue
			}
			points++
			if !near(sr.V[i], v, 0.8) {
				t.Errorf("%s at %s: %.6g, Prometheus %.6g: beyond the 80 %% by-design tolerance", seriesKey(sr), msTime(ms).Format(time.RFC3339), sr.V[i], v)
			}
			if !near(sr.V[i], v, relTol) {
				apart++
			}
		}
	}
	if points == 0 {
		t.Fatal("no points compared")
	}
	// At 15 s steps three points in four fall between samples: the difference must show, or
	// this test no longer pins what it says.
	if apart == 0 {
		t.Errorf("all %d points equal on both stores at a 15 s step: the by-design difference is gone", points)
	}
	t.Logf("%d of %d points differ beyond %g", apart, points, relTol)
}

// TestPrometheus3InfoNoticesFolded: Prometheus 3 annotates each position of an expression that
// takes rate() of a gauge ("PromQL info: metric might not be a counter ... (1:6)"); the engine
// answers one Info notice per query with each distinct message once.
func TestPrometheus3InfoNoticesFolded(t *testing.T) {
	b := startBedOn(t, storePrometheus3)
	end := b.s.End()
	const raw = `{"queryType":"promql","expr":"sum(rate(inference_gpu_util_percent[5m])) + sum(rate(inference_gpu_util_percent[1m])) + sum(irate(inference_gpu_util_percent[5m]))"}`
	res := b.run(t, raw, end.Add(-time.Hour), end, time.Minute)
	var infos []Notice
	for _, n := range res.Notices {
		if strings.Contains(n.Text, "PromQL info:") {
			infos = append(infos, n)
		}
	}
	if len(infos) != 1 || infos[0].Severity != Info {
		t.Fatalf("want one info notice, got %+v", res.Notices)
	}
	text := infos[0].Text
	if c := strings.Count(text, "might not be a counter"); c != 1 || strings.Count(text, "PromQL info:") != 1 || strings.Contains(text, "(1:") {
		t.Errorf("notice %q: the counter message %d times, want once and no positions", text, c)
	}
	// Prometheus 2 has no info annotations: nothing to fold there.
	p2 := startBedOn(t, storePrometheus).run(t, raw, end.Add(-time.Hour), end, time.Minute)
	for _, n := range p2.Notices {
		if strings.Contains(n.Text, "PromQL info:") {
			t.Errorf("Prometheus 2: %+v", n)
		}
	}
}
