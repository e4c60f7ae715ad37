package testbed

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// GPU history: every node's GPUs written from the scenario's GPU truth through the probe's own
// exporter (pkg/probe/promexport), so names, labels, units and value quantisation are what a
// Prometheus scraping inferscope-probe --mock=dgxa100 on that node stores.

// The probe as the test bed's Prometheus scrapes it (provisioning/prometheus/prometheus.yml):
// job inferscope-probe, one target per node on port 9835, the node as a target label.
const (
	ProbeJob  = "inferscope-probe"
	ProbePort = "9835"
	// GPUSystem is the simulated system the probe's mock plays for the scenario.
	GPUSystem = "dgxa100"
	gpuName   = "NVIDIA A100-SXM4-40GB"
)

// GPU namings of the history: the probe's own; a dcgm-exporter version's, through the probe's
// dcgm namings (promexport: dcgm is today's exporter, 4.8.3 on; dcgm-3, dcgm-4.5, dcgm-4.9);
// or no GPU series at all. A dcgm naming may carry the variants
//   - "+xid-count": DCGM_EXP_XID_ERRORS_COUNT too (the exporter's XID counter, enabled in its
//     counters file; XIDs of the last 5 minutes per code);
//   - "+defaults": only the fields of the version's default counters file (no FB_TOTAL, ECC or
//     clock-event reasons, which the plain naming holds as if the counters file enabled them);
//
// e.g. "dcgm-4.9+xid-count" or "dcgm+defaults+xid-count".
const (
	GPUNamingInferscope = string(promexport.NamingInferscope)
	GPUNamingDCGM       = string(promexport.NamingDCGM)
	GPUNamingDCGM3      = string(promexport.NamingDCGM3)
	GPUNamingDCGM45     = string(promexport.NamingDCGM45)
	GPUNamingDCGM49     = string(promexport.NamingDCGM49)
	GPUNamingNone       = "none"

	// GPUVariantXIDCount and GPUVariantDefaults are the dcgm namings' variant suffixes.
	GPUVariantXIDCount = "+xid-count"
	GPUVariantDefaults = "+defaults"
)

// GPUNamings are the plain GPU namings.
var GPUNamings = []string{GPUNamingInferscope, GPUNamingDCGM, GPUNamingDCGM3, GPUNamingDCGM45, GPUNamingDCGM49, GPUNamingNone}

// gpuHistoryFamilies are the core GPU families the history keeps in the inferscope naming (lean:
// the full probe exports some 30 families per GPU), and in each dcgm naming the families of
// dcgmHistorySignals under the version's names (gpufields); the probe's dcgm namings also keep
// a few inferscope_* families, left out so a dcgm history holds DCGM names alone.
var gpuHistoryFamilies = map[string][]string{
	GPUNamingInferscope: {
		"inferscope_gpu_utilization_ratio", "inferscope_gpu_memory_used_bytes", "inferscope_gpu_memory_total_bytes",
		"inferscope_gpu_temperature_celsius", "inferscope_gpu_power_watts", "inferscope_gpu_clock_event_reason_active",
		"inferscope_gpu_ecc_errors_total", "inferscope_gpu_xid_errors_total",
	},
}

// dcgmHistorySignals are the GPU signals a dcgm history holds, where the version has a name:
// the readings' signals (utilisation, memory used/free/reserved/total, temperature, power,
// clock events, ECC, XID).
var dcgmHistorySignals = []gpufields.Signal{
	gpufields.Util, gpufields.MemUsed, gpufields.MemFree, gpufields.MemReserved, gpufields.MemTotal,
	gpufields.Temperature, gpufields.Power, gpufields.ClockEvents, gpufields.ECCCorrected, gpufields.ECCErrors, gpufields.XID,
}

// gpuNaming is a parsed GPU naming.
type gpuNaming struct {
	probe              promexport.Naming // "" for none
	xidCount, defaults bool
}

