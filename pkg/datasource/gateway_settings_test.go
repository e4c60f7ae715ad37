package datasource

import (
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/gateway"
)

// TestGatewaySettings: jsonData.gateway becomes the engine's gateway; a bad mapping is a
// settings problem naming the gateway; no preset is no gateway.
func TestGatewaySettings(t *testing.T) {
	s, err := ParseSettings(instanceSettings(t, "http://prom:9090", map[string]any{"gateway": map[string]any{
		"preset": "ingress-nginx", "modelRegex": "(.+)-svc-node-.", "modelMap": map[string]string{"rank": "recsys-ranker"},
		"instanceLabel": "service", "instanceRegex": ".+-(node-.)",
	}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := gateway.Config{Preset: "ingress-nginx",
		Model: gateway.Rule{Regex: "(.+)-svc-node-.", Map: map[string]string{"rank": "recsys-ranker"}}, Instance: gateway.Rule{Label: "service", Regex: ".+-(node-.)"}}
	if s.Gateway.Preset != want.Preset || s.Gateway.Model.Regex != want.Model.Regex || s.Gateway.Model.Map["rank"] != "recsys-ranker" ||
		s.Gateway.Instance.Label != want.Instance.Label || s.Gateway.Instance.Regex != want.Instance.Regex {
		t.Errorf("gateway %+v", s.Gateway)
	}
	g, err := gateway.New(s.Gateway)
	if err != nil {
		t.Fatal(err)
	}
	if tg, ok := g.Map(map[string]string{"service": "embed-svc"}); ok {
		t.Errorf("embed-svc names no instance, mapped %+v", tg)
	}
	if tg, ok := g.Map(map[string]string{"service": "embed-svc-node-b"}); !ok || tg.Model != "embed" || tg.Instance != "node-b" {
		t.Errorf("mapped %+v %v", tg, ok)
	}
	for _, c := range []struct {
		gw   any
		want string
	}{
		{map[string]any{"preset": "haproxy"}, `gateway: unknown gateway "haproxy"`},
		{map[string]any{"preset": "custom", "metric": "gw_seconds"}, "gateway: the custom gateway needs the label that names the model"},
		{map[string]any{"preset": "envoy", "unit": "hours"}, "gateway: gateway unit"},
		{"ingress-nginx", "setting gateway must be an object"},
	} {
		_, err := ParseSettings(instanceSettings(t, "http://prom:9090", map[string]any{"gateway": c.gw}, nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.gw, err, c.want)
		}
	}
	for _, gw := range []any{nil, map[string]any{}, map[string]any{"preset": "none"}} {
		s, err := ParseSettings(instanceSettings(t, "http://prom:9090", map[string]any{"gateway": gw}, nil))
		if err != nil || s.Gateway.Preset != "" {
			t.Errorf("%v: %+v %v", gw, s.Gateway, err)
		}
	}
}
