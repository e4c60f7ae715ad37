package engine

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// PromQL text is assembled here from validated names and from pkg/prom's selectors and
// quoting; no user value is written into an expression any other way.

// scope says which of the selection's labels a metric carries.
type scope int

const (
	scopeModelVersion scope = iota // model, version and instance labels
	scopeModel                     // model and instance (load state, queue depth)
	scopeInstance                  // instance only (process start)
)

// matchers returns the label matchers of the query's selection for a metric of the given scope,
// plus the measure's fixed matchers (sorted, so the same query always reads the same).
func (x *Exec) matchers(sc scope, fixed map[string]string) []prom.Matcher {
	var ms []prom.Matcher
	if len(x.q.Model) > 0 && x.modelLabel != "" && sc <= scopeModel {
		ms = append(ms, valuesMatcher(x.modelLabel, x.q.Model))
	}
	if len(x.q.Version) > 0 && x.versionLabel != "" && sc == scopeModelVersion {
		ms = append(ms, valuesMatcher(x.versionLabel, x.q.Version))
	}
	if len(x.q.Instance) > 0 {
		ms = append(ms, valuesMatcher(x.instanceLabel, x.q.Instance))
	}
	ms = append(ms, prom.EqAll(fixed)...)
	return ms
}

// measureMatchers are x.matchers with the measure's fixed matchers.
func (x *Exec) measureMatchers(sc scope, m profile.Measure) []prom.Matcher {
	return append(x.matchers(sc, nil), fixedMatchers(m)...)
}

// fixedMatchers are a measure's fixed equality matchers, then its set matchers (OneOf), each in
// label order so that the selector's text is stable.
func fixedMatchers(m profile.Measure) []prom.Matcher {
	ms := prom.EqAll(m.Matchers)
	for _, label := range slices.Sorted(maps.Keys(m.OneOf)) {
		ms = append(ms, prom.In(label, m.OneOf[label]...))
	}
	return ms
}

// valuesMatcher is label="v" for one value, label=~"v1|v2" (regex-escaped) for several.
func valuesMatcher(label string, values []string) prom.Matcher {
	if len(values) == 1 {
		return prom.Eq(label, values[0])
	}
	return prom.In(label, values...)
}

// selector selects the series of one or several metric names (several are matched by __name__).
// Use it for instant vectors only: rate() and resets() over several names drop the names and
// Prometheus refuses the colliding series; sumRate adds per-metric sums instead.
func selector(metrics []string, ms []prom.Matcher) (string, error) {
	switch len(metrics) {
	case 0:
		return "", fmt.Errorf("no metric names given")
	case 1:
		return prom.Selector(metrics[0], ms...)
	}
	return prom.Selector("", append([]prom.Matcher{prom.In("__name__", metrics...)}, ms...)...)
}

// suffixed appends suffix to each metric name (histogram _bucket, _sum, _count).
func suffixed(metrics []string, suffix string) []string {
	out := make([]string, len(metrics))
	for i, m := range metrics {
		out[i] = m + suffix
	}
	return out
}

// promDuration writes d for a range selector or an offset.
func promqlDuration(d time.Duration) string { return formatDuration(d) }

// rateExpr writes fn(sel[w]), fn being rate or irate (rateFunc).
func rateExpr(fn, sel string, w time.Duration) string {
	return fn + "(" + sel + "[" + promqlDuration(w) + "])"
}

// rateFunc is the rate function of a read: irate (the last two samples in the window) where the
// caller asks for the last scrape interval alone, rate (the whole window) otherwise.
func rateFunc(lastInterval bool) string {
	if lastInterval {
		return "irate"
	}
	return "rate"
}

// aggregate writes `op by (labels) (inner)`; the labels must be valid names.
func aggregate(op string, by []string, inner string) (string, error) {
	for _, l := range by {
		if !prom.ValidLabelName(l) {
			return "", fmt.Errorf("invalid label name %s", prom.Quote(l))
		}
	}
	return op + " by (" + strings.Join(by, ", ") + ") (" + inner + ")", nil
}

// withLabel marks every series of inner with name="value": label_replace with an empty source
// label, whose empty value the empty regex matches. The source must not be name itself:
// VictoriaMetrics 1.79 then answers a stale value (another label's) and merges the series.
func withLabel(inner, name, value string) string {
	return "label_replace(" + inner + ", " + prom.Quote(name) + ", " + prom.Quote(value) + ", \"\", \"\")"
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// union adds a label to a set of labels, keeping order and dropping duplicates and empties.
func union(labels []string, more ...string) []string {
	out := make([]string, 0, len(labels)+len(more))
	for _, l := range append(slices.Clone(labels), more...) {
		if l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// sumRate writes Σ rate() of several metrics per group as a sum of per-metric sums, each range
// selector shifted by offset (0 = none). Every metric of such a role (Triton's compute phases,
// its success and failure counters) exists for the same groups, which `+` needs. The query's
// LastInterval makes it irate().
func (x *Exec) sumRate(metrics []string, ms []prom.Matcher, by []string, w, offset time.Duration) (string, error) {
	return sumOverRange(rateFunc(x.q.LastInterval), metrics, ms, by, w, offset)
}

// sumOverRange writes the sum by (by) of fn(metric[w]) over several metric names, one term per
// name: a function of a range over {__name__=~"a|b"} drops the names and then fails on series
// that differ only by name.
func sumOverRange(fn string, metrics []string, ms []prom.Matcher, by []string, w, offset time.Duration) (string, error) {
	off := ""
	if offset > 0 {
		off = " offset " + promqlDuration(offset)
	}
	terms := make([]string, len(metrics))
	for i, name := range metrics {
		sel, err := prom.Selector(name, ms...)
		if err != nil {
			return "", err
		}
		if terms[i], err = aggregate("sum", by, fn+"("+sel+"["+promqlDuration(w)+"]"+off+")"); err != nil {
			return "", err
		}
	}
	switch len(terms) {
	case 0:
		return "", fmt.Errorf("no metric names given")
	case 1:
		return terms[0], nil
	}
	return "(" + strings.Join(terms, " + ") + ")", nil
}
