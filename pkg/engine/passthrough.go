package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
)

// TypePromQL is the PromQL passthrough: an expression run as it is written, through the engine
// like every other type, so the engine stays the one door to Prometheus and its limits apply.
const TypePromQL = "promql"

var (
	fieldExpr  = FieldSpec{Name: "expr", Kind: KindString, Doc: "The PromQL expression, run as a range query over the panel's range."}
	promqlSpec = TypeSpec{Name: TypePromQL, Title: "PromQL", Profile: ProfileUnused, parse: parsePromQL,
		Doc:    "A raw PromQL expression, passed through to Prometheus.",
		Fields: []FieldSpec{fieldExpr}}
)

type promqlQuery struct{ expr string }

func parsePromQL(_ Common, f Fields) (Runner, error) {
	expr, err := fieldExpr.stringValue(f)
	if err != nil {
		return nil, err
	}
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, errors.New("the PromQL expression (expr) is empty")
	}
	return promqlQuery{expr: expr}, nil
}

// Run sends the expression as one range query. The step is chosen as Grafana's Prometheus data
// source does (the panel's interval, raised to stay within the point limit and maxDataPoints),
// without the engine's whole-second rounding, so a stored panel keeps its timestamps. Series
// come back with all their labels (__name__ included) and no Series label; Prometheus' warnings
// become notices.
func (pq promqlQuery) Run(ctx context.Context, x *Exec) error {
	r := x.rng
	step := prom.StepFor(r.Start, r.End, r.MinStep, x.limits.MaxPoints)
	if r.MaxPoints > 0 {
		step = max(step, prom.StepFor(r.Start, r.End, 0, r.MaxPoints))
	}
	// Aligning to the step keeps the sample times stable as the dashboard refreshes.
	start, end := alignToStep(r.Start, step), alignToStep(r.End, step)
	res, err := x.e.Prom.QueryRange(ctx, prom.RangeQuery{Expr: pq.expr, Start: start, End: end, Step: step, MaxSeries: x.limits.MaxSeries})
	x.executed(pq.expr)
	x.setStep(step)
	if err != nil {
		return err
	}
	x.promAnnotations("", res.Warnings, res.Infos)
	for _, s := range res.Series {
		t := make([]int64, len(s.Points))
		v := make([]float64, len(s.Points))
		for i, p := range s.Points {
			t[i], v[i] = p.T.UnixMilli(), p.V
		}
		x.Add(Series{Labels: s.Labels, T: t, V: v})
	}
	return nil
}

func alignToStep(t time.Time, step time.Duration) time.Time {
	ms := t.UnixMilli()
	s := step.Milliseconds()
	if s <= 0 {
		return t
	}
	return time.UnixMilli(ms - ms%s).UTC()
}
