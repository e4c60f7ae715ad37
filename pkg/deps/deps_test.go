package deps_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/inferscope/inferscope"

// testingImporters are the packages outside this module allowed to bring in Go's testing
// package, with why: hashicorp/go-plugin (the plugin protocol under Grafana's SDK) ships its
// test helpers (testing.go) in its main package, so every Grafana backend plugin links it.
var testingImporters = map[string]bool{"github.com/hashicorp/go-plugin": true}

// The binaries that are deployed (the data source Grafana runs and the GPU probe) link no part
// of the test bed, and nothing of theirs imports Go's testing package: `go list -deps` of
// each, as the build sees it.
func TestShippedBinariesLinkNoTestCode(t *testing.T) {
	for _, pkg := range []string{module + "/pkg", module + "/pkg/cmd/inferscope-probe"} {
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", pkg)
			cmd.Env = append(cmd.Environ(), "CGO_ENABLED=1") // the probe is a cgo build
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) < 20 {
				t.Fatalf("go list -deps %s listed only %d packages: %q", pkg, len(lines), lines)
			}
			for _, line := range lines {
				fields := strings.Fields(line)
				d := fields[0]
				if d == module+"/pkg/testbed" || strings.HasPrefix(d, module+"/pkg/testbed/") {
					t.Errorf("%s links the test bed: %s", pkg, d)
				}
				for _, imp := range fields[1:] {
					if (imp == "testing" || strings.HasPrefix(imp, "testing/")) && !testingImporters[d] {
						t.Errorf("%s links %s through %s", pkg, imp, d)
					}
				}
			}
		})
	}
}
