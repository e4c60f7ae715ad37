// Package promexport turns the collector's snapshot into Prometheus metrics, in Inferscope
// naming (inferscope_gpu_*, base units in names) or in dcgm-exporter's naming
// (DCGM_FI_DEV_*, native units, labels gpu, UUID, device, modelName, Hostname) so existing
// dashboards keep working. Metrics are built once per snapshot and reused by every scrape
// until the next collection; only the snapshot age is computed per scrape.
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

	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// Naming selects the metric naming scheme.
type Naming string

const (
	NamingInferscope Naming = "inferscope"
	NamingDCGM       Naming = "dcgm"
)

// ParseNaming validates a --naming value.
func ParseNaming(s string) (Naming, error) {
	switch Naming(s) {
	case NamingInferscope, NamingDCGM:
		return Naming(s), nil
	}
	return "", fmt.Errorf("unknown naming %q: use inferscope or dcgm", s)
}

// Source is what the exporter reads.
type Source interface {
	Snapshot() *snapshot.Snapshot
	Stats() collector.Stats
}

// Options configures an Exporter.
type Options struct {
	Naming  Naming
	Version string
	Now     func() time.Time
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
	e   *Exporter
	s   *snapshot.Snapshot
	out []prometheus.Metric
	// per GPU
	names  []string
	values []string
}

func (b *builder) dcgm() bool { return b.e.opts.Naming == NamingDCGM }

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

// metric emits a reading in the mode's naming: ours in base units, or dcgm's scaled by
// dcgmScale into its native unit. An empty dcgmName keeps our name in dcgm mode too.
// DCGM names are typed gauge: their names lack the _total suffix Prometheus requires of
// counters, and queries do not depend on the type.
func (b *builder) metric(name, dcgmName, help string, t prometheus.ValueType, v, dcgmScale float64) {
	if b.dcgm() && dcgmName != "" {
		b.emit(dcgmName, help, prometheus.GaugeValue, v*dcgmScale, nil, nil)
		return
	}
	b.emit(name, help, t, v, nil, nil)
}

