package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/prom"
)

// fetchFrom is the first timestamp every fetch of the query starts at: the output start padded
// for the warm-up mask (events up to one warm-up window and one rate window before the range
// still drop samples inside it) and for the runner's own windows.
func (x *Exec) fetchFrom() int64 {
	return x.g.from(x.rateWindow() + x.warmupWindow() + x.pad)
}

// SetPadding asks for d more history before the range (a trailing baseline). Call it before the
// first fetch.
func (x *Exec) SetPadding(d time.Duration) { x.pad = max(x.pad, d) }

// fetchGrid is the grid of every fetch, shared so combined series compare timestamps cheaply.
func (x *Exec) fetchGrid() []int64 {
	x.gridOnce.Do(func() {
		x.gridT, _ = derive.Grid(x.fetchFrom(), x.g.end, x.g.step.Milliseconds())
	})
	return x.gridT
}

// fetch runs expr over the fetch grid and places every series on it.
func (x *Exec) fetch(ctx context.Context, expr string) ([]derive.Series, error) {
	t := x.fetchGrid()
	return x.fetchRange(ctx, expr, t[0], t[len(t)-1], x.g.step, t)
}

// fetchRange runs expr as range queries over [from, to] at the given step, in chunks within
// Prometheus' point limit (concurrently), and places every series on grid: the timestamps from
// `from` to `to` at step.
func (x *Exec) fetchRange(ctx context.Context, expr string, from, to int64, stepD time.Duration, grid []int64) ([]derive.Series, error) {
	step := stepD.Milliseconds()
	points := int((to-from)/step) + 1
	maxSeries := max(1, x.limits.MaxSamples/min(points, prometheusMaxPoints))
	var chunks []span
	for a := from; a <= to; a += prometheusMaxPoints * step {
		chunks = append(chunks, span{a, min(to, a+(prometheusMaxPoints-1)*step)})
	}
	x.executed(expr)
	results, err := x.rangeParts(ctx, prom.RangeQuery{Expr: expr, Step: stepD, MaxSeries: maxSeries}, chunks)
	if err != nil {
		if prom.KindOf(err) == prom.KindLimit {
			return nil, &LimitError{Msg: fmt.Sprintf("%s; at %d points per series that is more than the limit of %d samples per query: narrow the model, version or instance selection, shorten the range or raise the step",
				err.Error(), min(points, prometheusMaxPoints), x.limits.MaxSamples)}
		}
		return nil, err
	}
	// Each series goes straight onto the grid (uniform at step): one allocation per series,
	// NaN where Prometheus had no point.
	merged := map[string]*derive.Series{}
	var order []string
	for _, res := range results {
		x.promAnnotations("Prometheus: ", res.Warnings, res.Infos)
		for _, s := range res.Series {
			key := labelsText(s.Labels)
			m, ok := merged[key]
			if !ok {
				if len(merged) >= maxSeries {
					return nil, &LimitError{Msg: fmt.Sprintf("the query returned more than %d series across its time chunks", maxSeries)}
				}
				m = &derive.Series{Labels: s.Labels, T: grid, V: nanValues(len(grid))}
				merged[key] = m
				order = append(order, key)
			}
			for _, p := range s.Points {
				t := p.T.UnixMilli()
				if i := (t - grid[0]) / step; t >= grid[0] && (t-grid[0])%step == 0 && int(i) < len(grid) {
					m.V[i] = p.V
				}
			}
		}
	}
	sort.Strings(order)
	out := make([]derive.Series, len(order))
	for i, key := range order {
		out[i] = *merged[key]
	}
	return out, nil
}

// all runs the functions concurrently and returns the first error.
func all(ctx context.Context, fns ...func(ctx context.Context) error) error {
	return parallel(ctx, len(fns), func(ctx context.Context, i int) error { return fns[i](ctx) })
}

// part is one aggregation a read fetches: op by (by) of a metric's samples or rate, summed
// over instances after the warm-up filter unless perInstance.
type part struct {
	op          string // sum, max
	metric      string
	matchers    []prom.Matcher
	rate        bool // rate(metric[rate window]) rather than the samples
	by          []string
	perInstance bool // keep one series per instance (summary quantiles cannot be added)
	// quantile > 0 makes Prometheus take histogram_quantile of the summed bucket rates (metric is
	// the _bucket series); only for reads without warming instances or per instance.
	quantile float64
	// fixed, when set, is the whole expression (a mean Prometheus computes); only for reads
	// without warming instances.
	fixed string
}

// expr writes op by (by) (selector or its rate) with extra matchers.
func (p part) expr(x *Exec, by []string, extra ...prom.Matcher) (string, error) {
	sel, err := prom.Selector(p.metric, append(slices.Clone(p.matchers), extra...)...)
	if err != nil {
		return "", err
	}
	if p.rate {
		sel = rateExpr(rateFunc(x.q.LastInterval), sel, x.rateWindow())
	}
	if p.quantile > 0 {
		buckets, err := aggregate(p.op, union(by, derive.BucketLabel), sel)
		if err != nil {
			return "", err
		}
		return "histogram_quantile(" + formatFloat(p.quantile) + ", " + buckets + ")", nil
	}
	return aggregate(p.op, by, sel)
}

