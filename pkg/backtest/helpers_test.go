package backtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// startBed serves the test bed's history (custom profile) in a real Prometheus and returns the
// engine the data source would build on it.
func startBed(t testing.TB) (*engine.Engine, *testbed.Scenario) {
	t.Helper()
	dir, s := testbed.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.LabelValues(context.Background(), "__name__", nil, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.ByName("custom")
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	return &engine.Engine{Prom: c, Profile: p, Present: present, WarmupWindow: 2 * time.Minute}, s
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
