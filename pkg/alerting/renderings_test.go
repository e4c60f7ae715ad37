package alerting_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// inlineRecordings writes the recording rules of a one-group file into its alerts, so that a
// range query evaluates an alert at every step as the rule evaluation would.
func inlineRecordings(f alerting.PromRuleFile) map[string]string {
	recs := map[string]string{}
	for _, r := range f.Groups[0].Rules {
		if r.Record != "" {
			recs[r.Record] = r.Expr
		}
	}
	ref := regexp.MustCompile(`inferscope:[a-z0-9_:]+`)
	var inline func(string) string
	inline = func(expr string) string {
		return ref.ReplaceAllStringFunc(expr, func(name string) string { return "(" + inline(recs[name]) + ")" })
	}
	out := map[string]string{}
	for _, r := range f.Groups[0].Rules {
		if r.Alert != "" {
			out[r.Labels[alerting.RuleLabel]] = inline(r.Expr)
		}
	}
	return out
}

// episodeKey is one firing episode: the rule, its GPU (node and gpu) and its start and end.
type episodeKey struct {
	rule, subject string
	start, end    time.Time
}

// TestGPURenderingsAgreeOnTheTestBed replays the GPU rules (memory P0/P1, forecast, XID, idle,
// clocks held down, uncorrected ECC) of both renderings over the same
// test-bed history — the Grafana-managed rules through the backtest (which evaluates their data
// queries as Grafana does), the Prometheus rule file by evaluating each alert expression, its
// recordings inlined, at every evaluation step with the same for-hold — and compares their
// firing episodes one by one: the same GPUs, each episode's start and end within one evaluation
// step. The windows hold the compute slowdown (memory ramp and P0), the GPU idle with its XID,
// and node-c's restart (warm-up masking: no GPU rule may fire there in either rendering). The
// test bed has no hardware throttling and only corrected ECC errors (node-b's GPU 2): neither
// hardware rule may fire in either rendering.
func TestGPURenderingsAgreeOnTheTestBed(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the test bed")
	}
	e, s, p := customTestBed(t)
	ids := []string{"gpumem-p0", "gpumem-p1", "gpumem-forecast-p2", "xid-p1", "gpu-idle-p0", "gpu-throttle-p1", "gpu-ecc-p1"}
	windows := incidentWindows(t, s, 2*time.Hour, 45*time.Minute, testbed.ComputeSlowdown, testbed.GPUIdle, testbed.WarmupRestart)
	fired := compareGPURenderings(t, e, p, ids, windows)
	if len(fired) == 0 {
		t.Fatal("no GPU rule fired in either rendering: nothing was compared")
	}
	for _, id := range []string{"gpu-throttle-p1", "gpu-ecc-p1"} {
		if fired[id] > 0 {
			t.Errorf("%s fired %d times on the test bed, which has no hardware throttling and no uncorrected ECC error", id, fired[id])
		}
	}
}

// customTestBed serves the test bed's history with the custom profile, and the catalog's
// defaults for it.
func customTestBed(t *testing.T) (*engine.Engine, *testbed.Scenario, alerting.Params) {
	t.Helper()
	e, s := enginetest.Start(t, enginetest.Profile("custom"))
	p := alerting.Defaults()
	p.Profile = "custom"
	return e, s, p
}

// incidentWindows are the test bed's incidents of the given kinds, each widened by before and
// after, on whole minutes.
func incidentWindows(t *testing.T, s *testbed.Scenario, before, after time.Duration, kinds ...testbed.IncidentKind) [][2]time.Time {
	t.Helper()
	var out [][2]time.Time
	for _, kind := range kinds {
		in, ok := s.Incident(kind)
		if !ok {
			t.Fatalf("no %s incident", kind)
		}
		out = append(out, [2]time.Time{in.Start.Add(-before).Truncate(time.Minute), in.End.Add(after).Truncate(time.Minute)})
	}
	return out
}

