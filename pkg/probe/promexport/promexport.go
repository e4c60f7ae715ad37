// Package promexport turns the collector's snapshot into Prometheus metrics, in Inferscope
// naming (inferscope_gpu_*, base units in names) or in the naming of a dcgm-exporter version
// (names, units and labels from pkg/gpufields: DCGM_FI_DEV_* with labels gpu, UUID,
// pci_bus_id, device, modelName, hostname and the driver label, err_code/err_msg on the XID
// field) so existing dashboards keep working. Metrics are built once per snapshot and reused by
// every scrape until the next collection; only the snapshot age is computed per scrape.
package promexport

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// Naming selects the metric naming scheme.
type Naming string

// Namings. The dcgm ones follow a dcgm-exporter version (gpufields.Version): its metric names,
// units and labels, with the fields of its default counters file and those a counters file
// may enable that the probe measures (FB_TOTAL, ECC, clock-event reasons, power limit,
// retired pages).
const (
	NamingInferscope Naming = "inferscope"
	// NamingDCGM is today's dcgm-exporter, 4.8.3 to 4.8.x (release tag 4.6.0-4.8.3 on): hostname,
	// pci_bus_id, DCGM_FI_DRIVER_VERSION, DCGM_FI_DEV_CLOCKS_EVENT_REASONS.
	NamingDCGM Naming = "dcgm"
	// NamingDCGM3 is dcgm-exporter 3.4.2 to 3.4.x: Hostname, no pci_bus_id, PCIe in KB/s,
	// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS.
	NamingDCGM3 Naming = "dcgm-3"
	// NamingDCGM45 is dcgm-exporter 3.5 to 4.8.2: as dcgm with Hostname and
	// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS.
	NamingDCGM45 Naming = "dcgm-4.5"
	// NamingDCGM49 is dcgm-exporter 4.9 and later: DCGM's base-unit names (ratios, bytes, Hz),
	// DCGM_FI_DEV_FB_CAPACITY_BYTES, the driver label DCGM_FI_SYSTEM_DRIVER_VERSION.
	NamingDCGM49 Naming = "dcgm-4.9"
)

// Namings lists the namings, the dcgm ones oldest first after dcgm.
var Namings = []Naming{NamingInferscope, NamingDCGM, NamingDCGM3, NamingDCGM45, NamingDCGM49}

var dcgmVersions = map[Naming]gpufields.Version{
	NamingDCGM: gpufields.DCGM48, NamingDCGM3: gpufields.DCGM3, NamingDCGM45: gpufields.DCGM45, NamingDCGM49: gpufields.DCGM49,
}

// DCGMVersion is the dcgm-exporter version a naming follows; false for inferscope.
func (n Naming) DCGMVersion() (gpufields.Version, bool) {
	v, ok := dcgmVersions[n]
	return v, ok
}

// ParseNaming validates a --naming value (dcgm-4.8 is dcgm).
func ParseNaming(s string) (Naming, error) {
	if s == "dcgm-4.8" {
		return NamingDCGM, nil
	}
	for _, n := range Namings {
		if Naming(s) == n {
			return n, nil
		}
	}
	return "", fmt.Errorf("unknown naming %q: use inferscope, dcgm, dcgm-3, dcgm-4.5 or dcgm-4.9", s)
}

// Source is what the exporter reads.
type Source interface {
	Snapshot() *snapshot.Snapshot
	Stats() collector.Stats
}

// Options configures an Exporter.
type Options struct {
	Naming Naming
	// XIDCount adds dcgm-exporter's DCGM_EXP_XID_ERRORS_COUNT (XID events per code over the
	// last 5 minutes, label window_size_in_ms="300000") in the dcgm namings; off by default,
	// as in dcgm-exporter's default counters file.
	XIDCount bool
	Version  string
	Now      func() time.Time
}

// Exporter is a prometheus.Collector of the snapshot's metrics. Metrics are built once per
// snapshot; Gatherer also gathers them once per snapshot.
type Exporter struct {
	src  Source
	opts Options

	mu     sync.Mutex
	built  *snapshot.Snapshot
	cached []prometheus.Metric
	descs  map[string]*prometheus.Desc
}

var _ prometheus.Collector = (*Exporter)(nil)

