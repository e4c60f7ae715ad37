package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/gpufields"
)

var (
	idleDefaults = derive.DefaultIdleOptions()
	fieldIdleFor = FieldSpec{Name: "idleFor", Label: "Idle for", Kind: KindDuration, Default: idleDefaults.IdleFor, Min: 60, Max: 86400,
		Doc: "How long the GPU's activity must stay at zero (≤ 0.5 %)."}
	fieldQPSFraction = FieldSpec{Name: "qpsFraction", Label: "QPS fraction", Kind: KindNumber, Default: idleDefaults.TrafficFraction, Min: 0.01, Max: 10,
		Doc: "Share of the QPS baseline the node must exceed."}
	gpuIdleSpec = TypeSpec{Name: "gpu_idle_under_traffic", Title: "GPU idle under traffic", Filters: []string{"model", "instance", "gpu"},
		parse: parseGPUIdle, Doc: "1 when a GPU sits idle — zero graphics-engine activity where dcgm-exporter's profiling field is exported, else zero utilisation — while its node serves traffic and its models are ready.",
		Fields: []FieldSpec{fieldIdleFor, fieldQPSFraction}}
)

// The node QPS baseline: the same time of day on the previous days.
const (
	idleBaselineDays   = 7
	idleBaselineWindow = 10 * time.Minute
)

var (
	idleMappings  = []ValueMapping{{Value: 0, Text: "ok", Color: "green"}, {Value: 1, Text: "idle under traffic", Color: "red"}}
	readyMappings = []ValueMapping{{Value: 0, Text: "not ready", Color: "orange"}, {Value: 1, Text: "ready", Color: "green"}}
)

// gpuIdleQuery is the `gpu_idle_under_traffic` type: 1 where a GPU's activity has been zero
// for idleFor while its node's QPS is above qpsFraction of the node's 7-day same-time-of-day
// baseline and the node's models are ready (derive.IdleUnderTraffic), else 0; plus the inputs:
// the activity per GPU, and per node the QPS, its baseline and the readiness.
//
// A GPU's activity is its graphics-engine activity (DCGM_FI_PROF_GR_ENGINE_ACTIVE) where
// dcgm-exporter exports it, else its utilisation: utilisation only says a kernel ran during the
// sample period, and a MIG instance has none (dcgm-exporter writes GPU_UTIL for whole GPUs only).
type gpuIdleQuery struct {
	idleFor     time.Duration
	qpsFraction float64
}

func parseGPUIdle(_ Common, f Fields) (Runner, error) {
	idle, err := fieldIdleFor.duration(f)
	if err != nil {
		return nil, err
	}
	frac, err := fieldQPSFraction.number(f)
	if err != nil {
		return nil, err
	}
	return gpuIdleQuery{idleFor: idle, qpsFraction: frac}, nil
}

