package engine

// What the inference servers on a GPU's node say: request rate, readiness and restarts,
// combined per node. The instance filter selects nodes here too, so an instance value
// "node-a:8000" and a node name "node-a" select the same servers.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// nodeSignals are per-node inference signals on one grid.
type nodeSignals struct {
	t        []int64
	qps      map[string][]float64 // sum of the node's instances' request rates
	ready    map[string][]float64 // min of the node's load states (nil without a load-state role)
	hasReady bool
	warming  map[string]derive.Mask // OR of the node's instances' warm-up masks
}

// nodeMatchers are the query's model/version filters for a metric of scope sc, the measure's
// fixed matchers and the node pattern on the instance label.
func (x *Exec) nodeMatchers(sc scope, fixed map[string]string, nodes []string) []prom.Matcher {
	var ms []prom.Matcher
	if len(x.q.Model) > 0 && x.modelLabel != "" && sc <= scopeModel {
		ms = append(ms, valuesMatcher(x.modelLabel, x.q.Model))
	}
	if len(x.q.Version) > 0 && x.versionLabel != "" && sc == scopeModelVersion {
		ms = append(ms, valuesMatcher(x.versionLabel, x.q.Version))
	}
	if len(nodes) > 0 {
		ms = append(ms, prom.Regex(x.instanceLabel, nodeInstancePattern(nodes)))
	}
	ms = append(ms, prom.EqAll(fixed)...)
	return ms
}

// nodeRequestRate is the request rate per inference instance on the nodes.
func (x *Exec) nodeRequestRate(nodes []string, window time.Duration) (string, error) {
	m, ok, why := x.resolve(profile.Requests)
	if !ok {
		return "", fmt.Errorf("the node QPS is needed and the %s profile cannot give it: %s", x.prof.Name, why)
	}
	if m.Kind != profile.Counter {
		return "", fmt.Errorf("the %s profile measures requests as a %s, not a counter", x.prof.Name, m.Kind)
	}
	return x.sumRate(m.Metrics, x.nodeMatchers(scopeModelVersion, m.Matchers, nodes), []string{x.instanceLabel}, window, 0)
}

// byInstance reads expr on g and indexes its series by instance.
func (x *Exec) byInstance(ctx context.Context, expr string, g gpuGrid) (map[string][]float64, error) {
	series, values, err := x.rangeOn(ctx, expr, g)
	if err != nil {
		return nil, err
	}
	by := map[string][]float64{}
	for i, s := range series {
		in := s.Labels[x.instanceLabel]
		if cur, ok := by[in]; ok {
			fillNaN(cur, values[i])
		} else {
			by[in] = values[i]
		}
	}
	return by, nil
}

// fetchNodeSignals reads, on grid g, the request rates (over rateWindow; when withQPS or for
// warm-up), load states and, with the warm-up filter, process starts of the inference
// instances on nodes (all when empty), and combines them per node. widen extends each warm-up
// mask past its last point (a rate still holds warm-up requests one window later).
func (x *Exec) fetchNodeSignals(ctx context.Context, nodes []string, g gpuGrid, rateWindow time.Duration, withQPS bool, widen time.Duration) (nodeSignals, error) {
	warm := x.q.WarmupFilter
	il := x.instanceLabel
	var qpsExpr, readyExpr, startExpr, resetsExpr string
	reqM, hasReq, _ := x.resolve(profile.Requests)
	if withQPS || (warm && hasReq) {
		var err error
		if qpsExpr, err = x.nodeRequestRate(nodes, rateWindow); err != nil {
			return nodeSignals{}, err
		}
	}
	loadM, hasLoad, loadWhy := x.resolve(profile.LoadState)
	if hasLoad {
		sel, err := selector(loadM.Metrics, x.nodeMatchers(scopeModel, loadM.Matchers, nodes))
		if err != nil {
			return nodeSignals{}, err
		}
		if readyExpr, err = aggregate("min", []string{il}, sel); err != nil {
			return nodeSignals{}, err
		}
	} else {
		x.Notice(Info, fmt.Sprintf("%s: the model's readiness is unknown (%s); it is assumed ready", x.prof.Title, loadWhy))
	}
	if warm && hasReq {
		var err error
		if resetsExpr, startExpr, err = x.nodeRestartExprs(reqM, nodes, rateWindow); err != nil {
			return nodeSignals{}, err
		}
	}

	var qps, ready, start, resets map[string][]float64
	var fns []func(context.Context) error
	for _, j := range []struct {
		expr string
		dst  *map[string][]float64
	}{{qpsExpr, &qps}, {readyExpr, &ready}, {startExpr, &start}, {resetsExpr, &resets}} {
		if j.expr == "" {
			continue
		}
		fns = append(fns, func(ctx context.Context) (err error) { *j.dst, err = x.byInstance(ctx, j.expr, g); return })
	}
	if len(fns) > 0 {
		if err := all(ctx, fns...); err != nil {
			return nodeSignals{}, err
		}
	}

	sig := nodeSignals{t: g.t, qps: map[string][]float64{}, hasReady: hasLoad, warming: map[string]derive.Mask{}}
	if hasLoad {
		sig.ready = map[string][]float64{}
	}
	seen := map[string]bool{}
	var instances []string
	for _, m := range []map[string][]float64{qps, ready, start, resets} {
		for in := range m {
			if !seen[in] {
				seen[in] = true
				instances = append(instances, in)
			}
		}
	}
	sort.Strings(instances)
	for _, in := range instances {
		node := InstanceNode(in)
		if len(nodes) > 0 && !slices.Contains(nodes, node) {
			continue // the pattern selects a superset
		}
		if withQPS {
			if v, ok := qps[in]; ok {
				sig.qps[node] = sumNaN(sig.qps[node], v)
			} else if _, seen := sig.qps[node]; !seen {
				sig.qps[node] = nanValues(len(g.t))
			}
		}
		if hasLoad {
			sig.ready[node] = minNaN(sig.ready[node], orNaN(ready[in], len(g.t)))
		}
		if !warm {
			continue
		}
		mask, err := x.instanceWarmup(in, g, widen, ready[in], start[in], qps[in], resets[in])
		if err != nil {
			return nodeSignals{}, err
		}
		x.recordWarmup(in, "", mask, g.t)
		if cur, ok := sig.warming[node]; ok {
			for i := range cur {
				cur[i] |= mask[i]
			}
		} else {
			sig.warming[node] = mask
		}
	}
	return sig, nil
}