// New makes an exporter.
func New(src Source, opts Options) *Exporter {
	if opts.Naming == "" {
		opts.Naming = NamingInferscope
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Exporter{src: src, opts: opts, descs: map[string]*prometheus.Desc{}}
}

// Describe sends nothing: the metric set depends on what each GPU supports, so the exporter
// is an unchecked collector.
func (e *Exporter) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the latest snapshot.
func (e *Exporter) Collect(ch chan<- prometheus.Metric) {
	s := e.src.Snapshot()
	if s == nil {
		return
	}
	for _, m := range e.metricsFor(s) {
		ch <- m
	}
}

// live are the metrics that change between snapshots: the snapshot's age and the
// collector's counters.
type live struct {
	src                                               Source
	now                                               func() time.Time
	version, naming                                   string
	ageDesc, cyclesDesc, xidDesc, watchDesc, infoDesc *prometheus.Desc
}

func newLive(src Source, opts Options) *live {
	return &live{
		src: src, now: opts.Now, version: opts.Version, naming: string(opts.Naming),
		ageDesc:    prometheus.NewDesc("inferscope_probe_snapshot_age_seconds", "Seconds since the snapshot being served was collected.", nil, nil),
		cyclesDesc: prometheus.NewDesc("inferscope_probe_collections_total", "Collection cycles run since the probe started.", nil, nil),
		xidDesc:    prometheus.NewDesc("inferscope_probe_xid_events_total", "XID events received from NVML since the probe started, all GPUs.", nil, nil),
		watchDesc:  prometheus.NewDesc("inferscope_probe_xid_watch_up", "1 while the NVML XID event watcher is running.", nil, nil),
		infoDesc:   prometheus.NewDesc("inferscope_probe_info", "Probe build and mode.", []string{"version", "naming", "mock"}, nil),
	}
}

func (l *live) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{l.ageDesc, l.cyclesDesc, l.xidDesc, l.watchDesc, l.infoDesc} {
		ch <- d
	}
}

func (l *live) Collect(ch chan<- prometheus.Metric) {
	s := l.src.Snapshot()
	st := l.src.Stats()
	ch <- prometheus.MustNewConstMetric(l.infoDesc, prometheus.GaugeValue, 1, l.version, l.naming, mockLabel(s))
	ch <- prometheus.MustNewConstMetric(l.cyclesDesc, prometheus.CounterValue, float64(st.Cycles))
	ch <- prometheus.MustNewConstMetric(l.xidDesc, prometheus.CounterValue, float64(st.XIDEvents))
	ch <- prometheus.MustNewConstMetric(l.watchDesc, prometheus.GaugeValue, boolValue(st.EventsWatched))
	if s != nil {
		ch <- prometheus.MustNewConstMetric(l.ageDesc, prometheus.GaugeValue, l.now().Sub(s.CollectedAt).Seconds())
	}
}

// Gatherer serves the snapshot's metric families, gathered (and consistency-checked) once
// per snapshot, merged with the live registry's families gathered on every scrape. Most of
// a scrape's cost in client_golang is gathering; this leaves the live part and encoding.
type Gatherer struct {
	exp  *Exporter
	snap *prometheus.Registry
	live prometheus.Gatherer

	mu    sync.Mutex
	built *snapshot.Snapshot
	fams  []*dto.MetricFamily
}

// NewGatherer registers the live metrics in liveReg (which may hold other collectors too,
// e.g. the Go runtime's) and returns the gatherer to serve.
func NewGatherer(src Source, opts Options, liveReg *prometheus.Registry) (*Gatherer, error) {
	exp := New(src, opts)
	snap := prometheus.NewRegistry()
	if err := snap.Register(exp); err != nil {
		return nil, err
	}
	if err := liveReg.Register(newLive(src, exp.opts)); err != nil {
		return nil, err
	}
	return &Gatherer{exp: exp, snap: snap, live: liveReg}, nil
}

// Gather implements prometheus.Gatherer. The returned families of the snapshot part are
// shared between scrapes and must not be modified (the exposition encoders do not).
func (g *Gatherer) Gather() ([]*dto.MetricFamily, error) {
	snapFams, err := g.snapshotFamilies()
	liveFams, liveErr := g.live.Gather()
	out := make([]*dto.MetricFamily, 0, len(snapFams)+len(liveFams))
	i, j := 0, 0
	for i < len(snapFams) || j < len(liveFams) {
		if j == len(liveFams) || (i < len(snapFams) && snapFams[i].GetName() < liveFams[j].GetName()) {
			out = append(out, snapFams[i])
			i++
		} else {
			out = append(out, liveFams[j])
			j++
		}
	}
	if err == nil {
		err = liveErr
	}
	return out, err
}

