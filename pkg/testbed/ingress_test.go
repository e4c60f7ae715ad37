package testbed_test

import (
	"bytes"
	"context"
	"math"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// TestIngressNginxLiveMatchesHistory: the loadgen's live ingress-nginx controller (vLLM and
// Triton behind it) serves exactly what the history writes, its counts never drop at node-c's
// restart (the controller does not restart with the server), and its mean upstream time over a
// window is the scenario's Q + C + N over every instance.
func TestIngressNginxLiveMatchesHistory(t *testing.T) {
	s := testbed.Default(end)
	restart := mustIncident(t, s, testbed.WarmupRestart).Start
	for _, server := range expo.BehindServers {
		t.Run(server, func(t *testing.T) {
			p, err := expo.Lookup(expo.BehindIngressNginx(server))
			if err != nil {
				t.Fatal(err)
			}
			count := map[time.Time]float64{}
			for _, at := range []time.Time{restart.Add(-time.Minute), restart.Add(2 * time.Minute)} {
				srv := httptest.NewServer(expo.Handler(s.Source(), p, func() time.Time { return at }))
				body := get(t, srv.URL+"/metrics?"+url.Values{"instance": {expo.IngressNginxInstance}}.Encode())
				srv.Close()
				if !bytes.Contains(body, []byte(`service="recsys-ranker-svc"`)) || !bytes.Contains(body, []byte(`controller_pod=`)) {
					t.Fatalf("controller exposition:\n%.600s", body)
				}
				live := flatten(t, parseText(t, body), map[string]string{"instance": expo.IngressNginxInstance, "job": expo.IngressNginxJob})
				var hist bytes.Buffer
				var ctrl []expo.Target
				for _, tg := range p.Targets(s.Source()) {
					if tg.Instance == expo.IngressNginxInstance {
						ctrl = append(ctrl, tg)
					}
				}
				if err := expo.WriteHistory(context.Background(), &hist, ctrl, expo.HistoryOptions{
					From: at.Add(-time.Minute), To: at.Add(time.Minute), Step: time.Minute}); err != nil {
					t.Fatal(err)
				}
				written := parseHistory(t, &hist, at.Unix())
				if len(live) < 20 || len(live) != len(written) {
					t.Fatalf("at %s: %d live samples, %d history samples", at, len(live), len(written))
				}
				for k, v := range live {
					if w, ok := written[k]; !ok || w != v {
						t.Errorf("%s at %s: live %v, history %v (%v)", k, at, v, w, ok)
					}
				}
				for k, v := range live {
					if bytes.HasPrefix([]byte(k), []byte("nginx_ingress_controller_requests{")) && bytes.Contains([]byte(k), []byte("recsys-ranker-svc")) {
						count[at] = v
					}
				}
			}
			before, after := count[restart.Add(-time.Minute)], count[restart.Add(2*time.Minute)]
			if before <= 0 || after <= before {
				t.Errorf("the controller's request count went from %v to %v across node-c's restart", before, after)
			}
		})
	}
	// The upstream mean over a window: (Σ sum) / (Σ count) over the increase = mean(Q + C + N).
	src := s.Source()
	tg := expo.IngressNginxTarget(src)
	from, to := end.Add(-2*time.Hour), end.Add(-time.Hour)
	for _, f := range tg.Families {
		if f.Name != "nginx_ingress_controller_response_duration_seconds" {
			continue
		}
		for _, se := range f.Series {
			var model string
			for _, l := range se.Labels {
				if l.Name == "service" {
					model = l.Value[:len(l.Value)-len("-svc")]
				}
			}
			a, b := se.At(from), se.At(to)
			got := (b.Sum - a.Sum) / (b.Count - a.Count)
			_, n, sum := s.HistogramIncrease(testbed.Gateway, "", model, "", testbed.LatencyBuckets, from, to)
			if want := sum / n; math.Abs(got/want-1) > 1e-9 {
				t.Errorf("%s: mean upstream %.9f, truth %.9f", model, got, want)
			}
		}
	}
}