// nodeRestartExprs are the restart signals of the nodes' inference servers: their counter
// resets and, where the profile has one, their process start time.
func (x *Exec) nodeRestartExprs(reqM profile.Measure, nodes []string, rateWindow time.Duration) (resets, startExpr string, err error) {
	il := x.instanceLabel
	// Counter resets show restarts of servers without a process start time (Triton,
	// TorchServe, TGI).
	reqMatchers := x.nodeMatchers(scopeModelVersion, reqM.Matchers, nodes)
	reqSel, err := selector(reqM.Metrics, reqMatchers)
	if err != nil {
		return "", "", err
	}
	if resets, err = sumOverRange("resets", reqM.Metrics, reqMatchers, []string{il}, rateWindow, 0); err != nil {
		return "", "", err
	}
	if startM, ok, _ := x.resolve(profile.ProcessStart); ok {
		sel, err := selector(startM.Metrics, x.nodeMatchers(scopeInstance, startM.Matchers, nodes))
		if err != nil {
			return "", "", err
		}
		start, err := aggregate("max", []string{il}, sel)
		if err != nil {
			return "", "", err
		}
		present, err := aggregate("group", []string{il}, reqSel)
		if err != nil {
			return "", "", err
		}
		// Only the inference servers' processes: a probe on the same node has its own.
		startExpr = start + " and on (" + il + ") " + present
	}
	return resets, startExpr, nil
}

// instanceWarmup is an instance's warm-up mask from its readiness, start time, presence and
// counter resets, widened by widen.
func (x *Exec) instanceWarmup(in string, g gpuGrid, widen time.Duration, ready, start, presence, resets []float64) (derive.Mask, error) {
	var resetAt []int64
	if resets != nil {
		resetAt = risingEdges(derive.Series{T: g.t, V: resets})
	}
	mask, err := derive.WarmupMask(g.t, derive.InstanceSignals{
		Ready: gridSeries(g.t, ready), StartTime: gridSeries(g.t, start), Presence: gridSeries(g.t, presence), Resets: resetAt,
	}, x.warmupWindow())
	if err != nil {
		return nil, fmt.Errorf("warm-up mask of %s: %w", in, err)
	}
	return widenMask(mask, g.t, widen.Milliseconds()), nil
}

func gridSeries(t []int64, v []float64) derive.Series {
	if v == nil {
		return derive.Series{}
	}
	return derive.Series{T: t, V: v}
}

func orNaN(v []float64, n int) []float64 {
	if v == nil {
		return nanValues(n)
	}
	return v
}

// sumNaN adds b to a point by point; NaN only where both are NaN.
func sumNaN(a, b []float64) []float64 {
	if a == nil {
		return slices.Clone(b)
	}
	for i, v := range b {
		switch {
		case math.IsNaN(v):
		case math.IsNaN(a[i]):
			a[i] = v
		default:
			a[i] += v
		}
	}
	return a
}

// minNaN is the point-wise minimum, ignoring NaN.
func minNaN(a, b []float64) []float64 {
	if a == nil {
		return slices.Clone(b)
	}
	for i, v := range b {
		if !math.IsNaN(v) && (math.IsNaN(a[i]) || v < a[i]) {
			a[i] = v
		}
	}
	return a
}

const maxListed = 5

func listKeys(keys []GPUKey) string {
	parts := make([]string, 0, min(len(keys), maxListed+1))
	for i, k := range keys {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(keys)-maxListed))
			break
		}
		parts = append(parts, k.String())
	}
	return strings.Join(parts, ", ")
}

// Mapping a finer evaluation grid back onto the output grid.

// lastIndex maps each output time to the index of the latest source time at or before it
// (-1 when none).
func lastIndex(src, out []int64) []int {
	idx := make([]int, len(out))
	j := -1
	for i, t := range out {
		for j+1 < len(src) && src[j+1] <= t {
			j++
		}
		idx[i] = j
	}
	return idx
}

func sampleAt(v []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for i, j := range idx {
		if j < 0 {
			out[i] = math.NaN()
		} else {
			out[i] = v[j]
		}
	}
	return out
}

// sampleMax is the maximum of v over (t − step, t] for each output time t, so a condition that
// held between two output points still shows.
func sampleMax(v []float64, src, out []int64, step int64) []float64 {
	res := make([]float64, len(out))
	lo := 0
	for i, t := range out {
		for lo < len(src) && src[lo] <= t-step {
			lo++
		}
		m := math.NaN()
		for j := lo; j < len(src) && src[j] <= t; j++ {
			if !math.IsNaN(v[j]) && (math.IsNaN(m) || v[j] > m) {
				m = v[j]
			}
		}
		res[i] = m
	}
	return res
}
