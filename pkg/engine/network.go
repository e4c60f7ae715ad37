package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// The network segment from a configured gateway (pkg/gateway): the gateway's mean upstream time
// for a model minus the service's own mean time over the same requests. The gateway's series carry
// the gateway's labels (an ingress-nginx service, an Envoy cluster, an Istio workload), which the
// gateway's mapping turns into the server's model (and version, instance where it has them); the
// service's time is read at the same granularity, so both means are over the same requests.

// gatewayPlan is a split's read of the gateway.
type gatewayPlan struct {
	g   *gateway.Gateway
	e2e profile.Measure
	// by are the labels the network segment is keyed by: the model, the version and the instance
	// where the gateway tells them apart (the instance only for per-instance splits).
	by []string
	// filterInstance: the query selects instances and the gateway tells them apart.
	filterInstance bool
}

// NetworkSource says where the network segment comes from and, when it cannot be measured, why
// (for triage and the health check). The engine's profile is the primary one.
func (e *Engine) NetworkSource() (what string, ok bool) {
	if e.Gateway != nil {
		if e.Present != nil && !gatewayPresent(e.Gateway, e.Present) {
			return gatewayAbsent(e.Gateway), false
		}
		return e.Gateway.Describe(), true
	}
	if ms, why := e.Profile.Measures(profile.NetworkTime); len(ms) == 0 {
		return noGateway(why), false
	}
	if e.Present != nil {
		if _, ok, why := e.Profile.Resolve(profile.NetworkTime, e.Present); !ok {
			return noGateway(why), false
		}
	}
	return "the " + e.Profile.Name + " profile's gateway histogram", true
}

// NetworkPerInstance reports whether the network segment tells instances apart: a profile's own
// gateway histogram does, a configured gateway only when its mapping gives the instance.
func (e *Engine) NetworkPerInstance() bool { return e.Gateway == nil || e.Gateway.HasInstance() }

// ErrorsPerModel reports whether the error counter the engine reads carries the model: a
// host-wide counter (TorchServe's Requests5XX) does not, and its ratio is every model's on the
// instance (the traffic type says so in a notice). Without an error counter there is no ratio
// to mistake, and the answer is true.
func (e *Engine) ErrorsPerModel() bool {
	m, ok, _ := resolveIn(e.Profile, e.Present, profile.Errors)
	return !ok || !m.PerInstance
}

func gatewayPresent(g *gateway.Gateway, present map[string]bool) bool {
	return present[g.Metric+"_sum"] && present[g.Metric+"_count"]
}

func gatewayAbsent(g *gateway.Gateway) string {
	return fmt.Sprintf("the network segment is not measured: the %s histogram %s is not in Prometheus (%s)", g.Title, g.Metric, g.Describe())
}

func noGateway(why string) string {
	out := "the network segment is not measured: no gateway is configured (choose ingress-nginx, envoy, istio or a custom histogram in the settings, or --gateway)"
	if why != "" {
		out += "; " + why
	}
	return out
}

// planGateway checks that the gateway can give the network segment and says what it will be; nil
// (with a notice) when it cannot.
func (x *Exec) planGateway(perInstance bool) *gatewayPlan {
	g := x.e.Gateway
	if x.e.Present != nil && !gatewayPresent(g, x.e.Present) {
		x.Notice(Warning, gatewayAbsent(g))
		return nil
	}
	e2e, ok, why := x.resolve(profile.Latency)
	if !ok {
		x.Notice(Warning, "the network segment is not measured: it needs the service's own latency to subtract from the gateway's ("+why+")")
		return nil
	}
	if x.modelLabel == "" {
		x.Notice(Warning, fmt.Sprintf("the network segment is not measured: %s metrics carry no model label to match the gateway's", x.prof.Title))
		return nil
	}
	gp := &gatewayPlan{g: g, e2e: e2e, by: []string{x.modelLabel}}
	if g.HasVersion() && x.versionLabel != "" {
		gp.by = append(gp.by, x.versionLabel)
	} else if x.versionLabel != "" {
		x.Notice(Info, "the gateway does not tell versions apart: the network segment is the model's (every version together), shown on each version")
	}
	switch {
	case g.HasInstance() && perInstance:
		gp.by = append(gp.by, x.instanceLabel)
	case g.HasInstance() && len(x.q.Instance) > 0:
		gp.filterInstance = true
	case perInstance || len(x.q.Instance) > 0:
		x.Notice(Info, "the gateway does not tell instances apart: the network segment is the model's over all its instances, shown on each instance")
	}
	x.Notice(Info, "network segment = gateway upstream time − the service's own time, from the "+g.Describe()+": "+g.Note)
	if x.q.WarmupFilter {
		x.Notice(Info, "the network segment is not warm-up filtered (the gateway cannot tell warming instances apart): both of its terms count every request")
	}
	return gp
}

