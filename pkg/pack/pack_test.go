package pack

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

var hostPlatform = runtime.GOOS + "_" + runtime.GOARCH
var hostRules = Rules{Platforms: []string{hostPlatform}}

var (
	tinyOnce sync.Once
	tinyExe  []byte
	tinyErr  error
)

// tinyExecutable compiles an empty Go program for the host: a real executable, small and fast.
func tinyExecutable(t *testing.T) []byte {
	t.Helper()
	tinyOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pack-tiny-")
		if err != nil {
			tinyErr = err
			return
		}
		defer os.RemoveAll(dir)
		files := map[string]string{"go.mod": "module tiny\n\ngo 1.22\n", "main.go": "package main\n\nfunc main() {}\n"}
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				tinyErr = err
				return
			}
		}
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", "tiny", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			tinyErr = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		tinyExe, tinyErr = os.ReadFile(filepath.Join(dir, "tiny"))
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	return tinyExe
}

const license = "                                 Apache License\n                           Version 2.0, January 2004\n"

func pluginJSONText(id, typ, version string, extra string) string {
	return fmt.Sprintf(`{"id":%q,"type":%q,%s"info":{"version":%q,"logos":{"small":"img/logo.svg","large":"img/logo.svg"},`+
		`"links":[{"name":"Repository","url":"https://example.org/inferscope"}]}}`, id, typ, extra, version)
}

// syntheticDist writes a complete dist/ tree for version with a real host executable, stored
// with mode 0644 so Build has to set 0755 itself.
func syntheticDist(t *testing.T, version string) string {
	t.Helper()
	dist := filepath.Join(t.TempDir(), "dist")
	files := map[string]string{
		"plugin.json":             pluginJSONText(AppID, "app", version, `"includes":[{"type":"page","path":"/a/x"},{"type":"datasource","path":"datasource/plugin.json"}],`),
		"module.js":               "define([],function(){})",
		"img/logo.svg":            "<svg/>",
		"README.md":               "# Inferscope\n",
		"CHANGELOG.md":            "# Changelog\n",
		"LICENSE":                 license,
		ManifestName:              strings.Repeat("a", 64) + ":pkg/main.go\n" + strings.Repeat("b", 64) + ":pkg/prom/client.go\n",
		"datasource/plugin.json":  pluginJSONText(DataSourceID, "datasource", version, `"backend":true,"alerting":true,"executable":"gpx_inferscope_datasource",`),
		"datasource/module.js":    "define([],function(){})",
		"datasource/img/logo.svg": "<svg/>",
	}
	for rel, content := range files {
		writeFile(t, filepath.Join(dist, rel), []byte(content), 0o644)
	}
	writeFile(t, filepath.Join(dist, "datasource", ExecutableName+"_"+hostPlatform+exeSuffix(runtime.GOOS)), tinyExecutable(t), 0o644)
	return dist
}

func exeSuffix(goos string) string {
	if goos == "windows" {
		return ".exe"
	}
	return ""
}

