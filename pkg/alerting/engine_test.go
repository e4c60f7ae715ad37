package alerting

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// The Grafana rules' data queries run through the engine the data source runs them with, on
// the test bed's week of history in a real Prometheus: each yields the series its rule reduces
// (the names in `series` exist), the service rules' series one per instance (the alert's
// instance label comes from them), and the rules cross their lines during their incidents:
// node-a's queue surge passes queue-p1's line on node-a, read per instance.
func TestGrafanaQueriesYieldTheirSeries(t *testing.T) {
	e, s := enginetest.Start(t, enginetest.Profile("custom"))

	p := grafanaParams()
	g, err := GrafanaRules(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	at := func(kind testbed.IncidentKind, after time.Duration) time.Time {
		in, ok := s.Incident(kind)
		if !ok {
			t.Fatalf("no %s incident", kind)
		}
		return in.Start.Add(after)
	}
	// Where each rule is evaluated, and the value its condition needs there (NaN: only that the
	// series exist).
	cases := map[string]struct {
		when  time.Time
		above float64
	}{
		"latency-p0":         {at(testbed.QueueSurge, 15*time.Minute), p.LatencyCritRatio},
		"latency-p1":         {at(testbed.QueueSurge, 15*time.Minute), math.NaN()},
		"gpumem-p0":          {at(testbed.ComputeSlowdown, 20*time.Minute), p.GPUMemCrit},
		"gpumem-p1":          {at(testbed.ComputeSlowdown, 20*time.Minute), p.GPUMemWarn},
		"gpu-idle-p0":        {at(testbed.GPUIdle, 12*time.Minute), 0.5},
		"errors-p0":          {at(testbed.QueueSurge, 15*time.Minute), math.NaN()},
		"jitter-p1":          {at(testbed.ComputeSlowdown, 20*time.Minute), p.JitterRatio},
		"queue-p1":           {at(testbed.QueueSurge, 15*time.Minute), p.QueueShare},
		"gpumem-forecast-p2": {at(testbed.ComputeSlowdown, -30*time.Minute), math.NaN()},
	}
	for _, r := range g.Rules {
		id := r.Labels[RuleLabel]
		q := r.Data[0]
		if q.QueryType == "promql" {
			continue // PromQL through the data source: parsed in the payload test, run in promtool's
		}
		c, ok := cases[id]
		if !ok {
			t.Errorf("no case for %s", id)
			continue
		}
		t.Run(id, func(t *testing.T) {
			raw, _ := json.Marshal(q.Model)
			query, err := engine.ParseAs(q.QueryType, raw)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := e.Run(ctx, query, engine.Range{Start: c.when.Add(-time.Duration(q.RelativeTimeRange.From) * time.Second), End: c.when, MinStep: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			want := query.Series[0]
			peak, n := math.Inf(-1), 0
			instances := map[string]bool{}
			for _, s := range res.Series {
				if s.Name != want {
					t.Errorf("series %q is not the one the rule asked for (%q)", s.Name, want)
				}
				if r.Labels[ScopeLabel] == string(ScopeService) {
					if s.Labels["instance"] == "" || r.Labels[InstanceLabel] == "" {
						t.Errorf("service series %v (rule labels %v): no instance", s.Labels, r.Labels)
					}
					instances[s.Labels["instance"]] = true
				}
				n++
				for _, v := range s.V {
					if !math.IsNaN(v) {
						peak = math.Max(peak, v)
					}
				}
			}
			if n == 0 || math.IsInf(peak, -1) {
				t.Fatalf("no %q values (notices %v)", want, res.Notices)
			}
			if !math.IsNaN(c.above) && peak <= c.above {
				t.Errorf("%s peaked at %g, the rule needs above %g", want, peak, c.above)
			}
			if r.Labels[ScopeLabel] == string(ScopeService) && len(instances) != len(s.Instances()) {
				t.Errorf("series on %d instances, want one per instance (%d)", len(instances), len(s.Instances()))
			}
			t.Logf("%d %q series, peak %.3g", n, want, peak)
		})
	}
}