func (g *Gatherer) snapshotFamilies() ([]*dto.MetricFamily, error) {
	s := g.exp.src.Snapshot()
	g.mu.Lock()
	defer g.mu.Unlock()
	if s == g.built && g.built != nil {
		return g.fams, nil
	}
	fams, err := g.snap.Gather()
	if err != nil {
		return fams, err
	}
	g.built, g.fams = s, fams
	return fams, nil
}

func mockLabel(s *snapshot.Snapshot) string {
	if s == nil {
		return ""
	}
	return s.Mock
}

func (e *Exporter) metricsFor(s *snapshot.Snapshot) []prometheus.Metric {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.built != s {
		b := builder{e: e, s: s, out: make([]prometheus.Metric, 0, len(e.cached))}
		b.ver, b.isDCGM = e.opts.Naming.DCGMVersion()
		b.lbl = gpufields.Labels(b.ver)
		b.build()
		e.built, e.cached = s, b.out
	}
	return e.cached
}

func (e *Exporter) desc(name, help string, labels []string) *prometheus.Desc {
	key := name + "\xff" + strings.Join(labels, "\xff")
	d, ok := e.descs[key]
	if !ok {
		d = prometheus.NewDesc(name, help, labels, nil)
		e.descs[key] = d
	}
	return d
}

// builder renders one snapshot.
type builder struct {
	e      *Exporter
	s      *snapshot.Snapshot
	out    []prometheus.Metric
	ver    gpufields.Version
	isDCGM bool
	lbl    gpufields.VersionLabels
	// per GPU
	names  []string
	values []string
	// identity is how many of the GPU labels name the GPU (the rest, in dcgm namings, are the
	// sole owner's container, namespace and pod).
	identity int
}

func (b *builder) dcgm() bool { return b.isDCGM }

func (b *builder) emit(name, help string, t prometheus.ValueType, v float64, extraNames, extraValues []string) {
	names, values := b.names, b.values
	if len(extraNames) > 0 {
		names = append(append(make([]string, 0, len(names)+len(extraNames)), names...), extraNames...)
		values = append(append(make([]string, 0, len(values)+len(extraValues)), values...), extraValues...)
	}
	b.out = append(b.out, prometheus.MustNewConstMetric(b.e.desc(name, help, names), t, v, values...))
}

func (b *builder) gauge(name, help string, v float64) {
	b.emit(name, help, prometheus.GaugeValue, v, nil, nil)
}

// metric emits a reading (v in the signal's base unit) in the mode's naming: ours, or the
// dcgm-exporter version's name for the signal (gpufields), divided by the name's scale into
// its unit. A signal the version has no name for is left out in dcgm namings.
func (b *builder) metric(name string, sig gpufields.Signal, help string, t prometheus.ValueType, v float64) {
	if b.dcgm() {
		b.dcgmMetric(sig, help, v, nil, nil)
		return
	}
	b.emit(name, help, t, v, nil, nil)
}

// dcgmMetric emits the version's name of sig, typed as dcgm-exporter's counters file types it
// (counter for cumulative counts, gauge otherwise).
func (b *builder) dcgmMetric(sig gpufields.Signal, help string, v float64, extraNames, extraValues []string) {
	n, ok := gpufields.DCGMName(sig, b.ver)
	if !ok {
		return
	}
	t := prometheus.GaugeValue
	if n.Shape == gpufields.Counter {
		t = prometheus.CounterValue
	}
	b.emit(n.Metric, help, t, v/n.Scale, extraNames, extraValues)
}

func (b *builder) build() {
	s := b.s
	b.names, b.values = nil, nil
	b.gauge("inferscope_probe_nvml_up", "1 when NVML is initialised; 0 when it is not (see /healthz for the reason).", boolValue(s.NVML.OK))
	if s.DriverVersion != "" || s.CUDAVersion != "" {
		b.emit("inferscope_probe_driver_info", "NVIDIA driver and CUDA driver versions.", prometheus.GaugeValue, 1,
			[]string{"driver_version", "cuda_version"}, []string{s.DriverVersion, s.CUDAVersion})
	}
	b.gauge("inferscope_probe_collect_duration_seconds", "Duration of the last collection cycle.", s.CollectSeconds)
	b.gauge("inferscope_probe_gpus", "GPUs NVML reports on this node.", float64(len(s.GPUs)))
	for i := range s.GPUs {
		b.gpu(&s.GPUs[i])
	}
}

