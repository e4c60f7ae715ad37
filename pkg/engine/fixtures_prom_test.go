package engine

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// Every exposition fixture under testdata, loaded into a real Prometheus as ten minutes of
// scrapes (fixtureT0 to fixtureT0+10m every 15 s) and read through the engine's query types.
// A fixture is one scrape; the history grows every cumulative sample (counters, histogram and
// summary counts and sums) linearly from half its value to its value, and keeps gauges and
// summary quantiles as they are, so a rate's mean over the window is the fixture's sum / count
// and a request rate is half the fixture's count over the ten minutes.

var fixtureT0 = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)

const (
	fixtureSpan = 10 * time.Minute
	fixtureStep = 15 * time.Second
)

func parseFixture(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return fams
}

// fixtureSample is one sample line of a fixture: its name and labels, value, and whether it
// accumulates.
type fixtureSample struct {
	name   string
	labels map[string]string
	v      float64
	cum    bool
}

func fixtureSamples(fams map[string]*dto.MetricFamily) []fixtureSample {
	var out []fixtureSample
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := fams[n]
		for _, m := range f.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			with := func(k, v string) map[string]string {
				c := map[string]string{k: v}
				for a, b := range l {
					c[a] = b
				}
				return c
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out = append(out, fixtureSample{n, l, m.GetCounter().GetValue(), true})
			case dto.MetricType_GAUGE:
				out = append(out, fixtureSample{n, l, m.GetGauge().GetValue(), false})
			case dto.MetricType_UNTYPED:
				out = append(out, fixtureSample{n, l, m.GetUntyped().GetValue(), false})
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) {
						out = append(out, fixtureSample{n + "_bucket", with("le", strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)), float64(b.GetCumulativeCount()), true})
					}
				}
				out = append(out, fixtureSample{n + "_bucket", with("le", "+Inf"), float64(h.GetSampleCount()), true},
					fixtureSample{n + "_sum", l, h.GetSampleSum(), true}, fixtureSample{n + "_count", l, float64(h.GetSampleCount()), true})
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					out = append(out, fixtureSample{n, with("quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)), q.GetValue(), false})
				}
				out = append(out, fixtureSample{n + "_sum", l, s.GetSampleSum(), true}, fixtureSample{n + "_count", l, float64(s.GetSampleCount()), true})
			}
		}
	}
	return out
}

// fixtureTarget is one fixture scraped as job/instance.
type fixtureTarget struct{ path, job, instance string }