const mib = 1.0 / (1 << 20)

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
	b.names = []string{"gpu", "UUID", "device", "modelName", "Hostname", "container", "namespace", "pod"}
	b.values = []string{idx, g.UUID, device, g.Name, b.s.Hostname, ctr, ns, pod}
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

	if v := g.UtilRatio; v != nil {
		b.metric("inferscope_gpu_utilization_ratio", "DCGM_FI_DEV_GPU_UTIL", "Fraction of time a kernel was running on the GPU.", prometheus.GaugeValue, *v, 100)
	}
	if v := g.MemBandwidthRatio; v != nil {
		b.metric("inferscope_gpu_memory_bandwidth_utilization_ratio", "DCGM_FI_DEV_MEM_COPY_UTIL", "Fraction of time device memory was being read or written.", prometheus.GaugeValue, *v, 100)
	}
	b.memory(g.MemUsedBytes, g.MemTotalBytes, g.MemReservedBytes)
	if v := g.TemperatureCelsius; v != nil {
		b.metric("inferscope_gpu_temperature_celsius", "DCGM_FI_DEV_GPU_TEMP", "GPU temperature.", prometheus.GaugeValue, *v, 1)
	}
	if v := g.PowerWatts; v != nil {
		b.metric("inferscope_gpu_power_watts", "DCGM_FI_DEV_POWER_USAGE", "Power draw.", prometheus.GaugeValue, *v, 1)
	}
	if v := g.PowerLimitWatts; v != nil {
		b.metric("inferscope_gpu_power_limit_watts", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "Enforced power limit.", prometheus.GaugeValue, *v, 1)
	}
	if v := g.SMClockMHz; v != nil {
		b.metric("inferscope_gpu_sm_clock_hertz", "DCGM_FI_DEV_SM_CLOCK", "SM clock frequency.", prometheus.GaugeValue, float64(*v)*1e6, 1e-6)
	}
	if v := g.MemClockMHz; v != nil {
		b.metric("inferscope_gpu_memory_clock_hertz", "DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency.", prometheus.GaugeValue, float64(*v)*1e6, 1e-6)
	}
	if g.ThrottleReasonsMask != nil {
		mask := *g.ThrottleReasonsMask
		if b.dcgm() {
			b.gauge("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Clock-event (throttle) reasons bitmask.", float64(mask))
		}
		for _, r := range snapshot.ThrottleReasonNames {
			b.emit("inferscope_gpu_clock_event_reason_active", "1 while the clock-event (throttle) reason holds clocks down.",
				prometheus.GaugeValue, boolValue(mask&r.Bit != 0), []string{"reason"}, []string{r.Name})
		}
	}
	if v := g.PCIeRxBytesPerSecond; v != nil {
		b.metric("inferscope_gpu_pcie_rx_bytes_per_second", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "PCIe receive throughput (NVML ~20 ms sample).", prometheus.GaugeValue, *v, 1.0/1024)
	}
	if v := g.PCIeTxBytesPerSecond; v != nil {
		b.metric("inferscope_gpu_pcie_tx_bytes_per_second", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "PCIe transmit throughput (NVML ~20 ms sample).", prometheus.GaugeValue, *v, 1.0/1024)
	}
	if v := g.PCIeReplays; v != nil {
		b.metric("inferscope_gpu_pcie_replays_total", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "PCIe replays (retries).", prometheus.CounterValue, float64(*v), 1)
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

func (b *builder) memory(used, total, reserved *uint64) {
	if used != nil {
		b.metric("inferscope_gpu_memory_used_bytes", "DCGM_FI_DEV_FB_USED", "Device memory used.", prometheus.GaugeValue, float64(*used), mib)
	}
	if total != nil {
		b.metric("inferscope_gpu_memory_total_bytes", "DCGM_FI_DEV_FB_TOTAL", "Device memory total.", prometheus.GaugeValue, float64(*total), mib)
	}
	if reserved != nil {
		b.metric("inferscope_gpu_memory_reserved_bytes", "DCGM_FI_DEV_FB_RESERVED", "Device memory reserved by the driver.", prometheus.GaugeValue, float64(*reserved), mib)
	}
	if b.dcgm() && used != nil && total != nil {
		free := float64(*total) - float64(*used)
		if reserved != nil {
			free -= float64(*reserved)
		}
		b.gauge("DCGM_FI_DEV_FB_FREE", "Device memory free.", max(free, 0)*mib)
	}
}

func (b *builder) ecc(g *snapshot.GPU) {
	const help = "Volatile ECC errors since the driver loaded."
	if b.dcgm() {
		if v := g.ECCCorrected; v != nil {
			b.gauge("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Single-bit (corrected) volatile ECC errors.", float64(*v))
		}
		if v := g.ECCUncorrected; v != nil {
			b.gauge("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Double-bit (uncorrected) volatile ECC errors.", float64(*v))
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
		opt := func(name, help string, v *uint64) {
			if v != nil {
				b.gauge(name, help, float64(*v))
			}
		}
		opt("DCGM_FI_DEV_RETIRED_SBE", "Pages retired for multiple single-bit errors.", g.RetiredPagesSingleBit)
		opt("DCGM_FI_DEV_RETIRED_DBE", "Pages retired for double-bit errors.", g.RetiredPagesDoubleBit)
		opt("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Rows remapped for correctable errors.", g.RemappedRowsCorrectable)
		opt("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Rows remapped for uncorrectable errors.", g.RemappedRowsUncorrectable)
		if v := g.RetiredPagesPending; v != nil {
			b.gauge("DCGM_FI_DEV_RETIRED_PENDING", "1 when a page retirement awaits a reboot.", boolValue(*v))
		}
		if v := g.RowRemapPending; v != nil {
			b.gauge("DCGM_FI_DEV_ROW_REMAP_PENDING", "1 when a row remapping awaits a GPU reset.", boolValue(*v))
		}
		if v := g.RowRemapFailure; v != nil {
			b.gauge("DCGM_FI_DEV_ROW_REMAP_FAILURE", "1 when row remapping has failed.", boolValue(*v))
		}
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
		last := 0.0
		if g.LastXID != nil {
			last = float64(*g.LastXID)
		}
		b.gauge("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered (0: none since the probe started).", last)
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
		b.names, b.values = b.names[:5], b.values[:5]
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
		names, values = []string{"GPU_I_ID", "GPU_I_PROFILE"}, []string{gi, m.Profile}
	} else {
		names, values = []string{"gpu_instance", "compute_instance", "mig_profile"}, []string{gi, ci, m.Profile}
	}
	saved, savedValues := b.names, b.values
	b.names = append(append([]string{}, saved...), names...)
	b.values = append(append([]string{}, savedValues...), values...)
	if v := m.UtilRatio; v != nil {
		b.metric("inferscope_gpu_utilization_ratio", "DCGM_FI_DEV_GPU_UTIL", "Fraction of time a kernel was running on the GPU.", prometheus.GaugeValue, *v, 100)
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
