package gateway

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestIngressNginxFixture: the ingress-nginx exposition fixture (written from the controller's
// socket collector: its labels, constant labels and default time buckets) passes promtool, with
// the one finding the real controller has (its requests counter has no _total), and its
// upstream-time series map to the models with the preset's defaults and a regex.
func TestIngressNginxFixture(t *testing.T) {
	body, err := os.ReadFile("testdata/ingress-nginx.prom")
	if err != nil {
		t.Fatal(err)
	}
	if promtool, err := exec.LookPath("promtool"); err != nil {
		t.Log("promtool not installed: the lint is skipped")
	} else {
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(body)
		out, _ := cmd.CombinedOutput()
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if line != "" && line != `nginx_ingress_controller_requests counter metrics should have "_total" suffix` {
				t.Errorf("promtool check metrics: %s", line)
			}
		}
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{Preset: IngressNginx, Model: Rule{Regex: "(.+)-svc"}})
	if err != nil {
		t.Fatal(err)
	}
	fam, ok := fams[g.Metric]
	if !ok || fam.GetType().String() != "HISTOGRAM" {
		t.Fatalf("the fixture has no %s histogram", g.Metric)
	}
	sum, count := map[string]float64{}, map[string]float64{}
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for _, want := range Presets[0].Labels {
			if _, ok := labels[want]; !ok {
				t.Errorf("series %v lacks the %s label", labels, want)
			}
		}
		tg, ok := g.Map(labels)
		if !ok {
			t.Fatalf("%v not mapped", labels)
		}
		sum[tg.Model] += m.GetHistogram().GetSampleSum() * g.Scale
		count[tg.Model] += float64(m.GetHistogram().GetSampleCount())
	}
	for name, want := range map[string]float64{"recsys-ranker": (61.56 + 0.121) / 3423, "text-embedder": 52.44 / 1710} {
		if got := sum[name] / count[name]; math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: mean upstream time %.6f, want %.6f", name, got, want)
		}
	}
}