// startFixtureBed writes the targets' histories, starts Prometheus on them and returns a client
// and the names Prometheus lists.
func startFixtureBed(t *testing.T, targets ...fixtureTarget) *prom.Client {
	t.Helper()
	promtest.RequireBinary(t, "promtool")
	var b strings.Builder
	n := int(fixtureSpan / fixtureStep)
	for _, tg := range targets {
		for _, s := range fixtureSamples(parseFixture(t, tg.path)) {
			keys := make([]string, 0, len(s.labels))
			for k := range s.labels {
				if k != "job" && k != "instance" {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			parts := []string{fmt.Sprintf("job=%q", tg.job), fmt.Sprintf("instance=%q", tg.instance)}
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%q", k, s.labels[k]))
			}
			name := s.name
			if !model.IsValidLegacyMetricName(name) {
				name = fmt.Sprintf("%q", name)
			}
			for k := 0; k <= n; k++ {
				v := s.v
				if s.cum {
					v *= 0.5 + 0.5*float64(k)/float64(n)
				}
				at := fixtureT0.Add(time.Duration(k) * fixtureStep).Unix()
				if strings.HasPrefix(name, `"`) {
					fmt.Fprintf(&b, "{%s,%s} %g %d\n", name, strings.Join(parts, ","), v, at)
				} else {
					fmt.Fprintf(&b, "%s{%s} %g %d\n", name, strings.Join(parts, ","), v, at)
				}
			}
		}
	}
	b.WriteString("# EOF\n")
	c, err := prom.New(promtest.StartWithHistory(t, b.String(), promtest.Options{}).URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// serverFixtures maps each server fixture to the profile that reads it.
var serverFixtures = map[string]string{
	"custom.prom": "custom", "sglang.prom": "sglang", "tgi.prom": "tgi", "torchserve.prom": "torchserve",
	"torchserve_frontend.prom": "torchserve", "triton.prom": "triton", "triton_cache.prom": "triton",
	"triton_default.prom": "triton", "triton_summaries.prom": "triton", "triton_trtllm.prom": "triton",
	"triton_vllm.prom": "triton", "vllm.prom": "vllm", "vllm_current.prom": "vllm", "vllm_legacy.prom": "vllm",
}

// fixtureQPS is the request rate per model the history gives: half the fixture's count of the
// profile's requests measure over the ten minutes.
// A fixture without the measure (TorchServe's frontend metrics alone) gives none.
func fixtureQPS(p profile.Profile, samples []fixtureSample) map[string]float64 {
	present := map[string]bool{}
	for _, s := range samples {
		present[s.name] = true
	}
	m, ok, _ := p.Resolve(profile.Requests, present)
	if !ok {
		return nil
	}
	out := map[string]float64{}
	for _, s := range samples {
		match := slicesContains(m.Metrics, s.name)
		for k, v := range m.Matchers {
			match = match && s.labels[k] == v
		}
		if match {
			out[s.labels[p.ModelLabel]] += s.v * m.Scale * 0.5 / fixtureSpan.Seconds()
		}
	}
	return out
}

func slicesContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// TestEveryServerFixtureAnswers: each server fixture of pkg/profile/testdata, on a real
// Prometheus, is read by its profile through the query types a server supports: throughput
// gives each model's request rate as the fixture holds it (TorchServe's frontend metrics alone
// have no request count: a notice says so); latency, split, errors and jitter answer without
// error, with series or with a notice saying what is not measured.
func TestEveryServerFixtureAnswers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "profile", "testdata", "*.prom"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		file := filepath.Base(path)
		name, ok := serverFixtures[file]
		if file == "node.prom" {
			continue // no inference server: TestNodeFixtureHasNoServer
		}
		if !ok {
			t.Errorf("%s: a fixture no test reads (add it to serverFixtures)", file)
			continue
		}
		t.Run(file, func(t *testing.T) {
			c := startFixtureBed(t, fixtureTarget{path, "inference", "fixture-node:8000"})
			e, err := New(context.Background(), Config{Prom: c, Profile: name})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := profile.ByName(name)
			want := fixtureQPS(p, fixtureSamples(parseFixture(t, path)))
			b := bed{e: e}
			from, to := fixtureT0.Add(6*time.Minute), fixtureT0.Add(fixtureSpan)
			res := b.run(t, `{"queryType":"throughput"}`, from, to, time.Minute)
			got := map[string]float64{}
			for _, s := range res.Series {
				if s.Name == "qps" {
					got[s.Labels[p.ModelLabel]] += lastValue(s)
				}
			}
			switch {
			case want == nil && (len(got) > 0 || len(res.Notices) == 0):
				t.Errorf("throughput %v without the requests measure, notices %v", got, res.Notices)
			case want != nil && len(got) != len(want):
				t.Errorf("throughput per model %v, want %v", got, want)
			}
			for m, w := range want {
				if math.Abs(got[m]/w-1) > 1e-6 {
					t.Errorf("%s: %v req/s, want %v", m, got[m], w)
				}
			}
			for _, qt := range []string{"latency", "split", "errors", "jitter"} {
				q, err := Parse([]byte(`{"queryType":"` + qt + `"}`))
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(context.Background(), q, Range{Start: from, End: to, MinStep: time.Minute})
				if err != nil {
					t.Errorf("%s: %v", qt, err)
					continue
				}
				finite := false
				for _, s := range res.Series {
					finite = finite || !math.IsNaN(lastValue(s))
				}
				if !finite && len(res.Notices) == 0 {
					t.Errorf("%s: no value and no notice", qt)
				}
				t.Logf("%s: %d series, %d notices", qt, len(res.Series), len(res.Notices))
			}
		})
	}
}

// TestNodeFixtureHasNoServer: the node_exporter-only fixture holds no inference server, and
// the engine says so rather than read one.
func TestNodeFixtureHasNoServer(t *testing.T) {
	c := startFixtureBed(t, fixtureTarget{filepath.Join("..", "profile", "testdata", "node.prom"), "node", "fixture-node:9100"})
	_, err := New(context.Background(), Config{Prom: c})
	if err == nil || !strings.Contains(err.Error(), "no known inference-server metrics") {
		t.Errorf("an engine on node_exporter alone: %v, want no profile detected", err)
	}
}

// TestGatewayFixturesOnPrometheus: each gateway fixture, on a real Prometheus, is found by its
// preset: the set-up check says the network segment comes from it.
func TestGatewayFixturesOnPrometheus(t *testing.T) {
	for _, c := range []struct {
		file string
		cfg  gateway.Config
	}{
		{"ingress-nginx.prom", gateway.Config{Preset: gateway.IngressNginx, Model: gateway.Rule{Regex: "(.+)-svc"}}},
		{"envoy.prom", gateway.Config{Preset: gateway.Envoy, Model: gateway.Rule{Regex: "httproute/[^/]+/(.+)/rule/[0-9]+"}}},
		{"istio.prom", gateway.Config{Preset: gateway.Istio, Model: gateway.Rule{Regex: "(.+)-predictor"}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			cl := startFixtureBed(t,
				fixtureTarget{filepath.Join("..", "gateway", "testdata", c.file), "gateway", "gateway:9000"},
				fixtureTarget{filepath.Join("..", "profile", "testdata", "vllm_current.prom"), "vllm", "fixture-node:8000"})
			e, err := New(context.Background(), Config{Prom: cl, Profile: "vllm", Gateway: c.cfg})
			if err != nil {
				t.Fatal(err)
			}
			fs, err := e.SetupChecks(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range fs {
				if f.Check == "network segment" {
					found = true
					g, _ := gateway.New(c.cfg)
					if !strings.Contains(f.Message, g.Metric) || strings.Contains(f.Message, "not in Prometheus") {
						t.Errorf("network segment: %s %s", f.Level, f.Message)
					}
				}
			}
			if !found {
				t.Error("no network-segment finding")
			}
		})
	}
}

// TestDCGMFixturesAnswerGPU: each dcgm-exporter fixture of pkg/gpufields/testdata (every version
// and the MIG node), on a real Prometheus, answers the gpu type: one memory series per GPU (per
// GPU instance on MIG), equal to the one memory definition over the fixture's own values.
func TestDCGMFixturesAnswerGPU(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "gpufields", "testdata", "dcgm-*.prom"))
	if err != nil || len(files) < 5 {
		t.Fatalf("dcgm fixtures %v %v", files, err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c := startFixtureBed(t, fixtureTarget{path, "dcgm-exporter", "gpu-node:9400"})
			e, err := New(context.Background(), Config{Prom: c, NoProfile: true})
			if err != nil {
				t.Fatal(err)
			}
			parts := map[string]map[gpufields.Signal]float64{}
			for _, s := range fixtureSamples(parseFixture(t, path)) {
				for _, sig := range []gpufields.Signal{gpufields.MemUsed, gpufields.MemFree, gpufields.MemReserved, gpufields.MemTotal} {
					if n, ok := gpufields.Of(sig).Lookup(s.name); ok {
						k := s.labels["gpu"] + "/" + s.labels["GPU_I_ID"]
						if parts[k] == nil {
							parts[k] = map[gpufields.Signal]float64{}
						}
						parts[k][sig] = s.v * n.Scale
					}
				}
			}
			b := bed{e: e}
			res := b.run(t, `{"queryType":"gpu","metrics":["memory"]}`, fixtureT0.Add(6*time.Minute), fixtureT0.Add(fixtureSpan), time.Minute)
			if len(res.Series) != len(parts) {
				t.Errorf("%d memory series, want %d (one per GPU or GPU instance)", len(res.Series), len(parts))
			}
			val := func(m map[gpufields.Signal]float64, s gpufields.Signal) float64 {
				if v, ok := m[s]; ok {
					return v
				}
				return math.NaN()
			}
			for _, s := range res.Series {
				p := parts[s.Labels["gpu"]+"/"+s.Labels["mig"]]
				want := gpufields.MemoryRatio(val(p, gpufields.MemUsed), val(p, gpufields.MemTotal), val(p, gpufields.MemFree), val(p, gpufields.MemReserved))
				if got := lastValue(s); math.Abs(got-want) > 1e-12 {
					t.Errorf("GPU %s mig %q: memory %v, want %v", s.Labels["gpu"], s.Labels["mig"], got, want)
				}
			}
		})
	}
}
