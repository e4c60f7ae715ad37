package alerting

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// The network rule reads the gateway's upstream time: a gateway configured in front of the
// servers (pkg/gateway: ingress-nginx, Envoy, Istio or a user's histogram, its labels mapped to
// the model and, where it names it, the instance), else the profile's own gateway histogram.

// Labels the configured gateway's mapping writes before they take the server's names: never one
// of the gateway's own labels, so label_replace never reads and writes the same label (which
// VictoriaMetrics 1.79 answers with a stale value).
const (
	gatewayModelLabel    = "inferscope_gateway_model"
	gatewayInstanceLabel = "inferscope_gateway_instance"
)

// hasGateway reports whether the network rule has a gateway to read.
func (b *builder) hasGateway() bool {
	return b.p.gateway != nil || b.has(profile.NetworkTime, profile.Histogram)
}

// networkGroup lists the labels the network rule keeps apart: the model and the instance, or
// the model alone behind a configured gateway that does not name the instance (ingress-nginx,
// Envoy and Istio name the upstream service, not the pod).
func (b *builder) networkGroup() []string {
	if g := b.p.gateway; g != nil && !g.HasInstance() {
		return nonEmpty2(b.model)
	}
	return b.modelGroup()
}

// gatewayLatency is the P-quantile of the gateway's upstream time per networkGroup, in seconds,
// unfiltered (the network rule leaves the warming instances out of the current values, and
// reads the previous days as they were).
func (b *builder) gatewayLatency() string {
	g := b.p.gateway
	if g == nil {
		return b.quantileBy(profile.NetworkTime, b.p.LatencyQuantile, b.networkGroup())
	}
	expr := fmt.Sprintf("sum %s (rate(%s%s))", by(append([]string{"le"}, g.SourceLabels()...)...),
		selector([]string{g.Metric}, "_bucket", g.Matchers), b.window(b.p.RateWindow))
	expr = relabel(expr, gatewayModelLabel, g.ModelMapping())
	keep, rename := []string{"le", gatewayModelLabel}, map[string]string{gatewayModelLabel: b.model}
	if m, ok := g.InstanceMapping(); ok {
		expr = relabel(expr, gatewayInstanceLabel, m)
		keep, rename[gatewayInstanceLabel] = append(keep, gatewayInstanceLabel), b.instance
	}
	expr = fmt.Sprintf("histogram_quantile(%s, sum %s (\n%s\n))", fmtFloat(b.p.LatencyQuantile), by(keep...), indent(expr))
	if g.Scale != 1 {
		expr = fmt.Sprintf("(%s * %s)", expr, fmtFloat(g.Scale))
	}
	// The mapped labels take the server's names, so the gateway's series join the service's.
	for _, from := range slices.Sorted(maps.Keys(rename)) {
		expr = fmt.Sprintf("label_replace(%s, %s, \"$1\", %s, \"(.*)\")", expr, prom.Quote(rename[from]), prom.Quote(from))
	}
	return fmt.Sprintf("max without (%s) (\n%s\n)", strings.Join(slices.Sorted(maps.Keys(rename)), ", "), indent(expr))
}

// relabel writes a gateway mapping into the label dst, as gateway.Gateway.Map reads it: the
// regex first (unless the map alone maps), then each listed value, which overrides it. A series
// nothing maps, or maps to "", is dropped (it stands for something else behind the gateway):
// vector(1) has no labels, so "unless on (dst)" removes exactly the series without dst.
func relabel(expr, dst string, m gateway.Mapping) string {
	if !m.MapOnly {
		expr = fmt.Sprintf("label_replace(%s, %s, %s, %s, %s)", expr, prom.Quote(dst), prom.Quote(m.Replacement), prom.Quote(m.Source), prom.Quote(m.Regex))
	}
	for _, from := range slices.Sorted(maps.Keys(m.Map)) {
		to := strings.ReplaceAll(m.Map[from], "$", "$$")
		expr = fmt.Sprintf("label_replace(%s, %s, %s, %s, %s)", expr, prom.Quote(dst), prom.Quote(to), prom.Quote(m.Source), prom.Quote(regexp.QuoteMeta(from)))
	}
	return fmt.Sprintf("(%s unless on (%s) vector(1))", expr, dst)
}

// networkRatio is the network rule's signal, per networkGroup: the gateway's latency less the
// service's own rise (each against its same-time-of-day baseline; a service that got faster
// takes nothing off), over the gateway's baseline. It passes the line when the time added
// outside the service alone does: on a network's jitter it is the gateway's own ratio, on a
// service that slows down it stays near 1 however far the gateway's time rises with it (the
// latency rules page that). gw and svc are the current values, warm-up filtered; gwDays and
// svcDays their previous days' means (dayMeans), unfiltered: the Grafana rendering writes them
// out and must stay short enough for a store's query-length limit (VictoriaMetrics refuses
// more than 16 KiB by default), and the Prometheus rendering records the same. A restart in a
// previous day's window raises that day's mean, which makes the rule slower to fire, never
// quicker. A baseline needs baselineMinDays days with requests, as the latency rules' do.
func (b *builder) networkRatio(gw, gwDays, svc, svcDays string) string {
	g := b.networkGroup()
	baseline := func(days string) string {
		return fmt.Sprintf("(avg without (%s) (%s > 0) and %s count without (%s) (%s > 0) >= %d)",
			dayLabel, days, on(g...), dayLabel, days, b.p.BaselineMinDays)
	}
	return fmt.Sprintf("(\n  (\n%s\n  )\n  - %s\n  clamp_min(\n    (\n%s\n    )\n    - %s\n    0\n  )\n)\n/ %s %s",
		indent(indent(gw)), on(g...), indent(indent(indent(svc))), baseline(svcDays)+",", on(g...), baseline(gwDays))
}

// networkParts are the network rule's four inputs as raw expressions: the gateway's and the
// service's latency per networkGroup, warm-up filtered, and their previous days' means.
func (b *builder) networkParts() (gw, gwDays, svc, svcDays string) {
	g, s := b.gatewayLatency(), b.latency(b.networkGroup())
	return b.steady(g), b.dayMeans(g), b.steady(s), b.dayMeans(s)
}