// gatewayNetwork reads the gateway's and the service's mean times in one round trip and returns
// their difference per group of gp.by.
func (x *Exec) gatewayNetwork(ctx context.Context, gp *gatewayPlan) (map[string]derive.Series, error) {
	g := gp.g
	w := x.rateWindow()
	fixed := prom.EqAll(g.Matchers)
	src := g.SourceLabels()
	sumE, err := x.sumRate([]string{g.Metric + "_sum"}, fixed, src, w, 0)
	if err != nil {
		return nil, err
	}
	cntE, err := x.sumRate([]string{g.Metric + "_count"}, fixed, src, w, 0)
	if err != nil {
		return nil, err
	}
	svcE, err := x.latencyExprWith(gp.e2e, 0, gp.by, 0, gp.serviceMatchers(x))
	if err != nil {
		return nil, err
	}
	series, err := x.fetch(ctx, unionExpr([]string{sumE, cntE, svcE}))
	if err != nil {
		return nil, err
	}
	parts := make([][]derive.Series, 3)
	for _, s := range series {
		i, err := strconv.Atoi(s.Labels[partLabel])
		if err != nil || i < 0 || i >= len(parts) {
			continue
		}
		delete(s.Labels, partLabel)
		parts[i] = append(parts[i], s)
	}
	sums, err := derive.SumBy(gp.mapped(x, parts[0]), gp.by)
	if err != nil {
		return nil, err
	}
	counts, err := derive.SumBy(gp.mapped(x, parts[1]), gp.by)
	if err != nil {
		return nil, err
	}
	countBy := indexBy(counts, gp.by)
	gwBy := map[string]derive.Series{}
	for _, s := range sums {
		key := groupKey(s.Labels, gp.by)
		c, ok := countBy[key]
		if !ok {
			continue
		}
		mean, err := derive.MeanLatency(s, c, g.Scale)
		if err != nil {
			return nil, err
		}
		gwBy[key] = mean
	}
	out := map[string]derive.Series{}
	var unmapped []string
	for _, svc := range parts[2] {
		for i, v := range svc.V {
			if math.IsInf(v, 0) || v < 0 {
				svc.V[i] = math.NaN()
			}
		}
		key := groupKey(svc.Labels, gp.by)
		gw, ok := gwBy[key]
		if !ok {
			unmapped = append(unmapped, labelsText(svc.Labels))
			continue
		}
		if out[key], err = derive.Difference(gw, svc); err != nil {
			return nil, err
		}
	}
	if len(unmapped) > 0 {
		sort.Strings(unmapped)
		x.Notice(Warning, fmt.Sprintf("the network segment is not measured for %s: no %s series maps to it (%s)",
			strings.Join(unmapped, ", "), g.Title, g.Describe()))
	}
	return out, nil
}

// serviceMatchers select the service's requests the gateway's series stand for.
func (gp *gatewayPlan) serviceMatchers(x *Exec) []prom.Matcher {
	var ms []prom.Matcher
	if len(x.q.Model) > 0 {
		ms = append(ms, valuesMatcher(x.modelLabel, x.q.Model))
	}
	if len(x.q.Version) > 0 && slices.Contains(gp.by, x.versionLabel) {
		ms = append(ms, valuesMatcher(x.versionLabel, x.q.Version))
	}
	if len(x.q.Instance) > 0 && (gp.filterInstance || slices.Contains(gp.by, x.instanceLabel)) {
		ms = append(ms, valuesMatcher(x.instanceLabel, x.q.Instance))
	}
	return append(ms, prom.EqAll(gp.e2e.Matchers)...)
}

// mapped relabels the gateway's series with the model (version, instance) they stand for,
// dropping those the mapping or the query's selection leaves out.
func (gp *gatewayPlan) mapped(x *Exec, ss []derive.Series) []derive.Series {
	var out []derive.Series
	for _, s := range ss {
		t, ok := gp.g.Map(s.Labels)
		if !ok || (len(x.q.Model) > 0 && !slices.Contains(x.q.Model, t.Model)) {
			continue
		}
		l := map[string]string{x.modelLabel: t.Model}
		if gp.g.HasVersion() && x.versionLabel != "" {
			if len(x.q.Version) > 0 && !slices.Contains(x.q.Version, t.Version) {
				continue
			}
			l[x.versionLabel] = t.Version
		}
		if gp.g.HasInstance() {
			if len(x.q.Instance) > 0 && !slices.Contains(x.q.Instance, t.Instance) {
				continue
			}
			if slices.Contains(gp.by, x.instanceLabel) {
				l[x.instanceLabel] = t.Instance
			}
		}
		out = append(out, derive.Series{Labels: l, T: s.T, V: s.V})
	}
	return out
}
