package engine_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// fleetTypes are the engine's query types that take a model.
var fleetTypes = []string{"latency", "split", "jitter", "baseline", "throughput", "errors", "gpu_idle_under_traffic"}

func runQuery(t *testing.T, e *engine.Engine, raw string, from, to time.Time) *engine.Result {
	t.Helper()
	q, err := engine.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), q, engine.Range{Start: from, End: to, MinStep: time.Minute})
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return res
}

// sameSeries compares two answers series by series: names, labels and every value (NaN = NaN).
func sameSeries(t *testing.T, what string, got, want []engine.Series, extra map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d series, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		wl := maps(w.Labels, extra)
		if g.Name != w.Name || fmt.Sprint(g.Labels) != fmt.Sprint(wl) || !slices.Equal(g.T, w.T) {
			t.Errorf("%s: series %d is %s %v, want %s %v", what, i, g.Name, g.Labels, w.Name, wl)
			continue
		}
		for j := range w.V {
			if a, b := g.V[j], w.V[j]; a != b && !(math.IsNaN(a) && math.IsNaN(b)) {
				t.Errorf("%s: series %s %v at %d: %v, want %v", what, g.Name, g.Labels, j, a, b)
				break
			}
		}
	}
}

func maps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestFleetAnswersEachModelAsItsServerAlone: one Prometheus holding the six servers answers
// every model with its own server's numbers, equal series by series (and notice by notice) to
// the same query on a Prometheus holding that server alone.
func TestFleetAnswersEachModelAsItsServerAlone(t *testing.T) {
	fleet, s := enginetest.Start(t, enginetest.Fleet(expo.FleetName))
	if got := len(fleet.Fleet.Servers); got != len(expo.FleetServers) {
		t.Fatalf("servers found: %+v", fleet.Fleet.Assignment())
	}
	for i, srv := range fleet.Fleet.Servers {
		if srv.Profile.Name != expo.FleetServers[i] || len(srv.Models) != len(s.Models()) {
			t.Errorf("server %d: %s with %v", i, srv.Profile.Name, srv.Models)
		}
	}
	surge := findIncident(t, s, testbed.QueueSurge)
	from, to := surge.Start.Add(-20*time.Minute), surge.End.Add(20*time.Minute)
	for _, server := range expo.FleetServers {
		t.Run(server, func(t *testing.T) {
			alone, _ := enginetest.Start(t, enginetest.Fleet(expo.FleetPart(server)))
			if alone.Profile.Name != server {
				t.Fatalf("alone: detected %s", alone.Profile.Name)
			}
			for _, model := range s.Models() {
				m := expo.FleetModel(server, model)
				if got, ok := fleet.Fleet.ServerOf(m); !ok || got.Profile.Name != server {
					t.Errorf("model %s: server %v", m, got)
				}
				for _, typ := range fleetTypes {
					raw := fmt.Sprintf(`{"refId":"A","queryType":%q,"model":%q}`, typ, m)
					got, want := runQuery(t, fleet, raw, from, to), runQuery(t, alone, raw, from, to)
					what := typ + " " + m
					sameSeries(t, what, got.Series, want.Series, nil)
					if fmt.Sprint(got.Notices) != fmt.Sprint(want.Notices) {
						t.Errorf("%s: notices\n got %v\nwant %v", what, got.Notices, want.Notices)
					}
					// An empty answer must say why (Triton and TorchServe have no percentiles for
					// the jitter ratio); GPU idle under traffic answers only where a GPU is idle.
					if len(want.Series) == 0 && typ != "gpu_idle_under_traffic" && !hasWarning(want.Notices) {
						t.Errorf("%s: no series and no warning (notices %v)", what, want.Notices)
					}
				}
			}
		})
	}
}

// TestFleetQueryOverEveryServer: a query without a model filter covers every server; each
// series carries the server it was read with and equals that server's own answer.
func TestFleetQueryOverEveryServer(t *testing.T) {
	fleet, s := enginetest.Start(t, enginetest.Fleet(expo.FleetName))
	from, to := s.End().Add(-2*time.Hour), s.End()
	raw := `{"refId":"A","queryType":"throughput","by":"model"}`
	got := runQuery(t, fleet, raw, from, to)
	perServer := map[string][]engine.Series{}
	for _, se := range got.Series {
		perServer[se.Labels[engine.ServerLabel]] = append(perServer[se.Labels[engine.ServerLabel]], se)
	}
	if len(perServer) != len(expo.FleetServers) {
		t.Fatalf("series of %d servers (%v), want %d", len(perServer), got.Series, len(expo.FleetServers))
	}
	for _, server := range []string{"vllm", "tgi"} {
		var models []string
		for _, m := range s.Models() {
			models = append(models, expo.FleetModel(server, m))
		}
		q := fmt.Sprintf(`{"refId":"A","queryType":"throughput","by":"model","model":["%s","%s"]}`, models[0], models[1])
		want := runQuery(t, fleet, q, from, to)
		sameSeries(t, server, perServer[server], want.Series, map[string]string{engine.ServerLabel: server})
	}
	// Each notice names the server it concerns.
	for _, n := range got.Notices {
		named := false
		for _, srv := range fleet.Fleet.Servers {
			named = named || strings.HasPrefix(n.Text, srv.Profile.Title+" ("+srv.Profile.Name+"): ")
		}
		if !named {
			t.Errorf("notice names no server: %s", n.Text)
		}
	}
	if len(got.Notices) < len(expo.FleetServers)-1 {
		t.Errorf("notices %v", got.Notices)
	}
}

func hasWarning(ns []engine.Notice) bool {
	for _, n := range ns {
		if n.Severity == engine.Warning {
			return true
		}
	}
	return false
}

func findIncident(t *testing.T, s *testbed.Scenario, kind testbed.IncidentKind) testbed.Incident {
	t.Helper()
	for _, in := range s.Incidents() {
		if in.Kind == kind {
			return in
		}
	}
	t.Fatalf("no %s incident", kind)
	return testbed.Incident{}
}

// TestCatalogBoundsDetection: detection costs one call for the metric names plus one per
// signature name present, however many models and instances the fleet has, and a catalog
// reuses it: a second engine costs no call at all.
func TestCatalogBoundsDetection(t *testing.T) {
	fleet, _ := enginetest.Start(t, enginetest.Fleet(expo.FleetName))
	cat := &engine.Catalog{}
	cfg := engine.Config{Prom: fleet.Prom, Catalog: cat, PerProfile: map[string]profile.Labels{"tgi": {Model: expo.TGIModelLabel}}}
	if _, err := engine.New(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	want := 1
	for _, p := range profile.All() {
		for _, n := range p.Signature {
			if fleet.Present[n] {
				want++
			}
		}
		for _, n := range p.Backends { // one call asks whether a backend's names carry the server's models
			if fleet.Present[n] {
				want++
				break
			}
		}
	}
	if got := cat.Calls(); got != want || want < 1+2*len(expo.FleetServers) {
		t.Errorf("detection made %d calls, want %d", got, want)
	}
	e, err := engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Calls() != want || len(e.Fleet.Servers) != len(expo.FleetServers) {
		t.Errorf("a second engine made %d calls (fleet %+v)", cat.Calls()-want, e.Fleet.Assignment())
	}
	// Forcing one profile reads every model with it.
	cfg.Profile = "vllm"
	e, err = engine.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.Profile.Name != "vllm" || len(e.Fleet.Servers) != 1 || e.Fleet.Servers[0].Profile.Name != "vllm" {
		t.Errorf("forced: %s %+v", e.Profile.Name, e.Fleet.Assignment())
	}
}
