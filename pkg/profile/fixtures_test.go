package profile_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// promtoolFindings are the lint findings each fixture is known to cause with its server's real
// names (promtool check metrics lints names; it exits 3 for lint findings, 1 when the text does
// not parse): SGLang's names are sglang:* (a colon, reserved for recording rules by convention)
// and one histogram is called sglang:prompt_tokens_histogram; TorchServe's are CamelCase and its
// RequestsNXX counters have no _total suffix, its ts_* counters are in microseconds.
var promtoolFindings = map[string][]string{
	"sglang.prom": {
		"metric names should not contain ':'",
		"sglang:prompt_tokens_histogram metric name should not include type 'histogram'",
	},
	"torchserve.prom": torchServeFindings,
	// vLLM's names are vllm:* (the colon).
	"vllm_current.prom":        {"metric names should not contain ':'"},
	"torchserve_frontend.prom": torchServeFindings,
}

var torchServeFindings = []string{"should be written in 'snake_case' not 'camelCase'", `counter metrics should have "_total" suffix`,
	`use base unit "seconds" instead of "microseconds"`}

// TestFixturesPassPromtool: the exposition fixtures written from the servers' facts are valid
// exposition text to promtool, with no lint finding but those the server's own names cause.
func TestFixturesPassPromtool(t *testing.T) {
	promtool := promtest.RequireBinary(t, "promtool")
	for file, allowed := range promtoolFindings {
		t.Run(file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(promtool, "check", "metrics")
			cmd.Stdin = bytes.NewReader(body)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 3) {
				t.Fatalf("promtool check metrics: %v\n%s", err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if line == "" {
					continue
				}
				ok := false
				for _, a := range allowed {
					ok = ok || strings.HasSuffix(line, a) || line == a
				}
				if !ok {
					t.Errorf("promtool check metrics: %s", line)
				}
			}
		})
	}
}

// TestVLLMCurrentFixture: every role the vllm profile declares resolves from the current vLLM
// exposition (testdata/vllm_current.prom, written from the names and labels read at vLLM's
// source; TestFixturesPassPromtool checks it with promtool) to its first choice: the current
// names, not the fallbacks of older releases.
func TestVLLMCurrentFixture(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "vllm_current.prom"))
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	var names []string
	for name, fam := range fams {
		ns := []string{name}
		if fam.GetType() == dto.MetricType_HISTOGRAM {
			ns = []string{name + "_bucket", name + "_sum", name + "_count"}
		}
		for _, n := range ns {
			present[n] = true
			names = append(names, n)
		}
	}
	p, det := profile.Detect(names)
	if !det.Found || p.Name != "vllm" || det.Ambiguous {
		t.Fatalf("detected %+v", det)
	}
	for _, role := range profile.AllRoles {
		ms, why := p.Measures(role)
		if len(ms) == 0 {
			t.Logf("%s: not measured: %s", role, why)
			continue
		}
		m, ok, why := p.Resolve(role, present)
		if !ok {
			t.Errorf("role %s does not resolve: %s", role, why)
			continue
		}
		if m.Metrics[0] != ms[0].Metrics[0] {
			t.Errorf("role %s resolves to %v, want the current name %v", role, m.Metrics, ms[0].Metrics)
		}
		t.Logf("%s: %v %v %v", role, m.Metrics, m.Matchers, m.OneOf)
	}
}