func writeFile(t *testing.T, p string, b []byte, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func TestRelativeLinks(t *testing.T) {
	md := "# T\n[a](https://x.org/a) [b](docs/b.md) ![c](img/c.png \"title\") [d](#anchor) [e](mailto:x@y.org)\n" +
		"`[f](inline/code.md)` <a href=\"deploy/README.md\">g</a> <img src='https://x.org/i.png'>\n" +
		"```\n[h](in/fence.md)\n```\n[ref]: LICENSE\n[ok]: http://x.org\n"
	got := RelativeLinks([]byte(md))
	want := []string{"docs/b.md", "img/c.png", "deploy/README.md", "LICENSE"}
	if !slices.Equal(got, want) {
		t.Errorf("RelativeLinks = %q, want %q", got, want)
	}
}

// The README the catalog shows is src/README.md (create-plugin copies it into dist/ in place of
// the repository's): every link in it must resolve from the catalog's page.
func TestCatalogReadmeLinksAreAbsolute(t *testing.T) {
	b, err := os.ReadFile("../../src/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if rel := RelativeLinks(b); len(rel) > 0 {
		t.Errorf("src/README.md has relative links: %q", rel)
	}
	for _, p := range []string{"../../src/plugin.json", "../../src/datasource/plugin.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var pj pluginJSON
		if err := json.Unmarshal(b, &pj); err != nil {
			t.Fatal(err)
		}
		if len(pj.Info.Links) == 0 {
			t.Errorf("%s has no info.links", p)
		}
	}
}

func TestBuildGoodZip(t *testing.T) {
	dist := syntheticDist(t, "1.4.0")
	out := filepath.Join(t.TempDir(), ZipName("1.4.0"))
	if err := BuildWith(dist, "1.4.0", out, hostRules); err != nil {
		t.Fatal(err)
	}
	if problems := VerifyWith(out, hostRules); problems != nil {
		t.Fatalf("a zip made by Build breaks rules: %v", problems)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	seen := map[string]fs.FileMode{}
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, AppID+"/") {
			t.Errorf("entry %s outside the root folder", f.Name)
		}
		seen[strings.TrimPrefix(f.Name, AppID+"/")] = f.Mode()
	}
	exe := "datasource/" + ExecutableName + "_" + hostPlatform + exeSuffix(runtime.GOOS)
	if m := seen[exe]; m.Perm() != 0o755 || !m.IsRegular() {
		t.Errorf("%s has mode %v", exe, m)
	}
	for _, rel := range []string{"plugin.json", "LICENSE", ManifestName, "datasource/plugin.json"} {
		if m, ok := seen[rel]; !ok || m.Perm() != 0o644 {
			t.Errorf("%s: present %v, mode %v", rel, ok, m)
		}
	}
	if m := seen["datasource/"]; !m.IsDir() {
		t.Errorf("datasource/ folder entry: %v", m)
	}

	// The release rules want all five platforms: the four others are named as missing.
	problems := Verify(out)
	if len(problems) != len(DefaultRules.Platforms)-1 {
		t.Errorf("default rules on a one-platform zip: %v", problems)
	}
	for _, p := range problems {
		if !strings.HasPrefix(p, "datasource/"+ExecutableName+"_") || !strings.HasSuffix(p, " is missing") {
			t.Errorf("unexpected problem %q", p)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, name := range []string{"standalone.txt", "pid.txt"} {
		dist := syntheticDist(t, "1.0.0")
		writeFile(t, filepath.Join(dist, "datasource", name), []byte("x"), 0o644)
		outDir := t.TempDir()
		out := filepath.Join(outDir, ZipName("1.0.0"))
		err := BuildWith(dist, "1.0.0", out, hostRules)
		want := "refusing to include datasource/" + name + ": it is a development file (standalone debugging); delete it"
		if problems := AsViolations(err); !slices.Contains(problems, want) {
			t.Errorf("%s: %v", name, err)
		}
		if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
			t.Errorf("%s: Build left %v behind", name, entries)
		}
	}

	// A dist that breaks a rule leaves no zip behind either.
	dist := syntheticDist(t, "1.0.0")
	os.Remove(filepath.Join(dist, "CHANGELOG.md"))
	outDir := t.TempDir()
	err := BuildWith(dist, "1.0.0", filepath.Join(outDir, ZipName("1.0.0")), hostRules)
	if problems := AsViolations(err); !slices.Equal(problems, []string{"CHANGELOG.md is missing at the root"}) {
		t.Errorf("missing CHANGELOG: %v", err)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
		t.Errorf("Build left %v behind", entries)
	}

	if err := BuildWith(syntheticDist(t, "1.0.0"), "1.0.0", filepath.Join(t.TempDir(), "plugin.zip"), hostRules); err == nil || !strings.Contains(err.Error(), "must be named "+ZipName("1.0.0")) {
		t.Errorf("wrong zip name: %v", err)
	}
	if err := Build(filepath.Join(t.TempDir(), "nope"), "1.0.0", ZipName("1.0.0")); err == nil || !strings.Contains(err.Error(), "npm run build") {
		t.Errorf("missing dist: %v", err)
	}
}

// entry is one file of a hand-made zip.
type entry struct {
	name string
	body []byte
	mode fs.FileMode
}

// goodEntries is the content of a valid one-platform zip, as entries that tests then spoil.
func goodEntries(t *testing.T, version string) []entry {
	t.Helper()
	dist := syntheticDist(t, version)
	var out []entry
	err := filepath.WalkDir(dist, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dist, p)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		mode := fs.FileMode(0o644)
		if isExecutable(rel) {
			mode = 0o755
		}
		out = append(out, entry{AppID + "/" + rel, b, mode})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeZip(t *testing.T, version string, entries []entry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ZipName(version))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Store}
		h.SetMode(e.mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func modify(entries []entry, name string, fn func(*entry) bool) []entry {
	var out []entry
	for _, e := range entries {
		if e.name == AppID+"/"+name {
			if !fn(&e) {
				continue // dropped
			}
		}
		out = append(out, e)
	}
	return out
}

func TestVerifyNamesEachViolation(t *testing.T) {
	good := goodEntries(t, "2.0.0")
	if problems := VerifyWith(writeZip(t, "2.0.0", good), hostRules); problems != nil {
		t.Fatalf("the unspoilt zip breaks rules: %v", problems)
	}
	exe := "datasource/" + ExecutableName + "_" + hostPlatform + exeSuffix(runtime.GOOS)
	drop := func(*entry) bool { return false }
	wrongArch := "linux_arm64"
	if hostPlatform == wrongArch {
		wrongArch = "linux_amd64"
	}

	cases := []struct {
		name    string
		entries []entry
		version string
		rules   Rules
		want    string
	}{
		{"second root", append(slices.Clone(good), entry{"other/README.md", []byte("x"), 0o644}), "2.0.0", hostRules,
			"the zip must have exactly one root folder inferscope-monitor-app; it also has other"},
		{"executable mode", modify(good, exe, func(e *entry) bool { e.mode = 0o644; return true }), "2.0.0", hostRules,
			exe + " has mode -rw-r--r--; executables must be regular files with mode 0755"},
		{"wrong platform", append(slices.Clone(good), entry{AppID + "/datasource/" + ExecutableName + "_" + wrongArch, tinyExecutable(t), 0o755}), "2.0.0", hostRules,
			"datasource/" + ExecutableName + "_" + wrongArch + " is named for " + wrongArch + " but is a " + hostPlatform + " executable"},
		{"not an executable", append(slices.Clone(good), entry{AppID + "/datasource/" + ExecutableName + "_linux_386", []byte("#!/bin/sh\n"), 0o755}), "2.0.0", hostRules,
			"datasource/" + ExecutableName + "_linux_386 is named for linux_386 but is a unknown executable"},
		{"executable outside datasource/", append(slices.Clone(good), entry{AppID + "/" + ExecutableName + "_" + hostPlatform, tinyExecutable(t), 0o755}), "2.0.0", hostRules,
			ExecutableName + "_" + hostPlatform + " must be in datasource/, next to the data source's plugin.json"},
		{"missing executable", modify(good, exe, drop), "2.0.0", hostRules,
			exe + " is missing"},
		{"missing manifest", modify(good, ManifestName, drop), "2.0.0", hostRules,
			"go_plugin_build_manifest is missing at the root (the SDK's mage build writes it to dist/)"},
		{"bad manifest", modify(good, ManifestName, func(e *entry) bool { e.body = []byte("deadbeef pkg/main.go\n"); return true }), "2.0.0", hostRules,
			`go_plugin_build_manifest line 1 is not <sha256>:<file>.go: "deadbeef pkg/main.go"`},
		{"manifest without main", modify(good, ManifestName, func(e *entry) bool { e.body = []byte(strings.Repeat("c", 64) + ":pkg/x.go\n"); return true }), "2.0.0", hostRules,
			"go_plugin_build_manifest does not list pkg/main.go, the data source's entry point"},
		{"no README", modify(good, "README.md", drop), "2.0.0", hostRules, "README.md is missing at the root"},
		{"no LICENSE", modify(good, "LICENSE", drop), "2.0.0", hostRules, "LICENSE is missing at the root"},
		{"relative README link", modify(good, "README.md", func(e *entry) bool {
			e.body = []byte("# Inferscope\nSee [the queries](docs/queries.md).\n")
			return true
		}), "2.0.0", hostRules, `README.md links to "docs/queries.md", which the catalog cannot resolve: use an absolute URL`},
		{"no info.links", modify(good, "datasource/plugin.json", func(e *entry) bool {
			e.body = []byte(strings.Replace(string(e.body), `"links":[{"name":"Repository","url":"https://example.org/inferscope"}]`, `"links":[]`, 1))
			return true
		}), "2.0.0", hostRules, "datasource/plugin.json has no info.links: link the repository and the documentation"},
		{"relative info.links", modify(good, "plugin.json", func(e *entry) bool {
			e.body = []byte(strings.Replace(string(e.body), `https://example.org/inferscope`, `docs/`, 1))
			return true
		}), "2.0.0", hostRules, `plugin.json: info.links entry "Repository" -> "docs/" needs a name and an absolute http(s) URL`},
		{"missing screenshot", modify(good, "plugin.json", func(e *entry) bool {
			e.body = []byte(strings.Replace(string(e.body), `"links":`, `"screenshots":[{"name":"Triage","path":"img/triage.png"}],"links":`, 1))
			return true
		}), "2.0.0", hostRules, `plugin.json: screenshot "Triage" (img/triage.png) is not in the zip or has no name`},
		{"other license", modify(good, "LICENSE", func(e *entry) bool { e.body = []byte("MIT License"); return true }), "2.0.0", hostRules,
			"LICENSE is not the Apache License 2.0 text"},
		{"no logo", modify(good, "datasource/img/logo.svg", drop), "2.0.0", hostRules,
			"datasource/plugin.json names logo datasource/img/logo.svg, which is not in the zip"},
		{"standalone.txt", append(slices.Clone(good), entry{AppID + "/datasource/standalone.txt", []byte("x"), 0o644}), "2.0.0", hostRules,
			"datasource/standalone.txt must not be shipped: it is a development file (standalone debugging)"},
		{"pid.txt", append(slices.Clone(good), entry{AppID + "/pid.txt", []byte("1"), 0o644}), "2.0.0", hostRules,
			"pid.txt must not be shipped: it is a development file (standalone debugging)"},
		{"version", good, "2.0.1", hostRules, `plugin.json has version "2.0.0"; the zip is for 2.0.1`},
		{"placeholder", modify(good, "plugin.json", func(e *entry) bool {
			e.body = []byte(strings.Replace(string(e.body), `"version":"2.0.0"`, `"version":"%VERSION%"`, 1))
			return true
		}), "2.0.0", hostRules, "plugin.json still holds the %VERSION% placeholder: it was not built"},
		{"no module.js", modify(good, "datasource/module.js", drop), "2.0.0", hostRules,
			"datasource/module.js is missing (build the frontend with npm run build)"},
		{"no includes", modify(good, "plugin.json", func(e *entry) bool {
			e.body = []byte(pluginJSONText(AppID, "app", "2.0.0", ""))
			return true
		}), "2.0.0", hostRules, "plugin.json does not list the nested data source in includes (type datasource, path datasource/plugin.json)"},
		{"alerting without backend", modify(good, "datasource/plugin.json", func(e *entry) bool {
			e.body = []byte(pluginJSONText(DataSourceID, "datasource", "2.0.0", `"alerting":true,"executable":"gpx_inferscope_datasource",`))
			return true
		}), "2.0.0", hostRules, "datasource/plugin.json sets alerting without backend"},
		{"unsafe path", append(slices.Clone(good), entry{AppID + "/../evil.sh", []byte("x"), 0o755}), "2.0.0", hostRules,
			`entry "inferscope-monitor-app/../evil.sh" has an unsafe path`},
		{"symlink", append(slices.Clone(good), entry{AppID + "/link", []byte("/etc/passwd"), fs.ModeSymlink | 0o777}), "2.0.0", hostRules,
			"link is a symbolic link"},
		{"all platforms", good, "2.0.0", DefaultRules, "datasource/gpx_inferscope_datasource_windows_amd64.exe is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems := VerifyWith(writeZip(t, c.version, c.entries), c.rules)
			if !slices.Contains(problems, c.want) {
				t.Errorf("problems %q\n lack %q", problems, c.want)
			}
		})
	}

	if problems := Verify(filepath.Join(t.TempDir(), "x.zip")); len(problems) == 0 || !strings.Contains(problems[0], "must be "+ZipName("<version>")) {
		t.Errorf("badly named, missing zip: %v", problems)
	}
}
