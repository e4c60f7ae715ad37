package alerting

import (
	"fmt"
	"math"
	"time"
)

// Plan is how Grafana evaluates one catalog rule, taken from the same code that renders it:
// the data query A (an engine query type, or PromQL through the data source), reduced to its
// last finite value per series over Query.RelativeTimeRange, then Condition, held For. A
// backtest that follows the plan evaluates exactly what the provisioned rule does.
type Plan struct {
	Rule      Rule
	Query     GrafanaQuery // the data query A
	Condition Condition    // condition C on the reduced value
	For       time.Duration
	// Server, over several servers, names the server a PromQL rule is read from (one plan per
	// server that can feed it); "" for an engine query, which answers every server's models.
	Server string
}

// Condition operators.
const (
	OpGreater = "gt"     // x > Lo
	OpLess    = "lt"     // x < Hi
	OpWithin  = "within" // Lo < x <= Hi
)

// Condition is a rule's condition C on the reduced value.
type Condition struct {
	Op     string
	Lo, Hi float64
}

// Holds reports whether the condition is true for x. A missing value (NaN) never holds: the
// rules' NoData state is OK.
func (c Condition) Holds(x float64) bool {
	if math.IsNaN(x) {
		return false
	}
	switch c.Op {
	case OpGreater:
		return x > c.Lo
	case OpLess:
		return x < c.Hi
	case OpWithin:
		return x > c.Lo && x <= c.Hi
	}
	return false
}

// String writes the condition as people read it ("> 3", "< 0.8", "in (1.5, 3]").
func (c Condition) String() string {
	switch c.Op {
	case OpGreater:
		return "> " + fmtFloat(c.Lo)
	case OpLess:
		return "< " + fmtFloat(c.Hi)
	case OpWithin:
		return fmt.Sprintf("in (%s, %s]", fmtFloat(c.Lo), fmtFloat(c.Hi))
	}
	return c.Op
}

// Plans returns the evaluation plan of every rule the metric profile can feed, in catalog
// order. Rules it cannot feed are left out; Catalog says why. No data source uid is needed:
// the plan's query carries p.DatasourceUID as it is (empty when unset). Over several servers the
// plans follow the Grafana rendering: an engine rule once, a PromQL rule once per server that
// can feed it (Plan.Server).
func Plans(p Params) ([]Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	bs, err := newBuilders(p)
	if err != nil {
		return nil, err
	}
	catalog, err := Catalog(p)
	if err != nil {
		return nil, err
	}
	var out []Plan
	for i, s := range specs {
		if catalog[i].Unavailable != "" {
			continue
		}
		fed := feeds(bs, s)
		if len(bs) > 1 && !perServer(s) {
			fed = fed[:1]
		}
		for _, b := range fed {
			main, rangeFrom, _ := grafanaMainQuery(p, b, s)
			pl := Plan{Rule: catalog[i], Query: dsQuery(p, refData, main, rangeFrom), Condition: ruleCondition(p, s), For: s.hold(p)}
			if len(bs) > 1 && perServer(s) {
				pl.Server = b.server
			}
			out = append(out, pl)
		}
	}
	return out, nil
}

// ruleCondition is the condition of each rule; grafanaCondition renders it.
func ruleCondition(p Params, s spec) Condition {
	switch s.id {
	case "latency-p0":
		return Condition{Op: OpGreater, Lo: p.LatencyCritRatio}
	case "latency-p1":
		// Rule-side silencing: the P1 leaves the range above the P0 line to the P0 rule.
		return Condition{Op: OpWithin, Lo: p.LatencyWarnRatio, Hi: p.LatencyCritRatio}
	case "network-p1":
		return Condition{Op: OpGreater, Lo: p.LatencyWarnRatio}
	case "gpumem-p0":
		return Condition{Op: OpGreater, Lo: p.GPUMemCrit}
	case "gpumem-p1":
		return Condition{Op: OpWithin, Lo: p.GPUMemWarn, Hi: p.GPUMemCrit}
	case "gpu-idle-p0":
		return Condition{Op: OpGreater, Lo: 0.5}
	case "errors-p0":
		return Condition{Op: OpGreater, Lo: p.ErrorRatio}
	case "jitter-p1":
		return Condition{Op: OpGreater, Lo: p.JitterRatio}
	case "queue-p1":
		return Condition{Op: OpGreater, Lo: p.QueueShare}
	case "gpumem-forecast-p2":
		// ETA 0 means already above the line: that is the P0 rule's.
		return Condition{Op: OpWithin, Lo: 0, Hi: p.ForecastHorizon.Seconds()}
	case "cache-drop-p2":
		return Condition{Op: OpLess, Hi: p.CacheDropRatio}
	case "warmup-long-p2":
		return Condition{Op: OpGreater, Lo: 0.5}
	case "xid-p1", "gpu-throttle-p1", "gpu-ecc-p1":
		return Condition{Op: OpGreater, Lo: 0}
	}
	panic("alerting: no condition for rule " + s.id)
}
