package expo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// names reads metric and label names from a pkg/profile profile, so each naming writes exactly
// the series its profile tells the engine to read. A role or shape the profile lacks is
// recorded and reported by Lookup instead of producing a family with an empty name.
type names struct {
	p    profile.Profile
	errs []string
}

func profileNames(name string) *names {
	p, err := profile.ByName(name)
	n := &names{p: p}
	if err != nil {
		n.errs = append(n.errs, err.Error())
	}
	return n
}

// measure is the role's first measure of kind k.
func (n *names) measure(r profile.Role, k profile.Kind) profile.Measure {
	ms, _ := n.p.Measures(r)
	for _, m := range ms {
		if m.Kind == k && len(m.Metrics) > 0 {
			return m
		}
	}
	n.errs = append(n.errs, fmt.Sprintf("role %s has no %s measure", r, k))
	return profile.Measure{Metrics: []string{"missing"}, Count: []string{"missing"}, Minus: []string{"missing"}}
}

// metric is the first metric of the role's first measure of kind k.
func (n *names) metric(r profile.Role, k profile.Kind) string { return n.measure(r, k).Metrics[0] }

// matcher is the single fixed label matcher of the role's measure of kind k.
func (n *names) matcher(r profile.Role, k profile.Kind) Label {
	m := n.measure(r, k)
	for name, value := range m.Matchers {
		if len(m.Matchers) == 1 {
			return Label{name, value}
		}
	}
	n.errs = append(n.errs, fmt.Sprintf("role %s: want one label matcher, have %v", r, m.Matchers))
	return Label{"missing", "missing"}
}

// other is the metric of a measure that is not name (Triton's requests = success + failure).
func (n *names) other(r profile.Role, k profile.Kind, name string) string {
	for _, m := range n.measure(r, k).Metrics {
		if m != name {
			return m
		}
	}
	n.errs = append(n.errs, fmt.Sprintf("role %s has no metric besides %s", r, name))
	return "missing"
}

// label returns a label name the profile must define.
func (n *names) label(what, name string) string {
	if name == "" {
		n.errs = append(n.errs, "the profile has no "+what+" label")
		return "missing"
	}
	return name
}

func (n *names) err() error {
	if len(n.errs) == 0 {
		return nil
	}
	return errors.New(strings.Join(n.errs, "; "))
}

// group is what a naming exposes as one series set: one stream, or every version of a model on
// an instance when the naming has no version label (its counters are then the versions' sums,
// as one server process serving the model would count).
type group struct {
	Instance, Model, Version string // Version is "" for a merged group
	Since                    time.Time
	streams                  []Stream
}

// groups lists an instance's streams, merged per model unless byVersion.
func groups(src Source, inst string, byVersion bool) []group {
	var out []group
	index := map[string]int{}
	for _, st := range src.Streams(inst) {
		key := st.Model
		if byVersion {
			key += "\xff" + st.Version
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			g := group{Instance: inst, Model: st.Model, Since: st.Since}
			if byVersion {
				g.Version = st.Version
			}
			out = append(out, g)
		}
		g := &out[i]
		if st.Since.Before(g.Since) {
			g.Since = st.Since
		}
		g.streams = append(g.streams, st)
	}
	return out
}

// models lists an instance's models in order of first appearance.
func models(src Source, inst string) []string {
	var out []string
	for _, g := range groups(src, inst, false) {
		out = append(out, g.Model)
	}
	return out
}

func (g group) count(src Source, c Counter) func(time.Time) Point {
	return g.sum(func(st Stream, t time.Time) float64 { return src.Count(st, c, t) })
}

// total is a cumulative sum of measure m over the requests counted by c, times scale (1e6 for
// microsecond counters).
func (g group) total(src Source, m Measure, c Counter, scale float64) func(time.Time) Point {
	return g.sum(func(st Stream, t time.Time) float64 { return scale * src.Total(st, m, c, t) })
}

func (g group) queued(src Source) func(time.Time) Point {
	return g.sum(func(st Stream, t time.Time) float64 { return src.Queued(st, t) })
}

func (g group) running(src Source) func(time.Time) Point {
	return g.sum(func(st Stream, t time.Time) float64 { return src.Running(st, t) })
}

// sum adds a per-stream value over the group's streams that exist at t.
func (g group) sum(f func(Stream, time.Time) float64) func(time.Time) Point {
	return func(t time.Time) Point {
		var v float64
		for _, st := range g.streams {
			if !t.Before(st.Since) {
				v += f(st, t)
			}
		}
		return Point{Value: v}
	}
}

// histogram sums the streams' histograms of measure m.
func (g group) histogram(src Source, m Measure, bounds []float64) func(time.Time) Point {
	return func(t time.Time) Point {
		p := Point{Buckets: make([]float64, len(bounds))}
		for _, st := range g.streams {
			if t.Before(st.Since) {
				continue
			}
			cum, n, sum := src.Histogram(st, m, bounds, t)
			for i := range cum {
				p.Buckets[i] += cum[i]
			}
			p.Count += n
			p.Sum += sum
		}
		return p
	}
}

// emptyHistogram is a histogram nothing is observed into (its family exists, as client
// libraries create labelled children up front).
func emptyHistogram(bounds []float64) func(time.Time) Point {
	return func(time.Time) Point { return Point{Buckets: make([]float64, len(bounds))} }
}

func processStart(src Source, inst string) func(time.Time) Point {
	return func(t time.Time) Point {
		st := src.ProcessStart(inst, t)
		if st.IsZero() {
			return Point{Absent: true}
		}
		return Point{Value: float64(st.UnixNano()) / 1e9}
	}
}

// node is an instance's host: its label without the port.
func node(instance string) string {
	if i := strings.LastIndexByte(instance, ':'); i >= 0 {
		return instance[:i]
	}
	return instance
}

// formatRust writes a bucket bound the way Rust's f64 Display does (metrics-exporter-prometheus):
// integers without a fraction, never an exponent.
func formatRust(b float64) string {
	switch {
	case math.IsInf(b, 1):
		return "+Inf"
	case b == math.Trunc(b) && math.Abs(b) < 1e15:
		return strconv.FormatFloat(b, 'f', 0, 64)
	}
	return strconv.FormatFloat(b, 'f', -1, 64)
}
