package testbed

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// victoriaVersion changes whenever the way history reaches VictoriaMetrics changes; it
// invalidates cached VictoriaMetrics storage.
const victoriaVersion = "vm-import-v1"

// VictoriaImporter fills storage (a new VictoriaMetrics storage directory) with the samples of
// the Prometheus TSDB at tsdb, and leaves everything on disk when it returns. The test helpers
// supply it (tbtest.VictoriaFor: a VictoriaMetrics of its own and promtest.ImportTSDB), so this
// package needs neither a server nor package testing.
type VictoriaImporter func(ctx context.Context, tsdb, storage string) error

// CachedVictoria returns a VictoriaMetrics storage holding the same history as the variant's
// cached TSDB, with the scenario. The import runs once per variant, under a lock shared across
// processes; the storage is kept beside the cached TSDB. Callers serve a copy (CopyTree):
// VictoriaMetrics rewrites its files.
func CachedVictoria(ctx context.Context, o TSDBOptions, promtool string, importer VictoriaImporter) (string, *Scenario, error) {
	o, err := o.normalize()
	if err != nil {
		return "", nil, err
	}
	s := Default(DefaultEnd)
	tsdb, err := cachedTSDB(ctx, s, o, promtool)
	if err != nil {
		return "", nil, fmt.Errorf("build the test bed TSDB (%+v): %w", o, err)
	}
	final := tsdb + "." + victoriaVersion
	if validVictoria(final) {
		return final, s, nil
	}
	unlock, err := lockFile(ctx, final+".lock")
	if err != nil {
		return "", nil, err
	}
	defer unlock()
	if validVictoria(final) {
		return final, s, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), filepath.Base(final)+".tmp-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "tsdb")
	if err := linkTree(tsdb, src); err != nil {
		return "", nil, err
	}
	storage := filepath.Join(tmp, "vm")
	if err := importer(ctx, src, storage); err != nil {
		return "", nil, fmt.Errorf("import the test bed history into VictoriaMetrics (%+v): %w", o, err)
	}
	if err := os.WriteFile(filepath.Join(storage, "inferscope-complete"), nil, 0o644); err != nil {
		return "", nil, err
	}
	_ = os.RemoveAll(final)
	return final, s, os.Rename(storage, final)
}

func validVictoria(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "inferscope-complete"))
	return err == nil
}

// CopyTree copies src into dst (created): VictoriaMetrics rewrites files of its storage, so a
// test's copy shares nothing with the cache.
func CopyTree(src, dst string) error {
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
