package engine

// GPU series from Prometheus. Two namings are understood and may coexist: the Inferscope
// probe's (inferscope_gpu_*, base units, labels gpu and uuid) and dcgm-exporter's
// (DCGM_FI_DEV_*, percent and MiB, labels gpu, UUID, modelName, Hostname). Both are read by
// one selector per measurement, so no round trip is spent finding out which exists.
//
// GPU ↔ inference-instance join: an inference instance's node is its instance label without
// the port; a GPU series' node is its `node` label, else `Hostname`, else `hostname`, else its
// `instance` without the port. The `instance` filter of the GPU types selects by node.

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/prom"
)

var (
	fieldGPUMetrics = FieldSpec{Name: "metrics", Label: "Metrics", Kind: KindChoices, DefaultText: "all", Allowed: gpuMetricNames(),
		Doc: "Which measurements; also the series names."}
	gpuSpec = TypeSpec{Name: "gpu", Title: "GPU", Filters: gpuSelection, Profile: ProfileOptional, parse: parseGPU,
		Doc:    "Per-GPU utilisation, graphics-engine, tensor-pipe and memory-interface activity (dcgm-exporter's profiling fields, \"not measured\" where not exported), memory used (85 % / 92 % lines), temperature and power from Prometheus.",
		Fields: []FieldSpec{fieldGPUMetrics, fieldKVCacheMemory}}
)

func gpuMetricNames() []string {
	out := make([]string, len(AllGPUMetrics))
	for i, m := range AllGPUMetrics {
		out[i] = string(m)
	}
	return out
}

// Units of result series: Grafana's unit ids, which other consumers (the command line) can
// map as they like.
const (
	UnitSeconds     = "s"
	UnitPercentUnit = "percentunit" // a ratio 0..1 shown as percent
	UnitPercent     = "percent"     // 0..100
	UnitReqPS       = "reqps"
	UnitNone        = "none"
	UnitCelsius     = "celsius"
	UnitWatt        = "watt"
	UnitBytes       = "bytes"
)

// GPUMetric names one per-GPU measurement of the `gpu` query type.
type GPUMetric string

// The measurements of the `gpu` query type (its `metrics` option); also the series names.
const (
	GPUUtil        GPUMetric = "util"        // utilisation, ratio 0..1: the share of time a kernel ran
	GPUMemory      GPUMetric = "memory"      // memory used / total, ratio 0..1
	GPUTemperature GPUMetric = "temperature" // °C
	GPUPower       GPUMetric = "power"       // W
	// The profiling (DCP) fields of dcgm-exporter, ratios 0..1: how busy the GPU really is.
	// Decode is memory-bound: a GPU can run a kernel all the time (util 100 %) with its engines
	// mostly waiting on memory; and on a MIG instance GPU_UTIL is not exported at all.
	GPUEngineActive GPUMetric = "engine_active" // graphics/compute engine active
	GPUTensorActive GPUMetric = "tensor_active" // tensor pipe active
	GPUDRAMActive   GPUMetric = "dram_active"   // memory interface active
)

// AllGPUMetrics lists the measurements in their display order.
var AllGPUMetrics = []GPUMetric{GPUUtil, GPUEngineActive, GPUTensorActive, GPUDRAMActive, GPUMemory, GPUTemperature, GPUPower}

// gpuProfiling are the activity measurements of dcgm-exporter's profiling fields and of the
// probe's GPU performance monitor (Hopper and later): where
// Prometheus lists none of their names they are not queried and read "not measured".
var gpuProfiling = map[GPUMetric]gpufields.Signal{
	GPUEngineActive: gpufields.EngineActive, GPUTensorActive: gpufields.TensorActive, GPUDRAMActive: gpufields.DRAMActive,
}

// profilingNotMeasured says why a profiling measurement has no value.
func profilingNotMeasured(m GPUMetric) string {
	return gpufields.Of(gpuProfiling[m]).NotMeasured() +
		" (dcgm-exporter's profiling fields, in its default counters file from 4.x on data-center GPUs; the Inferscope probe on Hopper and later GPUs; Triton does not read them)"
}