func (b *builder) gpuLabels(g *snapshot.GPU) {
	idx := strconv.Itoa(g.Index)
	if !b.dcgm() {
		b.names, b.values = []string{"gpu", "uuid"}, []string{idx, g.UUID}
		return
	}
	device := ""
	if g.Minor != nil {
		device = "nvidia" + strconv.Itoa(*g.Minor)
	}
	pod, ns, ctr := soleOwner(g.Processes)
	l := b.lbl
	b.names, b.values = []string{l.GPU, l.UUID}, []string{idx, g.UUID}
	if l.PCIBusID != "" {
		b.names, b.values = append(b.names, l.PCIBusID), append(b.values, g.PCIBusID)
	}
	b.names = append(b.names, l.Device, l.ModelName, l.Node, l.Driver)
	b.values = append(b.values, device, g.Name, b.s.Hostname, b.s.DriverVersion)
	b.identity = len(b.names)
	b.names = append(b.names, l.Container, l.Namespace, l.Pod)
	b.values = append(b.values, ctr, ns, pod)
}

// soleOwner returns the pod that owns all of a GPU's processes, as dcgm-exporter labels a
// GPU allocated to a pod; empty when none or several.
func soleOwner(ps []snapshot.Process) (pod, namespace, container string) {
	for i, p := range ps {
		if p.Pod == "" {
			return "", "", ""
		}
		if i > 0 && (p.Pod != pod || p.Namespace != namespace || p.Container != container) {
			return "", "", ""
		}
		pod, namespace, container = p.Pod, p.Namespace, p.Container
	}
	return pod, namespace, container
}

func (b *builder) gpu(g *snapshot.GPU) {
	b.gpuLabels(g)
	b.emit("inferscope_gpu_info", "GPU identity; value 1.", prometheus.GaugeValue, 1, []string{"name"}, []string{g.Name})
	b.gauge("inferscope_gpu_up", "1 when the GPU answers NVML, 0 when it is lost or failing.", boolValue(g.State == snapshot.StateUp))
	for _, st := range []string{snapshot.StateUp, snapshot.StateLost, snapshot.StateError} {
		b.emit("inferscope_gpu_state", "GPU state, one series per state; 1 marks the current one.", prometheus.GaugeValue,
			boolValue(g.State == st), []string{"state"}, []string{st})
	}
	b.xids(g)
	if g.State != snapshot.StateUp {
		return
	}

	b.resources(g)
	b.throttle(g)
	if v := g.PCIeRxBytesPerSecond; v != nil {
		b.metric("inferscope_gpu_pcie_rx_bytes_per_second", gpufields.PCIeRX, "PCIe receive throughput (NVML ~20 ms sample).", prometheus.GaugeValue, *v)
	}
	if v := g.PCIeTxBytesPerSecond; v != nil {
		b.metric("inferscope_gpu_pcie_tx_bytes_per_second", gpufields.PCIeTX, "PCIe transmit throughput (NVML ~20 ms sample).", prometheus.GaugeValue, *v)
	}
	if v := g.PCIeReplays; v != nil {
		b.metric("inferscope_gpu_pcie_replays_total", gpufields.PCIeReplays, "PCIe replays (retries).", prometheus.CounterValue, float64(*v))
	}
	b.ecc(g)
	b.retirement(g)
	if v := g.MIGEnabled; v != nil {
		b.gauge("inferscope_gpu_mig_enabled", "1 when MIG mode is on.", boolValue(*v))
	}
	if len(g.MIGDevices) == 0 {
		b.processes(g.Processes, nil, nil)
	}
	for i := range g.MIGDevices {
		b.mig(g, &g.MIGDevices[i])
	}
}

