// Package enginetest serves the test bed's history in a real Prometheus (or VictoriaMetrics, see
// Store) and builds on it the engine the data source would build, for the tests of the packages
// that run on the engine.
// pkg/engine's own tests cannot import it (an import cycle) and keep their own.
package enginetest

import (
	"context"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gateway"
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
	store      string // "" = StorePrometheus
	gateway    gateway.Config
}

// The stores Start can serve the history from.
const (
	StorePrometheus  = "prometheus"      // promtest.Start: Debian's Prometheus, or the one promtest is told to run
	StorePrometheus3 = "prometheus3"     // promtest.Prometheus3Binary (scripts/deps.sh builds it)
	StoreVictoria    = "victoriametrics" // single-node VictoriaMetrics with the history imported
)

// Stores lists every store, for tests that run their assertions on each.
var Stores = []string{StorePrometheus, StorePrometheus3, StoreVictoria}

// Store serves the history from the named store (one of Stores).
func Store(name string) Option {
	return func(c *config) { c.store = name }
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

// BehindIngressNginx serves server's naming behind the test bed's ingress-nginx controller
// (expo.BehindIngressNginx, without GPU series), takes server's profile by name and configures
// the gateway g (the zero Config: none), as a user of that setup would.
func BehindIngressNginx(server string, g gateway.Config) Option {
	return func(c *config) {
		c.naming, c.profile, c.gpuNaming, c.gateway = expo.BehindIngressNginx(server), server, testbed.GPUNamingNone, g
	}
}

// BehindGateway is BehindIngressNginx for any of the test bed's gateways (expo.GatewayNames):
// server's naming behind gateway, without GPU series, with the gateway configuration g.
func BehindGateway(server, gw string, g gateway.Config) Option {
	return func(c *config) {
		c.naming, c.profile, c.gpuNaming, c.gateway = expo.Behind(server, gw), server, testbed.GPUNamingNone, g
	}
}

// GPUNaming serves the GPU series in the named naming (testbed.TSDBOptions.GPUNaming).
func GPUNaming(name string) Option {
	return func(c *config) { c.gpuNaming = name }
}

// Start serves the test bed's history (the custom naming unless Profile or Fleet says
// otherwise) in a real Prometheus (or the Store named) stopped when the test ends, and returns
// the engine on it with the scenario behind it, built by engine.New as the data source builds
// it. Without Profile the server of each model is detected, and a failed detection fails the
// test. The engine knows which metric names the store has and filters warm-up with the default
// 2-minute window.
func Start(t testing.TB, opts ...Option) (*engine.Engine, *testbed.Scenario) {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	o := testbed.TSDBOptions{Profile: c.naming, GPUNaming: c.gpuNaming}
	var url string
	var s *testbed.Scenario
	switch c.store {
	case "", StorePrometheus:
		var dir string
		dir, s = tbtest.TSDBFor(t, o)
		url = promtest.Start(t, promtest.Options{DataDir: dir}).URL
	case StorePrometheus3:
		bin := promtest.Prometheus3Binary(t)
		var dir string
		dir, s = tbtest.TSDBFor(t, o)
		url = promtest.Start(t, promtest.Options{DataDir: dir, Binary: bin}).URL
	case StoreVictoria:
		var vm *promtest.Victoria
		vm, s = tbtest.VictoriaFor(t, o)
		url = vm.URL
	default:
		t.Fatalf("enginetest: unknown store %q", c.store)
	}
	return newEngine(t, url, c), s
}

// OnURL builds the engine the data source would build on a store already serving a history
// (a test's own, written at another step or over another span), with Start's options.
func OnURL(t testing.TB, url string, opts ...Option) *engine.Engine {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	return newEngine(t, url, c)
}

func newEngine(t testing.TB, url string, c config) *engine.Engine {
	t.Helper()
	client, err := prom.New(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.Config{
		Prom: client, Profile: c.profile, PerProfile: c.perProfile, WarmupWindow: 2 * time.Minute, Gateway: c.gateway,
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// EachStore runs f as one subtest per store (named after it), handing it the Option that
// selects the store: the integration assertions of a package then hold on every store.
func EachStore(t *testing.T, f func(t *testing.T, store Option)) {
	t.Helper()
	for _, name := range Stores {
		t.Run(name, func(t *testing.T) { f(t, Store(name)) })
	}
}
