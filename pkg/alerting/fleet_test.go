package alerting

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A minute-by-minute synthetic fleet for promtool's rule unit tests: every series is written
// sample by sample from known per-minute rates and latency distributions, so the expected
// quantiles, ratios and rates are computed here from the same numbers (known truth).

// bounds are the histogram buckets of the test fleet (seconds).
var bounds = []float64{0.025, 0.05, 0.1, 0.25, 0.5}

// dist is a latency distribution: the cumulative share of requests at each bound (the +Inf
// bucket holds 1).
type dist []float64

var (
	steady   = dist{0.60, 0.97, 1, 1, 1}       // P50 20.8 ms, P95 48.6 ms, P99 83 ms: P99/P50 4
	slow     = dist{0.02, 0.10, 0.30, 0.97, 1} // P95 245.5 ms: about 5× steady
	moderate = dist{0.30, 0.70, 0.97, 1, 1}    // P95 96.3 ms: about 2× steady
	jittery  = dist{0.70, 0.95, 0.97, 0.98, 1} // P50 17.9 ms, P99 375 ms: P99/P50 21; P95 ≈ steady
)

// quantile interpolates like Prometheus' histogram_quantile over the test buckets.
func (d dist) quantile(q float64) float64 {
	prevBound, prevCum := 0.0, 0.0
	for i, b := range bounds {
		if d[i] >= q {
			return prevBound + (b-prevBound)*(q-prevCum)/(d[i]-prevCum)
		}
		prevBound, prevCum = b, d[i]
	}
	return bounds[len(bounds)-1]
}

// phase is a stretch of minutes [from, to) with a request rate and a latency distribution.
type phase struct {
	from, to int
	perMin   float64 // requests per minute (0: no traffic)
	d        dist
}

type series struct {
	Series string `yaml:"series"`
	Values string `yaml:"values"`
}

func labelText(name string, l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.Quote(l[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func with(l map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// samples writes minutes 0..n-1 of a series; NaN is a missing sample.
func samples(n int, f func(m int) float64) string {
	parts := make([]string, n)
	for m := 0; m < n; m++ {
		v := f(m)
		if math.IsNaN(v) {
			parts[m] = "_"
		} else {
			parts[m] = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return strings.Join(parts, " ")
}

// stream is one model version on one instance: its request counters, latency, queue and
// compute histograms, from phases; restarts reset every counter.
type stream struct {
	labels   map[string]string // model_name, model_version, instance, job
	phases   []phase
	restarts []int      // minutes at which the process restarts (counters restart from 0)
	errShare float64    // share of requests that fail
	errFrom  int        // … from this minute on
	queue    [2]float64 // mean queue time (s) before / from queueFrom
	compute  float64
	queueAt  int
}

func (s stream) at(m int) (phase, bool) {
	for _, p := range s.phases {
		if m >= p.from && m < p.to {
			return p, true
		}
	}
	return phase{}, false
}

// cumulative integrates per-minute increments, restarting at the restarts. The sample at minute
// m holds what was counted during minutes 1..m (a counter scraped at the end of each minute).
func (s stream) cumulative(n int, inc func(p phase, m int) float64) func(int) float64 {
	vals := make([]float64, n)
	total := 0.0
	for m := 0; m < n; m++ {
		for _, r := range s.restarts {
			if m == r {
				total = 0
			}
		}
		if p, ok := s.at(m); ok && m > 0 {
			total += inc(p, m)
		}
		vals[m] = total
	}
	return func(m int) float64 { return vals[m] }
}

func (s stream) write(n int) []series {
	var out []series
	add := func(name string, l map[string]string, f func(int) float64) {
		out = append(out, series{labelText(name, l), samples(n, f)})
	}
	errAt := func(m int) float64 {
		if m >= s.errFrom && s.errShare > 0 {
			return s.errShare
		}
		return 0
	}
	add("inference_requests_total", with(s.labels, "status", "ok"), s.cumulative(n, func(p phase, m int) float64 { return p.perMin * (1 - errAt(m)) }))
	add("inference_requests_total", with(s.labels, "status", "error"), s.cumulative(n, func(p phase, m int) float64 { return p.perMin * errAt(m) }))
	for i, b := range bounds {
		i := i
		add("inference_latency_seconds_bucket", with(s.labels, "le", strconv.FormatFloat(b, 'f', -1, 64)),
			s.cumulative(n, func(p phase, _ int) float64 { return p.perMin * p.d[i] }))
	}
	add("inference_latency_seconds_bucket", with(s.labels, "le", "+Inf"), s.cumulative(n, func(p phase, _ int) float64 { return p.perMin }))
	q := func(m int) float64 {
		if s.queueAt > 0 && m >= s.queueAt {
			return s.queue[1]
		}
		return s.queue[0]
	}
	for _, h := range []struct {
		name string
		mean func(int) float64
	}{{"inference_queue_seconds", q}, {"inference_compute_seconds", func(int) float64 { return s.compute }}} {
		add(h.name+"_count", s.labels, s.cumulative(n, func(p phase, _ int) float64 { return p.perMin }))
		add(h.name+"_sum", s.labels, s.cumulative(n, func(p phase, m int) float64 { return p.perMin * h.mean(m) }))
	}
	return out
}

// instance is one inference server: its process start and the models' load state.
type instance struct {
	name     string
	starts   []int // minutes the process (re)started; the first may be negative
	notReady [][2]int
	models   []string
}

func (in instance) write(n int) []series {
	inst := map[string]string{"instance": in.name, "job": "inference"}
	start := func(m int) float64 {
		s := in.starts[0]
		for _, st := range in.starts {
			if st <= m {
				s = st
			}
		}
		return float64(s * 60)
	}
	out := []series{{labelText("process_start_time_seconds", inst), samples(n, start)}}
	for _, model := range in.models {
		out = append(out, series{labelText("model_loading_status", with(inst, "model_name", model)), samples(n, func(m int) float64 {
			for _, r := range in.notReady {
				if m >= r[0] && m < r[1] {
					return 0
				}
			}
			return 1
		})})
	}
	return out
}

// gpu is one GPU as the probe exports it, on a node.
type gpu struct {
	node   string
	index  int
	util   func(m int) float64 // 0..1
	memory func(m int) float64 // used / total
}

const gpuTotalBytes = 40e9

func (g gpu) write(n int) []series {
	l := map[string]string{"gpu": strconv.Itoa(g.index), "uuid": fmt.Sprintf("GPU-%s-%d", g.node, g.index),
		"instance": g.node + ":9835", "job": "inferscope-probe", "node": g.node}
	return []series{
		{labelText("inferscope_gpu_utilization_ratio", l), samples(n, g.util)},
		{labelText("inferscope_gpu_memory_used_bytes", l), samples(n, func(m int) float64 { return math.Round(g.memory(m) * gpuTotalBytes) })},
		{labelText("inferscope_gpu_memory_total_bytes", l), samples(n, func(int) float64 { return gpuTotalBytes })},
	}
}

func constant(v float64) func(int) float64 { return func(int) float64 { return v } }

func stepAt(at int, before, after float64) func(int) float64 {
	return func(m int) float64 {
		if m >= at {
			return after
		}
		return before
	}
}
