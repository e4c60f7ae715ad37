package alerting

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
)

// One GPU-memory definition: on the same history, the data source's `gpu` memory series, the
// Prometheus rule file's recorded ratio and the Grafana rule's data query give each GPU the same
// percentage to the fourth decimal — in the probe's naming and in dcgm-exporter's, whose default
// counters file has no total (used + free + reserved stands for it).
func TestGPUMemoryIsOneDefinitionInEveryRendering(t *testing.T) {
	for _, c := range []struct{ profile, naming string }{
		{"custom", testbed.GPUNamingInferscope},
		{"triton", testbed.GPUNamingDCGM},
	} {
		t.Run(c.naming, func(t *testing.T) {
			e, s := enginetest.Start(t, enginetest.Profile(c.profile), enginetest.GPUNaming(c.naming))
			in, ok := s.Incident(testbed.ComputeSlowdown)
			if !ok {
				t.Fatal("no compute slowdown incident")
			}
			at := in.Start.Add(20 * time.Minute).Truncate(time.Minute)
			run := func(queryType string, model map[string]any) map[string]float64 {
				t.Helper()
				raw, _ := json.Marshal(model)
				q, err := engine.ParseAs(queryType, raw)
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(context.Background(), q, engine.Range{Start: at, End: at, MinStep: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]float64{}
				for _, s := range res.Series {
					node := s.Labels["node"]
					if node == "" {
						node = s.Labels[NodeLabel]
					}
					if len(s.V) > 0 && !math.IsNaN(s.V[len(s.V)-1]) {
						out[node+"/"+s.Labels["gpu"]] = s.V[len(s.V)-1]
					}
				}
				return out
			}
			source := run("gpu", map[string]any{"metrics": []string{"memory"}})

			p := grafanaParams()
			b, err := newBuilder(p)
			if err != nil {
				t.Fatal(err)
			}
			rules := run("promql", map[string]any{"expr": b.gpuMemory()})

			g, err := GrafanaRules(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			var grafana map[string]float64
			for _, r := range g.Rules {
				if r.Labels[RuleLabel] == "gpumem-p0" {
					grafana = run(r.Data[0].QueryType, r.Data[0].Model)
				}
			}

			if len(source) != len(s.Instances())*s.GPUsPerInstance() {
				t.Fatalf("%d GPUs from the data source, want %d", len(source), len(s.Instances())*s.GPUsPerInstance())
			}
			for k, v := range source {
				for name, other := range map[string]map[string]float64{"Prometheus rules": rules, "Grafana rules": grafana} {
					if o, ok := other[k]; !ok || math.Abs(o-v) >= 5e-5 {
						t.Errorf("%s: data source %.5f, %s %.5f (found %v)", k, v, name, o, ok)
					}
				}
			}
			// Known truth: the slowed node's GPUs run at 93–94 % in the window.
			if v := source[testbed.Node(in.Instance)+"/"+strconv.Itoa(in.GPUs[0])]; v < 0.92 || v > 0.95 {
				t.Errorf("memory of the slowed GPU %.4f, want 0.92–0.95", v)
			}
		})
	}
}