// partLabel tells the expressions of one read apart in its single query.
const partLabel = "inferscope_part"

// readPlan says which expressions of a read's query belong to each part: the sum over steady
// instances (done by Prometheus) and, when some instances warm up in the range, their own
// series, which the engine masks and adds.
type readPlan struct {
	exprs       []string
	steady, own []int // per part: index into exprs, -1 = none
}

// plan builds a read's expressions. warming lists the instances with warm-up in the range.
func (x *Exec) plan(parts []part, warming []string) (readPlan, error) {
	pl := readPlan{steady: make([]int, len(parts)), own: make([]int, len(parts))}
	add := func(e string, err error) (int, error) {
		if err != nil {
			return -1, err
		}
		pl.exprs = append(pl.exprs, e)
		return len(pl.exprs) - 1, nil
	}
	var err error
	for i, p := range parts {
		pl.steady[i], pl.own[i] = -1, -1
		if p.perInstance {
			if pl.own[i], err = add(p.expr(x, union(p.by, x.instanceLabel))); err != nil {
				return pl, err
			}
			continue
		}
		if p.fixed != "" && len(warming) == 0 {
			pl.exprs = append(pl.exprs, p.fixed)
			pl.steady[i] = len(pl.exprs) - 1
			continue
		}
		if len(warming) == 0 {
			if pl.steady[i], err = add(p.expr(x, p.by)); err != nil {
				return pl, err
			}
			continue
		}
		if p.quantile > 0 || p.fixed != "" {
			return pl, fmt.Errorf("internal error: a part Prometheus aggregates cannot be read with warming instances")
		}
		notWarming := prom.Matcher{Label: x.instanceLabel, Type: prom.MatchNotRegexp, Values: warming}
		if pl.steady[i], err = add(p.expr(x, p.by, notWarming)); err != nil {
			return pl, err
		}
		if pl.own[i], err = add(p.expr(x, union(p.by, x.instanceLabel), prom.In(x.instanceLabel, warming...))); err != nil {
			return pl, err
		}
	}
	return pl, nil
}

// read fetches several parts in one Prometheus query (one round trip). With the warm-up filter
// on, it first reads the lifecycle signals (once per query); instances that warm up in the range
// are then fetched on their own, their warming samples dropped and the rest added to the sum the
// steady instances' series make in Prometheus.
func (x *Exec) read(ctx context.Context, parts []part) ([][]derive.Series, error) {
	var ws *warmState
	if x.q.WarmupFilter {
		var err error
		if ws, err = x.warmup(ctx); err != nil {
			return nil, err
		}
	}
	pl, err := x.plan(parts, ws.warming())
	if err != nil {
		return nil, err
	}
	var series []derive.Series
	if len(pl.exprs) == 1 {
		series, err = x.fetch(ctx, pl.exprs[0])
	} else {
		series, err = x.fetch(ctx, unionExpr(pl.exprs))
	}
	if err != nil {
		return nil, err
	}
	got := make([][]derive.Series, len(pl.exprs))
	for _, s := range series {
		i := 0
		if len(pl.exprs) > 1 {
			i, err = strconv.Atoi(s.Labels[partLabel])
			if err != nil || i < 0 || i >= len(pl.exprs) {
				continue
			}
			delete(s.Labels, partLabel)
		}
		got[i] = append(got[i], s)
	}
	out := make([][]derive.Series, len(parts))
	for i, p := range parts {
		if pl.steady[i] >= 0 {
			out[i] = got[pl.steady[i]]
		}
		if pl.own[i] < 0 {
			continue
		}
		own := got[pl.own[i]]
		if ws != nil {
			if own, err = ws.apply(own, x.instanceLabel, x.modelLabel); err != nil {
				return nil, err
			}
		}
		if p.perInstance {
			out[i] = own
			continue
		}
		if out[i], err = derive.SumBy(append(out[i], own...), p.by); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unionExpr joins expressions into one, each part's series marked with its index in partLabel.
func unionExpr(exprs []string) string {
	tagged := make([]string, len(exprs))
	for i, e := range exprs {
		tagged[i] = withLabel(e, partLabel, strconv.Itoa(i))
	}
	return strings.Join(tagged, " or ")
}

// sumBy reads sum by (by) of a metric's rate on the fetch grid, warm-up filtered.
func (x *Exec) sumBy(ctx context.Context, p part) ([]derive.Series, error) {
	out, err := x.read(ctx, []part{p})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// output cuts a fetched series down to the output range.
func (x *Exec) output(s derive.Series) derive.Series {
	return s.Slice(x.g.start, x.g.end)
}
