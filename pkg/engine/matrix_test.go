package engine

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The acceptance matrix of the real peers' outputs: for each naming the test bed plays, every
// model-taking query type (latency, jitter, split, throughput, errors, baseline) answers
// recsys-ranker on node-a, before and inside the queue surge, either with numbers equal to the
// scenario's (relative tolerance matrixTol) or, for a signal the naming cannot support, with no
// series and a notice saying "not measured" and why. A cell with neither fails. Triton with
// summaries is judged twice: recsys-ranker (the summary's quantiles, per GPU) and text-embedder
// (response cache on, so no request summary: its mean, and jitter not measured). One Prometheus
// per row, on the cached histories. (gpu_idle_under_traffic takes a model too but answers
// only where a GPU is idle: TestGPUIdle* cover it.)

// matrixTol: the engine, Prometheus and the truth sum floats in different orders.
const matrixTol = 1e-6

// The matrix's cells: a query type and the series it is judged by.
const (
	cellLatency     = "latency"
	cellJitter      = "jitter"
	cellQueue       = "split/queue"
	cellCompute     = "split/compute"
	cellNetwork     = "split/network"
	cellThroughput  = "throughput/qps"
	cellErrorRatio  = "errors/error_ratio"
	cellTimeout     = "errors/timeout_ratio"
	cellBaseline    = "baseline/ratio"
	matrixInstance  = "node-a:8000"
	matrixModel     = "recsys-ranker"
	noGatewayReason = "no gateway is configured"
)

var matrixCells = []string{cellLatency, cellJitter, cellQueue, cellCompute, cellNetwork, cellThroughput, cellErrorRatio, cellTimeout, cellBaseline}

// namingCase is one naming's row: how its latency is measured and which cells it cannot support.
type namingCase struct {
	naming, server string
	model          string    // the model judged; "" = matrixModel
	cached         bool      // Triton's cached model: no request summary, its mean includes cache hits
	bounds         []float64 // the latency histogram's buckets; nil: summaries or a mean
	summaries      bool      // latency from a summary's quantiles (per GPU)
	answered       bool      // durations over answered requests only, divided by every request (TorchServe)
	errors         func(s *testbed.Scenario, t time.Time) float64
	notMeasured    map[string]string // cell → the reason the notice must give
}

func matrixCases() []namingCase {
	const inst, model = matrixInstance, matrixModel
	plain := func(s *testbed.Scenario, t time.Time) float64 { return s.ErrorRatio(inst, model, "", t) }
	tritonErrors := func(s *testbed.Scenario, t time.Time) float64 {
		return s.ErrorRatio(inst, model, "", t) + s.TimeoutRatio(inst, model, "", t)
	}
	noNetwork := noGatewayReason
	tritonMissing := map[string]string{cellJitter: "exports no latency percentiles", cellNetwork: noNetwork}
	return []namingCase{
		{naming: "custom", server: "custom", bounds: testbed.LatencyBuckets, errors: plain},
		{naming: "vllm", server: "vllm", bounds: expo.VLLMRequestLatencyBuckets, errors: plain,
			notMeasured: map[string]string{cellTimeout: "vLLM has no timeout counter", cellNetwork: noNetwork}},
		{naming: "triton", server: "triton", errors: tritonErrors, notMeasured: tritonMissing},
		{naming: expo.TritonSummaries, server: "triton", summaries: true, errors: tritonErrors,
			notMeasured: map[string]string{cellNetwork: noNetwork}},
		{naming: expo.TritonSummaries, server: "triton", model: expo.TritonCachedModel, cached: true,
			errors: func(s *testbed.Scenario, t time.Time) float64 {
				return s.ErrorRatio(inst, expo.TritonCachedModel, "", t) + s.TimeoutRatio(inst, expo.TritonCachedModel, "", t)
			},
			notMeasured: map[string]string{cellJitter: "has no P99/P50", cellNetwork: noNetwork}},
		{naming: expo.TritonVLLM, server: "triton", errors: tritonErrors, notMeasured: tritonMissing},
		{naming: "torchserve", server: "torchserve", answered: true,
			errors: func(s *testbed.Scenario, t time.Time) float64 {
				// Host-wide 5xx over every request of the host.
				var fails, reqs float64
				for _, m := range s.Models() {
					q := s.MeanQPS(inst, m, "", t.Add(-window), t)
					fails += q * (s.ErrorRatio(inst, m, "", t) + s.TimeoutRatio(inst, m, "", t))
					reqs += q
				}
				return fails / reqs
			},
			notMeasured: map[string]string{cellJitter: "exports no latency percentiles", cellTimeout: "TorchServe has no timeout counter", cellNetwork: noNetwork}},
		{naming: "tgi", server: "tgi", bounds: expo.TGIDurationBuckets, errors: plain,
			notMeasured: map[string]string{cellTimeout: "TGI has no timeout counter", cellNetwork: noNetwork}},
		{naming: "sglang", server: "sglang", bounds: expo.SGLangE2EBuckets,
			notMeasured: map[string]string{cellErrorRatio: "SGLang has no failure counter", cellNetwork: noNetwork}},
	}
}

// startMatrix starts the naming's history on a Prometheus and the engine the data source would
// build on it (TGI's routers relabel the model, as a user of TGI configures it).
func startMatrix(t *testing.T, c namingCase) bed {
	t.Helper()
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: c.naming})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	cl, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Config{Prom: cl, WarmupWindow: 2 * time.Minute,
		PerProfile: map[string]profile.Labels{"tgi": {Model: expo.TGIModelLabel}}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Profile.Name != c.server || len(e.Fleet.Servers) != 1 {
		t.Fatalf("%s: detected %s, fleet %+v", c.naming, e.Profile.Name, e.Fleet.Assignment())
	}
	return bed{e: e, s: s}
}

