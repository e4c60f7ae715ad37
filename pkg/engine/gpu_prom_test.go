package engine

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The GPU types against a real Prometheus serving the test bed's history, whose GPU series were
// written from the scenario's GPU truth through the probe's own exporter. Numbers are checked
// against that truth; the dcgm-exporter naming must give the same numbers.

// gpuBed is a Prometheus on one test-bed TSDB variant, with an engine on it.
type gpuBed struct {
	s *testbed.Scenario
	e *Engine
}

func startGPUBed(t *testing.T, o testbed.TSDBOptions, wantProfile string) *gpuBed {
	t.Helper()
	dir, s := tbtest.TSDBFor(t, o)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	names, err := c.LabelValues(context.Background(), "__name__", nil, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p, det := profile.Detect(names)
	if det.Name != wantProfile {
		t.Fatalf("detected profile %q, want %q: %s", det.Name, wantProfile, det.Reason)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	return &gpuBed{s: s, e: &Engine{Prom: c, Profile: p, Present: present, WarmupWindow: 2 * time.Minute}}
}

func (b *gpuBed) run(t *testing.T, raw string, from, to time.Time, step time.Duration) *Result {
	t.Helper()
	q, err := Parse([]byte(raw))
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	res, err := b.e.Run(context.Background(), q, Range{Start: from, End: to, MinStep: step})
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return res
}

// seriesOf indexes a result's series by name, node and GPU ("" for node series).
func seriesOf(res *Result) map[string]Series {
	out := map[string]Series{}
	for _, s := range res.Series {
		out[s.Name+"|"+s.Labels["node"]+"|"+s.Labels["gpu"]] = s
	}
	return out
}

func instanceOf(node string) string { return node + ":8000" }

func nodes(s *testbed.Scenario) []string {
	var out []string
	for _, in := range s.Instances() {
		out = append(out, InstanceNode(in))
	}
	return out
}

func at(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func TestGPUSeriesAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test-bed TSDB and Prometheus")
	}
	b := startGPUBed(t, testbed.TSDBOptions{}, "custom")
	s := b.s
	slow, _ := s.Incident(testbed.ComputeSlowdown)
	from, to := slow.Start.Add(-100*time.Minute), slow.End.Add(10*time.Minute)
	res := b.run(t, `{"queryType":"gpu"}`, from, to, time.Minute)
	// The probe reads no profiling field: those three measurements are not measured, and say so.
	measured := len(AllGPUMetrics) - len(gpuProfiling)
	if want := len(s.Instances()) * s.GPUsPerInstance() * measured; len(res.Series) != want {
		t.Fatalf("%d series, want %d (every GPU of every node, %d metrics); notices %v", len(res.Series), want, measured, res.Notices)
	}
	if n := notices(res); strings.Count(n, "not measured") != len(gpuProfiling) || !strings.Contains(n, "graphics engine active: not measured") {
		t.Errorf("notices do not say the profiling fields are not measured:\n%s", n)
	}
	// Tolerances: the probe reports utilisation in whole percent and temperature in whole °C
	// (NVML's units), power in mW, memory in bytes.
	tol := map[string]float64{"util": 0.005 + 1e-9, "memory": 1e-9, "temperature": 0.5 + 1e-9, "power": 1e-3 + 1e-9}
	truthOf := func(name string, g testbed.GPUState) float64 {
		switch name {
		case "util":
			return g.UtilRatio
		case "memory":
			return g.MemUsedRatio
		case "temperature":
			return g.TempCelsius
		}
		return g.PowerWatts
	}
	checked := 0
	minSlow, maxSlow := math.Inf(1), math.Inf(-1)
	for _, sr := range res.Series {
		node, gpu := sr.Labels["node"], sr.Labels["gpu"]
		g, err := strconv.Atoi(gpu)
		if err != nil || sr.Labels[SeriesLabel] != sr.Name {
			t.Fatalf("series labels %v", sr.Labels)
		}
		if sr.Name == "memory" && (len(sr.Thresholds) != 2 || sr.Thresholds[0].Value != 0.85 || sr.Thresholds[1].Value != 0.92 || sr.Unit != UnitPercentUnit) {
			t.Errorf("%s: memory thresholds %v unit %s", sr.DisplayName, sr.Thresholds, sr.Unit)
		}
		for i, ts := range sr.T {
			truth := s.GPU(instanceOf(node), g, at(ts))
			want, got := truthOf(sr.Name, truth), sr.V[i]
			if math.Abs(got-want) > tol[sr.Name] {
				t.Errorf("%s at %s: %g, truth %g", sr.DisplayName, at(ts).Format(time.RFC3339), got, want)
			}
			checked++
			inSlow := node == "node-b" && g < 4 && !at(ts).Before(slow.Start) && at(ts).Before(slow.End)
			if sr.Name == "memory" && inSlow {
				minSlow, maxSlow = min(minSlow, got), max(maxSlow, got)
				if got <= 0.92 {
					t.Errorf("%s at %s: memory %.4f during the compute slowdown, want > 92 %%", sr.DisplayName, at(ts).Format(time.RFC3339), got)
				}
			}
		}
	}
	t.Logf("%d points equal the GPU truth; node-b GPUs 0-3 memory during the slowdown: %.4f..%.4f", checked, minSlow, maxSlow)
	if math.IsInf(minSlow, 0) {
		t.Error("no memory point inside the slowdown")
	}

	// Filters: an inference instance and its node name select the same GPUs; gpu and metrics narrow.
	for _, inst := range []string{"node-b:8000", "node-b", `["node-b:8000"]`} {
		field := strconv.Quote(inst)
		if inst[0] == '[' {
			field = inst
		}
		r := b.run(t, `{"queryType":"gpu","instance":`+field+`,"gpu":"0|3","metrics":["memory","util"]}`, slow.Start, slow.Start.Add(10*time.Minute), time.Minute)
		var got []string
		for _, sr := range r.Series {
			got = append(got, sr.Labels["node"]+"/"+sr.Labels["gpu"]+"/"+sr.Name)
		}
		sort.Strings(got)
		if want := "[node-b/0/memory node-b/0/util node-b/3/memory node-b/3/util]"; fmt.Sprint(got) != want {
			t.Errorf("instance %s: series %v, want %s", inst, got, want)
		}
	}
	r := b.run(t, `{"queryType":"gpu","instance":"node-z:8000"}`, slow.Start, slow.End, time.Minute)
	if len(r.Series) != 0 || len(r.Notices) == 0 {
		t.Errorf("unknown node: %d series, notices %v", len(r.Series), r.Notices)
	}
	if _, err := Parse([]byte(`{"queryType":"gpu","metrics":["memory","fan"]}`)); err == nil {
		t.Error("an unknown metric was accepted")
	}
}

func TestGPUMemForecastAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test-bed TSDB and Prometheus")
	}
	b := startGPUBed(t, testbed.TSDBOptions{}, "custom")
	checkForecast(t, b)

	// Around node-c's restart memory drops while the weights load. With the warm-up filter
	// those samples stay out of the trend; without it the dip reads as a rising trend.
	restart, _ := b.s.Incident(testbed.WarmupRestart)
	from, to := restart.Start.Add(-10*time.Minute), restart.Start.Add(40*time.Minute)
	for _, filter := range []bool{true, false} {
		res := b.run(t, fmt.Sprintf(`{"queryType":"gpumem_forecast","instance":"node-c","gpu":"0","warmupFilter":%v}`, filter), from, to, time.Minute)
		state := seriesOf(res)["state|node-c|0"]
		rising := 0
		for _, v := range state.V {
			if v == ForecastStateRising {
				rising++
			}
		}
		t.Logf("warmupFilter %v: rising at %d of %d points around the restart", filter, rising, len(state.V))
		if filter && rising != 0 || !filter && rising == 0 {
			t.Errorf("warmupFilter %v: memory rising at %d points around the restart", filter, rising)
		}
	}
}

