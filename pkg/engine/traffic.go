package engine

import (
	"context"
	"fmt"
	"math"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
)

var (
	fieldThroughputBy = FieldSpec{Name: "by", Label: "By", Kind: KindChoice, Default: "model", Allowed: []string{"total", "model", "version", "instance"},
		Doc: "Grouping of the request rate."}
	throughputSpec = TypeSpec{Name: "throughput", Title: "Throughput", Filters: modelAndInstance, parse: parseThroughput,
		Doc: "Requests per second, summed as chosen.", Fields: []FieldSpec{fieldThroughputBy}}
	errorsSpec = TypeSpec{Name: "errors", Title: "Errors", Filters: modelAndInstance, parse: parseErrors,
		Doc: "Error ratio and timeout ratio per model/version; admission rejections and HTTP 5xx where the server counts them.", Fields: []FieldSpec{fieldServiceBy}}
)

// throughputQuery: requests per second, summed by the chosen labels.
type throughputQuery struct {
	by string
}

func parseThroughput(_ Common, f Fields) (Runner, error) {
	by, err := fieldThroughputBy.choice(f)
	if err != nil {
		return nil, err
	}
	return throughputQuery{by: by}, nil
}

func (tq throughputQuery) Run(ctx context.Context, x *Exec) error {
	m, ok, why := x.resolve(profile.Requests)
	if !ok {
		x.Notice(Warning, why)
		return nil
	}
	x.measureNotice(m)
	var by []string
	switch tq.by {
	case "model":
		by = union(nil, x.modelLabel)
	case "version":
		by = x.groupLabels()
	case "instance":
		by = []string{x.instanceLabel}
	}
	if (tq.by == "model" && x.modelLabel == "") || (tq.by == "version" && x.versionLabel == "") {
		x.Notice(Info, fmt.Sprintf("%s metrics carry no %s label: grouped by the labels that exist", x.prof.Title, tq.by))
	}
	read, err := x.rates(ctx, rateReq{m, by})
	if err != nil {
		return err
	}
	t, _ := x.Grid()
	for _, s := range read[0] {
		name := x.displayName(s.Labels, "")
		if name == "" {
			name = "total"
		}
		x.Add(newSeries("qps", name+" req/s", UnitReqPS, s.Labels, t, x.output(s).V))
	}
	return nil
}

// errorsQuery: error and timeout ratios (and rates) per model/version (and instance).
type errorsQuery struct {
	perInstance bool
}

func parseErrors(_ Common, f Fields) (Runner, error) {
	perInstance, err := parseServiceBy(f)
	if err != nil {
		return nil, err
	}
	return errorsQuery{perInstance: perInstance}, nil
}

func (eq errorsQuery) Run(ctx context.Context, x *Exec) error {
	req, ok, why := x.resolve(profile.Requests)
	if !ok {
		x.Notice(Warning, why)
		return nil
	}
	by := x.serviceLabels(eq.perInstance)
	// A host-wide failure counter is grouped by what it carries: the instance, or nothing.
	var hostBy []string
	if eq.perInstance {
		hostBy = []string{x.instanceLabel}
	}
	type failure struct {
		name, display string
		m             profile.Measure
		at            int // index among the rates read
	}
	reqs := []rateReq{{req, by}}
	var fails []failure
	hostAt := -1
	for _, f := range []failure{{name: "error", display: "errors"}, {name: "timeout", display: "timeouts"}} {
		role := profile.Errors
		if f.name == "timeout" {
			role = profile.Timeouts
		}
		m, ok, why := x.resolve(role)
		if !ok {
			x.Notice(Info, fmt.Sprintf("%s ratio not measured: %s", f.name, why))
			continue
		}
		x.measureNotice(m)
		f.m, f.at = m, len(reqs)
		fby := by
		if m.PerInstance {
			// A host-wide failure counter (TorchServe's Requests5XX) is compared with every
			// request of the same instances.
			fby = hostBy
			x.Notice(Warning, fmt.Sprintf("the %s counter carries no model or version label: the ratio is over all models of the selected instances", f.display))
			if hostAt < 0 {
				host := req
				host.PerInstance = true
				hostAt = len(reqs) + 1
				reqs = append(reqs, rateReq{m, fby}, rateReq{host, hostBy})
				fails = append(fails, f)
				continue
			}
		}
		reqs = append(reqs, rateReq{m, fby})
		fails = append(fails, f)
	}
	read, err := x.rates(ctx, reqs...)
	if err != nil {
		return err
	}
	for _, f := range fails {
		denominators := read[0]
		if f.m.PerInstance {
			denominators = read[hostAt]
		}
		for _, r := range denominators {
			key := groupKey(r.Labels, reqs[f.at].by)
			num := derive.Series{Labels: r.Labels, T: r.T, V: nanValues(len(r.T))}
			for _, s := range read[f.at] {
				if groupKey(s.Labels, reqs[f.at].by) == key {
					num = s
					break
				}
			}
			if err := x.addFailure(f.name, f.display, num, r); err != nil {
				return err
			}
		}
	}
	return serverFailures(ctx, x, req, by, hostBy)
}

// addFailure adds a failure kind's ratio and its rate (no failures while requests flow is 0).
func (x *Exec) addFailure(name, display string, failures, requests derive.Series) error {
	ratio, err := derive.ErrorRatio(failures, requests)
	if err != nil {
		return err
	}
	ratio = x.output(ratio)
	labels := requests.Labels
	t, _ := x.Grid()
	rs := newSeries(name+"_ratio", x.displayName(labels, display+" %"), UnitPercentUnit, labels, t, ratio.V)
	rs.Min = ptr(0)
	rate := x.output(failures)
	reqs := x.output(requests)
	v := make([]float64, len(rate.V))
	for i := range v {
		switch {
		case !math.IsNaN(rate.V[i]):
			v[i] = rate.V[i]
		case reqs.V[i] > 0:
			v[i] = 0
		default:
			v[i] = math.NaN()
		}
	}
	x.Add(rs, newSeries(name+"s", x.displayName(labels, display+"/s"), UnitReqPS, labels, t, v))
	return nil
}

func nanValues(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}