// resources are the utilisation, memory, temperature, power and clock readings.
func (b *builder) resources(g *snapshot.GPU) {
	if v := g.UtilRatio; v != nil {
		b.metric("inferscope_gpu_utilization_ratio", gpufields.Util, "Fraction of time a kernel was running on the GPU.", prometheus.GaugeValue, *v)
	}
	if v := g.MemBandwidthRatio; v != nil {
		b.metric("inferscope_gpu_memory_bandwidth_utilization_ratio", gpufields.MemCopyUtil, "Fraction of time device memory was being read or written.", prometheus.GaugeValue, *v)
	}
	b.memory(g.MemUsedBytes, g.MemTotalBytes, g.MemReservedBytes)
	b.activity(g)
	if v := g.TemperatureCelsius; v != nil {
		b.metric("inferscope_gpu_temperature_celsius", gpufields.Temperature, "GPU temperature.", prometheus.GaugeValue, *v)
	}
	if v := g.PowerWatts; v != nil {
		b.metric("inferscope_gpu_power_watts", gpufields.Power, "Power draw.", prometheus.GaugeValue, *v)
	}
	if v := g.PowerLimitWatts; v != nil {
		b.metric("inferscope_gpu_power_limit_watts", gpufields.PowerLimit, "Enforced power limit.", prometheus.GaugeValue, *v)
	}
	if v := g.SMClockMHz; v != nil {
		b.metric("inferscope_gpu_sm_clock_hertz", gpufields.SMClock, "SM clock frequency.", prometheus.GaugeValue, float64(*v)*1e6)
	}
	if v := g.MemClockMHz; v != nil {
		b.metric("inferscope_gpu_memory_clock_hertz", gpufields.MemClock, "Memory clock frequency.", prometheus.GaugeValue, float64(*v)*1e6)
	}
}

// throttle is the clock-event reasons: one 0/1 series per reason, and in dcgm namings the
// bitmask under the version's name (DCGM_FI_DEV_CLOCKS_EVENT_REASONS, or the deprecated
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS before 4.8).
func (b *builder) throttle(g *snapshot.GPU) {
	if g.ThrottleReasonsMask == nil {
		return
	}
	mask := *g.ThrottleReasonsMask
	if b.dcgm() {
		b.dcgmMetric(gpufields.ClockEvents, "Clock-event (throttle) reasons bitmask.", float64(mask), nil, nil)
	}
	for _, r := range snapshot.ThrottleReasonNames {
		b.emit("inferscope_gpu_clock_event_reason_active", "1 while the clock-event (throttle) reason holds clocks down.",
			prometheus.GaugeValue, boolValue(mask&r.Bit != 0), []string{"reason"}, []string{r.Name})
	}
}

func (b *builder) memory(used, total, reserved *uint64) {
	if used != nil {
		b.metric("inferscope_gpu_memory_used_bytes", gpufields.MemUsed, "Device memory used.", prometheus.GaugeValue, float64(*used))
	}
	if total != nil {
		b.metric("inferscope_gpu_memory_total_bytes", gpufields.MemTotal, "Device memory total.", prometheus.GaugeValue, float64(*total))
	}
	if reserved != nil {
		b.metric("inferscope_gpu_memory_reserved_bytes", gpufields.MemReserved, "Device memory reserved by the driver.", prometheus.GaugeValue, float64(*reserved))
	}
	if b.dcgm() && used != nil && total != nil {
		free := float64(*total) - float64(*used)
		if reserved != nil {
			free -= float64(*reserved)
		}
		b.dcgmMetric(gpufields.MemFree, "Device memory free.", max(free, 0), nil, nil)
	}
}

func (b *builder) ecc(g *snapshot.GPU) {
	const help = "Volatile ECC errors since the driver loaded."
	if b.dcgm() {
		if v := g.ECCCorrected; v != nil {
			b.dcgmMetric(gpufields.ECCCorrected, "Single-bit (corrected) volatile ECC errors.", float64(*v), nil, nil)
		}
		if v := g.ECCUncorrected; v != nil {
			b.dcgmMetric(gpufields.ECCErrors, "Double-bit (uncorrected) volatile ECC errors.", float64(*v), nil, nil)
		}
		return
	}
	if v := g.ECCCorrected; v != nil {
		b.emit("inferscope_gpu_ecc_errors_total", help, prometheus.CounterValue, float64(*v), []string{"type"}, []string{"corrected"})
	}
	if v := g.ECCUncorrected; v != nil {
		b.emit("inferscope_gpu_ecc_errors_total", help, prometheus.CounterValue, float64(*v), []string{"type"}, []string{"uncorrected"})
	}
}

