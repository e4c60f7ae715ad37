package engine

import (
	"context"
	"fmt"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
)

var (
	fieldBaselineWindow = FieldSpec{Name: "baselineWindow", Label: "Baseline window", Kind: KindDuration,
		Default: derive.DefaultSplitOptions().BaselineWindow, Min: 60, Max: 86400, Doc: "How far back each segment's own baseline reaches."}
	splitSpec = TypeSpec{Name: "split", Title: "Split", Filters: modelAndInstance, parse: parseSplit,
		Doc:    "Queue, compute and network time per model/version, their shares and the dominant segment (regime); compute's prefill and decode phases where the server times them.",
		Fields: []FieldSpec{fieldBaselineWindow, fieldServiceBy}}
)

// splitQuery: mean queue, compute and network time per model/version (and instance), their
// shares and the regime.
type splitQuery struct {
	opt         derive.SplitOptions
	perInstance bool
}

func parseSplit(_ Common, f Fields) (Runner, error) {
	opt := derive.DefaultSplitOptions()
	var err error
	if opt.BaselineWindow, err = fieldBaselineWindow.duration(f); err != nil {
		return nil, err
	}
	perInstance, err := parseServiceBy(f)
	if err != nil {
		return nil, err
	}
	return splitQuery{opt: opt, perInstance: perInstance}, nil
}

// RegimeMappings name the regime series' values.
var RegimeMappings = []ValueMapping{
	{Value: float64(derive.Balanced), Text: derive.Balanced.String(), Color: "green"},
	{Value: float64(derive.QueueDominated), Text: derive.QueueDominated.String(), Color: "orange"},
	{Value: float64(derive.ComputeDominated), Text: derive.ComputeDominated.String(), Color: "purple"},
	{Value: float64(derive.NetworkDominated), Text: derive.NetworkDominated.String(), Color: "blue"},
}

func (sq splitQuery) Run(ctx context.Context, x *Exec) error {
	queue, okQ, whyQ := x.resolve(profile.QueueTime)
	compute, okC, whyC := x.resolve(profile.ComputeTime)
	if !okQ || !okC {
		for _, why := range []string{whyQ, whyC} {
			if why != "" {
				x.Notice(Warning, why)
			}
		}
		x.Notice(Warning, "the queue/compute split needs both queue and compute time")
		return nil
	}
	x.Notice(Info, "segments are mean times per request (means add up; percentiles do not)")
	x.SetPadding(sq.opt.BaselineWindow)
	by := x.serviceLabels(sq.perInstance)
	reqs := []roleRead{{profile.QueueTime, queue, []float64{0}}, {profile.ComputeTime, compute, []float64{0}}}
	var gp *gatewayPlan
	var network, e2e profile.Measure
	okN := false
	if x.e.Gateway != nil {
		gp = x.planGateway(sq.perInstance)
	} else if network, e2e, okN = networkSegment(x); okN {
		reqs = append(reqs, roleRead{profile.NetworkTime, network, []float64{0}}, roleRead{profile.Latency, e2e, []float64{0}})
	}
	phases := phaseReqs(x, &reqs)
	for _, r := range reqs {
		x.measureNotice(r.m)
	}
	rs, err := x.readRoles(ctx, reqs, by)
	if err != nil {
		return err
	}
	// A model without the summary of a segment gets that segment's mean from the counters
	// (Triton's cached models), as in latency.
	read := make([][]stat, len(rs))
	for i, r := range rs {
		x.fallbackNotice(reqs[i].m, r)
		read[i] = r.stats
	}
	qs, cs := read[0], read[1]
	phases.index(read, by)
	nBy, nKeys := map[string]derive.Series{}, by
	if okN {
		if nBy, err = differences(read[2], read[3], by); err != nil {
			return err
		}
	}
	if gp != nil {
		if nBy, err = x.gatewayNetwork(ctx, gp); err != nil {
			return err
		}
		nKeys = gp.by
	}
	cBy := statIndex(cs, by)
	t, _ := x.Grid()
	for _, q := range qs {
		key := groupKey(q.Labels, by)
		c, ok := cBy[key]
		if !ok {
			continue
		}
		in := derive.SplitInput{Queue: q.Series, Compute: c}
		if n, ok := nBy[groupKey(q.Labels, nKeys)]; ok {
			in.Network = n
		}
		if err := sq.addSegments(x, t, q.Labels, in); err != nil {
			return err
		}
		if err := phases.add(x, t, q.Labels, key, c); err != nil {
			return err
		}
	}
	return nil
}

// differences is gateway − service per group of by (the profile's own gateway histogram).
func differences(gs, es []stat, by []string) (map[string]derive.Series, error) {
	eBy := statIndex(es, by)
	out := map[string]derive.Series{}
	for _, g := range gs {
		key := groupKey(g.Labels, by)
		e, ok := eBy[key]
		if !ok {
			continue
		}
		n, err := derive.Difference(g.Series, e)
		if err != nil {
			return nil, err
		}
		out[key] = n
	}
	return out, nil
}

// networkSegment resolves the profile's own gateway histogram (the test bed's custom naming) and
// the service's latency, which the network segment is the difference of; without both it says why.
func networkSegment(x *Exec) (network, e2e profile.Measure, ok bool) {
	network, ok, why := x.resolve(profile.NetworkTime)
	if !ok {
		x.Notice(Info, noGateway(why))
		return network, e2e, false
	}
	var okE bool
	if e2e, okE, _ = x.resolve(profile.Latency); !okE {
		x.Notice(Info, "the network segment is not measured: it needs the service's own latency to subtract from the gateway's")
		return network, e2e, false
	}
	return network, e2e, ok
}

// addSegments adds one group's segments, their shares of the total, the total and the regime
// over the query's range.
func (sq splitQuery) addSegments(x *Exec, t []int64, l map[string]string, in derive.SplitInput) error {
	sp, err := derive.SplitLatency(in, sq.opt)
	if err != nil {
		return fmt.Errorf("split of %s: %w", labelsText(l), err)
	}
	sp = sp.Slice(x.g.start, x.g.end)
	segs := []struct {
		seg   derive.Segment
		value derive.Series
	}{{derive.Queue, in.Queue}, {derive.Compute, in.Compute}, {derive.Network, in.Network}}
	for _, sg := range segs {
		if sg.value.Empty() {
			continue
		}
		name := sg.seg.String()
		x.Add(newSeries(name, x.displayName(l, name), UnitSeconds, l, t, x.output(sg.value).V))
		share := newSeries(name+"_share", x.displayName(l, name+" share"), UnitPercentUnit, l, t, sp.Share[sg.seg])
		share.Min, share.Max = ptr(0), ptr(1)
		x.Add(share)
	}
	x.Add(newSeries("total", x.displayName(l, "total"), UnitSeconds, l, t, sp.Total))
	regime := newSeries("regime", x.displayName(l, "regime"), UnitNone, l, t, sp.Regime)
	regime.Mappings = RegimeMappings
	regime.Min, regime.Max = ptr(0), ptr(3)
	x.Add(regime)
	return nil
}

func statIndex(ss []stat, by []string) map[string]derive.Series {
	out := make(map[string]derive.Series, len(ss))
	for _, s := range ss {
		out[groupKey(s.Labels, by)] = s.Series
	}
	return out
}