// Run evaluates the condition on a grid no coarser than idleFor/5 that starts idleFor before
// the range; an output point is 1 when the condition held anywhere in the step before it, so
// a wide panel still shows a short episode. With the warm-up filter, points where a node's
// inference server is loading or warming up count as not ready.
func (iq gpuIdleQuery) Run(ctx context.Context, x *Exec) error {
	x.gpuModelNotice()
	out := x.outGrid()
	eval, err := x.finerGrid(iq.idleFor, iq.idleFor/5)
	if err != nil {
		return err
	}
	bopt := derive.BaselineOptions{Days: idleBaselineDays, Window: idleBaselineWindow, MinDays: 1}
	histLead := out.start().Sub(time.UnixMilli(bopt.HistoryStart(eval.t[0])))
	hist, err := x.finerGrid(histLead, eval.step)
	if err != nil {
		return err
	}
	// The current QPS and its history use the same window, so they compare like with like.
	window := max(x.rateWindow(), hist.step, eval.step)
	f := x.gpuFilter()
	nodes := f.Nodes()
	histExpr, err := x.nodeRequestRate(nodes, window)
	if err != nil {
		return err
	}
	var (
		utilRaws, engineRaws []gpuRaw
		sig                  nodeSignals
		history              map[string][]float64
	)
	engineMeasured := x.e.gpuMeasured(GPUEngineActive)
	if err := all(ctx,
		func(ctx context.Context) (err error) { utilRaws, err = x.fetchGPU(ctx, GPUUtil, f, eval); return },
		func(ctx context.Context) (err error) {
			if engineMeasured {
				engineRaws, err = x.fetchGPU(ctx, GPUEngineActive, f, eval)
			}
			return
		},
		func(ctx context.Context) (err error) {
			sig, err = x.fetchNodeSignals(ctx, nodes, eval, window, true, window+eval.step)
			return
		},
		func(ctx context.Context) (err error) { history, err = x.byInstance(ctx, histExpr, hist); return },
	); err != nil {
		return err
	}
	util := busyOf(mergeGPU(GPUUtil, utilRaws), mergeGPU(GPUEngineActive, engineRaws))

	nodeNames, baseline, noHistory, err := nodeBaselines(history, nodes, sig, hist, eval, bopt)
	if err != nil {
		return err
	}

	n := 2*len(util.keys) + 2*len(nodeNames)
	if sig.hasReady {
		n += len(nodeNames)
	}
	if n > x.limits.MaxSeries {
		return &LimitError{Msg: fmt.Sprintf("the query would return %d series, more than the limit of %d: select fewer nodes (instance) or GPUs (gpu)", n, x.limits.MaxSeries)}
	}

	idx := lastIndex(eval.t, out.t)
	noServer, err := x.addIdleSeries(iq, util, sig, baseline, eval, out, idx)
	if err != nil {
		return err
	}
	for _, node := range nodeNames {
		l := map[string]string{"node": node}
		x.Add(
			newSeries("qps", node+" QPS", UnitReqPS, l, out.t, sampleAt(sig.qps[node], idx)),
			newSeries("qps_baseline", node+" QPS baseline", UnitReqPS, l, out.t, sampleAt(baseline[node], idx)))
		if sig.hasReady {
			r := newSeries("ready", node+" ready", UnitNone, l, out.t, sampleAt(sig.ready[node], idx))
			r.Mappings, r.Min, r.Max = readyMappings, ptr(0), ptr(1)
			x.Add(r)
		}
	}

	switch {
	case len(util.keys) == 0:
		x.Notice(Info, gpufields.Of(gpufields.Util).NotMeasured()+f.String())
	case len(util.fromEngine) == len(util.keys):
		x.Notice(Info, "a GPU counts as idle when its graphics engine is idle (dcgm-exporter's profiling field): utilisation only says a kernel ran")
	default:
		x.Notice(Info, "idle judged by utilisation, which only says whether a kernel ran, for "+listKeys(util.utilOnly())+
			"; the graphics engine's activity would say how busy the GPU is — "+profilingNotMeasured(GPUEngineActive))
	}
	if len(noServer) > 0 {
		x.Notice(Info, "no inference server's requests found on the node of "+listKeys(noServer)+": the condition cannot hold there")
	}
	if len(noHistory) > 0 {
		x.Notice(Warning, fmt.Sprintf("no QPS history on the previous %d days for %v: without a baseline the condition cannot hold", idleBaselineDays, noHistory))
	}
	return nil
}

// effectiveReady is the node's readiness with warm-up points counted as not ready; an empty
// series (readiness assumed) when the profile has no load state and nothing is warming.
func effectiveReady(sig nodeSignals, node string) derive.Series {
	mask, hasMask := sig.warming[node]
	var v []float64
	switch {
	case sig.hasReady:
		v = slices.Clone(orNaN(sig.ready[node], len(sig.t)))
	case hasMask:
		v = make([]float64, len(sig.t))
		for i := range v {
			v[i] = 1
		}
	default:
		return derive.Series{}
	}
	if hasMask {
		for i := range v {
			if mask[i] != 0 {
				v[i] = 0
			}
		}
	}
	return derive.Series{T: sig.t, V: v}
}

func gpuAllNaN(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}

