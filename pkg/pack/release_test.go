package pack

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/build/utils"
)

// TestReleaseZip verifies the real release zip named by INFERSCOPE_ZIP (made by `mage package`),
// including that its build manifest matches the Go sources of this checkout. Without the
// variable it skips, unless CI=true and INFERSCOPE_EXPECT_ZIP=true say a zip must be there.
func TestReleaseZip(t *testing.T) {
	zipFile := os.Getenv("INFERSCOPE_ZIP")
	root := moduleRoot(t)
	if zipFile == "" {
		if os.Getenv("CI") == "true" && os.Getenv("INFERSCOPE_EXPECT_ZIP") == "true" {
			t.Fatal("INFERSCOPE_ZIP is not set, but CI=true and INFERSCOPE_EXPECT_ZIP=true expect a release zip")
		}
		t.Skip("INFERSCOPE_ZIP is not set (run mage package, then INFERSCOPE_ZIP=<zip> go test ./pkg/pack)")
	}
	if !filepath.IsAbs(zipFile) {
		if _, err := os.Stat(zipFile); err != nil {
			zipFile = filepath.Join(root, zipFile)
		}
	}
	if problems := Verify(zipFile); len(problems) > 0 {
		t.Fatalf("%s breaks %d packaging rule(s):\n  - %s", zipFile, len(problems), strings.Join(problems, "\n  - "))
	}

	got, err := Manifest(zipFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	text, err := utils.GenerateManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := ParseManifest([]byte(text))
	if !maps.Equal(got, want) {
		var diff []string
		for _, f := range slices.Sorted(maps.Keys(want)) {
			if got[f] != want[f] {
				diff = append(diff, f)
			}
		}
		for _, f := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[f]; !ok {
				diff = append(diff, f+" (no longer in the sources)")
			}
		}
		t.Fatalf("the zip's %s does not match the sources of this checkout (rebuild with mage buildAll package); differing files: %s",
			ManifestName, strings.Join(diff, ", "))
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
