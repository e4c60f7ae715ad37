package profile_test

import (
	"bytes"
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

// TestVLLMCurrentFixture: the current vLLM exposition (testdata/vllm_current.prom, written from
// the names and labels read at vLLM's source) passes promtool's checker, whose only finding is
// vLLM's own colon in its metric names, and every role the vllm profile declares resolves from
// it to its first choice: the current names, not the fallbacks of older releases. Under CI=true
// a missing promtool fails.
func TestVLLMCurrentFixture(t *testing.T) {
	promtool := promtest.RequireBinary(t, "promtool")
	body, err := os.ReadFile(filepath.Join("testdata", "vllm_current.prom"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, _ := cmd.CombinedOutput() // exit status 3 on lint findings; the findings are checked below
	colons := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "vllm:") && strings.HasSuffix(line, "metric names should not contain ':'"):
			colons++
		default:
			t.Errorf("promtool check metrics: %s", line)
		}
	}
	if colons == 0 {
		t.Errorf("promtool flagged no vllm:* name; did it read the fixture? output %q", out)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for name, fam := range fams {
		present[name] = true
		if fam.GetType() == dto.MetricType_HISTOGRAM {
			present[name+"_bucket"], present[name+"_sum"], present[name+"_count"] = true, true, true
		}
	}
	p, det := profile.Detect(keys(present))
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

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
