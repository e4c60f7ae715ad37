// Package gpufields is the one table of GPU metric names the project reads and writes: for each
// GPU signal, every name an exporter may give it (the Inferscope probe's, dcgm-exporter's from
// 3.x to 4.10 — deprecated, default and the base-unit names DCGM 4.7 made canonical and
// dcgm-exporter 4.9 adopted —, Triton's own nv_gpu_*), each with the factor that turns its
// unit into the signal's base unit, and, for the dcgm-exporter fields that its default counters
// file leaves off, what to enable when nothing is found. The engine, the alert renderings and
// the probe's dcgm naming all read this table; nothing else spells these names.
//
// The package is pure data: no I/O, no Prometheus types.
package gpufields

import (
	"fmt"
	"math"
)

// Signal is one GPU measurement, whatever the exporter calls it.
type Signal string

// Signals.
const (
	Util         Signal = "util"          // ratio 0..1: time a kernel ran
	EngineActive Signal = "engine_active" // ratio 0..1: graphics/compute engine busy (profiling)
	TensorActive Signal = "tensor_active" // ratio 0..1: tensor pipe busy (profiling)
	DRAMActive   Signal = "dram_active"   // ratio 0..1: memory interface busy (profiling)
	MemUsed      Signal = "memory_used"   // bytes
	MemFree      Signal = "memory_free"   // bytes
	MemReserved  Signal = "memory_reserved"
	MemTotal     Signal = "memory_total"
	Temperature  Signal = "temperature" // °C
	Power        Signal = "power"       // W
	SMClock      Signal = "sm_clock"    // Hz
	ClockEvents  Signal = "clock_events"
	ECCErrors    Signal = "ecc_uncorrected"
	XID          Signal = "xid"
)

// Exporter says who writes a name.
type Exporter string

// Exporters.
const (
	Probe  Exporter = "inferscope-probe"
	DCGM   Exporter = "dcgm-exporter"
	Triton Exporter = "triton"
)

// Shape is how a name's samples are read.
type Shape int

// Shapes.
const (
	// Gauge: the current value, times Scale.
	Gauge Shape = iota
	// Counter: a cumulative count (XIDs by code, ECC errors).
	Counter
	// Bitmask: a clock-event reasons bitmask (NVML's bits).
	Bitmask
	// ReasonGauge: one 0/1 series per clock-event reason (label `reason`).
	ReasonGauge
	// LastValue: the value of the last event (dcgm-exporter's XID field, 0 = none yet); since
	// 2024 each sample also carries err_code/err_msg labels, so a new code starts a new series.
	LastValue
	// WindowCount: events counted over the exporter's sliding window, whose length in ms is
	// the label WindowLabel (DCGM_EXP_XID_ERRORS_COUNT).
	WindowCount
)

// WindowLabel names a WindowCount's window length in milliseconds.
const WindowLabel = "window_size_in_ms"

// DefaultWindow is dcgm-exporter's default --xid-count-window-size (5 minutes).
const DefaultWindow = 300000 // ms

// Name is one metric name of a signal.
type Name struct {
	Metric   string
	Exporter Exporter
	Shape    Shape
	// Scale turns the value into the signal's base unit (0.01 for percent, 2^20 for MiB, 1e6
	// for MHz).
	Scale float64
	// Matchers are fixed label matchers the name needs (the probe's ECC type).
	Matchers map[string]string
	// Versions says which exporter releases write it, for people.
	Versions string
	// Presence is a metric of the same exporter whose series on a node mean this name is
	// measured there although it has no series yet (the probe's XID counters appear with the
	// first event of a code).
	Presence string
}

// Field is a signal and its names, best first.
type Field struct {
	Signal Signal
	Title  string
	Unit   string // base unit
	Names  []Name
	// Enable is the dcgm-exporter counters-file field to add when no name is found, "" when
	// the exporter's default counters file has it.
	Enable string
}

const mib = 1 << 20

func dcgm(metric string, shape Shape, scale float64, versions string) Name {
	return Name{Metric: metric, Exporter: DCGM, Shape: shape, Scale: scale, Versions: versions}
}

func probe(metric string, shape Shape) Name {
	return Name{Metric: metric, Exporter: Probe, Shape: shape, Scale: 1, Versions: "all"}
}

func triton(metric string, scale float64) Name {
	return Name{Metric: metric, Exporter: Triton, Shape: Gauge, Scale: scale, Versions: "Triton 2.x (GPU metrics on)"}
}

// Version ranges of dcgm-exporter, for people.
const (
	upTo48 = "3.x – 4.8 (default counters file)"
	from49 = "4.9 and later (DCGM's base-unit names)"
)

