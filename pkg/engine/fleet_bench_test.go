package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
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

// roundTrips counts the HTTP requests sent to Prometheus.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// overviewQueries are the overview dashboard's engine queries of its first two rows (status
// overview and latency tiers, dashboards/inferscope-overview.json) for the models given: the
// hottest GPUs, the error rate, P50/P95/P99, jitter and the baseline. gpu_live reads the probes
// and the queue-depth panel is a promql query: neither goes through the engine's planning.
func overviewQueries(models []string) []string {
	m := `"` + strings.Join(models, `","`) + `"`
	return []string{
		`{"queryType":"gpu","metrics":["memory"]}`,
		`{"queryType":"errors","model":[` + m + `],"series":["error_ratio"],"rateInterval":"5m"}`,
		`{"queryType":"latency","model":[` + m + `],"quantiles":[0.5]}`,
		`{"queryType":"latency","model":[` + m + `],"quantiles":[0.95]}`,
		`{"queryType":"latency","model":[` + m + `],"quantiles":[0.99]}`,
		`{"queryType":"jitter","model":[` + m + `],"threshold":5}`,
		`{"queryType":"baseline","model":[` + m + `],"quantile":0.95,"days":7,"window":"10m","series":["current","baseline","std"]}`,
	}
}

type benchEngine struct {
	e  *engine.Engine
	rt *roundTrips
	// detect is the Prometheus calls engine.New made (metric names, then the fleet).
	detect int64
}

func benchStart(b *testing.B, naming string) benchEngine {
	b.Helper()
	dir, _ := tbtest.TSDBFor(b, testbed.TSDBOptions{Profile: naming})
	srv := promtest.Start(b, promtest.Options{DataDir: dir})
	rt := &roundTrips{}
	c, err := prom.New(srv.URL, &http.Client{Transport: rt})
	if err != nil {
		b.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.Config{
		Prom: c, WarmupWindow: 2 * time.Minute,
		PerProfile: map[string]profile.Labels{"tgi": {Model: expo.TGIModelLabel}},
	})
	if err != nil {
		b.Fatal(err)
	}
	return benchEngine{e: e, rt: rt, detect: rt.n.Load()}
}

// BenchmarkFleetOverview runs the overview's queries for each server's models on the mixed
// fleet and on a Prometheus holding that server alone, and for every model at once on the fleet
// (the dashboard's model variable at "All"): wall time and Prometheus round trips per dashboard
// load, the last 6 hours at a 1-minute step.
//
//	go test -run '^$' -bench BenchmarkFleetOverview -benchtime 5x ./pkg/engine/
func BenchmarkFleetOverview(b *testing.B) {
	fleet := benchStart(b, expo.FleetName)
	s := testbed.Default(testbed.DefaultEnd)
	to := s.End()
	rg := engine.Range{Start: to.Add(-6 * time.Hour), End: to, MinStep: time.Minute}
	run := func(b *testing.B, be benchEngine, queries []string) {
		var parsed []engine.Query
		for _, raw := range queries {
			q, err := engine.Parse([]byte(`{"refId":"A",` + raw[1:]))
			if err != nil {
				b.Fatal(err)
			}
			parsed = append(parsed, q)
		}
		before := be.rt.n.Load()
		b.ResetTimer()
		for range b.N {
			for _, q := range parsed {
				if _, err := be.e.Run(context.Background(), q, rg); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(be.rt.n.Load()-before)/float64(b.N), "roundtrips/op")
		b.ReportMetric(float64(be.detect), "detect-calls")
	}
	var all []string
	for _, server := range expo.FleetServers {
		var models []string
		for _, m := range s.Models() {
			models = append(models, expo.FleetModel(server, m))
		}
		all = append(all, models...)
		alone := benchStart(b, expo.FleetPart(server))
		b.Run(fmt.Sprintf("server=%s/prometheus=fleet", server), func(b *testing.B) { run(b, fleet, overviewQueries(models)) })
		b.Run(fmt.Sprintf("server=%s/prometheus=alone", server), func(b *testing.B) { run(b, alone, overviewQueries(models)) })
	}
	b.Run("server=all/prometheus=fleet", func(b *testing.B) { run(b, fleet, overviewQueries(all)) })
}
