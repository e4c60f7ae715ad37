package pack

import (
	"archive/zip"
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/inferscope/inferscope/pkg/clip"
)

// Rules are the choices a check can vary; everything else is fixed.
type Rules struct {
	// Platforms are the <os>_<arch> executables the zip must carry.
	Platforms []string
}

// DefaultRules are the rules of a release: linux/amd64 is what the catalog requires; the other
// platforms are what users run Grafana on.
var DefaultRules = Rules{Platforms: []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64"}}

var (
	zipNameRE      = regexp.MustCompile(`^` + regexp.QuoteMeta(AppID) + `-(.+)\.zip$`)
	manifestLineRE = regexp.MustCompile(`^[0-9a-f]{64}:[^\s:]+\.go$`)
	execNameRE     = regexp.MustCompile(`^` + regexp.QuoteMeta(ExecutableName) + `_([a-z0-9]+)_([a-z0-9]+)(\.exe)?$`)
)

// Verify checks a release zip against every packaging rule and returns each violation; nil
// means the zip is good. The version is read from the file name.
func Verify(zipFile string) []string { return VerifyWith(zipFile, DefaultRules) }

// VerifyWith is Verify with other rules.
func VerifyWith(zipFile string, rules Rules) []string {
	m := zipNameRE.FindStringSubmatch(filepath.Base(zipFile))
	if m == nil {
		return append([]string{fmt.Sprintf("the zip is named %s; it must be %s", filepath.Base(zipFile), ZipName("<version>"))},
			verifyFile(zipFile, "", rules)...)
	}
	return verifyFile(zipFile, m[1], rules)
}

// verifyFile checks the zip; version "" skips the version comparison.
func verifyFile(zipFile, version string, rules Rules) []string {
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		return []string{fmt.Sprintf("cannot open %s as a zip: %v", zipFile, err)}
	}
	defer zr.Close()
	return verifyZip(&zr.Reader, version, rules)
}

type checker struct {
	files    map[string]*zip.File // by path below the root folder
	rules    Rules
	problems []string
}

func (c *checker) addf(format string, args ...any) {
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
}

func verifyZip(zr *zip.Reader, version string, rules Rules) []string {
	c := &checker{files: map[string]*zip.File{}, rules: rules}
	root := AppID + "/"
	otherRoots := map[string]bool{}
	for _, f := range zr.File {
		name := f.Name
		if strings.HasPrefix(name, "/") || strings.Contains(name, "\\") || hasDotDot(name) {
			c.addf("entry %q has an unsafe path", name)
			continue
		}
		if !strings.HasPrefix(name, root) {
			otherRoots[strings.SplitN(name, "/", 2)[0]] = true
			continue
		}
		rel := strings.TrimPrefix(name, root)
		mode := f.Mode()
		if mode&fs.ModeSymlink != 0 {
			c.addf("%s is a symbolic link", rel)
		}
		if rel == "" || mode.IsDir() || strings.HasSuffix(name, "/") {
			continue
		}
		if isForbidden(rel) {
			c.addf("%s must not be shipped: it is a development file (standalone debugging)", rel)
		}
		c.files[rel] = f
	}
	if len(otherRoots) > 0 {
		names := make([]string, 0, len(otherRoots))
		for n := range otherRoots {
			names = append(names, n)
		}
		sort.Strings(names)
		c.addf("the zip must have exactly one root folder %s; it also has %s", AppID, strings.Join(names, ", "))
	}
	if len(c.files) == 0 {
		c.addf("the root folder %s is missing or empty", AppID)
		return c.problems
	}

	app := c.pluginJSON("plugin.json", AppID, "app")
	ds := c.pluginJSON("datasource/plugin.json", DataSourceID, "datasource")
	if app != nil {
		if version != "" && app.Info.Version != version {
			c.addf("plugin.json has version %q; the zip is for %s", app.Info.Version, version)
		}
		included := false
		for _, inc := range app.Includes {
			if inc.Type == "datasource" && inc.Path == "datasource/plugin.json" {
				included = true
			}
		}
		if !included {
			c.addf("plugin.json does not list the nested data source in includes (type datasource, path datasource/plugin.json)")
		}
	}
	if ds != nil {
		if !ds.Backend || ds.Executable != ExecutableName {
			c.addf("datasource/plugin.json must have backend true and executable %q (has backend %v, executable %q)", ExecutableName, ds.Backend, ds.Executable)
		}
		if version != "" && ds.Info.Version != version {
			c.addf("datasource/plugin.json has version %q; the zip is for %s", ds.Info.Version, version)
		}
	}
	c.checkExecutables()
	c.checkManifest()
	c.checkDocs()
	for _, mod := range []string{"module.js", "datasource/module.js"} {
		if c.files[mod] == nil {
			c.addf("%s is missing (build the frontend with npm run build)", mod)
		}
	}
	return c.problems
}