// nodeBaselines turns the nodes' QPS history into the baseline mean on the evaluation grid,
// for the nodes with requests now (sorted); it also names the nodes without history.
func nodeBaselines(history map[string][]float64, nodes []string, sig nodeSignals, hist, eval gpuGrid, bopt derive.BaselineOptions) ([]string, map[string][]float64, []string, error) {
	histByNode := map[string][]float64{}
	for in, v := range history {
		node := InstanceNode(in)
		if len(nodes) == 0 || slices.Contains(nodes, node) {
			histByNode[node] = sumNaN(histByNode[node], v)
		}
	}
	nodeNames := make([]string, 0, len(sig.qps))
	for node := range sig.qps {
		nodeNames = append(nodeNames, node)
	}
	sort.Strings(nodeNames)
	baseline := map[string][]float64{}
	var noHistory []string
	for _, node := range nodeNames {
		h, ok := histByNode[node]
		if !ok {
			baseline[node] = nanValues(len(eval.t))
			noHistory = append(noHistory, node)
			continue
		}
		b, err := derive.Baseline(derive.Series{T: hist.t, V: h}, eval.t, bopt)
		if err != nil {
			return nil, nil, nil, err
		}
		baseline[node] = b.Mean
		if gpuAllNaN(b.Mean) {
			noHistory = append(noHistory, node)
		}
	}
	return nodeNames, baseline, noHistory, nil
}

// addIdleSeries adds the idle-under-traffic flag and the utilisation of each GPU, and returns
// the GPUs whose node serves no requests.
func (x *Exec) addIdleSeries(iq gpuIdleQuery, util gpuBusy, sig nodeSignals, baseline map[string][]float64, eval, out gpuGrid, idx []int) ([]GPUKey, error) {
	opt := derive.IdleOptions{IdleFor: iq.idleFor, TrafficFraction: iq.qpsFraction}
	var noServer []GPUKey
	for _, k := range util.keys {
		qps, ok := sig.qps[k.Node]
		if !ok {
			noServer = append(noServer, k)
			qps = nanValues(len(eval.t))
		}
		base, ok := baseline[k.Node]
		if !ok {
			base = nanValues(len(eval.t))
		}
		idle, err := derive.IdleUnderTraffic(derive.Series{T: eval.t, V: util.values[k]}, derive.Series{T: eval.t, V: qps},
			derive.Series{T: eval.t, V: base}, effectiveReady(sig, k.Node), opt)
		if err != nil {
			return nil, err
		}
		flag := sampleMax(idle.V, eval.t, out.t, out.step.Milliseconds())
		for i, v := range flag {
			if math.IsNaN(v) {
				flag[i] = 0 // unknown is never true
			}
		}
		s := newSeries("idle_under_traffic", k.String()+" idle under traffic", UnitNone, k.Labels(), out.t, flag)
		s.Mappings, s.Min, s.Max = idleMappings, ptr(0), ptr(1)
		s.Thresholds = []Threshold{{Value: 1, Severity: Critical}}
		m := GPUUtil
		if util.fromEngine[k] {
			m = GPUEngineActive
		}
		x.Add(s, gpuSeries(m, k, out.t, sampleAt(util.values[k], idx)))
	}
	return noServer, nil
}

// gpuBusy is each GPU's activity: graphics-engine activity where exported, else utilisation.
type gpuBusy struct {
	gpuValues
	fromEngine map[GPUKey]bool
}

// busyOf takes, per GPU, its graphics-engine activity where it has any value, else its
// utilisation. The keys are both sets', in order.
func busyOf(util, engine gpuValues) gpuBusy {
	out := gpuBusy{fromEngine: map[GPUKey]bool{}}
	for _, k := range engine.keys {
		if !gpuAllNaN(engine.values[k]) {
			out.add(k, engine.namings[k][0], engine.values[k])
			out.fromEngine[k] = true
		}
	}
	for _, k := range util.keys {
		if !out.fromEngine[k] {
			out.add(k, util.namings[k][0], util.values[k])
		}
	}
	sort.SliceStable(out.keys, func(i, j int) bool { return out.keys[i].less(out.keys[j]) })
	return out
}

// utilOnly lists the GPUs read from utilisation.
func (b gpuBusy) utilOnly() []GPUKey {
	var out []GPUKey
	for _, k := range b.keys {
		if !b.fromEngine[k] {
			out = append(out, k)
		}
	}
	return out
}
