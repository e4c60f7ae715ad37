// Package enginetest serves the test bed's history in a real Prometheus and builds on it the
// engine the data source would build, for the tests of the packages that run on the engine.
// pkg/engine's own tests cannot import it (an import cycle) and keep their own.
package enginetest

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
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

type config struct {
	naming     string // the history's naming; "" = profile's, or custom
	profile    string // "" = detected per model
	gpuNaming  string // "" = the probe's
	perProfile map[string]profile.Labels
}

// Option changes what Start serves.
type Option func(*config)

// Profile serves the history in the named profile's naming (testbed.TSDBOptions.Profile) and
// takes that profile by name rather than detecting it.
func Profile(name string) Option {
	return func(c *config) { c.naming, c.profile = name, name }
}

// Fleet serves the history in a fleet naming (testbed.TSDBOptions.Profile "fleet", or
// "fleet-<server>" for one server's part alone) and detects the profile of each model, with
// the TGI routers' relabelled model label (expo.TGIModelLabel) set for the tgi profile, as a
// user of that fleet would configure it.
func Fleet(naming string) Option {
	return func(c *config) {
		c.naming, c.profile = naming, ""
		c.perProfile = map[string]profile.Labels{"tgi": {Model: expo.TGIModelLabel}}
	}
}

// GPUNaming serves the GPU series in the named naming (testbed.TSDBOptions.GPUNaming).
func GPUNaming(name string) Option {
	return func(c *config) { c.gpuNaming = name }
}

// Start serves the test bed's history (the custom naming unless Profile or Fleet says
// otherwise) in a real Prometheus stopped when the test ends, and returns the engine on it with
// the scenario behind it, built by engine.New as the data source builds it. Without Profile the
// server of each model is detected, and a failed detection fails the test. The engine knows
// which metric names Prometheus has and filters warm-up with the default 2-minute window.
func Start(t testing.TB, opts ...Option) (*engine.Engine, *testbed.Scenario) {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: c.naming, GPUNaming: c.gpuNaming})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	client, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.Config{
		Prom: client, Profile: c.profile, PerProfile: c.perProfile, WarmupWindow: 2 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}
