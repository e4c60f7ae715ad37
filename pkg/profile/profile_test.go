package profile

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// seriesNames parses an exposition fixture and lists its sample names the
// way Prometheus' /api/v1/label/__name__/values would.
func seriesNames(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var names []string
	for name, fam := range fams {
		switch fam.GetType() {
		case dto.MetricType_HISTOGRAM:
			names = append(names, name+"_bucket", name+"_sum", name+"_count")
		case dto.MetricType_SUMMARY:
			names = append(names, name+"_sum", name+"_count")
			for _, m := range fam.GetMetric() {
				if len(m.GetSummary().GetQuantile()) > 0 {
					names = append(names, name)
					break
				}
			}
		default:
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func set(names []string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func TestDetectFixtures(t *testing.T) {
	tests := []struct {
		file, want string
	}{
		{"custom.prom", "custom"},
		{"vllm.prom", "vllm"},
		{"vllm_current.prom", "vllm"},
		{"vllm_legacy.prom", "vllm"},
		{"triton.prom", "triton"},
		{"torchserve.prom", "torchserve"},
		{"tgi.prom", "tgi"},
		{"sglang.prom", "sglang"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			names := seriesNames(t, tc.file)
			p, d := Detect(names)
			if !d.Found || p.Name != tc.want || d.Name != tc.want || d.Ambiguous {
				t.Fatalf("Detect = %q %+v, want %q", p.Name, d, tc.want)
			}
			if len(d.Candidates) != 1 {
				t.Errorf("candidates = %+v, want only %s", d.Candidates, tc.want)
			}
			if !strings.Contains(d.Reason, p.Title) {
				t.Errorf("reason %q does not name %s", d.Reason, p.Title)
			}
		})
	}
}

// roleFixture is the fixture of each profile that holds every name the profile reads: the
// current vLLM release's exposition for vllm, NAME.prom for the others.
func roleFixture(name string) string {
	if name == "vllm" {
		return "vllm_current.prom"
	}
	return name + ".prom"
}

func TestEveryDeclaredRoleResolvesFromItsFixture(t *testing.T) {
	for _, name := range Names() {
		p, _ := ByName(name)
		// A server's other configurations and backends have fixtures of their own
		// (triton_vllm.prom): a role resolves from one of them.
		files, _ := filepath.Glob(filepath.Join("testdata", name+"_*.prom"))
		names := seriesNames(t, name+".prom")
		for _, f := range files {
			names = append(names, seriesNames(t, filepath.Base(f))...)
		}
		present := set(names)
		for role := range p.Roles {
			if _, ok, why := p.Resolve(role, present); !ok {
				t.Errorf("%s: role %s does not resolve from its fixture: %s", name, role, why)
			}
		}
	}
}

func TestResolvePicksTheFirstAvailableMeasure(t *testing.T) {
	vllmP, _ := ByName("vllm")
	legacy := set(seriesNames(t, "vllm_legacy.prom"))
	for role, want := range map[Role]string{
		KVCacheUsage: "vllm:gpu_cache_usage_perc",
		CacheHits:    "vllm:gpu_prefix_cache_hits_total",
		CacheQueries: "vllm:gpu_prefix_cache_queries_total",
		InterToken:   "vllm:time_per_output_token_seconds",
	} {
		m, ok, why := vllmP.Resolve(role, legacy)
		if !ok || m.Metrics[0] != want {
			t.Errorf("legacy vLLM %s = %v (%v, %s), want %s", role, m.Metrics, ok, why, want)
		}
	}
	current := set(seriesNames(t, "vllm.prom"))
	if m, _, _ := vllmP.Resolve(KVCacheUsage, current); m.Metrics[0] != "vllm:kv_cache_usage_perc" {
		t.Errorf("current vLLM KV cache = %v", m.Metrics)
	}

	tri, _ := ByName("triton")
	withSummaries := set(seriesNames(t, "triton.prom"))
	m, ok, _ := tri.Resolve(Latency, withSummaries)
	if !ok || m.Kind != Summary || m.Scale != 1e-6 || m.QuantileLabel != "quantile" {
		t.Errorf("Triton latency with summaries = %+v", m)
	}
	without := map[string]bool{}
	for n := range withSummaries {
		if !strings.Contains(n, "_summary_us") {
			without[n] = true
		}
	}
	m, ok, _ = tri.Resolve(Latency, without)
	if !ok || m.Kind != MicrosecondCounter || !strings.Contains(m.Note, "summary_latencies=true") {
		t.Errorf("Triton latency without summaries = %+v", m)
	}
	if !reflect.DeepEqual(m.Required(), []string{"nv_inference_request_duration_us", "nv_inference_request_success"}) {
		t.Errorf("required = %v", m.Required())
	}
	if _, ok, why := tri.Resolve(LoadState, withSummaries); ok || !strings.Contains(why, "readiness") {
		t.Errorf("Triton load state: ok=%v notice %q", ok, why)
	}
	if _, ok, why := tri.Resolve(Latency, map[string]bool{}); ok || why == "" {
		t.Errorf("Triton latency with no metrics: ok=%v notice %q", ok, why)
	}

	ts, _ := ByName("torchserve")
	m, _, _ = ts.Resolve(ComputeTime, set(seriesNames(t, "torchserve.prom")))
	if !reflect.DeepEqual(m.Minus, []string{"ts_queue_latency_microseconds"}) {
		t.Errorf("TorchServe compute = %+v", m)
	}
}

func TestDetectNoneAndMixed(t *testing.T) {
	p, d := Detect(seriesNames(t, "node.prom"))
	if d.Found || p.Name != "" || !strings.Contains(d.Reason, "no known inference-server metrics") {
		t.Errorf("node_exporter only: %q %+v", p.Name, d)
	}
	if _, d := Detect(nil); d.Found {
		t.Errorf("no names: %+v", d)
	}
	// One characteristic name proves nothing.
	if _, d := Detect([]string{"model_loading_status", "up"}); d.Found {
		t.Errorf("a single name was enough: %+v", d)
	}

	// Both a custom service and TorchServe, complete: the larger full match
	// wins and the other is mentioned.
	mixed := append(seriesNames(t, "custom.prom"), seriesNames(t, "torchserve.prom")...)
	p, d = Detect(mixed)
	if p.Name != "custom" || d.Ambiguous || len(d.Candidates) != 2 || !strings.Contains(d.Reason, "TorchServe") {
		t.Errorf("mixed: %q %+v", p.Name, d)
	}

	// Two of six names of each of custom and TGI: a tie, resolved by order
	// and reported.
	p, d = Detect([]string{"inference_requests_total", "inference_queue_size", "tgi_request_count", "tgi_queue_size"})
	if p.Name != "custom" || !d.Ambiguous || !strings.Contains(d.Reason, "equally") {
		t.Errorf("tie: %q %+v", p.Name, d)
	}
}

func TestWithLabels(t *testing.T) {
	tgiP, _ := ByName("tgi")
	if tgiP.ModelLabel != "" || !strings.Contains(tgiP.LabelNote, "no model") {
		t.Errorf("TGI labels: %q %q", tgiP.ModelLabel, tgiP.LabelNote)
	}
	p, err := tgiP.WithLabels("model", "", "pod")
	if err != nil {
		t.Fatal(err)
	}
	if p.ModelLabel != "model" || p.VersionLabel != "" || p.InstanceLabel != "pod" {
		t.Errorf("override = %q %q %q", p.ModelLabel, p.VersionLabel, p.InstanceLabel)
	}
	if again, _ := ByName("tgi"); again.ModelLabel != "" {
		t.Error("WithLabels changed the built-in profile")
	}
	for _, bad := range []string{"model-name", "1model", `model"}`, "a b"} {
		if _, err := tgiP.WithLabels(bad, "", ""); err == nil {
			t.Errorf("label %q accepted", bad)
		}
	}
	want := map[string][3]string{
		"custom": {"model_name", "model_version", "instance"}, "vllm": {"model_name", "", "instance"},
		"triton": {"model", "version", "instance"}, "torchserve": {"model_name", "model_version", "instance"},
		"tgi": {"", "", "instance"}, "sglang": {"model_name", "", "instance"},
	}
	for name, w := range want {
		p, err := ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]string{p.ModelLabel, p.VersionLabel, p.InstanceLabel}; got != w {
			t.Errorf("%s labels = %v, want %v", name, got, w)
		}
	}
	if _, err := ByName("sagemaker"); err == nil {
		t.Error("unknown profile accepted")
	}
}

func TestProfilesAreComplete(t *testing.T) {
	if !reflect.DeepEqual(Names(), []string{"custom", "vllm", "triton", "torchserve", "tgi", "sglang"}) {
		t.Errorf("names = %v", Names())
	}
	for _, p := range All() {
		required := map[string]bool{}
		for _, role := range AllRoles {
			ms, inRoles := p.Roles[role]
			why, inMissing := p.Missing[role]
			if inRoles == inMissing {
				t.Errorf("%s: role %s must be either measured or explained (measured %v, explained %v)", p.Name, role, inRoles, inMissing)
			}
			if inMissing && len(why) < 20 {
				t.Errorf("%s: role %s has no real explanation: %q", p.Name, role, why)
			}
			for _, m := range ms {
				if m.Kind == 0 || len(m.Metrics) == 0 || !(m.Scale > 0) || m.Unit == "" {
					t.Errorf("%s %s: incomplete measure %+v", p.Name, role, m)
				}
				if (m.Kind == MicrosecondCounter || m.Kind == CounterRatio) != (len(m.Count) > 0) {
					t.Errorf("%s %s: a %s needs Count exactly when it divides", p.Name, role, m.Kind)
				}
				for _, n := range m.Required() {
					required[n] = true
				}
			}
		}
		if len(p.Roles)+len(p.Missing) != len(AllRoles) {
			t.Errorf("%s: roles outside AllRoles", p.Name)
		}
		for _, s := range p.Signature {
			if !required[s] {
				t.Errorf("%s: signature name %s is used by no measure", p.Name, s)
			}
		}
		if len(p.Signature) < minMatches {
			t.Errorf("%s: signature too short", p.Name)
		}
	}
}

func TestChoose(t *testing.T) {
	vllm := []string{"vllm:e2e_request_latency_seconds_bucket", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:request_queue_time_seconds_bucket"}
	for _, tc := range []struct {
		setting string
		names   []string
		want    string // profile name, or the error's text
		nd      bool   // a *NotDetectedError
	}{
		{"auto", vllm, "vllm", false},
		{"", vllm, "vllm", false},
		{"triton", vllm, "triton", false}, // a setting wins over what Prometheus has
		{"auto", []string{"up"}, "no metric profile detected: ", true},
		{"nonesuch", vllm, "nonesuch", false},
	} {
		p, err := Choose(tc.setting, tc.names)
		var nd *NotDetectedError
		switch {
		case tc.nd:
			if !errors.As(err, &nd) || !strings.HasPrefix(err.Error(), tc.want) || nd.Reason == "" {
				t.Errorf("%q %v: %v", tc.setting, tc.names, err)
			}
		case tc.setting == "nonesuch":
			if err == nil || errors.As(err, &nd) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("unknown profile: %v", err)
			}
		case err != nil || p.Name != tc.want:
			t.Errorf("%q %v: %s, %v", tc.setting, tc.names, p.Name, err)
		}
	}
}

// SGLang's roles read from its fixture: compute from the e2e and queue histograms' sums, the
// cache hit ratio from token counters (never the cache_hit_rate gauge), gauges with priority="".
func TestSGLangMeasures(t *testing.T) {
	sg, _ := ByName("sglang")
	present := set(seriesNames(t, "sglang.prom"))
	m, ok, _ := sg.Resolve(ComputeTime, present)
	if !ok || !reflect.DeepEqual(m.Required(), []string{"sglang:e2e_request_latency_seconds_sum", "sglang:queue_time_seconds_sum", "sglang:e2e_request_latency_seconds_count"}) {
		t.Errorf("compute = %+v", m)
	}
	for _, r := range []Role{CacheHits, CacheQueries} {
		if m, _, _ := sg.Resolve(r, present); m.Kind != Counter || strings.Contains(m.Metrics[0], "cache_hit_rate") {
			t.Errorf("%s = %+v", r, m)
		}
	}
	for _, r := range []Role{QueueDepth, Running} {
		if m, _, _ := sg.Resolve(r, present); m.Matchers["priority"] != "" || len(m.Matchers) != 1 {
			t.Errorf("%s matchers %v", r, m.Matchers)
		}
	}
	if _, why := sg.Measures(Errors); !strings.Contains(why, "no failure counter") {
		t.Errorf("errors: %q", why)
	}
	if !strings.Contains(sg.Enable, "--enable-metrics") {
		t.Errorf("enable %q", sg.Enable)
	}
}

// TorchServe without its ts_* counters (a metrics.yaml that dropped them) is not detected from
// its frontend metrics alone; the profile says what the server needs and that its means are
// biased low under errors.
func TestTorchServeWithoutCounters(t *testing.T) {
	if p, d := Detect(seriesNames(t, "torchserve_frontend.prom")); d.Found {
		t.Errorf("detected %s from TorchServe's frontend metrics", p.Name)
	}
	ts, _ := ByName("torchserve")
	if !strings.Contains(ts.Enable, "metrics_mode=prometheus") {
		t.Errorf("enable %q", ts.Enable)
	}
	for _, r := range []Role{Latency, QueueTime, ComputeTime} {
		ms, _ := ts.Measures(r)
		if !strings.Contains(ms[0].Note, "answered requests only") || !strings.Contains(ms[0].Note, "biased low") {
			t.Errorf("%s note %q", r, ms[0].Note)
		}
	}
}
