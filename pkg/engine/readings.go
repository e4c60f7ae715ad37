package engine

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// The typed readings the answers built on the engine ask for, beyond the query types. Each
// writes its PromQL from the engine's profile here and reads it through the Reader.

// RoleQuery asks for a role per instance over a range: the rate of a counter, the value of a
// gauge, the mean of a histogram or summary; with Den, the ratio of the two roles.
type RoleQuery struct {
	Num, Den profile.Role // Den "" = Num's value itself
	Model    string       // the model (ignored for host-wide measures and profiles without a model label)
	// Instances narrows to these instances (empty = every instance serving the model).
	Instances []string
	Rate      time.Duration // window of every rate()
	// LastInterval reads each counter's last scrape interval in the window (irate), as
	// Common.LastInterval does.
	LastInterval bool
	// Start (the first point), End and Step are the range.
	Start, End time.Time
	Step       time.Duration
}

// RoleReading reads q: one series per instance, labelled with the profile's instance label.
// A profile that lacks a role, or measures it in a way no mean can be read from, answers the
// reason (and no query is sent).
func (r *Reader) RoleReading(ctx context.Context, q RoleQuery) (series []Series, why string, err error) {
	expr, ok, why := r.roleExpr(q.Num, q)
	if ok && q.Den != "" {
		var den string
		if den, ok, why = r.roleExpr(q.Den, q); ok {
			expr = fmt.Sprintf("(%s) / (%s)", expr, den)
		}
	}
	if !ok {
		return nil, why, nil
	}
	series, err = r.rangeRead(ctx, expr, q.Start, q.End, q.Step)
	return series, "", err
}

// instanceLabel is the profile's instance label ("instance" where it names none).
func (e *Engine) instanceLabel() string {
	if e.Profile.InstanceLabel != "" {
		return e.Profile.InstanceLabel
	}
	return "instance"
}

// roleExpr is the PromQL of a role per instance; ok is false, with the reason, where the
// profile lacks the role or measures it in a way that is not read per instance.
func (r *Reader) roleExpr(role profile.Role, q RoleQuery) (string, bool, string) {
	p := r.e.Profile
	m, ok, why := p.Resolve(role, r.e.Present)
	if !ok {
		return "", false, why
	}
	inst := r.e.instanceLabel()
	var ms []prom.Matcher
	if p.ModelLabel != "" && !m.PerInstance {
		ms = append(ms, prom.Eq(p.ModelLabel, q.Model))
	}
	if len(q.Instances) > 0 {
		ms = append(ms, valuesMatcher(inst, q.Instances))
	}
	ms = append(ms, fixedMatchers(m)...)
	// sumBy writes sum by (instance) (f(metric{…})) for each metric of names, added together.
	sumBy := func(names []string, rate bool) (string, error) {
		var parts []string
		for _, n := range names {
			sel, err := sortedSelector(n, ms...)
			if err != nil {
				return "", err
			}
			if rate {
				sel = rateExpr(rateFunc(q.LastInterval), sel, q.Rate)
			}
			part, err := aggregate("sum", []string{inst}, sel)
			if err != nil {
				return "", err
			}
			parts = append(parts, part)
		}
		if len(parts) == 0 {
			return "", fmt.Errorf("no metric names")
		}
		return strings.Join(parts, " + "), nil
	}
	var expr string
	var err error
	switch m.Kind {
	case profile.Counter:
		expr, err = sumBy(m.Metrics, true)
	case profile.Gauge:
		expr, err = sumBy(m.Metrics, false)
	case profile.Histogram, profile.Summary, profile.CounterRatio:
		// The mean of the observations: sum / count, or a counter ratio's own two counters (e.g.
		// Triton's batch size: inferences / executions).
		nums, dens := suffixed(m.Metrics, "_sum"), suffixed(m.Metrics, "_count")
		if m.Kind == profile.CounterRatio {
			nums, dens = m.Metrics, m.Count
		}
		var num, den string
		if num, err = sumBy(nums, true); err == nil {
			if den, err = sumBy(dens, true); err == nil {
				expr = fmt.Sprintf("(%s) / (%s)", num, den)
			}
		}
	default:
		return "", false, fmt.Sprintf("%s measures %s as a %s, which triage does not read", p.Title, role, m.Kind)
	}
	if err != nil {
		return "", false, err.Error()
	}
	if m.Scale != 0 && m.Scale != 1 && m.Kind != profile.Counter {
		expr = fmt.Sprintf("(%s) * %g", expr, m.Scale)
	}
	return expr, true, ""
}

// WindowMeanQuery asks for the mean of a role's observations per version over a whole window
// ending at At, on the given instances (empty = all).
type WindowMeanQuery struct {
	Role      profile.Role
	Model     string
	Versions  []string
	Instances []string
	Window    time.Duration
	At        time.Time
}

// RoleWindowMean reads q: per version, sum/count of the role's histogram or summary (or
// duration/requests of µs counters) over the window, scaled to the role's unit — exact where a
// quantile would be interpolated inside buckets. A version without observations is missing
// from the map. A profile without the role, or measuring it otherwise, or a failed query,
// answers the reason instead.
func (r *Reader) RoleWindowMean(ctx context.Context, q WindowMeanQuery) (map[string]float64, string) {
	p := r.e.Profile
	expr, why := r.windowMeanExpr(q)
	if why != "" {
		return nil, why
	}
	m, _, _ := p.Resolve(q.Role, r.e.Present)
	scale := m.Scale
	if scale == 0 {
		scale = 1
	}
	samples, err := r.instant(ctx, expr, q.At)
	if err != nil {
		return nil, fmt.Sprintf("the %s query failed: %v", q.Role, err)
	}
	out := map[string]float64{}
	for _, s := range samples {
		if v, ok := s.Labels[p.VersionLabel]; ok {
			out[v] = s.V * scale
		}
	}
	return out, ""
}

