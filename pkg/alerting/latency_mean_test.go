package alerting

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// meanServer is one model version on a server that exports latency only as cumulative
// microsecond counters (Triton without histograms, TorchServe): requests per minute and a mean
// latency that steps at a minute.
type meanServer struct {
	profile            string // triton or torchserve
	inst, model        string
	before, after      float64 // mean latency, seconds
	at                 int
	model_, version_   string // label names
	duration, requests string // metric names
}

func tritonMean(inst, model string, before, after float64, at int) meanServer {
	return meanServer{profile: "triton", inst: inst, model: model, before: before, after: after, at: at,
		model_: "model", version_: "version", duration: "nv_inference_request_duration_us", requests: "nv_inference_request_success"}
}

func torchserveMean(inst, model string, before, after float64, at int) meanServer {
	return meanServer{profile: "torchserve", inst: inst, model: model, before: before, after: after, at: at,
		model_: "model_name", version_: "model_version", duration: "ts_inference_latency_microseconds", requests: "ts_inference_requests_total"}
}

func (s meanServer) write(n int) []series {
	l := map[string]string{s.model_: s.model, s.version_: "1", "instance": s.inst, "job": "inference"}
	cum := func(f func(m int) float64) func(int) float64 {
		vals := make([]float64, n)
		for m := 1; m < n; m++ {
			vals[m] = vals[m-1] + f(m)
		}
		return func(m int) float64 { return vals[m] }
	}
	mean := func(m int) float64 {
		if m >= s.at {
			return s.after
		}
		return s.before
	}
	return []series{
		{labelText(s.requests, l), samples(n, cum(func(int) float64 { return 1000 }))},
		{labelText(s.duration, l), samples(n, cum(func(m int) float64 { return 1000 * mean(m) * 1e6 }))},
	}
}