func parseGPUNaming(s string) (gpuNaming, error) {
	base, rest, _ := strings.Cut(s, "+")
	var g gpuNaming
	if base == GPUNamingNone && rest == "" {
		return g, nil
	}
	n, err := promexport.ParseNaming(base)
	if err != nil || string(n) != base {
		return g, fmt.Errorf("unknown GPU naming %q: use one of %s, dcgm namings optionally with %s and %s",
			s, strings.Join(GPUNamings, ", "), GPUVariantXIDCount, GPUVariantDefaults)
	}
	g.probe = n
	_, isDCGM := n.DCGMVersion()
	for rest != "" {
		var v string
		v, rest, _ = strings.Cut(rest, "+")
		switch "+" + v {
		case GPUVariantXIDCount:
			g.xidCount = true
		case GPUVariantDefaults:
			g.defaults = true
		default:
			return g, fmt.Errorf("GPU naming %q: unknown variant +%s", s, v)
		}
		if !isDCGM {
			return g, fmt.Errorf("GPU naming %q: variants are for the dcgm namings", s)
		}
	}
	return g, nil
}

// families lists the GPU families a history in the naming holds.
func (g gpuNaming) families() []string {
	if keep, ok := gpuHistoryFamilies[string(g.probe)]; ok {
		return slices.Clone(keep)
	}
	v, ok := g.probe.DCGMVersion()
	if !ok {
		return nil
	}
	var out []string
	for _, sig := range dcgmHistorySignals {
		if n, ok := gpufields.DCGMName(sig, v); ok && (!g.defaults || n.DefaultIn(v)) {
			out = append(out, n.Metric)
		}
	}
	if g.xidCount {
		if n, ok := gpufields.Of(gpufields.XID).DCGMShape(v, gpufields.WindowCount); ok {
			out = append(out, n.Metric)
		}
	}
	return out
}

// GPUHistoryFamilies lists the GPU metric families the history holds in a naming (nil for
// none or an unknown naming).
func GPUHistoryFamilies(naming string) []string {
	g, err := parseGPUNaming(naming)
	if err != nil {
		return nil
	}
	return g.families()
}

// ParseGPUNaming checks a GPU naming ("" is inferscope).
func ParseGPUNaming(s string) (string, error) {
	if s == "" {
		return GPUNamingInferscope, nil
	}
	if _, err := parseGPUNaming(s); err != nil {
		return "", err
	}
	return s, nil
}

// Node is an inference instance's host: its label without the port ("node-a:8000" → "node-a").
func Node(instance string) string {
	for i := len(instance) - 1; i >= 0; i-- {
		if instance[i] == ':' {
			return instance[:i]
		}
	}
	return instance
}

// ProbeInstance is the instance label of the probe on an inference instance's node
// ("node-a:8000" → "node-a:9835").
func ProbeInstance(instance string) string { return Node(instance) + ":" + ProbePort }