// rampDuration is how long the scenario's GPU memory climbs from ~80 % to 92 % before the
// compute slowdown (doc.go).
const rampDuration = 90 * time.Minute

// checkForecast runs gpumem_forecast over the memory ramp before the compute slowdown: while
// memory climbs linearly to 92 %, the time to 92 % is the time left until the slowdown starts.
func checkForecast(t *testing.T, b *gpuBed) *Result {
	t.Helper()
	slow, _ := b.s.Incident(testbed.ComputeSlowdown)
	from, to := slow.Start.Add(-2*time.Hour), slow.Start.Add(20*time.Minute)
	res := b.run(t, `{"queryType":"gpumem_forecast","instance":"node-b:8000","gpu":["0","1","2","3","4"]}`, from, to, time.Minute)
	ss := seriesOf(res)
	// Tolerance: half a sample interval of the 60 s history.
	const tol = 30.0
	maxErr, finite := 0.0, 0
	for g := 0; g <= 4; g++ {
		gpu := strconv.Itoa(g)
		eta, okE := ss["eta|node-b|"+gpu]
		state, okS := ss["state|node-b|"+gpu]
		mem, okM := ss["memory|node-b|"+gpu]
		if !okE || !okS || !okM {
			t.Fatalf("GPU %d: missing series in %v", g, res.Series)
		}
		for i, ts := range eta.T {
			tt := at(ts)
			if g == 4 { // the embedder's GPU: memory flat
				if state.V[i] != ForecastStateNotRising || !math.IsNaN(eta.V[i]) {
					t.Errorf("GPU 4 at %s: state %g eta %g, want not rising", tt.Format(time.RFC3339), state.V[i], eta.V[i])
				}
				continue
			}
			switch {
			case !tt.Before(slow.Start):
				if state.V[i] != ForecastStateAbove || eta.V[i] != 0 || mem.V[i] <= 0.92 {
					t.Errorf("GPU %d at %s: state %g eta %g memory %.4f, want above 92 %% now", g, tt.Format(time.RFC3339), state.V[i], eta.V[i], mem.V[i])
				}
			case !tt.Before(slow.Start.Add(-rampDuration + 30*time.Minute)):
				// The whole 30 min window lies on the ramp: the fit is the ramp itself.
				want := slow.Start.Sub(tt).Seconds()
				if state.V[i] != ForecastStateRising || math.IsNaN(eta.V[i]) || math.Abs(eta.V[i]-want) > tol {
					t.Errorf("GPU %d at %s: state %g, %.0f s to 92 %%, truth %.0f s", g, tt.Format(time.RFC3339), state.V[i], eta.V[i], want)
				} else {
					maxErr = max(maxErr, math.Abs(eta.V[i]-want))
					finite++
				}
			case !tt.After(slow.Start.Add(-rampDuration)):
				if state.V[i] != ForecastStateNotRising || !math.IsNaN(eta.V[i]) {
					t.Errorf("GPU %d at %s (before the ramp): state %g eta %g, want not rising", g, tt.Format(time.RFC3339), state.V[i], eta.V[i])
				}
			default: // the window straddles the ramp's start: rising, the trend underestimated
				if state.V[i] != ForecastStateRising || !(eta.V[i] >= slow.Start.Sub(tt).Seconds()-tol) {
					t.Errorf("GPU %d at %s (ramp start): state %g eta %.0f s, truth %.0f s", g, tt.Format(time.RFC3339), state.V[i], eta.V[i], slow.Start.Sub(tt).Seconds())
				}
			}
		}
	}
	t.Logf("%d finite times to 92 %% on the ramp, largest error %.2g s", finite, maxErr)
	if finite < 4*55 {
		t.Errorf("only %d points checked on the ramp", finite)
	}
	return res
}

func TestGPUIdleUnderTrafficAgainstTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test-bed TSDB and Prometheus")
	}
	b := startGPUBed(t, testbed.TSDBOptions{}, "custom")
	res := checkIdle(t, b)
	restart, _ := b.s.Incident(testbed.WarmupRestart)
	ss := seriesOf(res)
	ready, ok := ss["ready|node-c|"]
	if !ok {
		t.Fatal("no ready series for node-c")
	}
	notReady := 0
	for i, ts := range ready.T {
		if want := b.s.Ready("node-c:8000", at(ts)); (ready.V[i] >= 0.5) != want {
			t.Errorf("node-c ready at %s: %g, truth %v", at(ts).Format(time.RFC3339), ready.V[i], want)
		} else if !want {
			notReady++
		}
	}
	if notReady == 0 {
		t.Errorf("node-c never seen not ready around its restart at %s", restart.Start.Format(time.RFC3339))
	}
	checkRestartWarmup(t, b.s, res)
}

// checkRestartWarmup: the node-c restart is among the warm-up intervals.
func checkRestartWarmup(t *testing.T, s *testbed.Scenario, res *Result) {
	t.Helper()
	restart, _ := s.Incident(testbed.WarmupRestart)
	for _, w := range res.Warmup {
		if w.Instance == restart.Instance && !w.End.Before(restart.Start) && !w.Start.After(restart.End) {
			return
		}
	}
	t.Errorf("the %s restart is not among the warm-up intervals %v", restart.Instance, res.Warmup)
}