// Fields is the table, in display order.
var Fields = []Field{
	{Signal: Util, Title: "GPU utilisation", Unit: "ratio", Names: []Name{
		probe("inferscope_gpu_utilization_ratio", Gauge),
		dcgm("DCGM_FI_DEV_GPU_UTIL", Gauge, 0.01, upTo48),
		dcgm("DCGM_FI_DEV_GPU_UTIL_RATIO", Gauge, 1, from49),
		triton("nv_gpu_utilization", 1),
	}},
	{Signal: EngineActive, Title: "graphics engine active", Unit: "ratio", Names: []Name{
		probe("inferscope_gpu_graphics_engine_active_ratio", Gauge),
		dcgm("DCGM_FI_PROF_GR_ENGINE_ACTIVE", Gauge, 1, upTo48),
		dcgm("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", Gauge, 1, from49),
	}},
	{Signal: TensorActive, Title: "tensor pipe active", Unit: "ratio", Names: []Name{
		probe("inferscope_gpu_tensor_active_ratio", Gauge),
		dcgm("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", Gauge, 1, upTo48),
		dcgm("DCGM_FI_PROF_TENSOR_UTIL_RATIO", Gauge, 1, from49),
	}},
	{Signal: DRAMActive, Title: "memory interface active", Unit: "ratio", Names: []Name{
		probe("inferscope_gpu_dram_active_ratio", Gauge),
		dcgm("DCGM_FI_PROF_DRAM_ACTIVE", Gauge, 1, upTo48),
		dcgm("DCGM_FI_PROF_DRAM_UTIL_RATIO", Gauge, 1, from49),
	}},
	{Signal: MemUsed, Title: "GPU memory used", Unit: "bytes", Names: []Name{
		probe("inferscope_gpu_memory_used_bytes", Gauge),
		dcgm("DCGM_FI_DEV_FB_USED", Gauge, mib, upTo48),
		dcgm("DCGM_FI_DEV_FB_USED_BYTES", Gauge, 1, from49),
		triton("nv_gpu_memory_used_bytes", 1),
	}},
	{Signal: MemFree, Title: "GPU memory free", Unit: "bytes", Names: []Name{
		dcgm("DCGM_FI_DEV_FB_FREE", Gauge, mib, upTo48),
		dcgm("DCGM_FI_DEV_FB_FREE_BYTES", Gauge, 1, from49),
	}},
	{Signal: MemReserved, Title: "GPU memory reserved by the driver", Unit: "bytes", Names: []Name{
		probe("inferscope_gpu_memory_reserved_bytes", Gauge),
		dcgm("DCGM_FI_DEV_FB_RESERVED", Gauge, mib, upTo48),
		dcgm("DCGM_FI_DEV_FB_RESERVED_BYTES", Gauge, 1, from49),
	}},
	{Signal: MemTotal, Title: "GPU memory total", Unit: "bytes", Names: []Name{
		probe("inferscope_gpu_memory_total_bytes", Gauge),
		dcgm("DCGM_FI_DEV_FB_TOTAL", Gauge, mib, "3.x – 4.8 (off by default)"),
		dcgm("DCGM_FI_DEV_FB_CAPACITY_BYTES", Gauge, 1, from49),
		triton("nv_gpu_memory_total_bytes", 1),
	}},
	{Signal: Temperature, Title: "GPU temperature", Unit: "celsius", Names: []Name{
		probe("inferscope_gpu_temperature_celsius", Gauge),
		dcgm("DCGM_FI_DEV_GPU_TEMP", Gauge, 1, upTo48),
		dcgm("DCGM_FI_DEV_GPU_TEMP_CELSIUS", Gauge, 1, from49),
	}},
	{Signal: Power, Title: "GPU power", Unit: "watts", Names: []Name{
		probe("inferscope_gpu_power_watts", Gauge),
		dcgm("DCGM_FI_DEV_POWER_USAGE", Gauge, 1, upTo48),
		dcgm("DCGM_FI_DEV_BOARD_POWER_WATTS", Gauge, 1, from49),
		triton("nv_gpu_power_usage", 1),
	}},
	{Signal: SMClock, Title: "SM clock", Unit: "hertz", Names: []Name{
		probe("inferscope_gpu_sm_clock_hertz", Gauge),
		dcgm("DCGM_FI_DEV_SM_CLOCK", Gauge, 1e6, upTo48),
		dcgm("DCGM_FI_DEV_SM_CLOCK_HERTZ", Gauge, 1, from49),
	}},
	{Signal: ClockEvents, Title: "clock-event (throttle) reasons", Unit: "bitmask", Enable: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", Names: []Name{
		probe("inferscope_gpu_clock_event_reason_active", ReasonGauge),
		dcgm("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", Bitmask, 1, "current name of field 112 (off by default)"),
		dcgm("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", Bitmask, 1, "deprecated name of field 112 (off by default)"),
	}},
	{Signal: ECCErrors, Title: "uncorrected ECC errors", Unit: "errors", Enable: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Names: []Name{
		{Metric: "inferscope_gpu_ecc_errors_total", Exporter: Probe, Shape: Counter, Scale: 1, Matchers: map[string]string{"type": "uncorrected"}, Versions: "all"},
		dcgm("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", Counter, 1, "all (off by default)"),
	}},
	{Signal: ECCCorrected, Title: "corrected ECC errors", Unit: "errors", Enable: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Names: []Name{
		probeOf("inferscope_gpu_ecc_errors_total", Counter, map[string]string{"type": "corrected"}),
		dcgm("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", Counter, 1, "all (off by default)"),
	}},
	{Signal: XID, Title: "XID errors", Unit: "events", Names: []Name{
		{Metric: "inferscope_gpu_xid_errors_total", Exporter: Probe, Shape: Counter, Scale: 1, Versions: "all", Presence: "inferscope_gpu_memory_used_bytes"},
		dcgm("DCGM_EXP_XID_ERRORS_COUNT", WindowCount, 1, "3.3 and later (off by default; counts every event)"),
		dcgm("DCGM_FI_DEV_XID_ERRORS", LastValue, 1, "all (default; err_code/err_msg labels since 2024)"),
		dcgm("DCGM_FI_DEV_XID_ERROR", LastValue, 1, "DCGM's canonical name of field 230"),
	}},
}

