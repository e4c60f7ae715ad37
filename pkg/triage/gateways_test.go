package triage

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// TestNetworkJitterThroughEnvoyAndIstio: as through ingress-nginx
// (TestNetworkJitterThroughIngressNginx), vLLM's jitter on node-b seen only through Envoy
// Gateway's upstream histogram (ms, per route cluster) or Istio's ingress gateway
// (reporter="source", per destination workload) is ranked network first, with the model's
// network segment checked against the scenario. Istio's history also holds the server sidecars'
// reporter="destination" series, which the preset leaves out.
func TestNetworkJitterThroughEnvoyAndIstio(t *testing.T) {
	for _, c := range []struct {
		gw  string
		cfg gateway.Config
	}{
		{expo.Envoy, gateway.Config{Preset: gateway.Envoy, Model: gateway.Rule{Regex: "httproute/[^/]+/(.+)/rule/[0-9]+"}}},
		{expo.Istio, gateway.Config{Preset: gateway.Istio, Model: gateway.Rule{Regex: "(.+)-predictor"}}},
	} {
		t.Run(c.gw, func(t *testing.T) {
			e, s := enginetest.Start(t, enginetest.BehindGateway("vllm", c.gw, c.cfg))
			in, ok := s.Incident(testbed.NetworkJitter)
			if !ok {
				t.Fatal("no network jitter in the scenario")
			}
			from, to := incidentWindow(in)
			mid := from.Add(to.Sub(from) / 2)
			for _, model := range []string{"recsys-ranker", "text-embedder"} {
				t.Run(model, func(t *testing.T) {
					r, err := Diagnose(context.Background(), e, Options{Model: model, From: from, To: to})
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s %s\n%s", r.Verdict, causeList(r), r.Summary)
					if r.Verdict != Diagnosed || len(r.Causes) == 0 || r.Causes[0].ID != CauseNetwork {
						b, _ := json.MarshalIndent(r, "", " ")
						t.Fatalf("want network first, got %s\n%s", causeList(r), b)
					}
					n := s.SegmentMean(testbed.Network, "", model, "", mid)
					if got := val(evidence(t, r.Causes[0], "network").Now); math.Abs(got/n-1) > 0.03 {
						t.Errorf("network %.5f, truth (every instance) %.5f ± 3 %%", got, n)
					}
					if strings.Contains(strings.Join(r.Notices, "\n"), "network cause) is not read") {
						t.Errorf("notices say the network is not read: %v", r.Notices)
					}
				})
			}
		})
	}
}
