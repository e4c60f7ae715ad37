package profile_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	"torchserve.prom":          torchServeFindings,
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