// TestPromtoolMeanOnlyServersGetLatencyAlerts: Triton without histograms and TorchServe export
// only mean latency; the latency rules judge that mean against its same-time-of-day baseline
// (they were not rendered for these servers before), and the summary says it is a mean. A
// fourfold mean fires the P0 on the slowed model only.
func TestPromtoolMeanOnlyServersGetLatencyAlerts(t *testing.T) {
	for _, mk := range []func(inst, model string, before, after float64, at int) meanServer{tritonMean, torchserveMean} {
		slowed := mk("node-a:8000", "ranker", 0.02, 0.08, incidentAt)
		steadyOne := mk("node-b:8000", "ranker", 0.02, 0.021, incidentAt)
		t.Run(slowed.profile, func(t *testing.T) {
			p := testParams()
			p.Profile = slowed.profile
			at := incidentAt + 6 // the rate window holds only incident minutes
			firing := `count by (instance) (ALERTS{alertname="InferscopeLatencyCritical",alertstate="firing"})`
			test := promtoolTest{
				Name:  "mean latency against its baseline on " + slowed.profile,
				fleet: []interface{ write(int) []series }{slowed, steadyOne},
				PromqlTest: []promqlCase{
					{Expr: firing, EvalTime: evalAt(incidentAt - 1)},
					{Expr: firing, EvalTime: evalAt(at), ExpSamples: []expSample{{`{instance="node-a:8000"}`, 1}}},
					// The baseline is the steady mean (20 ms), the ratio 4.
					{Expr: `round(1e6 * ` + RecLatencyBaseline + `{instance="node-a:8000"})`, EvalTime: evalAt(at),
						ExpSamples: []expSample{{`{instance="node-a:8000", ` + slowed.model_ + `="ranker", ` + slowed.version_ + `="1"}`, 20000}}},
					{Expr: `round(100 * ` + RecLatencyRatio + `)`, EvalTime: evalAt(at), ExpSamples: []expSample{
						{`{instance="node-a:8000", ` + slowed.model_ + `="ranker", ` + slowed.version_ + `="1"}`, 400},
						{`{instance="node-b:8000", ` + slowed.model_ + `="ranker", ` + slowed.version_ + `="1"}`, math.Round(100 * 0.021 / 0.02)}}},
				},
			}
			runPromtool(t, p, []promtoolTest{test})
			b, _ := newBuilder(p)
			c := ctx{b: b, value: "$value"}
			s, _ := specByID("latency-p0")
			if got := c.summary(s); !contains(got, "mean latency") {
				t.Errorf("the summary does not say it is a mean: %s", got)
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// upgrade is an in-place upgrade of recsys on node-a at the incident minute: the process
// restarts, the model loads for a minute, v1 is gone and v2 serves with the given latency.
func upgrade(v2 dist) []interface{ write(int) []series } {
	node := server("node-a:8000", "recsys")
	node.starts = []int{-10000, incidentAt}
	node.notReady = [][2]int{{incidentAt, incidentAt + 1}}
	v1 := svc("node-a:8000", "recsys", phase{0, incidentAt, 1000, steady})
	v1.restarts = []int{incidentAt}
	next := svc("node-a:8000", "recsys", phase{incidentAt + 1, totalMin, 1000, v2})
	next.labels = with(next.labels, "model_version", "v2")
	return []interface{ write(int) []series }{node, v1, next, busyGPU("node-a", 0, 0.5)}
}

// TestPromtoolNewVersionJudgedAgainstItsModel: the brief's headline case. An in-place upgrade
// whose new version falls off a cliff (P95 about 5×) has no baseline of its own (0 days of
// history), so before, its ratio was empty and no latency rule fired. Now a version with fewer
// than baselineMinDays days is judged against its model's baseline on the instance: the P0
// fires once the warm-up is over, never during it; and an upgrade to an equally fast version
// raises nothing at all.
func TestPromtoolNewVersionJudgedAgainstItsModel(t *testing.T) {
	p := testParams()
	ratio := slow.quantile(0.95) / steady.quantile(0.95)
	v2 := `{instance="node-a:8000", model_name="recsys", model_version="v2"}`
	var quiet []alertCase
	for m := incidentAt; m <= incidentAt+7; m++ {
		quiet = append(quiet, none(m, serviceAlerts...)...)
	}
	cliff := promtoolTest{
		Name:  "an in-place upgrade whose new version is slow",
		fleet: upgrade(slow),
		AlertRuleTest: append(quiet, alertCase{EvalTime: evalAt(incidentAt + 12), Alertname: "InferscopeLatencyCritical", ExpAlerts: []expAlert{{
			with(serviceLabels(p, "latency-p0", "node-a:8000", "recsys"), "model_version", "v2", VersionLabel, "v2"), cliffAnnotations(p, ratio)}}}),
		PromqlTest: []promqlCase{
			// v2 was exported without traffic before (as Triton lists a loaded version at 0): its
			// day means are NaN, no data, so its baseline is the model's (v1's steady P95).
			{Expr: `count without (inferscope_day) (` + RecLatencyDayMean + `{model_version="v2"} > 0)`, EvalTime: evalAt(incidentAt + 12)},
			{Expr: `round(1e6 * ` + RecLatencyBaseline + `{model_version="v2"})`, EvalTime: evalAt(incidentAt + 12),
				ExpSamples: []expSample{{v2, math.Round(1e6 * steady.quantile(0.95))}}},
			{Expr: `round(100 * ` + RecLatencyRatio + `{model_version="v2"})`, EvalTime: evalAt(incidentAt + 12),
				ExpSamples: []expSample{{v2, math.Round(100 * ratio)}}},
		},
	}
	var none2 []alertCase
	for _, m := range []int{incidentAt + 1, incidentAt + 4, incidentAt + 8, incidentAt + 12, incidentAt + 20, incidentAt + 40} {
		none2 = append(none2, none(m, serviceAlerts...)...)
	}
	same := promtoolTest{Name: "an in-place upgrade to an equally fast version", fleet: upgrade(steady), AlertRuleTest: none2,
		PromqlTest: []promqlCase{{Expr: `round(100 * ` + RecLatencyRatio + `{model_version="v2"})`, EvalTime: evalAt(incidentAt + 20), ExpSamples: []expSample{{v2, 100}}}}}
	runPromtool(t, p, []promtoolTest{cliff, same})
}

// cliffAnnotations are the headline case's P0 annotations on v2.
func cliffAnnotations(p Params, ratio float64) map[string]string {
	const at = incidentAt + 12
	a := serviceAnnotations(p, "latency-p0", at, "node-a:8000", "recsys",
		fmt.Sprintf("P95 latency is %.2f× its same-time-of-day baseline", ratio), fmt.Sprintf("%.2f× baseline", ratio), 1000.0/60, "GPU 0 50% memory; ")
	a["summary"] = strings.Replace(a["summary"], "recsys v1", "recsys v2", 1)
	a["dashboard"] = strings.Replace(a["dashboard"], "var-version=v1", "var-version=v2", 1)
	a["triage"] = strings.Replace(a["triage"], "version=v1", "version=v2", 1)
	return a
}

// TestPromtoolForecastIgnoresARestartDip: a restart frees the GPU's memory and the model
// reloads it (84 % → 0 → 30 % → 60 % → 84 %). A trend fitted over that dip rises steeply for
// the next half hour and predicted a crossing of 92 % — a P2 from a warm-up. The forecast fits
// steady samples only (those of a warming node left out, as the data source's forecast does),
// so it stays quiet; the unmasked fit is shown to cross.
func TestPromtoolForecastIgnoresARestartDip(t *testing.T) {
	p := testParams()
	restart := incidentAt
	node := server("node-a:8000", "recsys")
	node.starts = []int{-10000, restart}
	node.notReady = [][2]int{{restart, restart + 1}}
	s := svc("node-a:8000", "recsys", phase{0, restart, 1000, steady}, phase{restart + 1, totalMin, 1000, steady})
	s.restarts = []int{restart}
	g := busyGPU("node-a", 0, 0)
	g.memory = func(m int) float64 {
		if v, ok := map[int]float64{restart: 0, restart + 1: 0.3, restart + 2: 0.6}[m]; ok {
			return v
		}
		return 0.84
	}
	var cases []alertCase
	for m := restart; m <= restart+40; m += 3 {
		cases = append(cases, none(m, "InferscopeGPUMemoryForecast", "InferscopeGPUMemoryHigh", "InferscopeGPUMemoryCritical")...)
	}
	unmasked := fmt.Sprintf(`count(predict_linear(%s[30m:1m], 3600) > 0.92)`, RecGPUMemory)
	test := promtoolTest{
		Name:          "a restart's memory dip is not a trend",
		fleet:         []interface{ write(int) []series }{node, s, g},
		AlertRuleTest: cases,
		PromqlTest: []promqlCase{
			{Expr: unmasked, EvalTime: evalAt(restart + 25), ExpSamples: []expSample{{"{}", 1}}},
		},
	}
	runPromtool(t, p, []promtoolTest{test})
}

// TestGrafanaLatencyRulesOnMeanOnlyServers: the Grafana rendering's latency rules, rendered for
// Triton (without histograms) and TorchServe now that they read the mean, run through the engine
// on that server's test bed: one mean-latency series per instance (labelled measure="mean"), and
// during node-a's queue surge node-a's ratio passes the P1 line.
func TestGrafanaLatencyRulesOnMeanOnlyServers(t *testing.T) {
	for _, name := range []string{"triton", "torchserve"} {
		t.Run(name, func(t *testing.T) {
			e, s := enginetest.Start(t, enginetest.Profile(name))
			p := grafanaParams()
			p.Profile = name
			g, err := GrafanaRules(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			var rule *GrafanaRule
			for i := range g.Rules {
				if g.Rules[i].Labels[RuleLabel] == "latency-p0" {
					rule = &g.Rules[i]
				}
			}
			if rule == nil {
				t.Fatal("no latency-p0 rule for " + name)
			}
			if !strings.Contains(rule.Annotations["summary"], "mean latency") {
				t.Errorf("the summary does not say it is a mean: %s", rule.Annotations["summary"])
			}
			surge, _ := s.Incident(testbed.QueueSurge)
			when := surge.Start.Add(15 * time.Minute)
			q := rule.Data[0]
			raw, _ := json.Marshal(q.Model)
			query, err := engine.ParseAs(q.QueryType, raw)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := e.Run(ctx, query, engine.Range{Start: when.Add(-time.Duration(q.RelativeTimeRange.From) * time.Second), End: when, MinStep: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			peak := map[string]float64{}
			for _, sr := range res.Series {
				if sr.Name != "ratio" {
					continue
				}
				if sr.Labels["measure"] != "mean" {
					t.Errorf("series %v is not the mean", sr.Labels)
				}
				for _, v := range sr.V {
					if !math.IsNaN(v) {
						peak[sr.Labels["instance"]] = math.Max(peak[sr.Labels["instance"]], v)
					}
				}
			}
			t.Logf("%s: peak ratios %v (notices %v)", name, peak, res.Notices)
			if peak[surge.Instance] <= p.LatencyWarnRatio {
				t.Errorf("%s: %s peaked at %g during the surge, want above %g", name, surge.Instance, peak[surge.Instance], p.LatencyWarnRatio)
			}
		})
	}
}
