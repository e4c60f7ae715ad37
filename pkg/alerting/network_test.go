package alerting

import (
	"math"
	"sort"
	"strconv"
	"testing"

	"github.com/inferscope/inferscope/pkg/gateway"
)

// ingressNginx is ingress-nginx's upstream-time histogram for one Kubernetes service: one series
// set over every instance behind it (it does not name the pod).
type ingressNginx struct {
	service string
	phases  []phase
}

func (g ingressNginx) write(n int) []series {
	l := map[string]string{"service": g.service, "namespace": "inference", "ingress": "models", "method": "POST", "status": "200",
		"instance": "ingress:10254", "job": "ingress-nginx"}
	s := stream{phases: g.phases}
	var out []series
	for i, b := range bounds {
		out = append(out, series{labelText("nginx_ingress_controller_response_duration_seconds_bucket", with(l, "le", strconv.FormatFloat(b, 'f', -1, 64))),
			samples(n, s.cumulative(n, func(p phase, _ int) float64 { return p.perMin * p.d[i] }))})
	}
	out = append(out, series{labelText("nginx_ingress_controller_response_duration_seconds_bucket", with(l, "le", "+Inf")),
		samples(n, s.cumulative(n, func(p phase, _ int) float64 { return p.perMin }))})
	return out
}

// TestPromtoolNetworkRuleBehindIngressNginx: behind a configured gateway that names the model
// through a static map (ingress-nginx's service "recsys-svc" is the model recsys; the service
// "other" maps to nothing), the network rule judges each model over all its instances. When
// the way to the service slows (the gateway's P95 5× its baseline, the service's own steady)
// it fires on the model, with no instance label; a service outside the map fires nothing
// however slow; when the service itself slows as much, the latency rules page and the network
// rule stays quiet.
func TestPromtoolNetworkRuleBehindIngressNginx(t *testing.T) {
	p := testParams()
	g, err := gateway.New(gateway.Config{Preset: gateway.IngressNginx, Model: gateway.Rule{Map: map[string]string{"recsys-svc": "recsys"}}})
	if err != nil {
		t.Fatal(err)
	}
	p.SetGateway(g)
	const at = 500
	alerts := `count by (model, model_name, instance, inferscope_rule) (ALERTS{alertname="InferscopeNetworkLatencyHigh", alertstate="firing"})`
	network := promtoolTest{
		Name: "the way to the service slows",
		fleet: []interface{ write(int) []series }{
			server("node-a:8000", "recsys"), server("node-b:8000", "recsys"),
			svc("node-a:8000", "recsys", always(steady)...), svc("node-b:8000", "recsys", always(steady)...),
			ingressNginx{"recsys-svc", []phase{{0, incidentAt, 2000, steady}, {incidentAt, totalMin, 2000, slow}}},
			ingressNginx{"other", []phase{{0, incidentAt, 2000, steady}, {incidentAt, totalMin, 2000, slow}}},
		},
		AlertRuleTest: append(none(incidentAt-1, "InferscopeNetworkLatencyHigh"), none(at, serviceAlerts...)...),
		PromqlTest: []promqlCase{
			{Expr: alerts, EvalTime: evalAt(at), ExpSamples: []expSample{{`{inferscope_rule="network-p1", model="recsys", model_name="recsys"}`, 1}}},
			// The gateway's P95 per model, mapped and in seconds (µs, rounded).
			{Expr: `round(1e6 * ` + RecGatewayLatency + `)`, EvalTime: evalAt(at),
				ExpSamples: []expSample{{`{model_name="recsys"}`, math.Round(1e6 * slow.quantile(0.95))}}},
		},
	}
	service := promtoolTest{
		Name: "the service itself slows",
		fleet: []interface{ write(int) []series }{
			server("node-a:8000", "recsys"), server("node-b:8000", "recsys"),
			svc("node-a:8000", "recsys", phase{0, incidentAt, 1000, steady}, phase{incidentAt, totalMin, 1000, slow}),
			svc("node-b:8000", "recsys", phase{0, incidentAt, 1000, steady}, phase{incidentAt, totalMin, 1000, slow}),
			ingressNginx{"recsys-svc", []phase{{0, incidentAt, 2000, steady}, {incidentAt, totalMin, 2000, slow}}},
		},
		AlertRuleTest: none(at, "InferscopeNetworkLatencyHigh"),
		PromqlTest: []promqlCase{
			{Expr: `count(ALERTS{alertname="InferscopeLatencyCritical", alertstate="firing"})`, EvalTime: evalAt(at), ExpSamples: []expSample{{`{}`, 2}}},
		},
	}
	runPromtool(t, p, []promtoolTest{network, service})
}

// TestRelabelMapsAsTheEngineDoes: a gateway mapping rendered in PromQL (relabel), evaluated by
// promtool, gives each gateway series the model the engine's own mapping (gateway.Map) gives it,
// and drops the series it does not map: a regex with a replacement, a static map over the
// default regex (a listed value is taken literally, not as a regex; an empty entry unmaps), a
// static map alone (no regex: an unlisted value is unmapped; "$" taken literally).
func TestRelabelMapsAsTheEngineDoes(t *testing.T) {
	values := []string{"recsys-svc", "other", "a.b", "aXb", "c", "k$1", "", "m-x"}
	rules := []gateway.Rule{
		{Label: "src", Regex: "(.+)-svc"},
		{Label: "src", Regex: "(.+)", Replacement: "m-$1"},
		{Label: "src", Map: map[string]string{"a.b": "x", "c": ""}, Regex: "(.*)"},
		{Label: "src", Map: map[string]string{"k$1": "v$1", "aXb": "y"}},
	}
	var input []series
	for i, v := range values {
		input = append(input, series{labelText("gw", map[string]string{"src": v, "i": strconv.Itoa(i)}), "1x10"})
	}
	var cases []promqlCase
	for _, r := range rules {
		g, err := gateway.New(gateway.Config{Preset: gateway.Custom, Metric: "gw", Model: r})
		if err != nil {
			t.Fatal(err)
		}
		var want []expSample
		for i, v := range values {
			target, ok := g.Map(map[string]string{"src": v})
			if !ok {
				continue
			}
			want = append(want, expSample{labelText("gw", map[string]string{"src": v, "i": strconv.Itoa(i), "dst": target.Model}), 1})
		}
		sort.Slice(want, func(i, j int) bool { return want[i].Labels < want[j].Labels })
		if len(want) == 0 {
			t.Fatalf("rule %+v maps none of the values: the case proves nothing", r)
		}
		cases = append(cases, promqlCase{Expr: relabel("gw", "dst", g.ModelMapping()), EvalTime: "5m", ExpSamples: want})
	}
	runPromtool(t, testParams(), []promtoolTest{{Name: "relabel", InputSeries: input, PromqlTest: cases}})
}
