package tbtest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// VictoriaFor starts a VictoriaMetrics holding the same history as TSDBFor(t, o) and returns it
// with the scenario. The import (promtool tsdb dump into /api/v1/import/prometheus) runs once
// per variant (testbed.CachedVictoria); each test serves its own copy. extraArgs are added to
// its command line.
func VictoriaFor(t testing.TB, o testbed.TSDBOptions, extraArgs ...string) (*promtest.Victoria, *testbed.Scenario) {
	t.Helper()
	promtest.VictoriaBinary(t)
	promtool := promtest.RequireBinary(t, "promtool")
	importer := func(ctx context.Context, tsdb, storage string) error {
		vm := promtest.StartVictoria(t, promtest.VictoriaOptions{StorageDir: storage})
		if _, err := promtest.ImportTSDB(ctx, tsdb, vm.URL); err != nil {
			return err
		}
		if err := vm.Stop(); err != nil {
			return fmt.Errorf("stop victoria-metrics after the import: %w", err)
		}
		return nil
	}
	cached, s, err := testbed.CachedVictoria(t.Context(), o, promtool, importer)
	if err != nil {
		t.Fatalf("test bed VictoriaMetrics: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "vm")
	if err := testbed.CopyTree(cached, dir); err != nil {
		t.Fatalf("copy the cached VictoriaMetrics storage: %v", err)
	}
	return promtest.StartVictoria(t, promtest.VictoriaOptions{StorageDir: dir, ExtraArgs: extraArgs}), s
}
