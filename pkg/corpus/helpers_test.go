package corpus

import (
	"context"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// startFleet serves a server's corpus cases from a real Prometheus (the history built once and
// cached) and returns the engine the data source would build on it, with the server's profile
// forced as its user would configure it. The history holds a sample every step (0: the test
// bed's default).
func startFleet(tb testing.TB, server string, cases []testbed.Case, step time.Duration) (*engine.Engine, *testbed.Scenario, testbed.CorpusBuild) {
	tb.Helper()
	promtool := promtest.RequireBinary(tb, "promtool")
	dir, s, build, err := testbed.CorpusTSDB(tb.Context(), server, cases, testbed.DefaultEnd, step, promtool, tb.TempDir())
	if err != nil {
		tb.Fatalf("corpus TSDB: %v", err)
	}
	// The backtest reads two days of baselines in one query: on a loaded machine that takes
	// longer than Prometheus' default 2-minute query timeout.
	url := promtest.Start(tb, promtest.Options{DataDir: dir, ExtraArgs: []string{"--query.timeout=30m"}}).URL
	client, err := prom.New(url, nil)
	if err != nil {
		tb.Fatal(err)
	}
	// The TGI fleet's routers carry the model label their scrape configuration adds (TGI labels
	// nothing with its model): the engine is told so, as a user of that fleet configures it;
	// without it every TGI question reads the five models' traffic as one.
	e, err := engine.New(context.Background(), engine.Config{Prom: client, Profile: server, WarmupWindow: 2 * time.Minute,
		PerProfile: map[string]profile.Labels{"tgi": {Model: expo.TGIModelLabel}}})
	if err != nil {
		tb.Fatal(err)
	}
	return e, s, build
}

// casesOf keeps one server's cases.
func casesOf(cases []testbed.Case, server string) []testbed.Case {
	var out []testbed.Case
	for _, c := range cases {
		if c.Server == server {
			out = append(out, c)
		}
	}
	return out
}
