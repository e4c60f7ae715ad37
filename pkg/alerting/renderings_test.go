package alerting_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
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

// TestGPURenderingsAgreeOnTheTestBed replays the GPU rules (memory P0/P1, forecast, XID, idle)
// of both renderings over the same
// test-bed history — the Grafana-managed rules through the backtest (which evaluates their data
// queries as Grafana does), the Prometheus rule file by evaluating each alert expression, its
// recordings inlined, at every evaluation step with the same for-hold — and compares their
// firing episodes one by one: the same GPUs, each episode's start and end within one evaluation
// step. The windows hold the compute slowdown (memory ramp and P0), the GPU idle with its XID,
// and node-c's restart (warm-up masking: no GPU rule may fire there in either rendering).
func TestGPURenderingsAgreeOnTheTestBed(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the test bed")
	}
	e, s := enginetest.Start(t, enginetest.Profile("custom"))
	p := alerting.Defaults()
	p.Profile = "custom"
	ids := []string{"gpumem-p0", "gpumem-p1", "gpumem-forecast-p2", "xid-p1", "gpu-idle-p0"}
	file, err := alerting.PrometheusRules(p)
	if err != nil {
		t.Fatal(err)
	}
	alerts := inlineRecordings(file)
	var windows [][2]time.Time
	for _, kind := range []testbed.IncidentKind{testbed.ComputeSlowdown, testbed.GPUIdle, testbed.WarmupRestart} {
		in, ok := s.Incident(kind)
		if !ok {
			t.Fatalf("no %s incident", kind)
		}
		windows = append(windows, [2]time.Time{in.Start.Add(-2 * time.Hour).Truncate(time.Minute), in.End.Add(45 * time.Minute).Truncate(time.Minute)})
	}
	step := p.Interval
	total := 0
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
				grafana = append(grafana, episodeKey{rr.ID, fmt.Sprintf("%s/%s", ep.Labels["node"], ep.Labels["gpu"]), ep.Start, ep.End})
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
					promFile = append(promFile, episodeKey{id, fmt.Sprintf("%s/%s", sr.Labels[alerting.NodeLabel], sr.Labels["gpu"]), ep.Start, ep.End})
				}
			}
		}
		compareEpisodes(t, w, grafana, promFile, step)
		total += len(grafana)
	}
	if total == 0 {
		t.Fatal("no GPU rule fired in either rendering: nothing was compared")
	}
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
