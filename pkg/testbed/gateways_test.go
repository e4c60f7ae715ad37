package testbed_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// TestEnvoyAndIstioLiveMatchHistory: the loadgen's live Envoy Gateway proxy and Istio ingress
// gateway (and an Istio sidecar) in front of vLLM and Triton serve exactly what the history
// writes, in the gateways' own form: milliseconds with Envoy's bucket bounds, no HELP lines,
// the route clusters and the reporter label.
func TestEnvoyAndIstioLiveMatchHistory(t *testing.T) {
	s := testbed.Default(end)
	at := mustIncident(t, s, testbed.NetworkJitter).Start.Add(10 * time.Minute)
	for _, server := range expo.BehindServers {
		for _, c := range []struct {
			gateway, job, instance, want string
		}{
			{expo.Envoy, expo.EnvoyJob, expo.EnvoyInstance, `envoy_cluster_upstream_rq_time_bucket{envoy_cluster_name="httproute/inference/recsys-ranker/rule/0",le="3600000"}`},
			{expo.Istio, expo.IstioGatewayJob, expo.IstioGatewayInstance, `reporter="source"`},
			{expo.Istio, expo.IstioSidecarJob, "node-b:15090", `reporter="destination"`},
		} {
			t.Run(server+"/"+c.instance, func(t *testing.T) {
				p, err := expo.Lookup(expo.Behind(server, c.gateway))
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(expo.Handler(s.Source(), p, func() time.Time { return at }))
				body := get(t, srv.URL+"/metrics?"+url.Values{"instance": {c.instance}}.Encode())
				srv.Close()
				if !bytes.Contains(body, []byte(c.want)) || bytes.Contains(body, []byte("# HELP")) {
					t.Fatalf("%s exposition lacks %s or has HELP lines:\n%.800s", c.gateway, c.want, body)
				}
				live := flatten(t, parseText(t, body), map[string]string{"instance": c.instance, "job": c.job})
				var hist bytes.Buffer
				var tgs []expo.Target
				for _, tg := range p.Targets(s.Source()) {
					if tg.Instance == c.instance {
						tgs = append(tgs, tg)
					}
				}
				if err := expo.WriteHistory(context.Background(), &hist, tgs, expo.HistoryOptions{
					From: at.Add(-time.Minute), To: at.Add(time.Minute), Step: time.Minute}); err != nil {
					t.Fatal(err)
				}
				written := parseHistory(t, &hist, at.Unix())
				if len(live) < 20 || len(live) != len(written) {
					t.Fatalf("%d live samples, %d history samples", len(live), len(written))
				}
				for k, v := range live {
					if w, ok := written[k]; !ok || w != v {
						t.Errorf("%s: live %v, history %v (%v)", k, v, w, ok)
					}
				}
			})
		}
	}
}
