// Package tbtest holds the test bed's helpers that need a testing.TB, so that pkg/testbed
// itself (linked by the loadgen) does not import package testing.
package tbtest

import (
	"testing"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/scaledb"
)

// TSDB returns a private copy of the default scenario's history (testbed.DefaultHistoryDays
// days ending at testbed.DefaultEnd, custom naming, job="inference", one sample per
// testbed.DefaultHistoryStep, plus the probes' GPU series of the last
// testbed.DefaultGPUHistoryDays) as a Prometheus data directory, ready for promtest.Start. It
// is TSDBFor(t, testbed.TSDBOptions{}).
func TSDB(t testing.TB) (dir string, s *testbed.Scenario) {
	t.Helper()
	return TSDBFor(t, testbed.TSDBOptions{})
}

// TSDBFor returns a private copy of the variant's history as a Prometheus data directory in
// t.TempDir() (testbed.PrivateTSDB). promtool is required: a skip, or a failure when CI=true.
// Bad options fail the test.
func TSDBFor(t testing.TB, o testbed.TSDBOptions) (dir string, s *testbed.Scenario) {
	t.Helper()
	promtool := promtest.RequireBinary(t, "promtool")
	dir, s, err := testbed.PrivateTSDB(t.Context(), o, promtool, t.TempDir())
	if err != nil {
		t.Fatalf("test bed TSDB: %v", err)
	}
	return dir, s
}

// ScaledTSDB returns a private copy of a fleet factor times the default one (testbed.Scaled,
// scaledb.Private) and its groups' scenarios, group 0 being the default scenario.
func ScaledTSDB(t testing.TB, factor int) (dir string, groups []*testbed.Scenario) {
	t.Helper()
	promtool := promtest.RequireBinary(t, "promtool")
	dir, groups, err := scaledb.Private(t.Context(), factor, promtool, t.TempDir())
	if err != nil {
		t.Fatalf("scaled test bed TSDB: %v", err)
	}
	return dir, groups
}
