//go:build cgo

package engine

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/probetest"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// startMockProbe serves a real probe over the scenario's mock GPUs of instance's node, frozen at now.
func startMockProbe(t *testing.T, s *testbed.Scenario, instance string, now time.Time) string {
	return probetest.Start(t, s, instance, now)
}

// liveEngine is an engine with probes only: gpu_live never asks Prometheus.
func liveEngine(t *testing.T, urls []string, timeout time.Duration) *Engine {
	t.Helper()
	c, err := prom.New(promtest.ClosedURL(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Engine{Prom: c, ProbeURLs: urls, ProbeHTTP: &http.Client{Timeout: timeout}}
}

func runLive(t *testing.T, e *Engine, raw string) *Result {
	t.Helper()
	q, err := Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	res, err := e.Run(context.Background(), q, Range{Start: now.Add(-time.Minute), End: now, MinStep: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tables) != 1 || len(res.Series) != 0 {
		t.Fatalf("%d tables, %d series, want one table", len(res.Tables), len(res.Series))
	}
	return res
}

func column[T any](t *testing.T, tb Table, name string) []T {
	t.Helper()
	for _, c := range tb.Columns {
		if c.Name == name {
			v, ok := c.Values.([]T)
			if !ok {
				t.Fatalf("column %s holds %T", name, c.Values)
			}
			return v
		}
	}
	t.Fatalf("no column %s", name)
	return nil
}

func TestGPULiveFromProbes(t *testing.T) {
	s := testbed.Default(testbed.DefaultEnd)
	slow, _ := s.Incident(testbed.ComputeSlowdown)
	now := slow.Start.Add(5 * time.Minute) // node-b's GPUs 0-3 near full
	a := startMockProbe(t, s, "node-a:8000", now)
	b := startMockProbe(t, s, "node-b:8000", now)
	down := promtest.ClosedURL(t)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	notProbe := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notProbe.Close)

	e := liveEngine(t, []string{a, down, b, hang.URL, notProbe.URL}, 300*time.Millisecond)
	res := runLive(t, e, `{"queryType":"gpu_live"}`)
	tb := res.Tables[0]
	node := column[string](t, tb, "node")
	idx := column[float64](t, tb, "gpu")
	mem := column[float64](t, tb, "memory used %")
	util := column[float64](t, tb, "util")
	temp := column[float64](t, tb, "temperature")
	power := column[float64](t, tb, "power")
	state := column[string](t, tb, "state")
	procs := column[float64](t, tb, "processes")
	if len(node) != 16 {
		t.Fatalf("%d rows, want the 16 GPUs of node-a and node-b", len(node))
	}
	for i := range node {
		truth := s.GPU(node[i]+":8000", int(idx[i]), now)
		switch {
		case state[i] != "up" || procs[i] < 1:
			t.Errorf("%s GPU %g: state %s, %g processes", node[i], idx[i], state[i], procs[i])
		case math.Abs(mem[i]-truth.MemUsedRatio) > 1e-9:
			t.Errorf("%s GPU %g: memory %.6f, truth %.6f", node[i], idx[i], mem[i], truth.MemUsedRatio)
		case math.Abs(util[i]-truth.UtilRatio) > 0.005+1e-9, math.Abs(temp[i]-truth.TempCelsius) > 0.5+1e-9, math.Abs(power[i]-truth.PowerWatts) > 1e-3+1e-9:
			t.Errorf("%s GPU %g: util %g temp %g power %g, truth %g %g %g", node[i], idx[i], util[i], temp[i], power[i], truth.UtilRatio, truth.TempCelsius, truth.PowerWatts)
		}
		if node[i] == "node-b" && idx[i] < 4 && mem[i] <= 0.92 {
			t.Errorf("node-b GPU %g: memory %.4f during the slowdown, want > 92 %%", idx[i], mem[i])
		}
	}
	// Each failing probe is named with its reason; the others answered.
	want := map[string]string{down: "connection refused", hang.URL: "no answer within 300ms", notProbe.URL: "HTTP 404"}
	for url, reason := range want {
		found := false
		for _, n := range res.Notices {
			if strings.Contains(n.Text, "probe "+url+":") && strings.Contains(n.Text, reason) && n.Severity == Warning {
				found = true
			}
		}
		if !found {
			t.Errorf("no notice for %s (%s) in %v", url, reason, res.Notices)
		}
	}

	// The instance filter selects by node (instance or node name), gpu by index.
	for _, raw := range []string{`{"queryType":"gpu_live","instance":"node-b:8000","gpu":"2|3"}`, `{"queryType":"gpu_live","instance":["node-b"],"gpu":["2","3"]}`} {
		r := runLive(t, liveEngine(t, []string{a, b}, time.Second), raw)
		n, g := column[string](t, r.Tables[0], "node"), column[float64](t, r.Tables[0], "gpu")
		if len(n) != 2 || n[0] != "node-b" || n[1] != "node-b" || g[0] != 2 || g[1] != 3 || len(r.Notices) != 0 {
			t.Errorf("%s: rows %v %v, notices %v", raw, n, g, r.Notices)
		}
	}

	// No probe configured: an empty table and a notice saying what to set.
	r := runLive(t, liveEngine(t, nil, time.Second), `{"queryType":"gpu_live"}`)
	if len(column[string](t, r.Tables[0], "node")) != 0 || len(r.Notices) != 1 || !strings.Contains(r.Notices[0].Text, "probeUrls") {
		t.Errorf("no probes: %v", r.Notices)
	}
}