// checkIdle runs gpu_idle_under_traffic over the last day and checks that it fires for node-a
// GPU 6 during the GPU-idle incident from 10 minutes in, and nowhere else.
func checkIdle(t *testing.T, b *gpuBed) *Result {
	t.Helper()
	s := b.s
	idle, _ := s.Incident(testbed.GPUIdle)
	from, to := s.End().Add(-24*time.Hour), s.End()
	res := b.run(t, `{"queryType":"gpu_idle_under_traffic"}`, from, to, time.Minute)
	t.Logf("%d series, %d Prometheus queries, notices %v, warm-up %v", len(res.Series), len(res.Queries), res.Notices, res.Warmup)
	ss := seriesOf(res)
	fired := 0
	for _, node := range nodes(s) {
		for g := 0; g < s.GPUsPerInstance(); g++ {
			gpu := strconv.Itoa(g)
			flag, ok := ss["idle_under_traffic|"+node+"|"+gpu]
			if !ok {
				t.Fatalf("no idle series for %s GPU %d; notices %v", node, g, res.Notices)
			}
			for i, ts := range flag.T {
				tt := at(ts)
				// Utilisation is sampled once a minute: zero from the incident's start, so the
				// 10 minutes are complete at start+10m; the sample at the end is busy again.
				want := 0.0
				if node == InstanceNode(idle.Instance) && g == idle.GPUs[0] && !tt.Before(idle.Start.Add(10*time.Minute)) && tt.Before(idle.End) {
					want = 1
				}
				if flag.V[i] != want {
					t.Errorf("%s GPU %d at %s: idle under traffic %g, want %g", node, g, tt.Format(time.RFC3339), flag.V[i], want)
				}
				if flag.V[i] == 1 {
					fired++
				}
			}
		}
	}
	wantFired := int((idle.End.Sub(idle.Start) - 10*time.Minute) / time.Minute)
	t.Logf("fired at %d points (node-a GPU 6, %s..%s)", fired, idle.Start.Add(10*time.Minute).Format("15:04"), idle.End.Format("15:04"))
	if fired != wantFired {
		t.Errorf("fired at %d points, want %d", fired, wantFired)
	}
	// The inputs: node QPS is the truth's request rate (a 5-minute average), its baseline the
	// same time of day on the previous 7 days; both within the weekly ripple of each other.
	for _, node := range nodes(s) {
		qps, okQ := ss["qps|"+node+"|"]
		base, okB := ss["qps_baseline|"+node+"|"]
		if !okQ || !okB {
			t.Fatalf("node %s: no qps or baseline series", node)
		}
		worst, worstBase := 0.0, 0.0
		for i, ts := range qps.T {
			tt := at(ts)
			if nearAny(s, tt, 10*time.Minute, testbed.WarmupRestart, testbed.QueueSurge) {
				continue
			}
			truth := s.MeanQPS(instanceOf(node), "", "", tt.Add(-5*time.Minute), tt)
			worst = max(worst, math.Abs(qps.V[i]-truth)/truth)
			worstBase = max(worstBase, math.Abs(base.V[i]-truth)/truth)
		}
		t.Logf("%s: node QPS within %.2g %% of the truth, baseline within %.1f %% of it", node, 100*worst, 100*worstBase)
		if worst > 1e-6 || worstBase > 0.15 {
			t.Errorf("%s: node QPS off by %.3g %%, baseline by %.3g %%", node, 100*worst, 100*worstBase)
		}
	}
	return res
}

