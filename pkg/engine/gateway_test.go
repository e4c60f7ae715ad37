package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/setup"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// behindIngress serves vLLM behind ingress-nginx (vLLM's own metrics have no network role: the
// network segment is only in the controller's upstream histogram); engineFor builds an engine on
// it with a gateway (nil = none).
func behindIngress(t *testing.T) (*prom.Client, *testbed.Scenario) {
	t.Helper()
	return behindGateway(t, expo.BehindIngressNginx("vllm"))
}

// behindGateway serves a naming of vLLM behind one of the test bed's gateways.
func behindGateway(t *testing.T, naming string) (*prom.Client, *testbed.Scenario) {
	t.Helper()
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: naming, GPUNaming: testbed.GPUNamingNone})
	c, err := prom.New(promtest.Start(t, promtest.Options{DataDir: dir}).URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

func engineFor(t *testing.T, c *prom.Client, s *testbed.Scenario, g gateway.Config) bed {
	t.Helper()
	e, err := New(context.Background(), Config{Prom: c, Profile: "vllm", WarmupWindow: 2 * time.Minute, Gateway: g})
	if err != nil {
		t.Fatal(err)
	}
	return bed{e: e, s: s}
}

func ingressGateway(*testing.T) gateway.Config {
	return gateway.Config{Preset: gateway.IngressNginx, Model: gateway.Rule{Regex: "(.+)-svc"}}
}

func notices(res *Result) string {
	var b strings.Builder
	for _, n := range res.Notices {
		b.WriteString(n.Text + "\n")
	}
	return b.String()
}

// gatewayCase is one of the test bed's gateways in front of vLLM, configured as its user would.
type gatewayCase struct {
	name, naming string
	cfg          gateway.Config
	describe     string // the notice naming the histogram read
}

var gatewayCases = []gatewayCase{
	{"ingress-nginx", expo.BehindIngressNginx("vllm"), gateway.Config{Preset: gateway.IngressNginx, Model: gateway.Rule{Regex: "(.+)-svc"}},
		"ingress-nginx gateway: nginx_ingress_controller_response_duration_seconds"},
	{"envoy", expo.Behind("vllm", expo.Envoy), gateway.Config{Preset: gateway.Envoy, Model: gateway.Rule{Regex: "httproute/[^/]+/(.+)/rule/[0-9]+"}},
		"Envoy gateway: envoy_cluster_upstream_rq_time, model from envoy_cluster_name"},
	// Istio's preset reads reporter="source" only: the server sidecars' reporter="destination"
	// series of the same metric hold the server's own time and would hide the network.
	{"istio", expo.Behind("vllm", expo.Istio), gateway.Config{Preset: gateway.Istio, Model: gateway.Rule{Regex: "(.+)-predictor"}},
		`Istio gateway: istio_request_duration_milliseconds{reporter="source"}, model from destination_workload`},
}

// TestSplitNetworkThroughGateways: the network segment of vLLM behind each gateway (ingress-nginx,
// Envoy Gateway, Istio's ingress gateway) is the gateway's mean upstream time (ms scaled to
// seconds for Envoy and Istio) minus vLLM's own mean e2e time, over all instances, and shows the
// network-jitter incident on node-b.
func TestSplitNetworkThroughGateways(t *testing.T) {
	for _, gc := range gatewayCases {
		t.Run(gc.name, func(t *testing.T) { splitNetworkThrough(t, gc) })
	}
}

func splitNetworkThrough(t *testing.T, gc gatewayCase) {
	c, s := behindGateway(t, gc.naming)
	b := engineFor(t, c, s, gc.cfg)
	in := incident(t, s, testbed.NetworkJitter)
	from, to := in.Start.Add(-time.Hour), in.End.Add(20*time.Minute)
	for _, model := range []string{"recsys-ranker", "text-embedder"} {
		t.Run(model, func(t *testing.T) {
			res := b.run(t, fmt.Sprintf(`{"queryType":"split","model":%q}`, model), from, to, time.Minute)
			labels := map[string]string{"model_name": model}
			network := pick(t, res, "network", labels)
			regime := pick(t, res, "regime", labels)
			if !strings.Contains(notices(res), gc.describe) {
				t.Errorf("notices do not say where the network segment comes from (%s):\n%s", gc.describe, notices(res))
			}
			var before, during []float64
			for i, ms := range network.T {
				ts := msTime(ms)
				want := windowMean(s, testbed.Gateway, "", model, "", ts) - windowMean(s, testbed.E2E, "", model, "", ts)
				if !near(network.V[i], want, relTol) {
					t.Errorf("network at %s: %.9g, truth %.9g", ts.Format(time.RFC3339), network.V[i], want)
				}
				switch {
				case ts.Before(in.Start):
					before = append(before, network.V[i])
				case !ts.Before(in.Start.Add(window)) && !ts.After(in.End):
					during = append(during, network.V[i])
					if regime.V[i] != 3 && model == "text-embedder" {
						t.Errorf("regime at %s: %v, want network-dominated", ts.Format(time.RFC3339), regime.V[i])
					}
				}
			}
			if len(before) == 0 || len(during) == 0 {
				t.Fatalf("no points before (%d) or during (%d) the incident", len(before), len(during))
			}
			// The scenario's truth: the mean N of every request (Network), and its +60 ms on
			// node-b, which is a third of the model's traffic through the controller.
			mid := in.Start.Add(in.End.Sub(in.Start) / 2)
			calm := in.Start.Add(-30 * time.Minute)
			nB := s.SegmentMean(testbed.Network, "node-b:8000", model, "", mid) - s.SegmentMean(testbed.Network, "node-b:8000", model, "", calm)
			if math.Abs(nB-0.060) > 0.001 {
				t.Errorf("truth: node-b's mean N rises by %.4f s, the scenario says 60 ms", nB)
			}
			nAll := s.SegmentMean(testbed.Network, "", model, "", calm)
			if got := mean(before); math.Abs(got/nAll-1) > 0.01 {
				t.Errorf("network before the incident %.5f, truth mean N %.5f", got, nAll)
			}
			rise := mean(during) - mean(before)
			share := s.QPS("node-b:8000", model, "", mid) / s.QPS("", model, "", mid)
			t.Logf("%s: network %.2f ms before, +%.2f ms during (node-b +%.1f ms × %.3f of the traffic)", model, mean(before)*1e3, rise*1e3, nB*1e3, share)
			if math.Abs(rise/(nB*share)-1) > 0.05 {
				t.Errorf("network rises by %.5f s, truth %.5f (node-b's +%.3f × its share %.3f)", rise, nB*share, nB, share)
			}
		})
	}
}

func mean(v []float64) float64 {
	var sum float64
	for _, x := range v {
		sum += x
	}
	return sum / float64(len(v))
}

// TestSplitNetworkNotMeasured: without a gateway, or with one whose histogram Prometheus does not
// have, the split has no network series and says why; per instance, the ingress-nginx segment is
// the model's on every instance and the notice says so.
func TestSplitNetworkNotMeasured(t *testing.T) {
	client, sc := behindIngress(t)
	in := incident(t, sc, testbed.NetworkJitter)
	from, to := in.Start, in.End
	envoy := gateway.Config{Preset: gateway.Envoy}
	for _, c := range []struct {
		name string
		g    gateway.Config
		want string
	}{
		{"no gateway", gateway.Config{}, "the network segment is not measured: no gateway is configured"},
		{"absent histogram", envoy, "the network segment is not measured: the Envoy histogram envoy_cluster_upstream_rq_time is not in Prometheus"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := engineFor(t, client, sc, c.g)
			res := b.run(t, `{"queryType":"split","model":"text-embedder"}`, from, to, time.Minute)
			for _, s := range res.Series {
				if strings.HasPrefix(s.Name, "network") {
					t.Errorf("a %s series without a gateway", s.Name)
				}
			}
			if !strings.Contains(notices(res), c.want) {
				t.Errorf("notices lack %q:\n%s", c.want, notices(res))
			}
		})
	}
	t.Run("per instance", func(t *testing.T) {
		b := engineFor(t, client, sc, ingressGateway(t))
		res := b.run(t, `{"queryType":"split","model":"text-embedder","by":"instance","instance":["node-a:8000","node-b:8000"]}`, from, to, time.Minute)
		a := pick(t, res, "network", map[string]string{"model_name": "text-embedder", "instance": "node-a:8000"})
		bb := pick(t, res, "network", map[string]string{"model_name": "text-embedder", "instance": "node-b:8000"})
		for i := range a.V {
			ts := msTime(a.T[i])
			want := windowMean(b.s, testbed.Gateway, "", "text-embedder", "", ts) - windowMean(b.s, testbed.E2E, "", "text-embedder", "", ts)
			if !near(a.V[i], want, relTol) || a.V[i] != bb.V[i] {
				t.Errorf("at %s: node-a %.9g, node-b %.9g, model's truth %.9g", ts.Format(time.RFC3339), a.V[i], bb.V[i], want)
			}
		}
		if !strings.Contains(notices(res), "does not tell instances apart") {
			t.Errorf("no notice that the segment is the model's:\n%s", notices(res))
		}
	})
}

// TestNetworkSetupFinding: the set-up checks say where the network segment comes from.
func TestNetworkSetupFinding(t *testing.T) {
	c, s := behindIngress(t)
	for _, tc := range []struct {
		g     gateway.Config
		level setup.Level
		want  string
	}{
		{ingressGateway(t), setup.OK, "from ingress-nginx gateway: nginx_ingress_controller_response_duration_seconds, model from service"},
		{gateway.Config{Preset: gateway.Istio}, setup.Warn, "the Istio histogram istio_request_duration_milliseconds is not in Prometheus"},
		{gateway.Config{}, setup.Unchecked, "not measured: no gateway is configured"},
	} {
		fs, err := engineFor(t, c, s, tc.g).e.SetupChecks(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var f setup.Finding
		for _, x := range fs {
			if x.Check == "network segment" {
				f = x
			}
		}
		if f.Level != tc.level || !strings.Contains(f.Message, tc.want) {
			t.Errorf("%s: %+v, want %s %q", tc.g.Preset, f, tc.level, tc.want)
		}
	}
}