// checkDocs requires the catalog's documents at the root: a README whose links resolve from the
// catalog's page, the changelog and the Apache 2.0 license.
func (c *checker) checkDocs() {
	for _, doc := range []string{"README.md", "CHANGELOG.md", "LICENSE"} {
		if c.files[doc] == nil {
			c.addf("%s is missing at the root", doc)
		}
	}
	if f := c.files["README.md"]; f != nil {
		if b, err := readEntry(f, 1<<20); err == nil {
			for _, target := range RelativeLinks(b) {
				c.addf("README.md links to %q, which the catalog cannot resolve: use an absolute URL", target)
			}
		}
	}
	if f := c.files["LICENSE"]; f != nil {
		if b, err := readEntry(f, 1<<20); err == nil && !bytes.Contains(b, []byte("Apache License")) {
			c.addf("LICENSE is not the Apache License 2.0 text")
		}
	}
}

type pluginJSON struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Backend    bool   `json:"backend"`
	Alerting   bool   `json:"alerting"`
	Executable string `json:"executable"`
	Info       struct {
		Version string `json:"version"`
		Logos   struct {
			Small string `json:"small"`
			Large string `json:"large"`
		} `json:"logos"`
		Links []struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"links"`
		Screenshots []struct {
			Name string `json:"name"`
			Path string `json:"path"`
		} `json:"screenshots"`
	} `json:"info"`
	Includes []struct {
		Type string `json:"type"`
		Path string `json:"path"`
	} `json:"includes"`
}

func (c *checker) pluginJSON(rel, wantID, wantType string) *pluginJSON {
	f := c.files[rel]
	if f == nil {
		c.addf("%s is missing", rel)
		return nil
	}
	b, err := readEntry(f, 1<<20)
	if err != nil {
		c.addf("%s cannot be read: %v", rel, err)
		return nil
	}
	var p pluginJSON
	if err := json.Unmarshal(b, &p); err != nil {
		c.addf("%s is not valid JSON: %v", rel, err)
		return nil
	}
	if p.ID != wantID || p.Type != wantType {
		c.addf("%s has id %q and type %q; want %q and %q", rel, p.ID, p.Type, wantID, wantType)
	}
	if p.Alerting && !p.Backend {
		c.addf("%s sets alerting without backend", rel)
	}
	if strings.Contains(p.Info.Version, "%VERSION%") {
		c.addf("%s still holds the %%VERSION%% placeholder: it was not built", rel)
	}
	dir := path.Dir(rel)
	for _, logo := range []string{p.Info.Logos.Small, p.Info.Logos.Large} {
		if logo == "" {
			c.addf("%s names no logo (info.logos.small and info.logos.large)", rel)
			continue
		}
		if c.files[path.Join(dir, logo)] == nil {
			c.addf("%s names logo %s, which is not in the zip", rel, path.Join(dir, logo))
		}
	}
	// The catalog shows info.links on the plugin's page; relative ones lead nowhere there.
	if len(p.Info.Links) == 0 {
		c.addf("%s has no info.links: link the repository and the documentation", rel)
	}
	for _, l := range p.Info.Links {
		if l.Name == "" || !absoluteURL(l.URL) {
			c.addf("%s: info.links entry %q -> %q needs a name and an absolute http(s) URL", rel, l.Name, l.URL)
		}
	}
	for _, sc := range p.Info.Screenshots {
		if sc.Name == "" || c.files[path.Join(dir, sc.Path)] == nil {
			c.addf("%s: screenshot %q (%s) is not in the zip or has no name", rel, sc.Name, path.Join(dir, sc.Path))
		}
	}
	return &p
}

var (
	// mdLinkRE finds Markdown link and image targets: [text](target) and ![alt](target "title").
	mdLinkRE = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// htmlLinkRE finds href and src attributes of inline HTML.
	htmlLinkRE = regexp.MustCompile(`(?i)\b(?:href|src)\s*=\s*["']([^"']+)["']`)
	// refLinkRE finds reference definitions: [name]: target.
	refLinkRE = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
)

// RelativeLinks lists the link and image targets of a Markdown text that are neither absolute
// URLs nor in-page anchors, outside code blocks and code spans.
func RelativeLinks(markdown []byte) []string {
	var out []string
	inFence := false
	for _, line := range strings.Split(string(markdown), "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = codeSpanRE.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{mdLinkRE, htmlLinkRE, refLinkRE} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				if target := m[1]; !strings.HasPrefix(target, "#") && !absoluteURL(target) && !strings.HasPrefix(target, "mailto:") {
					out = append(out, target)
				}
			}
		}
	}
	return out
}

var codeSpanRE = regexp.MustCompile("`[^`]*`")

func absoluteURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// checkExecutables requires one executable per platform, mode 0755, built for the platform its
// name says.
func (c *checker) checkExecutables() {
	found := map[string]bool{}
	for rel, f := range c.files {
		base := path.Base(rel)
		m := execNameRE.FindStringSubmatch(base)
		if m == nil {
			if strings.HasPrefix(base, ExecutableName) {
				c.addf("%s is not named %s_<os>_<arch>", rel, ExecutableName)
			}
			continue
		}
		if path.Dir(rel) != "datasource" {
			c.addf("%s must be in datasource/, next to the data source's plugin.json", rel)
		}
		goos, goarch := m[1], m[2]
		if (goos == "windows") != (m[3] == ".exe") {
			c.addf("%s: only the Windows executable ends in .exe", rel)
		}
		found[goos+"_"+goarch] = true
		if perm := f.Mode().Perm(); perm != 0o755 || !f.Mode().IsRegular() {
			c.addf("%s has mode %v; executables must be regular files with mode 0755", rel, f.Mode())
		}
		b, err := readEntry(f, 512<<20)
		if err != nil {
			c.addf("%s cannot be read: %v", rel, err)
			continue
		}
		if got := binaryPlatform(b); got != goos+"_"+goarch {
			c.addf("%s is named for %s_%s but is a %s executable", rel, goos, goarch, got)
		}
	}
	for _, p := range c.rules.Platforms {
		if !found[p] {
			c.addf("datasource/%s_%s%s is missing", ExecutableName, p, map[bool]string{true: ".exe"}[strings.HasPrefix(p, "windows")])
		}
	}
}

// binaryPlatform reads the executable's header: "linux_amd64", "darwin_arm64", … or "unknown".
func binaryPlatform(b []byte) string {
	r := bytes.NewReader(b)
	if f, err := elf.NewFile(r); err == nil {
		arch := map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64", elf.EM_ARM: "arm", elf.EM_386: "386"}[f.Machine]
		if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
			return "non-executable ELF"
		}
		return "linux_" + orUnknown(arch)
	}
	if f, err := macho.NewFile(r); err == nil {
		arch := map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[f.Cpu]
		return "darwin_" + orUnknown(arch)
	}
	if f, err := pe.NewFile(r); err == nil {
		arch := map[uint16]string{pe.IMAGE_FILE_MACHINE_AMD64: "amd64", pe.IMAGE_FILE_MACHINE_ARM64: "arm64"}[f.Machine]
		return "windows_" + orUnknown(arch)
	}
	return "unknown"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// checkManifest requires the SDK's go_plugin_build_manifest at the root: one
// "<sha256>:<path of a Go source file>" line per source the executables were built from.
func (c *checker) checkManifest() {
	f := c.files[ManifestName]
	if f == nil {
		c.addf("%s is missing at the root (the SDK's mage build writes it to dist/)", ManifestName)
		return
	}
	b, err := readEntry(f, 16<<20)
	if err != nil {
		c.addf("%s cannot be read: %v", ManifestName, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		c.addf("%s is empty", ManifestName)
		return
	}
	hasMain := false
	for i, l := range lines {
		if !manifestLineRE.MatchString(l) {
			c.addf("%s line %d is not <sha256>:<file>.go: %q", ManifestName, i+1, clip.Text(l, 80))
			return
		}
		if strings.HasSuffix(l, ":pkg/main.go") {
			hasMain = true
		}
	}
	if !hasMain {
		c.addf("%s does not list pkg/main.go, the data source's entry point", ManifestName)
	}
}

// Manifest returns the go_plugin_build_manifest of a zip, parsed into path → sha256.
func Manifest(zipFile string) (map[string]string, error) {
	zr, err := zip.OpenReader(zipFile)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == AppID+"/"+ManifestName {
			b, err := readEntry(f, 16<<20)
			if err != nil {
				return nil, err
			}
			return ParseManifest(b), nil
		}
	}
	return nil, fmt.Errorf("%s has no %s", zipFile, ManifestName)
}

// ParseManifest reads "<sha256>:<path>" lines.
func ParseManifest(b []byte) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if hash, file, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			out[file] = hash
		}
	}
	return out
}

func readEntry(f *zip.File, limit int64) ([]byte, error) {
	if f.UncompressedSize64 > uint64(limit) {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, limit))
}

func hasDotDot(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}