// GPU memory thresholds of the brief: warn above 85 %, urgent above 92 %.
const (
	GPUMemoryWarn = 0.85
	GPUMemoryCrit = 0.92
)

var gpuMemoryThresholds = []Threshold{{Value: GPUMemoryWarn, Severity: Warning}, {Value: GPUMemoryCrit, Severity: Critical}}

// ParseGPUMetrics validates a `metrics` option; empty means all.
func ParseGPUMetrics(names []string) ([]GPUMetric, error) {
	if len(names) == 0 {
		return AllGPUMetrics, nil
	}
	var out []GPUMetric
	for _, n := range names {
		m := GPUMetric(strings.TrimSpace(n))
		if !slices.Contains(AllGPUMetrics, m) {
			return nil, fieldErr("metrics", "holds %q: use %s", clip.Text(n, 40), strings.Join(gpuMetricNames(), ", "))
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		return slices.Index(AllGPUMetrics, out[i]) < slices.Index(AllGPUMetrics, out[j])
	})
	return out, nil
}

// GPUFilter selects GPUs. Instances are inference instances ("node-a:8000") or node names
// ("node-a"): each is reduced to its node and compared with the GPU series' node (GPUNode).
// Empty fields select everything.
type GPUFilter struct {
	Instances []string
	GPUs      []string
}

