package testbed

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// victoriaVersion changes whenever the way history reaches VictoriaMetrics changes; it
// invalidates cached VictoriaMetrics storage.
const victoriaVersion = "vm-import-v1"

// VictoriaFor starts a VictoriaMetrics holding the same history as TSDBFor(t, o) and returns
// it with the scenario. The import (promtool tsdb dump into /api/v1/import/prometheus) runs
// once per variant; the resulting storage is kept beside the cached TSDB and each test serves
// its own copy. extraArgs are added to its command line.
func VictoriaFor(t testing.TB, o TSDBOptions, extraArgs ...string) (*promtest.Victoria, *Scenario) {
	t.Helper()
	o, err := o.normalize()
	if err != nil {
		t.Fatalf("test bed VictoriaMetrics: %v", err)
	}
	promtest.VictoriaBinary(t)
	promtool := promtest.RequireBinary(t, "promtool")
	s := Default(DefaultEnd)
	tsdb, err := cachedTSDB(t.Context(), s, o, promtool)
	if err != nil {
		t.Fatalf("build the test bed TSDB (%+v): %v", o, err)
	}
	cached, err := cachedVictoria(t, tsdb)
	if err != nil {
		t.Fatalf("import the test bed history into VictoriaMetrics (%+v): %v", o, err)
	}
	dir := filepath.Join(t.TempDir(), "vm")
	if err := copyTree(cached, dir); err != nil {
		t.Fatalf("copy the cached VictoriaMetrics storage: %v", err)
	}
	return promtest.StartVictoria(t, promtest.VictoriaOptions{StorageDir: dir, ExtraArgs: extraArgs}), s
}

// cachedVictoria returns the VictoriaMetrics storage holding the TSDB's samples, importing
// them under a lock when missing.
func cachedVictoria(t testing.TB, tsdb string) (string, error) {
	final := tsdb + "." + victoriaVersion
	if validVictoria(final) {
		return final, nil
	}
	unlock, err := lockFile(t.Context(), final+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if validVictoria(final) {
		return final, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), filepath.Base(final)+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "tsdb")
	if err := linkTree(tsdb, src); err != nil {
		return "", err
	}
	storage := filepath.Join(tmp, "vm")
	if err := importVictoria(t, src, storage); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(storage, "inferscope-complete"), nil, 0o644); err != nil {
		return "", err
	}
	_ = os.RemoveAll(final)
	return final, os.Rename(storage, final)
}

// importVictoria fills storage with the TSDB's samples through a VictoriaMetrics of its own,
// stopped afterwards so that everything is on disk.
func importVictoria(t testing.TB, tsdb, storage string) error {
	vm := promtest.StartVictoria(t, promtest.VictoriaOptions{StorageDir: storage})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, err := promtest.ImportTSDB(ctx, tsdb, vm.URL); err != nil {
		return err
	}
	if err := vm.Stop(); err != nil {
		return fmt.Errorf("stop victoria-metrics after the import: %w", err)
	}
	return nil
}

func validVictoria(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "inferscope-complete"))
	return err == nil
}

// copyTree copies src into dst (created): VictoriaMetrics rewrites files of its storage, so a
// test's copy shares nothing with the cache.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, target)
		}
		return nil // the lock file's symlinks and the like are recreated by the server
	})
}
