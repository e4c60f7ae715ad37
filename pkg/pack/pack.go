// Package pack builds and checks the release zip of the Inferscope Grafana plugin: one root
// folder named after the app's id, the nested data source with its executables, the Go build
// manifest, documentation and logos, and none of the development leftovers. Verify states the
// Grafana catalog's packaging rules as code; Build refuses to write a zip that breaks them.
package pack

import (
	"archive/zip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Fixed names of the plugin (see docs: plugin.json files in src/).
const (
	AppID          = "inferscope-monitor-app"
	DataSourceID   = "inferscope-monitor-datasource"
	ExecutableName = "gpx_inferscope_datasource"
	ManifestName   = "go_plugin_build_manifest"
)

// forbidden are development files the SDK and Grafana use for standalone debugging; a plugin
// shipped with them starts in the wrong mode.
var forbidden = []string{"standalone.txt", "pid.txt"}

// ZipName is the file name of the release zip for version.
func ZipName(version string) string { return AppID + "-" + version + ".zip" }

// PackageVersion reads "version" from a package.json.
func PackageVersion(packageJSON string) (string, error) {
	b, err := os.ReadFile(packageJSON)
	if err != nil {
		return "", err
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%s: %w", packageJSON, err)
	}
	if p.Version == "" {
		return "", fmt.Errorf("%s has no version", packageJSON)
	}
	return p.Version, nil
}

// Build writes the release zip of distDir (the built plugin: frontend bundle, nested
// datasource/ with executables, go_plugin_build_manifest) to outFile, then verifies it. On any
// violation no zip is left behind and the error lists every problem.
func Build(distDir, version, outFile string) error {
	return BuildWith(distDir, version, outFile, DefaultRules)
}

// BuildWith is Build with other rules.
func BuildWith(distDir, version, outFile string, rules Rules) (err error) {
	files, err := collect(distDir)
	if err != nil {
		return err
	}
	if filepath.Base(outFile) != ZipName(version) {
		return fmt.Errorf("the zip for version %s must be named %s, not %s", version, ZipName(version), filepath.Base(outFile))
	}
	tmp, err := os.CreateTemp(filepath.Dir(outFile), ".pack-*.zip")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	zw := zip.NewWriter(tmp)
	var newest time.Time // folders get the time of the newest file
	for _, f := range files {
		if f.info.ModTime().After(newest) {
			newest = f.info.ModTime()
		}
	}
	if err := addDir(zw, AppID+"/", newest); err != nil {
		return err
	}
	dirs := map[string]bool{}
	for _, f := range files {
		for d := path.Dir(f.rel); d != "."; d = path.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				if err := addDir(zw, AppID+"/"+d+"/", newest); err != nil {
					return err
				}
			}
		}
		if err := addFile(zw, f); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if problems := verifyFile(tmp.Name(), version, rules); len(problems) > 0 {
		return &Violations{Zip: outFile, Problems: problems}
	}
	return os.Rename(tmp.Name(), outFile)
}

type distFile struct {
	abs, rel string
	mode     fs.FileMode
	info     fs.FileInfo
}

// collect lists the regular files of distDir in name order, refusing links and development
// files.
func collect(distDir string) ([]distFile, error) {
	st, err := os.Stat(distDir)
	if err != nil {
		return nil, fmt.Errorf("dist folder: %w (build the frontend with npm run build and the backend with mage buildAll first)", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", distDir)
	}
	var files []distFile
	var problems []string
	err = filepath.WalkDir(distDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(distDir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case isForbidden(rel):
			problems = append(problems, fmt.Sprintf("refusing to include %s: it is a development file (standalone debugging); delete it", rel))
			return nil
		case !info.Mode().IsRegular():
			problems = append(problems, fmt.Sprintf("refusing to include %s: not a regular file (%s)", rel, info.Mode().Type()))
			return nil
		}
		mode := fs.FileMode(0o644)
		if isExecutable(rel) || info.Mode().Perm()&0o111 != 0 && !strings.HasSuffix(rel, ManifestName) {
			mode = 0o755
		}
		files = append(files, distFile{abs: p, rel: rel, mode: mode, info: info})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &Violations{Zip: distDir, Problems: problems}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, nil
}

func addDir(zw *zip.Writer, name string, modified time.Time) error {
	h := &zip.FileHeader{Name: name, Method: zip.Store, Modified: modified}
	h.SetMode(fs.ModeDir | 0o755)
	_, err := zw.CreateHeader(h)
	return err
}

func addFile(zw *zip.Writer, f distFile) error {
	h, err := zip.FileInfoHeader(f.info)
	if err != nil {
		return err
	}
	h.Name = AppID + "/" + f.rel
	h.Method = zip.Deflate
	h.SetMode(f.mode)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	src, err := os.Open(f.abs)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(w, src)
	return err
}

func isForbidden(rel string) bool {
	for _, f := range forbidden {
		if path.Base(rel) == f {
			return true
		}
	}
	return false
}

// isExecutable reports whether a file is one of the data source's executables.
func isExecutable(rel string) bool {
	return strings.HasPrefix(path.Base(rel), ExecutableName+"_")
}

// Violations lists every rule a zip (or a dist folder) breaks.
type Violations struct {
	Zip      string
	Problems []string
}

func (v *Violations) Error() string {
	return fmt.Sprintf("%s breaks %d packaging rule(s):\n  - %s", v.Zip, len(v.Problems), strings.Join(v.Problems, "\n  - "))
}

// AsViolations returns the problems of a Build or Verify error.
func AsViolations(err error) []string {
	var v *Violations
	if errors.As(err, &v) {
		return v.Problems
	}
	return nil
}
