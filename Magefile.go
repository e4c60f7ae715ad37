//go:build mage

// Build targets (run `mage -l`). The data source is built with the Grafana plugin SDK's build
// package, which reads the executable name from src/datasource/plugin.json (the app in
// src/plugin.json has none) and writes dist/datasource/gpx_inferscope_datasource_<os>_<arch>
// plus dist/go_plugin_build_manifest.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/magefile/mage/mg"
	"github.com/magefile/mage/sh"

	"github.com/inferscope/inferscope/pkg/pack"
)

// Default builds the data source for the current platform.
var Default = Backend

// platforms are the data source's release platforms (the SDK's own BuildAll adds linux/arm,
// which Grafana no longer ships).
var platforms = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"},
}

// Backend builds the data source for the current platform into dist/datasource/.
func Backend() error {
	return build.Build{}.Custom(runtime.GOOS, runtime.GOARCH)
}

// BuildAll builds the data source for linux/amd64, linux/arm64, darwin/amd64, darwin/arm64 and
// windows/amd64, one after the other.
func BuildAll() error {
	for _, p := range platforms {
		if err := (build.Build{}).Custom(p[0], p[1]); err != nil {
			return fmt.Errorf("build %s/%s: %w", p[0], p[1], err)
		}
	}
	return nil
}

// Loadgen builds bin/inferscope-loadgen, the synthetic inference service and history generator.
func Loadgen() error {
	return goBuild("bin/inferscope-loadgen", "./pkg/cmd/inferscope-loadgen", map[string]string{"CGO_ENABLED": "0"})
}

// CLI builds bin/inferscope, the command-line front of the engine.
func CLI() error {
	return goBuild("bin/inferscope", "./pkg/cmd/inferscope", map[string]string{"CGO_ENABLED": "0"})
}

// Probe builds bin/inferscope-probe_linux_amd64 and, when aarch64-linux-gnu-gcc is installed,
// bin/inferscope-probe_linux_arm64. go-nvml needs cgo (it dlopens libnvidia-ml at run time, so no
// driver is needed to build).
func Probe() error {
	env := map[string]string{"CGO_ENABLED": "1", "GOOS": "linux", "GOARCH": "amd64"}
	if runtime.GOARCH != "amd64" || runtime.GOOS != "linux" {
		cc, err := exec.LookPath("x86_64-linux-gnu-gcc")
		if err != nil {
			return errors.New("building the probe for linux/amd64 needs cgo and x86_64-linux-gnu-gcc on this platform")
		}
		env["CC"] = cc
	}
	if err := goBuild("bin/inferscope-probe_linux_amd64", "./pkg/cmd/inferscope-probe", env); err != nil {
		return err
	}
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil && !(runtime.GOOS == "linux" && runtime.GOARCH == "arm64") {
		fmt.Println("skipping bin/inferscope-probe_linux_arm64: the probe needs cgo, and aarch64-linux-gnu-gcc is not installed (Debian: apt-get install gcc-aarch64-linux-gnu)")
		return nil
	}
	env = map[string]string{"CGO_ENABLED": "1", "GOOS": "linux", "GOARCH": "arm64"}
	if err == nil {
		env["CC"] = cc
	}
	return goBuild("bin/inferscope-probe_linux_arm64", "./pkg/cmd/inferscope-probe", env)
}

// Package writes inferscope-monitor-app-<version>.zip (version from package.json) from dist/,
// which must hold the frontend build (npm run build) and every executable (mage buildAll), and
// verifies it.
func Package() error {
	version, err := pack.PackageVersion("package.json")
	if err != nil {
		return err
	}
	out := pack.ZipName(version)
	if err := pack.Build("dist", version, out); err != nil {
		return err
	}
	fmt.Println("wrote", out)
	return nil
}

// VerifyPackage checks inferscope-monitor-app-<version>.zip against the packaging rules.
func VerifyPackage() error {
	version, err := pack.PackageVersion("package.json")
	if err != nil {
		return err
	}
	out := pack.ZipName(version)
	if problems := pack.Verify(out); len(problems) > 0 {
		return &pack.Violations{Zip: out, Problems: problems}
	}
	fmt.Println(out, "follows every packaging rule")
	return nil
}

// Clean removes dist/, bin/ and the release zips.
func Clean() error {
	mg.Deps(build.Clean)
	zips, _ := filepath.Glob(pack.ZipName("*"))
	for _, z := range append(zips, "bin") {
		if err := os.RemoveAll(z); err != nil {
			return err
		}
	}
	return nil
}

func goBuild(out, pkg string, env map[string]string) error {
	if _, err := os.Stat(pkg); err != nil {
		return fmt.Errorf("cannot build %s: its main package %s is not there", out, pkg)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return sh.RunWithV(env, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, pkg)
}
