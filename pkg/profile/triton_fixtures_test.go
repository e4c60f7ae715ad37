package profile_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// Triton's own names break Prometheus' naming conventions (counters without _total, µs in the
// name, vllm:* colons); promtool's linter says so, and that is all it may say.
var tritonLint = []string{
	`counter metrics should have "_total" suffix`,
	"metric names should not contain abbreviated units",
	`non-histogram and non-summary metrics should not have "_count" suffix`,
	"metric name should not include type 'histogram'",
	"metric name should not include type 'summary'",
	"metric names should not contain ':'",
}

// TestTritonFixtures: the Triton fixtures (default configuration, summaries and the
// first-response histogram, the response cache, the vLLM and TensorRT-LLM backends) pass
// promtool check metrics but for Triton's own naming, are detected as Triton, and resolve each
// role to the measure the configuration calls for, with the profile's labels on its series.
func TestTritonFixtures(t *testing.T) {
	promtool := promtest.RequireBinary(t, "promtool")
	p, _ := profile.ByName("triton")
	type want map[profile.Role]string // role → first metric of the measure it resolves to ("" = unresolved)
	cases := []struct {
		file string
		want want
		gpu  bool // the per-request series carry gpu_uuid
	}{
		{"triton_default.prom", want{profile.Latency: "nv_inference_request_duration_us", profile.QueueTime: "nv_inference_queue_duration_us",
			profile.TimeToFirst: "", profile.CacheHits: "", profile.Running: "", profile.KVCacheUsage: ""}, true},
		{"triton_summaries.prom", want{profile.Latency: "nv_inference_request_summary_us", profile.QueueTime: "nv_inference_queue_summary_us",
			profile.TimeToFirst: "nv_inference_first_response_histogram_ms", profile.CacheHits: ""}, true},
		{"triton_cache.prom", want{profile.Latency: "nv_inference_request_summary_us", profile.CacheHits: "nv_cache_num_hits_per_model",
			profile.ComputeTime: "nv_inference_compute_input_duration_us"}, true},
		{"triton.prom", want{profile.Latency: "nv_inference_request_summary_us", profile.CacheHits: "nv_cache_num_hits_per_model"}, false},
		{"triton_vllm.prom", want{profile.Latency: "nv_inference_request_duration_us", profile.Running: "vllm:num_requests_running",
			profile.KVCacheUsage: "vllm:kv_cache_usage_perc", profile.TimeToFirst: "vllm:time_to_first_token_seconds",
			profile.InterToken: "vllm:inter_token_latency_seconds"}, false},
		{"triton_trtllm.prom", want{profile.Running: "nv_trt_llm_request_metrics", profile.KVCacheUsage: "nv_trt_llm_kv_cache_block_metrics",
			profile.TimeToFirst: "", profile.InterToken: ""}, false},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			lintClean(t, promtool, body)
			parser := expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			present, labels := map[string]bool{}, map[string]map[string]bool{}
			sampleNames(fams, present, labels)
			var names []string
			for n := range present {
				names = append(names, n)
			}
			sort.Strings(names)
			if got, d := profile.Detect(names); got.Name != "triton" || d.Ambiguous {
				t.Fatalf("Detect = %s (%s)", got.Name, d.Reason)
			}
			resolved := 0
			for _, role := range profile.AllRoles {
				m, ok, _ := p.Resolve(role, present)
				if w, asked := c.want[role]; asked {
					switch {
					case w == "" && ok:
						t.Errorf("%s resolves to %v, want nothing", role, m.Metrics)
					case w != "" && (!ok || m.Metrics[0] != w):
						t.Errorf("%s resolves to %v (%v), want %s", role, m.Metrics, ok, w)
					}
				}
				if !ok {
					continue
				}
				resolved++
				for _, name := range m.Required() {
					for _, l := range []string{p.ModelLabel, p.VersionLabel} {
						if role != profile.GPUUtil && !labels[name][l] {
							t.Errorf("%s: %s lacks the %s label", role, name, l)
						}
					}
					perRequest := role != profile.GPUUtil && role != profile.QueueDepth && role != profile.Waiting && !strings.HasPrefix(name, "vllm:")
					if c.gpu && perRequest && !labels[name][p.DeviceLabel] {
						t.Errorf("%s: %s lacks %s (GPU instances)", role, name, p.DeviceLabel)
					}
				}
			}
			if c.gpu && labels["nv_inference_pending_request_count"][p.DeviceLabel] {
				t.Errorf("the pending count carries %s", p.DeviceLabel)
			}
			if lt := p.LoadTime.Metrics[0]; c.file != "triton.prom" && !present[lt] {
				t.Errorf("no %s", lt)
			}
			t.Logf("%d roles resolve", resolved)
		})
	}
}

// lintClean runs promtool check metrics and allows only Triton's naming findings.
func lintClean(t *testing.T, promtool string, body []byte) {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) { // 3: lint findings only
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ok := line == ""
		for _, l := range tritonLint {
			ok = ok || strings.HasSuffix(line, l)
		}
		if !ok {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
}
