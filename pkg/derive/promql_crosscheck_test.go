package derive_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// TestMatchesPrometheus evaluates rate() and histogram_quantile() with the
// real Prometheus engine (promtool test rules) on the same raw samples and
// requires the engine's numbers bit for bit: the quantiles computed after
// per-instance warm-up filtering must agree with what Prometheus would
// compute on unfiltered data.
func TestMatchesPrometheus(t *testing.T) {
	promtest.RequireBinary(t, "promtool") // before the work, to skip or fail early
	const step = 15_000
	n := 41 // 10 minutes of 15 s scrapes
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = int64(i) * step
	}
	bounds := []string{"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "+Inf"}
	// Deterministic, irregular per-bucket increments; instance "b" restarts
	// at sample 23 (all its counters drop to small values).
	counters := map[string][]float64{}
	var raw []derive.Series
	for _, inst := range []string{"a", "b"} {
		for bi, le := range bounds {
			v := make([]float64, n)
			cum := 0.0
			for i := range v {
				inc := float64((i*7+bi*3+len(inst)*5)%11) * float64(bi+1)
				if inst == "b" && i%5 == 0 {
					inc *= 4 // bursts of slow requests
				}
				cum += inc
				if inst == "b" && i == 23 {
					cum = float64(bi)
				}
				v[i] = cum
			}
			// Buckets must stay cumulative across bounds: add the lower buckets.
			if bi > 0 {
				prev := counters[inst+bounds[bi-1]]
				for i := range v {
					v[i] += prev[i]
				}
			}
			counters[inst+le] = v
			raw = append(raw, derive.Series{Labels: map[string]string{"instance": inst, "le": le}, T: ts, V: v})
		}
	}

	evalAt := []int64{60_000, 127_000, 345_000, 360_000, 600_000}
	rng := time.Minute
	var rates []derive.Series
	for _, s := range raw {
		r, err := derive.Rate(s, evalAt, rng)
		if err != nil {
			t.Fatal(err)
		}
		rates = append(rates, r)
	}
	summed, err := derive.SumBy(rates, []string{"le"})
	if err != nil {
		t.Fatal(err)
	}
	var tests strings.Builder
	fmt.Fprintf(&tests, "tests:\n  - interval: 15s\n    input_series:\n")
	for _, s := range raw {
		vals := make([]string, len(s.V))
		for i, v := range s.V {
			vals[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		fmt.Fprintf(&tests, "      - series: 'lat_bucket{instance=%q,le=%q}'\n        values: '%s'\n",
			s.Labels["instance"], s.Labels["le"], strings.Join(vals, " "))
	}
	fmt.Fprintf(&tests, "    promql_expr_test:\n")
	expect := func(expr string, at int64, labels string, v float64) {
		fmt.Fprintf(&tests, "      - expr: '%s'\n        eval_time: %dms\n        exp_samples:\n          - labels: '%s'\n            value: %s\n",
			expr, at, labels, strconv.FormatFloat(v, 'g', -1, 64))
	}
	for _, r := range rates {
		for j, at := range evalAt {
			expect(fmt.Sprintf(`rate(lat_bucket{instance="%s",le="%s"}[1m])`, r.Labels["instance"], r.Labels["le"]), at,
				fmt.Sprintf(`{instance="%s",le="%s"}`, r.Labels["instance"], r.Labels["le"]), r.V[j])
		}
	}
	for _, q := range []float64{0, 0.25, 0.5, 0.95, 0.99, 1} {
		qs, err := derive.QuantileSeries(q, summed)
		if err != nil {
			t.Fatal(err)
		}
		for j, at := range evalAt {
			expect(fmt.Sprintf(`histogram_quantile(%g, sum by (le) (rate(lat_bucket[1m])))`, q), at, "{}", qs[0].V[j])
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crosscheck.yml"), []byte(tests.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	promtest.RunRuleTests(t, dir, "crosscheck.yml") // Prometheus agrees with the engine
}