// Of returns the signal's field; the table is fixed, so an unknown signal is a bug.
func Of(s Signal) Field {
	for _, f := range Fields {
		if f.Signal == s {
			return f
		}
	}
	panic(fmt.Sprintf("gpufields: unknown signal %q", s))
}

// Metrics lists the signal's metric names, best first.
func (f Field) Metrics() []string {
	out := make([]string, len(f.Names))
	for i, n := range f.Names {
		out[i] = n.Metric
	}
	return out
}

// Lookup finds the name among the signal's names.
func (f Field) Lookup(metric string) (Name, bool) {
	for _, n := range f.Names {
		if n.Metric == metric {
			return n, true
		}
	}
	return Name{}, false
}

// Found returns the signal's names that exist (present says which metric names Prometheus
// has), best first.
func (f Field) Found(present func(string) bool) []Name {
	var out []Name
	for _, n := range f.Names {
		if present(n.Metric) {
			out = append(out, n)
		}
	}
	return out
}

// NotMeasured says, for people, why the signal has no value and what would give it one.
func (f Field) NotMeasured() string {
	if f.Enable != "" {
		return fmt.Sprintf("%s: not measured — no %s series; enable %s in dcgm-exporter's counters file (it is off by default) or run inferscope-probe",
			f.Title, nameList(f), f.Enable)
	}
	return fmt.Sprintf("%s: not measured — no %s series", f.Title, nameList(f))
}

func nameList(f Field) string {
	s := ""
	for i, n := range f.Names {
		switch {
		case i == 0:
		case i == len(f.Names)-1:
			s += " or "
		default:
			s += ", "
		}
		s += n.Metric
	}
	return s
}

// Label names GPU series carry.
var (
	// NodeLabels are where a GPU series' node may come from, in order (dcgm-exporter renamed
	// Hostname to hostname in 4.6; the probe writes node; else the scrape target's instance).
	NodeLabels = []string{"node", "Hostname", "hostname", "instance"}
	// UUIDLabels are the GPU UUID's labels (dcgm-exporter UUID, or uuid with its old-labels
	// option; the probe uuid; Triton gpu_uuid).
	UUIDLabels = []string{"UUID", "uuid", "gpu_uuid"}
	// DriverLabels are the driver version's labels (dcgm-exporter renamed it in 4.9).
	DriverLabels = []string{"DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION"}
)

// MemoryRatio is the one GPU-memory definition of the project: used / total, where total is
// the card's capacity (the total or capacity field), or used + free + reserved where the
// exporter has no total (dcgm-exporter's default counters file leaves FB_TOTAL off). NaN where
// neither can be formed.
func MemoryRatio(used, total, free, reserved float64) float64 {
	if math.IsNaN(used) {
		return math.NaN()
	}
	if !math.IsNaN(total) && total > 0 {
		return used / total
	}
	if math.IsNaN(free) {
		return math.NaN()
	}
	if math.IsNaN(reserved) {
		reserved = 0
	}
	if sum := used + free + reserved; sum > 0 {
		return used / sum
	}
	return math.NaN()
}