func (b *builder) retirement(g *snapshot.GPU) {
	if b.dcgm() {
		count := func(sig gpufields.Signal, help string, v *uint64) {
			if v != nil {
				b.dcgmMetric(sig, help, float64(*v), nil, nil)
			}
		}
		flag := func(sig gpufields.Signal, help string, v *bool) {
			if v != nil {
				b.dcgmMetric(sig, help, boolValue(*v), nil, nil)
			}
		}
		count(gpufields.RetiredSBE, "Pages retired for multiple single-bit errors.", g.RetiredPagesSingleBit)
		count(gpufields.RetiredDBE, "Pages retired for double-bit errors.", g.RetiredPagesDoubleBit)
		count(gpufields.RemappedCorrectable, "Rows remapped for correctable errors.", g.RemappedRowsCorrectable)
		count(gpufields.RemappedUncorrectable, "Rows remapped for uncorrectable errors.", g.RemappedRowsUncorrectable)
		flag(gpufields.RetiredPending, "1 when a page retirement awaits a reboot.", g.RetiredPagesPending)
		flag(gpufields.RowRemapPending, "1 when a row remapping awaits a GPU reset.", g.RowRemapPending)
		flag(gpufields.RowRemapFailure, "1 when row remapping has failed.", g.RowRemapFailure)
		return
	}
	const pagesHelp = "Retired device memory pages, by cause."
	if v := g.RetiredPagesSingleBit; v != nil {
		b.emit("inferscope_gpu_retired_pages", pagesHelp, prometheus.GaugeValue, float64(*v), []string{"cause"}, []string{"single_bit_ecc"})
	}
	if v := g.RetiredPagesDoubleBit; v != nil {
		b.emit("inferscope_gpu_retired_pages", pagesHelp, prometheus.GaugeValue, float64(*v), []string{"cause"}, []string{"double_bit_ecc"})
	}
	if v := g.RetiredPagesPending; v != nil {
		b.gauge("inferscope_gpu_retired_pages_pending", "1 when a page retirement awaits a reboot.", boolValue(*v))
	}
	const rowsHelp = "Remapped device memory rows, by error type."
	if v := g.RemappedRowsCorrectable; v != nil {
		b.emit("inferscope_gpu_remapped_rows", rowsHelp, prometheus.GaugeValue, float64(*v), []string{"type"}, []string{"correctable"})
	}
	if v := g.RemappedRowsUncorrectable; v != nil {
		b.emit("inferscope_gpu_remapped_rows", rowsHelp, prometheus.GaugeValue, float64(*v), []string{"type"}, []string{"uncorrectable"})
	}
	if v := g.RowRemapPending; v != nil {
		b.gauge("inferscope_gpu_row_remap_pending", "1 when a row remapping awaits a GPU reset.", boolValue(*v))
	}
	if v := g.RowRemapFailure; v != nil {
		b.gauge("inferscope_gpu_row_remap_failed", "1 when row remapping has failed.", boolValue(*v))
	}
}

func (b *builder) xids(g *snapshot.GPU) {
	codes := make([]string, 0, len(g.XIDErrors))
	for code := range g.XIDErrors {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		b.emit("inferscope_gpu_xid_errors_total", "XID errors since the probe started, by XID code.", prometheus.CounterValue,
			float64(g.XIDErrors[code]), []string{"xid"}, []string{code})
	}
	if b.dcgm() {
		b.dcgmXIDs(g)
	}
}

// dcgmXIDs writes the XID field as dcgm-exporter does: the last XID's value, labelled with
// its code and meaning (err_code "0", "No Error" before the first), so each new code starts
// a new series; and, with Options.XIDCount, DCGM_EXP_XID_ERRORS_COUNT: events per code over
// the last 5 minutes, one series per code seen in the window, or one unlabelled 0 when none.
func (b *builder) dcgmXIDs(g *snapshot.GPU) {
	var last uint64
	if g.LastXID != nil {
		last = *g.LastXID
	}
	b.dcgmMetric(gpufields.XID, "Value of the last XID error encountered.", float64(last),
		[]string{b.lbl.XIDCode, b.lbl.XIDMessage}, []string{strconv.FormatUint(last, 10), gpufields.XIDMessage(last)})
	if !b.e.opts.XIDCount {
		return
	}
	n, ok := gpufields.Of(gpufields.XID).DCGMShape(b.ver, gpufields.WindowCount)
	if !ok {
		return
	}
	const help = "Count of XID errors within the user-specified time window (see xid-count-window-size flag)."
	window := strconv.Itoa(int(snapshot.XIDWindow / time.Millisecond))
	if len(g.RecentXIDs) == 0 {
		b.emit(n.Metric, help, prometheus.GaugeValue, 0, []string{gpufields.WindowLabel}, []string{window})
		return
	}
	codes := make([]string, 0, len(g.RecentXIDs))
	for code := range g.RecentXIDs {
		codes = append(codes, code)
	}
	sort.Strings(codes)
	for _, code := range codes {
		b.emit(n.Metric, help, prometheus.GaugeValue, float64(g.RecentXIDs[code]),
			[]string{gpufields.WindowLabel, b.lbl.XID}, []string{window, code})
	}
}

