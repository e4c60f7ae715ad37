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
)

// TestNetworkJitterThroughIngressNginx: vLLM's own metrics have no network role; the jitter on
// node-b is seen only through the ingress-nginx controller's upstream histogram, and triage over
// the incident ranks the network first, with the model's network segment checked against the
// scenario (the controller names no upstream pod: a third of the traffic gets node-b's +60 ms).
func TestNetworkJitterThroughIngressNginx(t *testing.T) {
	g := gateway.Config{Preset: gateway.IngressNginx, Model: gateway.Rule{Regex: "(.+)-svc"}}
	e, s := enginetest.Start(t, enginetest.BehindIngressNginx("vllm", g))
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
			top := r.Causes[0]
			if top.Instance != "" || !strings.Contains(top.Summary, "every instance") {
				t.Errorf("the model-wide network cause names instance %q: %s", top.Instance, top.Summary)
			}
			n := s.SegmentMean(testbed.Network, "", model, "", mid)
			if got := val(evidence(t, top, "network").Now); math.Abs(got/n-1) > 0.03 {
				t.Errorf("network %.5f, truth (every instance) %.5f ± 3 %%", got, n)
			}
			if strings.Contains(strings.Join(r.Notices, "\n"), "network cause) is not read") {
				t.Errorf("notices say the network is not read: %v", r.Notices)
			}
		})
	}
}

// TestNetworkNotReadWithoutGateway: the same history without the gateway configured says the
// network cause is not read and why.
func TestNetworkNotReadWithoutGateway(t *testing.T) {
	e, s := enginetest.Start(t, enginetest.BehindIngressNginx("vllm", gateway.Config{}))
	in, _ := s.Incident(testbed.NetworkJitter)
	from, to := incidentWindow(in)
	r, err := Diagnose(context.Background(), e, Options{Model: "text-embedder", From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(r.Notices, "\n"), "the network / gateway segment (network cause) is not read: the network segment is not measured: no gateway is configured") {
		t.Errorf("notices: %v", r.Notices)
	}
	for _, c := range r.Causes {
		if c.ID == CauseNetwork {
			t.Errorf("a network cause without a gateway: %+v", c)
		}
	}
}