// GPUUUID is the NVML UUID the probe's mock gives a GPU of an instance (mockgpu.UUIDFor with
// GPUSystem; a test pins the two together).
func GPUUUID(instance string, gpu int) string {
	h := fnv.New128a()
	fmt.Fprintf(h, "%s/%s/%d", GPUSystem, instance, gpu)
	b := h.Sum(nil)
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// GPUSnapshot is what the probe on an instance's node collects at t from the probe's mock of
// the scenario: NVML's units and rounding (whole percent, whole °C, milliwatts, bytes), the
// mock's reserved memory (1 %) and serving processes (one per GPU, pod inference-<gpu/2>), and
// XID counts of a probe that has run since before the history.
func (s *Scenario) GPUSnapshot(instance string, t time.Time) *snapshot.Snapshot {
	snap := &snapshot.Snapshot{
		Hostname: Node(instance), DriverVersion: "550.54.15", CUDAVersion: "12.4", CollectedAt: t,
		NVML: snapshot.NVMLStatus{OK: true}, Mock: GPUSystem,
	}
	for i := 0; i < s.GPUsPerInstance(); i++ {
		snap.GPUs = append(snap.GPUs, gpuSnapshot(s.GPU(instance, i, t), instance, i, t))
	}
	return snap
}

func gpuSnapshot(st GPUState, instance string, i int, t time.Time) snapshot.GPU {
	minor := i
	g := snapshot.GPU{Index: i, UUID: GPUUUID(instance, i), Name: gpuName, Minor: &minor, PCIBusID: GPUPCIBusID(i), State: snapshot.StateUp}
	if st.Lost {
		g.State, g.Error = snapshot.StateLost, "GPU is lost"
		return g
	}
	percent := func(r float64) float64 { return math.Round(math.Max(0, math.Min(1, r))*100) / 100 }
	total := st.MemTotalBytes
	used := uint64(math.Max(0, math.Min(1, st.MemUsedRatio)) * float64(total))
	reserved := total / 100
	g.UtilRatio, g.MemBandwidthRatio = ptr(percent(st.UtilRatio)), ptr(percent(st.MemBandwidthRatio))
	g.MemUsedBytes, g.MemTotalBytes, g.MemReservedBytes = ptr(used), ptr(total), ptr(reserved)
	if total > 0 {
		g.MemUsedRatio = ptr(float64(used) / float64(total))
	}
	g.TemperatureCelsius = ptr(math.Round(st.TempCelsius))
	g.PowerWatts = ptr(math.Round(st.PowerWatts*1000) / 1000)
	g.PowerLimitWatts = ptr(math.Round(st.PowerLimitWatts*1000) / 1000)
	g.SMClockMHz, g.MemClockMHz = ptr(st.SMClockMHz), ptr(st.MemClockMHz)
	g.ThrottleReasonsMask = ptr(st.ThrottleReasons)
	g.ThrottleReasons = snapshot.ThrottleReasonList(st.ThrottleReasons)
	g.ECCCorrected, g.ECCUncorrected = ptr(st.ECCCorrected), ptr(st.ECCUncorrected)
	const context = 512 << 20 // the CUDA context's share of the used memory
	name := "python3"
	if i%2 == 0 {
		name = "tritonserver"
	}
	g.Processes = []snapshot.Process{{PID: uint32(41000 + i), Name: name, UsedMemoryBytes: used - min(used, context),
		Container: "model-server", Pod: "inference-" + strconv.Itoa(i/2), Namespace: "inference"}}
	for _, x := range st.XIDs {
		if x.Time.After(t) {
			continue
		}
		if g.XIDErrors == nil {
			g.XIDErrors = map[string]uint64{}
		}
		g.XIDErrors[strconv.FormatUint(x.Code, 10)]++
		code := x.Code
		g.LastXID = &code
		if t.Sub(x.Time) < snapshot.XIDWindow {
			if g.RecentXIDs == nil {
				g.RecentXIDs = map[string]uint64{}
			}
			g.RecentXIDs[strconv.FormatUint(x.Code, 10)]++
		}
	}
	return g
}

// GPUPCIBusID is the PCI bus id the probe's mock gives a GPU (mockgpu.BusIDFor; a test pins the
// two together).
func GPUPCIBusID(gpu int) string { return fmt.Sprintf("00000000:%02X:00.0", 0x07+gpu*0x10) }

func ptr[T any](v T) *T { return &v }

// GPUTargets are the probes' scrape targets for history over [from, to], one per node, in a
// GPU naming (inferscope or dcgm): the families GPUHistoryFamilies lists, as the probe's exporter renders
// GPUSnapshot, with job ProbeJob, instance ProbeInstance and the node label. The series set is
// found by rendering the span's start and end, every hour and every incident and XID instant.
// Rendering costs one exporter run per node and history step; the targets keep those rows, about
// 1 KB per node and step, until they are dropped.
func (s *Scenario) GPUTargets(naming string, from, to time.Time) ([]expo.Target, error) {
	g, err := parseGPUNaming(naming)
	if err != nil || g.probe == "" {
		return nil, fmt.Errorf("no GPU history in naming %q (use one of %s but none)", naming, strings.Join(GPUNamings, ", "))
	}
	keep := g.families()
	var out []expo.Target
	for _, inst := range s.Instances() {
		if !s.Probed(inst) {
			continue
		}
		r := newGPURenderer(s, inst, promexport.Options{Naming: g.probe, XIDCount: g.xidCount}, keep)
		fams, err := r.plan(s.gpuExploreTimes(inst, from, to), from)
		if err != nil {
			return nil, err
		}
		out = append(out, expo.Target{
			Instance: ProbeInstance(inst), Job: ProbeJob,
			Labels: []expo.Label{{Name: "node", Value: Node(inst)}}, Families: fams,
		})
	}
	return out, nil
}

// gpuExploreTimes are the instants whose renderings together hold every series of the span.
func (s *Scenario) gpuExploreTimes(instance string, from, to time.Time) []time.Time {
	ts := []time.Time{from, to}
	for t := from.Truncate(time.Hour); t.Before(to); t = t.Add(time.Hour) {
		ts = append(ts, t)
	}
	for _, in := range s.incidents {
		ts = append(ts, in.Start, in.End)
	}
	for g := 0; g < s.GPUsPerInstance(); g++ {
		for _, x := range s.GPU(instance, g, to).XIDs {
			ts = append(ts, x.Time)
		}
	}
	var in []time.Time
	for _, t := range ts {
		if !t.Before(from) && !t.After(to) {
			in = append(in, t)
		}
	}
	return in
}

// gpuRenderer runs the probe's exporter over one node's snapshots and keeps the rendered values
// per instant. It reads the exporter's metrics as a registry would collect them, without the
// registry's gathering (sorting, consistency checks), which would double the cost.
type gpuRenderer struct {
	s        *Scenario
	instance string
	keep     map[string]bool
	exp      *promexport.Exporter
	src      *fixedSnapshot

	mu      sync.Mutex
	descs   map[*prometheus.Desc]descInfo
	columns map[string]int // series key → column in a row
	rows    map[int64][]float64
}

type descInfo struct {
	name, help string
	keep       bool
}

// fixedSnapshot is the exporter's source: whatever snapshot it is given.
type fixedSnapshot struct{ snap *snapshot.Snapshot }

func (f *fixedSnapshot) Snapshot() *snapshot.Snapshot { return f.snap }
func (f *fixedSnapshot) Stats() collector.Stats       { return collector.Stats{} }

func newGPURenderer(s *Scenario, instance string, opts promexport.Options, keep []string) *gpuRenderer {
	r := &gpuRenderer{s: s, instance: instance, keep: map[string]bool{}, src: &fixedSnapshot{},
		descs: map[*prometheus.Desc]descInfo{}, columns: map[string]int{}, rows: map[int64][]float64{}}
	for _, k := range keep {
		r.keep[k] = true
	}
	r.exp = promexport.New(r.src, opts)
	return r
}

// describe reads a metric descriptor's name and help (client_golang offers them only through
// Desc.String); the exporter reuses its descriptors, so each is parsed once.
func (r *gpuRenderer) describe(d *prometheus.Desc) (descInfo, error) {
	if di, ok := r.descs[d]; ok {
		return di, nil
	}
	str := d.String()
	field := func(prefix string) (string, error) {
		i := strings.Index(str, prefix)
		if i < 0 {
			return "", fmt.Errorf("no %q in %s", prefix, str)
		}
		q, err := strconv.QuotedPrefix(str[i+len(prefix):])
		if err != nil {
			return "", err
		}
		return strconv.Unquote(q)
	}
	name, err := field("fqName: ")
	if err != nil {
		return descInfo{}, err
	}
	help, err := field("help: ")
	if err != nil {
		return descInfo{}, err
	}
	di := descInfo{name: name, help: help, keep: r.keep[name]}
	r.descs[d] = di
	return di, nil
}

// render runs the exporter on the snapshot at t and visits the kept families' series.
func (r *gpuRenderer) render(t time.Time, visit func(di descInfo, counter bool, labels []*dto.LabelPair, key string, v float64)) error {
	r.src.snap = r.s.GPUSnapshot(r.instance, t)
	ch := make(chan prometheus.Metric, 256)
	go func() {
		r.exp.Collect(ch)
		close(ch)
	}()
	var firstErr error
	var m dto.Metric
	for pm := range ch { // drain fully even after an error, so the collecting goroutine ends
		if firstErr != nil {
			continue
		}
		di, err := r.describe(pm.Desc())
		if err != nil {
			firstErr = err
			continue
		}
		if !di.keep {
			continue
		}
		m.Reset()
		if err := pm.Write(&m); err != nil {
			firstErr = fmt.Errorf("probe exporter at %s: %s: %w", t.Format(time.RFC3339), di.name, err)
			continue
		}
		counter := m.Counter != nil
		v := m.GetGauge().GetValue()
		if counter {
			v = m.GetCounter().GetValue()
		}
		visit(di, counter, m.GetLabel(), seriesKey(di.name, m.GetLabel()), v)
	}
	return firstErr
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	key := name
	for _, l := range labels {
		key += "\xff" + l.GetName() + "\xfe" + l.GetValue()
	}
	return key
}

// plan renders the exploration instants and turns the union of their series into families
// whose points are read from rendered rows.
func (r *gpuRenderer) plan(times []time.Time, since time.Time) ([]expo.Family, error) {
	type famPlan struct {
		fam   expo.Family
		order int
	}
	fams := map[string]*famPlan{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range times {
		err := r.render(t, func(di descInfo, counter bool, pairs []*dto.LabelPair, key string, _ float64) {
			if _, ok := r.columns[key]; ok {
				return
			}
			col := len(r.columns)
			r.columns[key] = col
			fp, ok := fams[di.name]
			if !ok {
				// dcgm-exporter types some fields counter without the _total suffix OpenMetrics
				// (the history's format) requires of a counter's samples; they are kept as gauges.
				typ := expo.GaugeType
				if counter && strings.HasSuffix(di.name, "_total") {
					typ = expo.CounterType
				}
				fp = &famPlan{fam: expo.Family{Name: di.name, Help: di.help, Type: typ}, order: len(fams)}
				fams[di.name] = fp
			}
			var labels []expo.Label
			for _, l := range pairs {
				if l.GetValue() != "" { // a scrape drops empty labels
					labels = append(labels, expo.Label{Name: l.GetName(), Value: l.GetValue()})
				}
			}
			fp.fam.Series = append(fp.fam.Series, expo.Series{Labels: labels, Since: since, At: r.point(col)})
		})
		if err != nil {
			return nil, err
		}
	}
	out := make([]expo.Family, len(fams))
	for _, fp := range fams {
		out[fp.order] = fp.fam
	}
	// Stable series order within a family (exploration order depends on the instants).
	for i := range out {
		sort.SliceStable(out[i].Series, func(a, b int) bool {
			return labelString(out[i].Series[a].Labels) < labelString(out[i].Series[b].Labels)
		})
	}
	return out, nil
}

func labelString(ls []expo.Label) string {
	var s string
	for _, l := range ls {
		s += l.Name + "\xfe" + l.Value + "\xff"
	}
	return s
}

// point reads one column of the row rendered at t; a series missing at t is absent.
func (r *gpuRenderer) point(col int) func(time.Time) expo.Point {
	return func(t time.Time) expo.Point {
		row, err := r.row(t)
		if err != nil || math.IsNaN(row[col]) {
			return expo.Point{Absent: true}
		}
		return expo.Point{Value: row[col]}
	}
}

// row returns the rendering at t, running the exporter once per instant. Series the plan did
// not foresee are dropped (the plan's instants cover every change of the series set).
func (r *gpuRenderer) row(t time.Time) ([]float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := t.UnixNano()
	if row, ok := r.rows[k]; ok {
		return row, nil
	}
	row := make([]float64, len(r.columns))
	for i := range row {
		row[i] = math.NaN()
	}
	err := r.render(t, func(_ descInfo, _ bool, _ []*dto.LabelPair, key string, v float64) {
		if col, ok := r.columns[key]; ok {
			row[col] = v
		}
	})
	if err != nil {
		return nil, err
	}
	r.rows[k] = row
	return row, nil
}