// processes emits GPU memory per process owner. PIDs are not labels (they churn); processes
// with the same name in the same container share a series.
func (b *builder) processes(ps []snapshot.Process, migNames, migValues []string) {
	if len(ps) == 0 {
		return
	}
	type key struct{ name, container, pod, namespace string }
	sums := make(map[key]float64, len(ps))
	order := make([]key, 0, len(ps))
	for _, p := range ps {
		k := key{p.Name, p.Container, p.Pod, p.Namespace}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
		}
		sums[k] += float64(p.UsedMemoryBytes)
	}
	saved, savedValues := b.names, b.values
	if b.dcgm() {
		// dcgm mode's GPU labels already hold container/namespace/pod (for a sole owner);
		// per-process series use their own owner instead.
		b.names, b.values = b.names[:b.identity], b.values[:b.identity]
	}
	names := append(append([]string{}, migNames...), "process", "container", "pod", "namespace")
	for _, k := range order {
		values := append(append([]string{}, migValues...), k.name, k.container, k.pod, k.namespace)
		b.emit("inferscope_gpu_process_memory_used_bytes", "Device memory used by processes, by process name and owner.",
			prometheus.GaugeValue, sums[k], names, values)
	}
	b.names, b.values = saved, savedValues
}

func (b *builder) mig(g *snapshot.GPU, m *snapshot.MIGDevice) {
	gi, ci := "", ""
	if m.GPUInstanceID != nil {
		gi = strconv.Itoa(*m.GPUInstanceID)
	}
	if m.ComputeInstanceID != nil {
		ci = strconv.Itoa(*m.ComputeInstanceID)
	}
	var names, values []string
	if b.dcgm() {
		names, values = []string{b.lbl.GPUInstanceID, b.lbl.GPUInstanceProfile}, []string{gi, m.Profile}
	} else {
		names, values = []string{"gpu_instance", "compute_instance", "mig_profile"}, []string{gi, ci, m.Profile}
	}
	saved, savedValues := b.names, b.values
	b.names = append(append([]string{}, saved...), names...)
	b.values = append(append([]string{}, savedValues...), values...)
	if v := m.UtilRatio; v != nil {
		b.metric("inferscope_gpu_utilization_ratio", gpufields.Util, "Fraction of time a kernel was running on the GPU.", prometheus.GaugeValue, *v)
	}
	b.memory(m.MemUsedBytes, m.MemTotalBytes, m.MemReservedBytes)
	b.names, b.values = saved, savedValues
	b.processes(m.Processes, names, values)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// activity writes the GPU performance monitor's readings: ours, or the profiling fields
// dcgm-exporter writes for them (DCGM_FI_PROF_*), so "is the GPU busy" reads the same either way.
func (b *builder) activity(g *snapshot.GPU) {
	for _, a := range []struct {
		name string
		sig  gpufields.Signal
		help string
		v    *float64
	}{
		{"inferscope_gpu_graphics_engine_active_ratio", gpufields.EngineActive, "Fraction of the last collection interval the graphics/compute engine was active (GPU performance monitor).", g.EngineActiveRatio},
		{"inferscope_gpu_tensor_active_ratio", gpufields.TensorActive, "Fraction of the last collection interval a tensor pipe was active (GPU performance monitor).", g.TensorActiveRatio},
		{"inferscope_gpu_dram_active_ratio", gpufields.DRAMActive, "Device memory bandwidth used over the last collection interval against its peak (GPU performance monitor).", g.DRAMActiveRatio},
	} {
		if a.v != nil {
			b.metric(a.name, a.sig, a.help, prometheus.GaugeValue, *a.v)
		}
	}
}
