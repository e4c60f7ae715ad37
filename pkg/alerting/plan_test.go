package alerting

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"
)

// The plans are what the Grafana rendering provisions: the same data query (with the data
// source uid left as given), the same `for`, and a condition whose rendering is the rule's
// condition C.
func TestPlansAreTheGrafanaRules(t *testing.T) {
	p := grafanaParams()
	g, err := GrafanaRules(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.DatasourceUID = ""
	plans, err := Plans(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != len(g.Rules) {
		t.Fatalf("%d plans for %d rendered rules", len(plans), len(g.Rules))
	}
	for i, pl := range plans {
		r := g.Rules[i]
		if r.Labels[RuleLabel] != pl.Rule.ID {
			t.Fatalf("plan %d is %s, rendered rule %s", i, pl.Rule.ID, r.Labels[RuleLabel])
		}
		if pl.Query.DatasourceUID != "" || pl.Query.Model["datasource"].(map[string]any)["uid"] != "" {
			t.Errorf("%s: the plan carries a data source uid: %+v", pl.Rule.ID, pl.Query)
		}
		want := r.Data[0]
		want.DatasourceUID = ""
		want.Model = copyModel(want.Model)
		want.Model["datasource"] = map[string]any{"type": DatasourceType, "uid": ""}
		if !sameJSON(t, pl.Query, want) {
			t.Errorf("%s: plan query differs from the rendered query A", pl.Rule.ID)
		}
		if got := promDuration(pl.For); got != r.For {
			t.Errorf("%s: for %s, rendered %s", pl.Rule.ID, got, r.For)
		}
		c := r.Data[2].Model
		switch pl.Condition.Op {
		case OpGreater, OpLess:
			line := pl.Condition.Lo
			if pl.Condition.Op == OpLess {
				line = pl.Condition.Hi
			}
			ev := c["conditions"].([]any)[0].(map[string]any)["evaluator"].(map[string]any)
			if c["type"] != "threshold" || ev["type"] != pl.Condition.Op || !reflect.DeepEqual(ev["params"], []float64{line}) {
				t.Errorf("%s: condition %s rendered as %v", pl.Rule.ID, pl.Condition, c)
			}
		case OpWithin:
			want := fmt.Sprintf("$B > %s && $B <= %s", fmtFloat(pl.Condition.Lo), fmtFloat(pl.Condition.Hi))
			if c["type"] != "math" || c["expression"] != want {
				t.Errorf("%s: condition %s rendered as %v", pl.Rule.ID, pl.Condition, c)
			}
		default:
			t.Errorf("%s: operator %q", pl.Rule.ID, pl.Condition.Op)
		}
	}
}

func copyModel(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// Thresholds move the plans' conditions; rules the profile cannot feed have no plan.
func TestPlansFollowParams(t *testing.T) {
	p := Defaults()
	p.LatencyWarnRatio, p.ForecastHorizon = 1.2, 2*time.Hour
	plans, err := Plans(p)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Condition{}
	for _, pl := range plans {
		got[pl.Rule.ID] = pl.Condition
	}
	if c := got["latency-p1"]; c != (Condition{Op: OpWithin, Lo: 1.2, Hi: 3}) || !c.Holds(2) || c.Holds(3.5) {
		t.Errorf("latency-p1: %+v", c)
	}
	if c := got["gpumem-forecast-p2"]; c.Hi != 7200 || c.Holds(0) || !c.Holds(7200) {
		t.Errorf("forecast: %+v", c)
	}
	if c := got["cache-drop-p2"]; c.Op != OpLess || !c.Holds(0.5) || c.Holds(math.NaN()) {
		t.Errorf("cache-drop-p2: %+v", c)
	}
	p.Profile = "triton" // no load state: warmup-long-p2 cannot be fed
	plans, err = Plans(p)
	if err != nil {
		t.Fatal(err)
	}
	catalog, _ := Catalog(p)
	n := 0
	for _, r := range catalog {
		if r.Unavailable == "" {
			n++
		}
	}
	if len(plans) != n || n == len(catalog) {
		t.Errorf("%d plans, %d available of %d", len(plans), n, len(catalog))
	}
	for _, pl := range plans {
		if pl.Rule.Unavailable != "" {
			t.Errorf("plan for unavailable %s", pl.Rule.ID)
		}
	}
	p.LatencyWarnRatio = 4
	if _, err := Plans(p); err == nil {
		t.Error("invalid params planned")
	}
}