// TestNetworkRenderingsAgreeOnTheTestBed replays the network rule of both renderings over the
// test bed, as TestGPURenderingsAgreeOnTheTestBed does the GPU rules: it fires on every model
// node-b serves during the network jitter (30 % of its requests +200 ms between the gateway and
// node-b; the service's own time unchanged), in both renderings alike, and on nothing else —
// not on the queue surge, the compute slowdown or the GPU idle (where a quarter of node-a's
// embedder requests fall back to the CPU: its P95 near 1.5×, the gateway's just above), whose
// gateway time rises with the service's own (the latency rules' pages), nor through node-c's
// restart.
func TestNetworkRenderingsAgreeOnTheTestBed(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the test bed")
	}
	e, s, p := customTestBed(t)
	jitter, _ := s.Incident(testbed.NetworkJitter)
	windows := incidentWindows(t, s, 30*time.Minute, 30*time.Minute, testbed.NetworkJitter, testbed.QueueSurge, testbed.ComputeSlowdown, testbed.GPUIdle, testbed.WarmupRestart)
	var onNodeB []string
	subject := func(_ bool, l map[string]string) string {
		key := l["model_name"] + " on " + l["instance"]
		if l["instance"] == jitter.Instance && !slices.Contains(onNodeB, key) {
			onNodeB = append(onNodeB, key)
		}
		return key
	}
	fired := compareRenderings(t, e, p, []string{"network-p1"}, windows, subject)
	// Every model runs on every instance of the test bed.
	models := s.Models()
	if fired["network-p1"] != len(models) || len(onNodeB) != len(models) {
		t.Errorf("network-p1 fired %d episodes, on %v; want one on each of the models node-b serves (%v), and nothing elsewhere", fired["network-p1"], onNodeB, models)
	}
}

// TestHardwareRenderingsAgreeOnTheCorpus compares the hardware rules' episodes (clocks held down,
// uncorrected ECC, XID) of both renderings, as TestGPURenderingsAgreeOnTheTestBed does, around
// every throttling and ECC case of the corpus's custom fleet (the probe's names) and Triton fleet
// (dcgm-exporter's), seed 1: each throttling case fires the throttle rule on its GPUs and each
// case with uncorrected errors the ECC rule, in both renderings alike.
func TestHardwareRenderingsAgreeOnTheCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("replays two corpus fleets (their histories cached with the corpus benchmark's)")
	}
	cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: 1, Servers: []string{"custom", "triton"}})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"gpu-throttle-p1", "gpu-ecc-p1", "xid-p1"}
	for _, server := range []string{"custom", "triton"} {
		t.Run(server, func(t *testing.T) {
			var own []testbed.Case
			for _, c := range cases {
				if c.Server == server {
					own = append(own, c)
				}
			}
			e := startCorpusFleet(t, server, own)
			p := alerting.Defaults()
			p.FollowEngine(e)
			var windows [][2]time.Time
			want := map[string]int{}
			for _, c := range own {
				switch {
				case c.Kind == testbed.CaseThrottle:
					want["gpu-throttle-p1"] += len(c.GPUs)
				case c.Kind == testbed.CaseECC && c.Level > 0: // its level is its number of uncorrected errors
					want["gpu-ecc-p1"] += len(c.GPUs)
				default:
					continue
				}
				windows = append(windows, [2]time.Time{c.Onset.Add(-30 * time.Minute).Truncate(time.Minute), c.End.Add(30 * time.Minute).Truncate(time.Minute)})
			}
			fired := compareGPURenderings(t, e, p, ids, windows)
			for id, n := range want {
				if fired[id] < n {
					t.Errorf("%s: %d episodes, want at least one per GPU of its cases (%d)", id, fired[id], n)
				}
			}
		})
	}
}

