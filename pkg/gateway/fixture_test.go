package gateway

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// checkFixture lints a fixture with promtool (when installed) and fails on any finding but the
// ones the real gateway has too; it returns the fixture's metric families.
func checkFixture(t *testing.T, file string, expected ...string) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		t.Log("promtool not installed: the lint is skipped")
	} else {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, _ := cmd.CombinedOutput()
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" {
				got = append(got, line)
			}
		}
		slices.Sort(got)
		slices.Sort(expected)
		if !slices.Equal(got, expected) {
			t.Errorf("promtool check metrics:\n%s\nwant exactly the real gateway's findings:\n%s", strings.Join(got, "\n"), strings.Join(expected, "\n"))
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// upstreamMeans maps every series of the gateway's histogram that carries the preset's fixed
// matchers to its model and returns the mean upstream time per model in seconds; it checks that
// each series has the preset's labels and counts the series the mapping leaves out.
func upstreamMeans(t *testing.T, fams map[string]*dto.MetricFamily, preset Preset, g *Gateway) (map[string]float64, int) {
	t.Helper()
	fam, ok := fams[g.Metric]
	if !ok || fam.GetType().String() != "HISTOGRAM" {
		t.Fatalf("the fixture has no %s histogram", g.Metric)
	}
	sum, count := map[string]float64{}, map[string]float64{}
	unmapped := 0
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for _, want := range preset.Labels {
			if _, ok := labels[want]; !ok {
				t.Errorf("series %v lacks the %s label", labels, want)
			}
		}
		matched := true
		for k, v := range g.Matchers {
			matched = matched && labels[k] == v
		}
		if !matched {
			continue
		}
		tg, ok := g.Map(labels)
		if !ok {
			unmapped++
			continue
		}
		sum[tg.Model] += m.GetHistogram().GetSampleSum() * g.Scale
		count[tg.Model] += float64(m.GetHistogram().GetSampleCount())
	}
	out := map[string]float64{}
	for k := range sum {
		out[k] = sum[k] / count[k]
	}
	return out, unmapped
}

func presetNamed(t *testing.T, name string) Preset {
	t.Helper()
	for _, p := range Presets {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no preset %s", name)
	return Preset{}
}

func wantMeans(t *testing.T, got, want map[string]float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("models %v, want %v", got, want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || math.Abs(g-w) > 1e-12 {
			t.Errorf("%s: mean upstream time %.9f s, want %.9f s", name, g, w)
		}
	}
}

// TestIngressNginxFixture: the ingress-nginx exposition fixture (written from the controller's
// socket collector: its labels, constant labels and default time buckets) passes promtool, with
// the one finding the real controller has (its requests counter has no _total), and its
// upstream-time series map to the models with the preset's defaults and a regex.
func TestIngressNginxFixture(t *testing.T) {
	fams := checkFixture(t, "testdata/ingress-nginx.prom", `nginx_ingress_controller_requests counter metrics should have "_total" suffix`)
	g, err := New(Config{Preset: IngressNginx, Model: Rule{Regex: "(.+)-svc"}})
	if err != nil {
		t.Fatal(err)
	}
	got, unmapped := upstreamMeans(t, fams, presetNamed(t, IngressNginx), g)
	if unmapped != 0 {
		t.Errorf("%d series not mapped", unmapped)
	}
	wantMeans(t, got, map[string]float64{"recsys-ranker": (61.56 + 0.121) / 3423, "text-embedder": 52.44 / 1710})
}

// TestEnvoyFixture: the Envoy fixture (Envoy's Prometheus stats endpoint as Envoy Gateway's proxy
// serves it: no HELP lines, counters named as Envoy's stats, the upstream-time histogram in ms
// with Envoy's default buckets and label envoy_cluster_name, clusters named
// httproute/<namespace>/<route>/rule/<n>) passes promtool with exactly Envoy's own findings; the
// preset with a regex on the cluster name maps the routes' clusters to the models, scales ms to
// seconds and leaves Envoy's own clusters out.
func TestEnvoyFixture(t *testing.T) {
	fams := checkFixture(t, "testdata/envoy.prom",
		`envoy_cluster_upstream_rq counter metrics should have "_total" suffix`,
		`envoy_cluster_upstream_rq_completed counter metrics should have "_total" suffix`,
		"envoy_cluster_upstream_rq no help text", "envoy_cluster_upstream_rq_active no help text",
		"envoy_cluster_upstream_rq_completed no help text", "envoy_cluster_upstream_rq_time no help text",
		"envoy_cluster_upstream_rq_total no help text")
	g, err := New(Config{Preset: Envoy, Model: Rule{Regex: "httproute/[^/]+/(.+)/rule/[0-9]+"}})
	if err != nil {
		t.Fatal(err)
	}
	got, unmapped := upstreamMeans(t, fams, presetNamed(t, Envoy), g)
	if unmapped != 1 {
		t.Errorf("%d series not mapped, want 1 (Envoy's own prometheus_stats cluster)", unmapped)
	}
	wantMeans(t, got, map[string]float64{"recsys-ranker": 61.6815 / 3420, "text-embedder": 52.44025 / 1710})
	// Envoy's default buckets, in ms, as its stats endpoint writes them.
	for _, m := range fams[g.Metric].GetMetric()[:1] {
		var les []float64
		for _, b := range m.GetHistogram().GetBucket() {
			if !math.IsInf(b.GetUpperBound(), 1) {
				les = append(les, b.GetUpperBound())
			}
		}
		want := []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000}
		if !slices.Equal(les, want) {
			t.Errorf("buckets %v, want Envoy's defaults %v", les, want)
		}
	}
}

// TestIstioFixture: the Istio fixture (the standard metrics as the proxies' stats endpoint writes
// them: ms, Envoy's buckets, Istio's labels) passes promtool with exactly Istio's own findings
// (no HELP, a base unit in ms); the preset reads only reporter="source" — the ingress gateway's
// view, which includes the network to the server — and maps destination_workload to the model;
// the server sidecars' reporter="destination" series, which never see that network, are left out.
func TestIstioFixture(t *testing.T) {
	fams := checkFixture(t, "testdata/istio.prom",
		"istio_request_duration_milliseconds no help text",
		`istio_request_duration_milliseconds use base unit "seconds" instead of "milliseconds"`,
		"istio_requests_total no help text")
	g, err := New(Config{Preset: Istio, Model: Rule{Regex: "(.+)-predictor"}})
	if err != nil {
		t.Fatal(err)
	}
	got, unmapped := upstreamMeans(t, fams, presetNamed(t, Istio), g)
	if unmapped != 0 {
		t.Errorf("%d series not mapped", unmapped)
	}
	wantMeans(t, got, map[string]float64{"recsys-ranker": (61.5405 + 0.121) / 3420, "text-embedder": 52.44025 / 1710})
	// The destination's own view is faster: it starts at the server's sidecar.
	d, err := New(Config{Preset: Istio, Model: Rule{Regex: "(.+)-predictor"}, Matchers: map[string]string{"reporter": "destination"}})
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := upstreamMeans(t, fams, presetNamed(t, Istio), d)
	for name, src := range got {
		if !(dst[name] < src) {
			t.Errorf("%s: destination view %.6f s not below the gateway's %.6f s", name, dst[name], src)
		}
	}
}
