package datasource

import (
	"context"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// BenchmarkQueryDataOverGRPC measures what Grafana's plugin protocol adds to a query: the same
// requests answered by a direct call of QueryData and by the built plugin over gRPC, on one
// Prometheus with the test bed's history. Compare the sub-benchmarks of one run.
func BenchmarkQueryDataOverGRPC(b *testing.B) {
	dir, _ := tbtest.TSDB(b)
	srv := promtest.Start(b, promtest.Options{DataDir: dir})
	settings := instanceSettings(b, srv.URL, nil, nil)
	direct := newTestDS(b, settings)
	p := plugintest.Start(b, plugintest.Binary(b, protocolVersion))
	pc := plugintest.PluginContext(PluginID, settings)
	ctx := context.Background()

	end := testbed.DefaultEnd
	from := end.Add(-6 * time.Hour)
	queries := map[string]backend.DataQuery{
		"promql": dataQuery("A", from, end, time.Minute, map[string]any{"refId": "A", "queryType": "promql",
			"expr": "sum by (model_name, model_version) (rate(inference_requests_total[5m]))"}),
		"latency": dataQuery("A", from, end, time.Minute, map[string]any{"refId": "A", "queryType": "latency"}),
	}
	for name, q := range queries {
		check := func(b *testing.B, r *backend.QueryDataResponse, err error) {
			if err != nil {
				b.Fatal(err)
			}
			if a := r.Responses["A"]; a.Error != nil || len(a.Frames) == 0 {
				b.Fatalf("%s: %v, %d frames", name, a.Error, len(a.Frames))
			}
		}
		b.Run(name+"/direct", func(b *testing.B) {
			for b.Loop() {
				r, err := direct.QueryData(ctx, &backend.QueryDataRequest{PluginContext: backend.PluginContext{DataSourceInstanceSettings: &settings}, Queries: []backend.DataQuery{q}})
				check(b, r, err)
			}
		})
		b.Run(name+"/grpc", func(b *testing.B) {
			for b.Loop() {
				r, err := p.QueryData(ctx, pc, q)
				check(b, r, err)
			}
		})
	}
}