// startCorpusFleet serves a corpus fleet's history (built once and cached) from a real
// Prometheus and returns the engine the data source builds on it.
func startCorpusFleet(t *testing.T, server string, cases []testbed.Case) *engine.Engine {
	t.Helper()
	promtool := promtest.RequireBinary(t, "promtool")
	dir, _, _, err := testbed.CorpusTSDB(t.Context(), server, cases, testbed.DefaultEnd, 0, promtool, t.TempDir())
	if err != nil {
		t.Fatalf("corpus TSDB: %v", err)
	}
	url := promtest.Start(t, promtest.Options{DataDir: dir, ExtraArgs: []string{"--query.timeout=30m"}}).URL
	client, err := prom.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(t.Context(), engine.Config{Prom: client, Profile: server, WarmupWindow: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// compareGPURenderings replays the GPU rules ids of both renderings over each window and compares
// their episodes; it returns the number of episodes per rule (the Grafana rendering's).
func compareGPURenderings(t *testing.T, e *engine.Engine, p alerting.Params, ids []string, windows [][2]time.Time) map[string]int {
	t.Helper()
	gpu := func(grafana bool, l map[string]string) string {
		if grafana {
			return l["node"] + "/" + l["gpu"]
		}
		return l[alerting.NodeLabel] + "/" + l["gpu"]
	}
	return compareRenderings(t, e, p, ids, windows, gpu)
}

// compareRenderings replays the rules ids of both renderings over each window and compares their
// episodes, each named by subject from its series' labels (those of the Grafana rendering's
// data query, or of the Prometheus alert expression); it returns the number of episodes per rule
// (the Grafana rendering's).
func compareRenderings(t *testing.T, e *engine.Engine, p alerting.Params, ids []string, windows [][2]time.Time, subject func(grafana bool, l map[string]string) string) map[string]int {
	t.Helper()
	file, err := alerting.PrometheusRules(p)
	if err != nil {
		t.Fatal(err)
	}
	alerts := inlineRecordings(file)
	step := p.Interval
	fired := map[string]int{}
	for _, w := range windows {
		rep, err := backtest.Run(context.Background(), e, backtest.Options{Params: p, From: w[0], To: w[1], Rules: ids}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var grafana, promFile []episodeKey
		for _, rr := range rep.Rules {
			if rr.Error != "" {
				t.Fatalf("%s: %s", rr.ID, rr.Error)
			}
			for _, ep := range rr.Episodes {
				grafana = append(grafana, episodeKey{rr.ID, subject(true, ep.Labels), ep.Start, ep.End})
				fired[rr.ID]++
			}
		}
		evals := backtest.EvalTimes(w[0], w[1], step)
		for _, id := range ids {
			var hold time.Duration
			for _, r := range file.Groups[0].Rules {
				if r.Alert != "" && r.Labels[alerting.RuleLabel] == id && r.For != "" {
					d, _ := time.ParseDuration(r.For)
					hold = d
				}
			}
			if alerts[id] == "" {
				t.Fatalf("%s is not in the rule file", id)
			}
			res, err := e.Prom.QueryRange(context.Background(), prom.RangeQuery{Expr: alerts[id], Start: time.UnixMilli(evals[0]), End: time.UnixMilli(evals[len(evals)-1]), Step: step})
			if err != nil {
				t.Fatalf("%s: %v", id, err)
			}
			for _, sr := range res.Series {
				// The alert expression holds where it has a sample.
				held := make([]float64, len(evals))
				for k := range held {
					held[k] = math.NaN()
				}
				for _, pt := range sr.Points {
					for k, at := range evals {
						if at == pt.T.UnixMilli() {
							held[k] = 1
						}
					}
				}
				for _, ep := range backtest.Simulate(evals, held, alerting.Condition{Op: alerting.OpGreater, Lo: 0.5}, hold) {
					promFile = append(promFile, episodeKey{id, subject(false, sr.Labels), ep.Start, ep.End})
				}
			}
		}
		compareEpisodes(t, w, grafana, promFile, step)
	}
	return fired
}

func compareEpisodes(t *testing.T, w [2]time.Time, a, b []episodeKey, step time.Duration) {
	t.Helper()
	sortEp := func(x []episodeKey) {
		sort.Slice(x, func(i, j int) bool {
			if x[i].rule != x[j].rule {
				return x[i].rule < x[j].rule
			}
			if x[i].subject != x[j].subject {
				return x[i].subject < x[j].subject
			}
			return x[i].start.Before(x[j].start)
		})
	}
	sortEp(a)
	sortEp(b)
	near := func(x, y time.Time) bool { d := x.Sub(y); return d <= step && d >= -step }
	var lines []string
	for _, e := range a {
		lines = append(lines, fmt.Sprintf("  grafana    %s %s %s..%s", e.rule, e.subject, e.start.Format("15:04"), e.end.Format("15:04")))
	}
	for _, e := range b {
		lines = append(lines, fmt.Sprintf("  prometheus %s %s %s..%s", e.rule, e.subject, e.start.Format("15:04"), e.end.Format("15:04")))
	}
	t.Logf("window %s..%s:\n%s", w[0].Format(time.RFC3339), w[1].Format(time.RFC3339), strings.Join(lines, "\n"))
	if len(a) != len(b) {
		t.Errorf("%d Grafana episodes, %d Prometheus episodes", len(a), len(b))
		return
	}
	for i := range a {
		if a[i].rule != b[i].rule || a[i].subject != b[i].subject || !near(a[i].start, b[i].start) || !near(a[i].end, b[i].end) {
			t.Errorf("episode %d differs: Grafana %s %s %s..%s, Prometheus %s %s %s..%s", i,
				a[i].rule, a[i].subject, a[i].start.Format("15:04"), a[i].end.Format("15:04"),
				b[i].rule, b[i].subject, b[i].start.Format("15:04"), b[i].end.Format("15:04"))
		}
	}
}
