package gateway

import (
	"strings"
	"testing"
)

func TestNewPresets(t *testing.T) {
	cases := []struct {
		preset, metric string
		scale          float64
		matchers       map[string]string
		source         string
	}{
		{IngressNginx, "nginx_ingress_controller_response_duration_seconds", 1, nil, "service"},
		{Envoy, "envoy_cluster_upstream_rq_time", 1e-3, nil, "envoy_cluster_name"},
		{Istio, "istio_request_duration_milliseconds", 1e-3, map[string]string{"reporter": "source"}, "destination_workload"},
	}
	for _, c := range cases {
		g, err := New(Config{Preset: c.preset})
		if err != nil {
			t.Fatalf("%s: %v", c.preset, err)
		}
		if g.Metric != c.metric || g.Scale != c.scale || strings.Join(g.SourceLabels(), ",") != c.source {
			t.Errorf("%s: metric %s scale %g source %v", c.preset, g.Metric, g.Scale, g.SourceLabels())
		}
		for k, v := range c.matchers {
			if g.Matchers[k] != v {
				t.Errorf("%s: matcher %s=%q, got %q", c.preset, k, v, g.Matchers[k])
			}
		}
		if g.HasVersion() || g.HasInstance() {
			t.Errorf("%s: the presets map neither versions nor instances by default", c.preset)
		}
	}
	if g, err := New(Config{}); g != nil || err != nil {
		t.Errorf("no preset: %v, %v", g, err)
	}
}

func TestNewErrors(t *testing.T) {
	cases := []struct {
		c    Config
		want string
	}{
		{Config{Preset: "haproxy"}, "unknown gateway"},
		{Config{Preset: Custom}, "needs the name"},
		{Config{Preset: Custom, Metric: "gw_seconds"}, "label that names the model"},
		{Config{Preset: Custom, Metric: "bad name", Model: Rule{Label: "svc"}}, "not a valid Prometheus metric name"},
		{Config{Preset: Custom, Metric: "gw", Unit: "hours", Model: Rule{Label: "svc"}}, "unit"},
		{Config{Preset: IngressNginx, Model: Rule{Regex: "("}}, "regex"},
		{Config{Preset: IngressNginx, Model: Rule{Label: "a-b"}}, "label name"},
		{Config{Preset: IngressNginx, Matchers: map[string]string{"x y": "1"}}, "label name"},
		{Config{Preset: IngressNginx, Instance: Rule{Label: "9x"}}, "instance label"},
	}
	for _, c := range cases {
		_, err := New(c.c)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.c, err, c.want)
		}
	}
}

func TestMap(t *testing.T) {
	cases := []struct {
		name   string
		c      Config
		labels map[string]string
		want   Target
		ok     bool
	}{
		{"value as is", Config{Preset: IngressNginx}, map[string]string{"service": "recsys-ranker"}, Target{Model: "recsys-ranker"}, true},
		{"regex", Config{Preset: IngressNginx, Model: Rule{Regex: "(.+)-svc"}},
			map[string]string{"service": "recsys-ranker-svc"}, Target{Model: "recsys-ranker"}, true},
		{"regex is anchored", Config{Preset: IngressNginx, Model: Rule{Regex: "(.+)-svc"}},
			map[string]string{"service": "recsys-ranker-svc-2"}, Target{}, false},
		{"replacement", Config{Preset: Envoy, Model: Rule{Regex: `outbound\|\d+\|\|(.+)\.(.+)\.svc\.cluster\.local`, Replacement: "$2/$1"}},
			map[string]string{"envoy_cluster_name": "outbound|8000||recsys.ml.svc.cluster.local"}, Target{Model: "ml/recsys"}, true},
		{"static map", Config{Preset: IngressNginx, Model: Rule{Map: map[string]string{"rank-svc": "recsys-ranker"}}},
			map[string]string{"service": "rank-svc"}, Target{Model: "recsys-ranker"}, true},
		{"static map alone maps only its values", Config{Preset: IngressNginx, Model: Rule{Map: map[string]string{"rank-svc": "recsys-ranker"}}},
			map[string]string{"service": "other"}, Target{}, false},
		{"static map before the regex", Config{Preset: IngressNginx, Model: Rule{Regex: "(.+)-svc", Map: map[string]string{"x-svc": "y"}}},
			map[string]string{"service": "x-svc"}, Target{Model: "y"}, true},
		{"static map then the regex", Config{Preset: IngressNginx, Model: Rule{Regex: "(.+)-svc", Map: map[string]string{"x-svc": "y"}}},
			map[string]string{"service": "z-svc"}, Target{Model: "z"}, true},
		{"label absent", Config{Preset: IngressNginx}, map[string]string{"ingress": "a"}, Target{}, false},
		{"empty result", Config{Preset: IngressNginx}, map[string]string{"service": ""}, Target{}, false},
		{"version and instance", Config{Preset: Istio, Version: Rule{Label: "destination_version"},
			Instance: Rule{Label: "destination_workload", Regex: "(.+)-(node-.)", Replacement: "$2:8000"}, Model: Rule{Regex: "(.+)-node-."}},
			map[string]string{"destination_workload": "recsys-node-b", "destination_version": "v1"},
			Target{Model: "recsys", Version: "v1", Instance: "node-b:8000"}, true},
		{"version rule that does not match", Config{Preset: Istio, Version: Rule{Label: "destination_version", Regex: "v.+"}},
			map[string]string{"destination_workload": "recsys", "destination_version": "unknown"}, Target{}, false},
	}
	for _, c := range cases {
		g, err := New(c.c)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, ok := g.Map(c.labels)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestParseMap(t *testing.T) {
	m, err := ParseMap(" a=b, c = d ")
	if err != nil || len(m) != 2 || m["a"] != "b" || m["c"] != "d" {
		t.Errorf("%v %v", m, err)
	}
	if m, err := ParseMap(""); m != nil || err != nil {
		t.Errorf("empty: %v %v", m, err)
	}
	if _, err := ParseMap("a"); err == nil {
		t.Error("a: no error")
	}
	if _, err := ParseMatchers("=b"); err == nil {
		t.Error("=b: no error")
	}
}

func TestDescribe(t *testing.T) {
	g, err := New(Config{Preset: Istio, Version: Rule{Label: "destination_version"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `Istio gateway: istio_request_duration_milliseconds{reporter="source"}, model from destination_workload, version from destination_version`
	if got := g.Describe(); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}
