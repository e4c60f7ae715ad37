package backtest

import (
	"context"
	"net/http/httptrace"
	"regexp"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// BenchmarkBacktest replays the whole catalog over the test bed's 7 days two ways:
//
//   - engine: backtest.Run, each rule's Grafana data query run once over the week through the
//     engine (one or two Prometheus calls per rule, plus the warm-up and deploy reads);
//   - promql-range: the Prometheus rendering's alert expressions (recording rules inlined, as a
//     rule file cannot be replayed over history without them) as range queries at the evaluation
//     interval, one rule after the other, one query per day of history (a week of the baseline's
//     subqueries in one query outlasts Prometheus' 2 minute query timeout), with `for` applied
//     here to the series each query returns.
//
// Both report the Prometheus round trips per replay (roundtrips/op).
//
//	go test -run '^$' -bench Backtest -benchtime 1x ./pkg/backtest/
func BenchmarkBacktest(b *testing.B) {
	e, _ := enginetest.Start(b, enginetest.Profile("custom"))
	o := weekOptions()
	b.Run("engine", func(b *testing.B) {
		var trips int64
		for i := 0; i < b.N; i++ {
			r, err := Run(context.Background(), e, o, nil)
			if err != nil {
				b.Fatal(err)
			}
			trips += r.Queries
			if i == 0 {
				b.Logf("engine: %d firing episodes", episodes(r))
			}
		}
		b.ReportMetric(float64(trips)/float64(b.N), "roundtrips/op")
	})
	b.Run("promql-range", func(b *testing.B) {
		alerts, err := inlinedAlerts(o.Params)
		if err != nil {
			b.Fatal(err)
		}
		var trips atomic.Int64
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				trips.Add(1)
			}
		}})
		evals := EvalTimes(o.From, o.To, o.Params.Interval)
		for i := 0; i < b.N; i++ {
			fired := 0
			for _, a := range alerts {
				m := newMerger()
				for day := o.From; day.Before(o.To); day = day.Add(24 * time.Hour) {
					end := day.Add(24*time.Hour - o.Params.Interval)
					if !day.Add(24 * time.Hour).Before(o.To) {
						end = o.To
					}
					series, err := e.Reader().RuleSeries(ctx, a.expr, day, end, o.Params.Interval)
					if err != nil {
						b.Fatalf("%s: %v", a.name, err)
					}
					for _, s := range series {
						v := make([]float64, len(s.T))
						for k := range v {
							v[k] = 1 // a returned sample is the condition holding
						}
						m.add(s.Labels, s.Unit, s.T, v)
					}
				}
				for _, tr := range m.tracks() {
					held := Reduce(tr.T, tr.V, evals, 0)
					fired += len(Simulate(evals, held, alerting.Condition{Op: alerting.OpGreater, Lo: 0}, a.hold))
				}
			}
			if i == 0 {
				b.Logf("promql-range: %d alerts, %d firing episodes", len(alerts), fired)
			}
		}
		b.ReportMetric(float64(trips.Load())/float64(b.N), "roundtrips/op")
	})
}

func episodes(r *Report) int {
	n := 0
	for _, rr := range r.Rules {
		n += rr.Fired
	}
	return n
}

type promAlert struct {
	name, expr string
	hold       time.Duration
}

// inlinedAlerts returns the Prometheus rendering's alerts with the recording rules they read
// written into their expressions.
func inlinedAlerts(p alerting.Params) ([]promAlert, error) {
	f, err := alerting.PrometheusRules(p)
	if err != nil {
		return nil, err
	}
	records := map[string]string{}
	var names []string
	for _, r := range f.Groups[0].Rules {
		if r.Record != "" {
			records[r.Record] = r.Expr
			names = append(names, r.Record)
		}
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	inline := func(expr string) string {
		for range 5 {
			before := expr
			for _, n := range names {
				re := regexp.MustCompile(`(^|[^a-zA-Z0-9_:])` + regexp.QuoteMeta(n) + `($|[^a-zA-Z0-9_:])`)
				expr = re.ReplaceAllString(expr, "${1}("+regexpEscapeRepl(records[n])+")${2}")
			}
			if expr == before {
				break
			}
		}
		return expr
	}
	var out []promAlert
	for _, r := range f.Groups[0].Rules {
		if r.Alert == "" {
			continue
		}
		var hold time.Duration
		if r.For != "" {
			if hold, err = time.ParseDuration(r.For); err != nil {
				return nil, err
			}
		}
		out = append(out, promAlert{name: r.Alert, expr: inline(r.Expr), hold: hold})
	}
	return out, nil
}

// regexpEscapeRepl keeps $ in a replacement literal.
func regexpEscapeRepl(s string) string { return regexp.MustCompile(`\$`).ReplaceAllString(s, "$$$$") }