func nearAny(s *testbed.Scenario, tt time.Time, margin time.Duration, kinds ...testbed.IncidentKind) bool {
	for _, in := range s.Incidents() {
		for _, k := range kinds {
			if in.Kind == k && !tt.Before(in.Start.Add(-margin)) && !tt.After(in.End.Add(margin)) {
				return true
			}
		}
	}
	return false
}

// TestGPUDCGMNaming reads a Prometheus whose GPU series are in dcgm-exporter's naming (and whose
// inference servers are Triton): the gpu and forecast numbers equal the probe naming's, and the
// idle-under-traffic condition fires exactly as the truth says.
func TestGPUDCGMNaming(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the test-bed TSDBs and Prometheus")
	}
	probe := startGPUBed(t, testbed.TSDBOptions{}, "custom")
	dcgm := startGPUBed(t, testbed.TSDBOptions{Profile: "triton", GPUNaming: testbed.GPUNamingDCGM}, "triton")
	if !dcgm.e.Present["DCGM_FI_DEV_FB_USED"] || dcgm.e.Present["inferscope_gpu_memory_used_bytes"] || !probe.e.Present["inferscope_gpu_memory_used_bytes"] {
		t.Fatal("the dcgm variant should hold dcgm-exporter's GPU names only, the default variant the probe's")
	}
	slow, _ := probe.s.Incident(testbed.ComputeSlowdown)
	from, to := slow.Start.Add(-100*time.Minute), slow.End.Add(10*time.Minute)
	const q = `{"queryType":"gpu"}`
	a, bres := seriesOf(probe.run(t, q, from, to, time.Minute)), seriesOf(dcgm.run(t, q, from, to, time.Minute))
	compareSeries(t, "gpu", a, bres)

	fa, fb := seriesOf(checkForecast(t, probe)), seriesOf(checkForecast(t, dcgm))
	compareSeries(t, "gpumem_forecast", fa, fb)

	res := checkIdle(t, dcgm)
	checkRestartWarmup(t, dcgm.s, res) // from the counter reset: Triton has no process start time
	if _, ok := seriesOf(res)["ready|node-c|"]; ok {
		t.Error("a ready series for Triton, which has no load-state metric")
	}
}

func compareSeries(t *testing.T, what string, a, b map[string]Series) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d series in the probe's naming, %d in dcgm-exporter's", what, len(a), len(b))
	}
	points := 0
	for k, sa := range a {
		sb, ok := b[k]
		if !ok {
			t.Errorf("%s: %s missing in dcgm naming", what, k)
			continue
		}
		for i := range sa.V {
			x, y := sa.V[i], sb.V[i]
			if math.IsNaN(x) != math.IsNaN(y) || (!math.IsNaN(x) && math.Abs(x-y) > 1e-9*max(1, math.Abs(x))) {
				t.Errorf("%s: %s at %s: probe naming %g, dcgm naming %g", what, k, at(sa.T[i]).Format(time.RFC3339), x, y)
				break
			}
			points++
		}
	}
	t.Logf("%s: %d series, %d points equal in both namings", what, len(a), points)
}