// Nodes returns the filter's node names, de-duplicated.
func (f GPUFilter) Nodes() []string {
	var out []string
	for _, in := range f.Instances {
		if n := InstanceNode(in); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func (f GPUFilter) matchNode(node string) bool {
	nodes := f.Nodes()
	return len(nodes) == 0 || slices.Contains(nodes, node)
}

func (f GPUFilter) match(k GPUKey) bool {
	return f.matchNode(k.Node) && (len(f.GPUs) == 0 || slices.Contains(f.GPUs, k.GPU))
}

func (f GPUFilter) String() string {
	var parts []string
	if nodes := f.Nodes(); len(nodes) > 0 {
		parts = append(parts, "node "+strings.Join(nodes, ", "))
	}
	if len(f.GPUs) > 0 {
		parts = append(parts, "gpu "+strings.Join(f.GPUs, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// gpuFilter is the query's selection as a GPU filter.
func (x *Exec) gpuFilter() GPUFilter {
	return GPUFilter{Instances: x.q.Instance, GPUs: x.q.GPU}
}

// InstanceNode is the node of an inference instance: its instance label without the port
// ("node-a:8000" → "node-a", "[fe80::1]:8000" → "fe80::1").
func InstanceNode(instance string) string {
	instance = strings.TrimSpace(instance)
	if host, _, err := net.SplitHostPort(instance); err == nil {
		return host
	}
	return strings.TrimSuffix(strings.TrimPrefix(instance, "["), "]")
}

// GPUNode is the node of a GPU series: its `node` label if present, else `Hostname`
// (dcgm-exporter), else `hostname`, else its `instance` without the port.
func GPUNode(labels map[string]string) string {
	for _, l := range []string{"node", "Hostname", "hostname"} {
		if v := labels[l]; v != "" {
			return v
		}
	}
	return InstanceNode(labels["instance"])
}

// GPUKey identifies one GPU (or MIG device) across namings and label churn.
type GPUKey struct {
	Node, GPU string
	MIG       string // MIG GPU instance id; "" for a whole GPU
}

func gpuKeyOf(l prom.Labels) (GPUKey, bool) {
	g := l["gpu"]
	if g == "" {
		g = l["gpu_uuid"] // Triton's nv_gpu_* name a GPU by its UUID alone
	}
	if g == "" {
		return GPUKey{}, false
	}
	mig := l["gpu_instance"]
	if mig == "" {
		mig = l["GPU_I_ID"]
	}
	return GPUKey{Node: GPUNode(l), GPU: g, MIG: mig}, true
}

// Labels are the key as series labels: node, gpu and, for a MIG device, mig.
func (k GPUKey) Labels() map[string]string {
	l := map[string]string{"node": k.Node, "gpu": k.GPU}
	if k.MIG != "" {
		l["mig"] = k.MIG
	}
	return l
}

func (k GPUKey) String() string {
	s := k.Node + " GPU " + k.GPU
	if k.MIG != "" {
		s += " MIG " + k.MIG
	}
	return s
}

func (k GPUKey) less(o GPUKey) bool {
	if k.Node != o.Node {
		return k.Node < o.Node
	}
	if k.GPU != o.GPU {
		return naturalLess(k.GPU, o.GPU)
	}
	return naturalLess(k.MIG, o.MIG)
}

// naturalLess orders "2" before "10".
func naturalLess(a, b string) bool {
	if len(a) != len(b) && isDigits(a) && isDigits(b) {
		return len(a) < len(b)
	}
	return a < b
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Namings and the parts a measurement is made of.
type gpuNaming int

const (
	namingProbe gpuNaming = iota // preferred where several report a GPU
	namingDCGM
	namingTriton // Triton's own nv_gpu_*: read only for nodes no GPU exporter reports
)

var namingOf = map[gpufields.Exporter]gpuNaming{
	gpufields.Probe: namingProbe, gpufields.DCGM: namingDCGM, gpufields.Triton: namingTriton,
}

type gpuPart int

const (
	partValue gpuPart = iota
	partUsed
	partTotal
	partFree
	partReserved
)

type gpuSource struct {
	metric string
	naming gpuNaming
	part   gpuPart
	scale  float64 // to the output unit (bytes for memory parts)
}

// gpuSources are the names each measurement is read under: every name of the signal in
// pkg/gpufields, whatever the exporter and its version, with its scale to the base unit.
var gpuSources = map[GPUMetric][]gpuSource{
	GPUUtil: sourcesOf(partSignal{partValue, gpufields.Util}),
	GPUMemory: sourcesOf(partSignal{partUsed, gpufields.MemUsed}, partSignal{partTotal, gpufields.MemTotal},
		partSignal{partFree, gpufields.MemFree}, partSignal{partReserved, gpufields.MemReserved}),
	GPUTemperature:  sourcesOf(partSignal{partValue, gpufields.Temperature}),
	GPUPower:        sourcesOf(partSignal{partValue, gpufields.Power}),
	GPUEngineActive: sourcesOf(partSignal{partValue, gpufields.EngineActive}),
	GPUTensorActive: sourcesOf(partSignal{partValue, gpufields.TensorActive}),
	GPUDRAMActive:   sourcesOf(partSignal{partValue, gpufields.DRAMActive}),
}

type partSignal struct {
	part   gpuPart
	signal gpufields.Signal
}

func sourcesOf(parts ...partSignal) []gpuSource {
	var out []gpuSource
	for _, p := range parts {
		for _, n := range gpufields.Of(p.signal).Names {
			out = append(out, gpuSource{metric: n.Metric, naming: namingOf[n.Exporter], part: p.part, scale: n.Scale})
		}
	}
	return out
}

// presentSources are the measurement's names that Prometheus lists (all of them when the names
// are not known, or none is listed: the query then finds nothing and says so).
func (e *Engine) presentSources(m GPUMetric) []gpuSource {
	if e.Present == nil {
		return gpuSources[m]
	}
	var out []gpuSource
	for _, s := range gpuSources[m] {
		if e.Present[s.metric] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return gpuSources[m]
	}
	return out
}

// gpuMeasured reports whether a measurement may have series: always, but for a profiling
// measurement whose names Prometheus is known not to list.
func (e *Engine) gpuMeasured(m GPUMetric) bool {
	if _, ok := gpuProfiling[m]; !ok || e.Present == nil {
		return true
	}
	for _, s := range gpuSources[m] {
		if e.Present[s.metric] {
			return true
		}
	}
	return false
}

func sourceByMetric(sources []gpuSource, name string) (gpuSource, bool) {
	for _, s := range sources {
		if s.metric == name {
			return s, true
		}
	}
	return gpuSource{}, false
}

// gpuSelector selects the sources' series of the filter's GPUs. A node filter becomes one arm
// per label the node may come from; the arms select a superset, which the caller narrows with
// the exact rule of GPUNode.
func gpuSelector(sources []gpuSource, f GPUFilter) (string, error) {
	arms, err := gpuSelectorArms(sources, f)
	return strings.Join(arms, " or "), err
}

// gpuSelectorArms are gpuSelector's arms, each a series selector (the label values API takes
// them as its match[] list).
func gpuSelectorArms(sources []gpuSource, f GPUFilter) ([]string, error) {
	names := make([]string, len(sources))
	for i, s := range sources {
		names[i] = s.metric
	}
	base := []prom.Matcher{prom.In("__name__", names...)}
	if len(f.GPUs) > 0 {
		base = append(base, prom.In("gpu", f.GPUs...))
	}
	nodes := f.Nodes()
	if len(nodes) == 0 {
		sel, err := prom.Selector("", base...)
		return []string{sel}, err
	}
	var arms []string
	for _, l := range []string{"node", "Hostname", "hostname"} {
		sel, err := prom.Selector("", append(slices.Clone(base), prom.In(l, nodes...))...)
		if err != nil {
			return nil, err
		}
		arms = append(arms, sel)
	}
	sel, err := prom.Selector("", append(slices.Clone(base), prom.Regex("instance", nodeInstancePattern(nodes)))...)
	if err != nil {
		return nil, err
	}
	return append(arms, sel), nil
}

// nodeInstancePattern matches an instance label whose host is one of nodes, with or without
// a port. Node names are regex-escaped.
func nodeInstancePattern(nodes []string) string {
	alts := make([]string, 0, len(nodes))
	for _, n := range nodes {
		alts = append(alts, prom.RegexEscape(n))
		if strings.Contains(n, ":") { // IPv6 literal: bracketed when a port follows
			alts = append(alts, `\[`+prom.RegexEscape(n)+`\]`)
		}
	}
	slices.Sort(alts)
	return "(?:" + strings.Join(slices.Compact(alts), "|") + ")(?::[0-9]+)?"
}

// gpuGrid is a grid a GPU type fetches on; its step may be finer than the output's.
type gpuGrid struct {
	t    []int64
	step time.Duration
}

func (g gpuGrid) start() time.Time { return time.UnixMilli(g.t[0]).UTC() }
func (g gpuGrid) end() time.Time   { return time.UnixMilli(g.t[len(g.t)-1]).UTC() }

// outGrid is the query's output grid.
func (x *Exec) outGrid() gpuGrid {
	t, step := x.Grid()
	return gpuGrid{t: t, step: step}
}

// finerGrid is a grid covering lead before the output range up to its end, with a step no
// coarser than fine (nor than the output step), widened only as far as the point limit
// demands. Its points are multiples of its step.
func (x *Exec) finerGrid(lead, fine time.Duration) (gpuGrid, error) {
	out := x.outGrid()
	step := min(out.step, fine)
	start := out.start().Add(-lead)
	step = prom.StepFor(start, out.end(), step, min(x.limits.MaxPoints, prometheusMaxPoints))
	if step > time.Second && step%time.Second != 0 {
		step = step.Truncate(time.Second) + time.Second
	}
	ms := step.Milliseconds()
	s := start.UnixMilli()
	s -= ((s % ms) + ms) % ms
	t, err := derive.Grid(s, out.t[len(out.t)-1], ms)
	if err != nil {
		return gpuGrid{}, err
	}
	return gpuGrid{t: t, step: step}, nil
}

// rangeOn runs one range query on grid g and places its series on g. The samples limit bounds
// the series it may return.
func (x *Exec) rangeOn(ctx context.Context, expr string, g gpuGrid) ([]prom.Series, [][]float64, error) {
	maxSeries := max(1, x.limits.MaxSamples/len(g.t))
	x.executed(expr)
	// Decoded straight onto the grid, which is the query's own (its start plus whole steps):
	// no list of points is made to be lined up after.
	onGrid := g.step%time.Millisecond == 0
	res, err := x.e.Prom.QueryRange(ctx, prom.RangeQuery{Expr: expr, Start: g.start(), End: g.end(), Step: g.step, MaxSeries: maxSeries, OnGrid: onGrid})
	if err != nil {
		if prom.KindOf(err) == prom.KindLimit {
			return nil, nil, &LimitError{Msg: fmt.Sprintf("%s; at %d points per series that is more than the limit of %d samples per query: select fewer nodes or GPUs, shorten the range or raise the step",
				err.Error(), len(g.t), x.limits.MaxSamples)}
		}
		return nil, nil, err
	}
	x.promAnnotations("Prometheus: ", res.Warnings, res.Infos)
	values := make([][]float64, len(res.Series))
	for i, s := range res.Series {
		if onGrid {
			values[i] = s.Values
		} else {
			values[i] = alignPoints(s.Points, g.t)
		}
	}
	return res.Series, values, nil
}

// alignPoints places range-query points on the grid t (NaN where none); a query decoded on its
// grid (OnGrid) needs none of it.
func alignPoints(points []prom.Point, t []int64) []float64 {
	s := derive.Series{T: make([]int64, len(points)), V: make([]float64, len(points))}
	for i, p := range points {
		s.T[i], s.V[i] = p.T.UnixMilli(), p.V
	}
	return derive.Align(s, t).V
}

// gpuRaw is one fetched series on the grid.
type gpuRaw struct {
	key    GPUKey
	src    gpuSource
	series prom.Labels // for a stable order among duplicates
	v      []float64
}

// fetchGPU reads one measurement's series (both namings) of the filter's GPUs on grid g.
func (x *Exec) fetchGPU(ctx context.Context, m GPUMetric, f GPUFilter, g gpuGrid) ([]gpuRaw, error) {
	sources := x.e.presentSources(m)
	expr, err := gpuSelector(sources, f)
	if err != nil {
		return nil, err
	}
	series, values, err := x.rangeOn(ctx, expr, g)
	if err != nil {
		return nil, err
	}
	raws := make([]gpuRaw, 0, len(series))
	unlabelled := 0
	for i, s := range series {
		src, ok := sourceByMetric(sources, s.Labels["__name__"])
		if !ok {
			continue
		}
		key, ok := gpuKeyOf(s.Labels)
		if !ok {
			unlabelled++
			continue
		}
		if !f.match(key) {
			continue
		}
		raws = append(raws, gpuRaw{key: key, src: src, series: s.Labels, v: values[i]})
	}
	if unlabelled > 0 {
		x.Notice(Warning, fmt.Sprintf("%d GPU series without a gpu label were left out", unlabelled))
	}
	raws = withoutTritonDuplicates(raws)
	sort.Slice(raws, func(i, j int) bool {
		a, b := raws[i], raws[j]
		if a.key != b.key {
			return a.key.less(b.key)
		}
		if a.src.naming != b.src.naming {
			return a.src.naming < b.src.naming
		}
		// By name, then (a GPU's series of one name, its pod label changed) by all labels,
		// written only for those: the order the label text would give, at a fraction of it.
		if a.src.metric != b.src.metric {
			return a.src.metric < b.src.metric
		}
		return a.series.String() < b.series.String()
	})
	return raws, nil
}

// withoutTritonDuplicates drops Triton's own GPU series on nodes a GPU exporter (the probe or
// dcgm-exporter) reports: Triton keys GPUs by UUID, the exporters by index, so both would show
// the same GPU twice. Triton's serve the nodes no exporter watches.
func withoutTritonDuplicates(raws []gpuRaw) []gpuRaw {
	exported := map[string]bool{}
	for _, r := range raws {
		if r.src.naming != namingTriton {
			exported[r.key.Node] = true
		}
	}
	return slices.DeleteFunc(raws, func(r gpuRaw) bool { return r.src.naming == namingTriton && exported[r.key.Node] })
}

// gpuValues are one measurement per GPU on a grid, merged across namings and duplicates.
type gpuValues struct {
	keys    []GPUKey
	values  map[GPUKey][]float64
	namings map[GPUKey][]gpuNaming
}

func (g *gpuValues) add(k GPUKey, n gpuNaming, v []float64) {
	g.addOwned(k, n, v, false)
}

// addOwned is add; with owned, v is the caller's to give and is kept as it is, not copied.
func (g *gpuValues) addOwned(k GPUKey, n gpuNaming, v []float64, owned bool) {
	if g.values == nil {
		g.values, g.namings = map[GPUKey][]float64{}, map[GPUKey][]gpuNaming{}
	}
	cur, ok := g.values[k]
	if !ok {
		g.keys = append(g.keys, k)
		if !owned {
			v = slices.Clone(v)
		}
		g.values[k] = v
		g.namings[k] = []gpuNaming{n}
		return
	}
	if !slices.Contains(g.namings[k], n) {
		g.namings[k] = append(g.namings[k], n)
	}
	fillNaN(cur, v)
}

// fillNaN fills dst's gaps from src: the first series of a GPU (preferred naming, then label
// order) wins where it has a value; later ones (a pod label that changed, the other naming)
// fill in where it has none.
func fillNaN(dst, src []float64) {
	for i, v := range src {
		if math.IsNaN(dst[i]) {
			dst[i] = v
		}
	}
}

// mergeGPU turns the raw series of one measurement into one value series per GPU. It scales
// the raws' values in place and keeps them: the raws are not to be read after.
func mergeGPU(m GPUMetric, raws []gpuRaw) gpuValues {
	var out gpuValues
	if m != GPUMemory {
		for _, r := range raws {
			out.addOwned(r.key, r.src.naming, scaleInPlace(r.v, r.src.scale), true)
		}
		return out
	}
	// Memory: per GPU and naming gather the parts, then used / total, or for dcgm-exporter
	// without FB_TOTAL used / (used + free + reserved).
	type gk struct {
		k GPUKey
		n gpuNaming
	}
	parts := map[gk]*[partReserved + 1][]float64{}
	var order []gk
	for _, r := range raws {
		id := gk{r.key, r.src.naming}
		p, ok := parts[id]
		if !ok {
			p = new([partReserved + 1][]float64)
			parts[id] = p
			order = append(order, id)
		}
		v := scaleInPlace(r.v, r.src.scale)
		if cur := p[r.src.part]; cur != nil {
			fillNaN(cur, v)
		} else {
			p[r.src.part] = v
		}
	}
	for _, id := range order {
		p := parts[id]
		used := p[partUsed]
		if used == nil {
			continue
		}
		// The ratio takes the used part's place: that slice is this GPU's alone (a raw's,
		// given up to the merge), and each value is read before it is written.
		for i := range used {
			used[i] = gpufields.MemoryRatio(used[i], valueAt(p[partTotal], i), valueAt(p[partFree], i), valueAt(p[partReserved], i))
		}
		out.addOwned(id.k, id.n, used, true)
	}
	return out
}

func valueAt(v []float64, i int) float64 {
	if v == nil {
		return math.NaN()
	}
	return v[i]
}

// scaleInPlace multiplies v by k (a scale of 1 leaves it as it is) and returns it.
func scaleInPlace(v []float64, k float64) []float64 {
	if k == 1 {
		return v
	}
	for i, x := range v {
		v[i] = x * k
	}
	return v
}

// gpuModelNotice says that model and version do not select GPU series.
func (x *Exec) gpuModelNotice() {
	if len(x.q.Model) > 0 || len(x.q.Version) > 0 {
		x.Notice(Info, "GPU series carry no model or version label: the model and version filters do not apply to them")
	}
}

// gpuQuery is the `gpu` type: per GPU utilisation, memory used / total (with the 85 % and
// 92 % thresholds), temperature and power, one range query per measurement.
type gpuQuery struct {
	metrics       []GPUMetric
	kvCacheMemory bool
}

func parseGPU(_ Common, f Fields) (Runner, error) {
	names, err := f.Values(fieldGPUMetrics.Name)
	if err != nil {
		return nil, err
	}
	ms, err := ParseGPUMetrics(names)
	if err != nil {
		return nil, err
	}
	kv, err := f.Bool(fieldKVCacheMemory.Name, false)
	if err != nil {
		return nil, err
	}
	return gpuQuery{metrics: ms, kvCacheMemory: kv}, nil
}

var gpuMetricTitle = map[GPUMetric]string{
	GPUUtil: "utilization", GPUMemory: "memory used", GPUTemperature: "temperature", GPUPower: "power",
	GPUEngineActive: "graphics engine active", GPUTensorActive: "tensor pipe active", GPUDRAMActive: "memory interface active",
}

var gpuMetricUnit = map[GPUMetric]string{
	GPUUtil: UnitPercentUnit, GPUMemory: UnitPercentUnit, GPUTemperature: UnitCelsius, GPUPower: UnitWatt,
	GPUEngineActive: UnitPercentUnit, GPUTensorActive: UnitPercentUnit, GPUDRAMActive: UnitPercentUnit,
}

func (gq gpuQuery) Run(ctx context.Context, x *Exec) error {
	x.gpuModelNotice()
	g := x.outGrid()
	f := x.gpuFilter()
	vals := make([]gpuValues, len(gq.metrics))
	err := parallel(ctx, len(gq.metrics), func(ctx context.Context, i int) error {
		if !x.e.gpuMeasured(gq.metrics[i]) {
			return nil
		}
		raws, err := x.fetchGPU(ctx, gq.metrics[i], f, g)
		if err != nil {
			return err
		}
		vals[i] = mergeGPU(gq.metrics[i], raws)
		if gq.metrics[i] == GPUMemory && gq.kvCacheMemory {
			return x.kvCacheMemory(ctx, g, &vals[i])
		}
		return nil
	})
	if err != nil {
		return err
	}
	namings := map[gpuNaming]bool{}
	n := 0
	for i, m := range gq.metrics {
		if _, prof := gpuProfiling[m]; prof && len(vals[i].keys) == 0 {
			x.Notice(Info, profilingNotMeasured(m)+f.String())
		}
		for _, k := range vals[i].keys {
			for _, nm := range vals[i].namings[k] {
				namings[nm] = true
			}
			n++
			if n > x.limits.MaxSeries {
				return &LimitError{Msg: fmt.Sprintf("the query would return more than %d series: select fewer nodes (instance), GPUs (gpu) or metrics", x.limits.MaxSeries)}
			}
			x.Add(gpuSeries(m, k, g.t, vals[i].values[k]))
		}
	}
	switch {
	case n == 0:
		x.Notice(Info, "no GPU series found: none of the Inferscope probe's, dcgm-exporter's (any version) or Triton's GPU metrics match"+f.String())
	case namings[namingProbe] && namings[namingDCGM]:
		x.Notice(Info, "both the Inferscope probe's and dcgm-exporter's GPU metrics are present; where both report a GPU, the probe's are shown")
	}
	return nil
}

func gpuSeries(m GPUMetric, k GPUKey, t []int64, v []float64) Series {
	s := newSeries(string(m), k.String()+" "+gpuMetricTitle[m], gpuMetricUnit[m], k.Labels(), t, v)
	if gpuMetricUnit[m] == UnitPercentUnit {
		s.Min, s.Max = ptr(0), ptr(1)
	}
	if m == GPUMemory {
		s.Thresholds = gpuMemoryThresholds
	}
	return s
}