// truth is the scenario's value of a numeric cell at t for the naming.
func (c namingCase) truth(s *testbed.Scenario, cell string, t time.Time) float64 {
	inst, model := matrixInstance, c.model
	mean := func(g testbed.Segment, t time.Time) float64 {
		if c.cached {
			return tritonTruth(s, g, inst, model, "", t)
		}
		if c.answered {
			return s.AnsweredTotal(g, inst, model, "", t.Add(-window), t, 0) / s.Increase(testbed.Requests, inst, model, "", t.Add(-window), t, 0)
		}
		_, n, sum := s.HistogramIncrease(g, inst, model, "", nil, t.Add(-window), t)
		return sum / n
	}
	quantile := func(q float64, t time.Time) float64 {
		if c.summaries {
			return s.SegmentQuantile(testbed.E2E, inst, model, s.StableVersion(model), q, t)
		}
		cum, n, _ := s.HistogramIncrease(testbed.E2E, inst, model, "", c.bounds, t.Add(-window), t)
		return testbed.HistogramQuantile(q, c.bounds, cum, n)
	}
	latency := func(t time.Time) float64 {
		if c.bounds == nil && (!c.summaries || c.cached) {
			return mean(testbed.E2E, t)
		}
		return quantile(0.95, t)
	}
	switch cell {
	case cellLatency:
		return latency(t)
	case cellJitter:
		return quantile(0.99, t) / quantile(0.5, t)
	case cellQueue:
		return mean(testbed.Queue, t)
	case cellCompute:
		if c.answered { // inference latency − queue latency
			return mean(testbed.E2E, t) - mean(testbed.Queue, t)
		}
		return mean(testbed.Compute, t)
	case cellNetwork:
		return mean(testbed.Gateway, t) - mean(testbed.E2E, t)
	case cellThroughput:
		return s.MeanQPS(inst, model, "", t.Add(-window), t)
	case cellErrorRatio:
		return c.errors(s, t)
	case cellTimeout:
		return s.TimeoutRatio(inst, model, "", t)
	case cellBaseline:
		base, _ := dayMeansTruth(latency, t, 1)
		return latency(t) / base
	}
	return math.NaN()
}

func TestAcceptanceMatrixEveryNaming(t *testing.T) {
	for _, c := range matrixCases() {
		name := c.naming
		if c.model == "" {
			c.model = matrixModel
		} else {
			name += "/" + c.model
		}
		t.Run(name, func(t *testing.T) {
			b := startMatrix(t, c)
			s := b.s
			surge := incident(t, s, testbed.QueueSurge)
			from, to := surge.Start.Add(-20*time.Minute), surge.Start.Add(20*time.Minute)
			instants := []time.Time{surge.Start.Add(-10 * time.Minute), surge.Start.Add(10 * time.Minute)}
			p := b.e.Profile
			results := map[string]*Result{}
			for _, typ := range []string{"latency", "jitter", "split", "throughput", "errors", "baseline"} {
				extra := `,"by":"instance"`
				switch typ {
				case "baseline":
					extra += `,"days":1,"minDays":1` // every naming holds at least the day before the incidents
				case "throughput":
					extra = `,"by":"model"` // of the one instance selected
				}
				results[typ] = b.run(t, fmt.Sprintf(`{"queryType":%q,"model":%q,"instance":%q%s}`,
					typ, c.model, matrixInstance, extra), from, to, time.Minute)
			}
			for _, cell := range matrixCells {
				typ, name, _ := strings.Cut(cell, "/")
				res := results[typ]
				if name == "" {
					name = map[string]string{cellLatency: "p95", cellJitter: "jitter"}[cell]
					if cell == cellLatency && c.bounds == nil && (!c.summaries || c.cached) {
						name = "mean"
					}
				}
				var found []Series
				for _, se := range res.Series {
					// A host-wide counter (TorchServe's 5xx) has no model label; by model, no instance.
					if se.Name == name && oneOf(se.Labels[p.ModelLabel], "", c.model) && oneOf(se.Labels[p.InstanceLabel], "", matrixInstance) {
						found = append(found, se)
					}
				}
				if reason, ok := c.notMeasured[cell]; ok {
					if len(found) > 0 {
						t.Errorf("%s: %d %s series where it is not measured", cell, len(found), name)
					}
					if !hasNotice(res, "not measured", reason) {
						t.Errorf("%s: no notice \"not measured\" giving %q: %v", cell, reason, res.Notices)
					}
					continue
				}
				if len(found) == 0 {
					t.Errorf("%s: no %s series (notices %v)", cell, name, res.Notices)
					continue
				}
				for _, se := range found { // summaries: one series per GPU, each the model's quantile
					for _, ts := range instants {
						got := seriesAt(se, ts)
						if want := c.truth(s, cell, ts); !near(got, want, matrixTol) {
							t.Errorf("%s %v at %s: %.9g, truth %.9g", cell, se.Labels, ts.Format(time.RFC3339), got, want)
						}
					}
				}
			}
		})
	}
}

// seriesAt is the series' value at t (NaN where it has no point there).
func seriesAt(se Series, t time.Time) float64 {
	for i, ms := range se.T {
		if ms == t.UnixMilli() {
			return se.V[i]
		}
	}
	return math.NaN()
}

func oneOf(v string, vs ...string) bool {
	for _, x := range vs {
		if v == x {
			return true
		}
	}
	return false
}