// windowMeanExpr writes the window mean of q, its selectors' matchers in label order.
func (r *Reader) windowMeanExpr(q WindowMeanQuery) (string, string) {
	p := r.e.Profile
	m, ok, why := p.Resolve(q.Role, r.e.Present)
	if !ok {
		return "", why
	}
	if p.VersionLabel == "" {
		return "", fmt.Sprintf("%s metrics carry no version label", p.Title)
	}
	var names [2]string // numerator and denominator counters
	switch {
	case len(m.Metrics) == 0 || len(m.Minus) > 0:
	case m.Kind == profile.Summary || m.Kind == profile.Histogram:
		names = [2]string{m.Metrics[0] + "_sum", m.Metrics[0] + "_count"}
	case m.Kind == profile.MicrosecondCounter && len(m.Metrics) == 1 && len(m.Count) == 1 && len(m.CountMinus) == 0:
		names = [2]string{m.Metrics[0], m.Count[0]}
	}
	if names[0] == "" {
		return "", fmt.Sprintf("%s measures %s as a %s: no window mean is read from it", p.Title, q.Role, m.Kind)
	}
	var ms []prom.Matcher
	if p.ModelLabel != "" {
		ms = append(ms, prom.Eq(p.ModelLabel, q.Model))
	}
	ms = append(ms, prom.In(p.VersionLabel, q.Versions...))
	if len(q.Instances) > 0 {
		ms = append(ms, prom.In(r.e.instanceLabel(), q.Instances...))
	}
	ms = append(ms, fixedMatchers(m)...)
	var parts [2]string
	for i, name := range names {
		sel, err := sortedSelector(name, ms...)
		if err != nil {
			return "", err.Error()
		}
		if parts[i], err = aggregate("sum", []string{p.VersionLabel}, "increase("+sel+"["+promqlDuration(q.Window)+"])"); err != nil {
			return "", err.Error()
		}
	}
	return parts[0] + " / " + parts[1], ""
}

// Deploy is a model version whose request counters appear on an instance inside a range.
type Deploy struct {
	Instance, Model, Version string
	At                       time.Time // its first sample
}

// DeployEvents finds the model versions that appear on an instance inside [from, to]: their
// request counters exist at some evaluation time (every interval) and not at the first, one
// interval before from. A profile without a model label has no deploys to tell apart.
func (r *Reader) DeployEvents(ctx context.Context, from, to time.Time, interval time.Duration) ([]Deploy, error) {
	out := []Deploy{}
	p := r.e.Profile
	var m profile.Measure
	if r.e.Present == nil {
		ms, _ := p.Measures(profile.Requests)
		if len(ms) == 0 {
			return out, nil
		}
		m = ms[0]
	} else {
		var ok bool
		if m, ok, _ = p.Resolve(profile.Requests, r.e.Present); !ok {
			return out, nil
		}
	}
	il, ml, vl := r.e.instanceLabel(), p.ModelLabel, p.VersionLabel
	if ml == "" {
		return out, nil
	}
	by := []string{il, ml}
	if vl != "" {
		by = append(by, vl)
	}
	sel, err := sortedSelector("", append([]prom.Matcher{prom.In("__name__", m.Metrics...)}, fixedMatchers(m)...)...)
	if err != nil {
		return nil, err
	}
	expr, err := aggregate("group", by, sel)
	if err != nil {
		return nil, err
	}
	first := from.Add(-interval)
	series, err := r.RuleSeries(ctx, expr, first, to, interval)
	if err != nil {
		return nil, err
	}
	firstMs := first.UnixMilli() / interval.Milliseconds() * interval.Milliseconds()
	seen := map[string]bool{}
	for _, s := range series {
		if len(s.T) == 0 {
			continue
		}
		k := s.Labels[il] + "\xff" + s.Labels[ml] + "\xff" + s.Labels[vl]
		if seen[k] || s.T[0] <= firstMs { // there when the range started
			seen[k] = true
			continue
		}
		seen[k] = true
		out = append(out, Deploy{Instance: s.Labels[il], Model: s.Labels[ml], Version: s.Labels[vl], At: time.UnixMilli(s.T[0]).UTC()})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].At.Equal(out[j].At) {
			return out[i].At.Before(out[j].At)
		}
		return out[i].Instance+out[i].Model+out[i].Version < out[j].Instance+out[j].Model+out[j].Version
	})
	return out, nil
}

// WarmupWindowOrDefault is the warm-up window the engine filters with.
func (e *Engine) WarmupWindowOrDefault() time.Duration {
	if e.WarmupWindow > 0 {
		return e.WarmupWindow
	}
	return derive.DefaultWarmupWindow
}

// nanAdd adds b to a, a NaN a counting as nothing yet.
func nanAdd(a, b float64) float64 {
	if math.IsNaN(a) {
		return b
	}
	return a + b
}
