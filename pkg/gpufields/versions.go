package gpufields

import (
	"fmt"
	"slices"
)

// dcgm-exporter release lines, as the table tells their names apart. A release tag of
// dcgm-exporter reads <DCGM version>-<exporter version> (4.6.0-4.8.3 is exporter 4.8.3 built
// on DCGM 4.6.0); the versions here are the exporter's.
//
// What each line changed, as read in NVIDIA/dcgm-exporter (etc/default-counters.csv, the metric
// templates of pkg/dcgmexporter/pipeline.go and internal/pkg/rendermetrics/render_metrics.go,
// gpu_collector.go) at the tags named, and in NVIDIA/go-dcgm's dcgm_fields.h:
//   - 3.4.2 (tag 3.3.6-3.4.2, 2024-05): the XID field's samples gain err_code/err_msg labels.
//   - 3.5.0 (tag 3.3.7-3.5.0): the pci_bus_id label; PCIe traffic moves from
//     DCGM_FI_DEV_PCIE_{TX,RX}_THROUGHPUT (KB/s) to DCGM_FI_PROF_PCIE_{TX,RX}_BYTES (bytes/s).
//   - 4.x (on in tag 4.4.1-4.5.2): DCGM_FI_DEV_FB_RESERVED and the profiling fields
//     GR_ENGINE_ACTIVE, PIPE_TENSOR_ACTIVE, DRAM_ACTIVE in the default counters file.
//   - 4.8.3 (tag 4.6.0-4.8.3, commit "Rename Hostname label to hostname (#655)"): hostname.
//   - 4.9.0 (release notes): the 23 default fields DCGM 4.7 deprecates take their canonical
//     base-unit names, FB_CAPACITY_BYTES is on by default, the driver label is
//     DCGM_FI_SYSTEM_DRIVER_VERSION. See Confirmed for which of its names were read where.

// Version is a dcgm-exporter release line.
type Version string

// Versions of dcgm-exporter the table tells apart.
const (
	// DCGM3 is dcgm-exporter 3.4.2 – 3.4.x: Hostname, no pci_bus_id, XID labels, PCIe in KB/s.
	DCGM3 Version = "3.x"
	// DCGM45 is dcgm-exporter 3.5 – 4.8.2: Hostname,
	// pci_bus_id, PCIe and profiling fields, FB_RESERVED.
	DCGM45 Version = "4.5"
	// DCGM48 is dcgm-exporter 4.8.3 – 4.8.x: as 4.5 with the node label hostname.
	DCGM48 Version = "4.8"
	// DCGM49 is dcgm-exporter 4.9 and later: DCGM's base-unit names.
	DCGM49 Version = "4.9"
)

// DCGMVersions are the versions, oldest first.
var DCGMVersions = []Version{DCGM3, DCGM45, DCGM48, DCGM49}

// ParseVersion reads a version ("3", "3.x", "4.5", "4.8", "4.9").
func ParseVersion(s string) (Version, error) {
	if s == "3" {
		return DCGM3, nil
	}
	if slices.Contains(DCGMVersions, Version(s)) {
		return Version(s), nil
	}
	return "", fmt.Errorf("unknown dcgm-exporter version %q: use 3.x, 4.5, 4.8 or 4.9", s)
}

// VersionLabels are the label names a dcgm-exporter version puts on every GPU series.
type VersionLabels struct {
	GPU, UUID, Device, ModelName string
	// PCIBusID is "" where the version has no such label.
	PCIBusID string
	Node     string // Hostname or hostname
	Driver   string // the driver-version label (a "label" row of the counters file, on by default)
	// GPUInstanceID and GPUInstanceProfile are the MIG labels.
	GPUInstanceID, GPUInstanceProfile string
	// Pod, Namespace and Container are added by the Kubernetes pod mapping.
	Pod, Namespace, Container string
	// XIDCode and XIDMessage label the XID field's samples.
	XIDCode, XIDMessage string
	// XID labels DCGM_EXP_XID_ERRORS_COUNT's samples with the code; WindowLabel its window.
	XID string
}

// Labels returns the version's label names.
func Labels(v Version) VersionLabels {
	l := VersionLabels{
		GPU: "gpu", UUID: "UUID", Device: "device", ModelName: "modelName", PCIBusID: "pci_bus_id",
		Node: "hostname", Driver: DriverLabels[0], GPUInstanceID: "GPU_I_ID", GPUInstanceProfile: "GPU_I_PROFILE",
		Pod: "pod", Namespace: "namespace", Container: "container",
		XIDCode: "err_code", XIDMessage: "err_msg", XID: "xid",
	}
	switch v {
	case DCGM3:
		l.PCIBusID, l.Node = "", "Hostname"
	case DCGM45:
		l.Node = "Hostname"
	case DCGM49:
		l.Driver = DriverLabels[1]
	}
	return l
}

// Signals the probe writes beyond the ones the readings use, and the default fields of
// dcgm-exporter the probe does not measure (so a fixture's every default field has a signal).
const (
	MemCopyUtil           Signal = "memory_copy_util" // ratio 0..1: time device memory was read or written
	EncoderUtil           Signal = "encoder_util"     // ratio
	DecoderUtil           Signal = "decoder_util"     // ratio
	MemoryTemperature     Signal = "memory_temperature"
	Energy                Signal = "energy" // joules since the driver loaded
	PowerLimit            Signal = "power_limit"
	MemClock              Signal = "memory_clock"  // Hz
	PCIeTX                Signal = "pcie_tx"       // bytes/s
	PCIeRX                Signal = "pcie_rx"       // bytes/s
	PCIeReplays           Signal = "pcie_replays"  // count
	NVLinkBandwidth       Signal = "nvlink_total"  // dcgm-exporter's default NVLink counter, as is
	VGPULicense           Signal = "vgpu_license"  // status, as is
	ECCCorrected          Signal = "ecc_corrected" // errors
	RetiredSBE            Signal = "retired_pages_sbe"
	RetiredDBE            Signal = "retired_pages_dbe"
	RetiredPending        Signal = "retired_pages_pending"
	RemappedCorrectable   Signal = "remapped_rows_correctable"
	RemappedUncorrectable Signal = "remapped_rows_uncorrectable"
	RowRemapPending       Signal = "row_remap_pending"
	RowRemapFailure       Signal = "row_remap_failure"
)

func probeOf(metric string, shape Shape, matchers map[string]string) Name {
	return Name{Metric: metric, Exporter: Probe, Shape: shape, Scale: 1, Matchers: matchers, Versions: "all"}
}

// ExtraFields are the signals the readings do not use (Fields lists those): what else the
// probe's dcgm namings write and dcgm-exporter's default counters files hold. They are kept
// apart so that Fields stays the set of names the engine and the alert renderings read.
var ExtraFields = []Field{
	{Signal: MemCopyUtil, Title: "memory copy utilisation", Unit: "ratio", Names: []Name{
		probe("inferscope_gpu_memory_bandwidth_utilization_ratio", Gauge),
		dcgm("DCGM_FI_DEV_MEM_COPY_UTIL", Gauge, 0.01, upTo48),
		dcgm("DCGM_FI_DEV_MEMORY_UTIL_RATIO", Gauge, 1, from49),
	}},
	{Signal: EncoderUtil, Title: "encoder utilisation", Unit: "ratio", Names: []Name{
		dcgm("DCGM_FI_DEV_ENC_UTIL", Gauge, 0.01, upTo48),
		dcgm("DCGM_FI_DEV_ENC_UTIL_RATIO", Gauge, 1, from49),
	}},
	{Signal: DecoderUtil, Title: "decoder utilisation", Unit: "ratio", Names: []Name{
		dcgm("DCGM_FI_DEV_DEC_UTIL", Gauge, 0.01, upTo48),
		dcgm("DCGM_FI_DEV_DEC_UTIL_RATIO", Gauge, 1, from49),
	}},
	{Signal: MemoryTemperature, Title: "GPU memory temperature", Unit: "celsius", Names: []Name{
		dcgm("DCGM_FI_DEV_MEMORY_TEMP", Gauge, 1, upTo48),
		dcgm("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", Gauge, 1, from49),
	}},
	{Signal: Energy, Title: "GPU energy since the driver loaded", Unit: "joules", Names: []Name{
		dcgm("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Counter, 1e-3, upTo48+"; mJ"),
		dcgm("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", Counter, 1, from49+"; inferred"),
	}},
	{Signal: PowerLimit, Title: "enforced power limit", Unit: "watts", Names: []Name{
		probe("inferscope_gpu_power_limit_watts", Gauge),
		dcgm("DCGM_FI_DEV_POWER_MGMT_LIMIT", Gauge, 1, "all (off by default)"),
	}},
	{Signal: MemClock, Title: "memory clock", Unit: "hertz", Names: []Name{
		probe("inferscope_gpu_memory_clock_hertz", Gauge),
		dcgm("DCGM_FI_DEV_MEM_CLOCK", Gauge, 1e6, upTo48),
		dcgm("DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", Gauge, 1, from49),
	}},
	{Signal: PCIeTX, Title: "PCIe transmit throughput", Unit: "bytes per second", Names: []Name{
		probe("inferscope_gpu_pcie_tx_bytes_per_second", Gauge),
		dcgm("DCGM_FI_PROF_PCIE_TX_BYTES", Gauge, 1, "3.5 – 4.9"),
		dcgm("DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", Gauge, 1, "4.10 and later"),
		dcgm("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Gauge, 1024, "3.x to 3.4 (deprecated; KB/s)"),
	}},
	{Signal: PCIeRX, Title: "PCIe receive throughput", Unit: "bytes per second", Names: []Name{
		probe("inferscope_gpu_pcie_rx_bytes_per_second", Gauge),
		dcgm("DCGM_FI_PROF_PCIE_RX_BYTES", Gauge, 1, "3.5 – 4.9"),
		dcgm("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", Gauge, 1, "4.10 and later"),
		dcgm("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", Gauge, 1024, "3.x to 3.4 (deprecated; KB/s)"),
	}},
	{Signal: PCIeReplays, Title: "PCIe replays", Unit: "replays", Names: []Name{
		probe("inferscope_gpu_pcie_replays_total", Counter),
		dcgm("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Counter, 1, upTo48),
		dcgm("DCGM_FI_DEV_PCIE_REPLAY_TOTAL", Counter, 1, from49),
	}},
	{Signal: NVLinkBandwidth, Title: "NVLink bandwidth counter, all lanes", Unit: "as exported", Names: []Name{
		dcgm("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", Counter, 1, upTo48),
		dcgm("DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL", Counter, 1, from49),
	}},
	{Signal: VGPULicense, Title: "vGPU licence status", Unit: "status", Names: []Name{
		dcgm("DCGM_FI_DEV_VGPU_LICENSE_STATUS", Gauge, 1, "all"),
	}},
	{Signal: RetiredSBE, Title: "pages retired for single-bit errors", Unit: "pages", Enable: "DCGM_FI_DEV_RETIRED_SBE", Names: []Name{
		probeOf("inferscope_gpu_retired_pages", Gauge, map[string]string{"cause": "single_bit_ecc"}),
		dcgm("DCGM_FI_DEV_RETIRED_SBE", Counter, 1, "all (off by default)"),
	}},
	{Signal: RetiredDBE, Title: "pages retired for double-bit errors", Unit: "pages", Enable: "DCGM_FI_DEV_RETIRED_DBE", Names: []Name{
		probeOf("inferscope_gpu_retired_pages", Gauge, map[string]string{"cause": "double_bit_ecc"}),
		dcgm("DCGM_FI_DEV_RETIRED_DBE", Counter, 1, "all (off by default)"),
	}},
	{Signal: RetiredPending, Title: "page retirement pending", Unit: "flag", Enable: "DCGM_FI_DEV_RETIRED_PENDING", Names: []Name{
		probe("inferscope_gpu_retired_pages_pending", Gauge),
		dcgm("DCGM_FI_DEV_RETIRED_PENDING", Gauge, 1, "all (off by default)"),
	}},
	{Signal: RemappedCorrectable, Title: "rows remapped for correctable errors", Unit: "rows", Names: []Name{
		probeOf("inferscope_gpu_remapped_rows", Gauge, map[string]string{"type": "correctable"}),
		dcgm("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", Counter, 1, upTo48),
		dcgm("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", Counter, 1, from49),
	}},
	{Signal: RemappedUncorrectable, Title: "rows remapped for uncorrectable errors", Unit: "rows", Names: []Name{
		probeOf("inferscope_gpu_remapped_rows", Gauge, map[string]string{"type": "uncorrectable"}),
		dcgm("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", Counter, 1, upTo48),
		dcgm("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", Counter, 1, from49),
	}},
	{Signal: RowRemapPending, Title: "row remapping pending", Unit: "flag", Enable: "DCGM_FI_DEV_ROW_REMAP_PENDING", Names: []Name{
		probe("inferscope_gpu_row_remap_pending", Gauge),
		dcgm("DCGM_FI_DEV_ROW_REMAP_PENDING", Gauge, 1, "all (off by default)"),
	}},
	{Signal: RowRemapFailure, Title: "row remapping failed", Unit: "flag", Names: []Name{
		probe("inferscope_gpu_row_remap_failed", Gauge),
		dcgm("DCGM_FI_DEV_ROW_REMAP_FAILURE", Gauge, 1, upTo48),
		dcgm("DCGM_FI_DEV_ROW_REMAP_FAILED", Gauge, 1, from49),
	}},
}

// All lists Fields, then ExtraFields.
func All() []Field { return append(slices.Clone(Fields), ExtraFields...) }

// Find returns a signal's field among All.
func Find(s Signal) (Field, bool) {
	for _, f := range All() {
		if f.Signal == s {
			return f, true
		}
	}
	return Field{}, false
}

var (
	all    = DCGMVersions
	upTo   = []Version{DCGM3, DCGM45, DCGM48}
	from45 = []Version{DCGM45, DCGM48, DCGM49}
	only49 = []Version{DCGM49}
)

// dcgmIn says in which versions a dcgm-exporter metric name is the field's name (whether or
// not the default counters file has it on); dcgmOff in which the default counters file leaves
// it off. A name not in dcgmIn is known but written by no version the table tells apart (an
// alias a user's counters file may still spell).
var (
	dcgmIn = map[string][]Version{
		"DCGM_FI_DEV_GPU_UTIL": upTo, "DCGM_FI_DEV_GPU_UTIL_RATIO": only49,
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE": upTo, "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO": only49,
		"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": upTo, "DCGM_FI_PROF_TENSOR_UTIL_RATIO": only49,
		"DCGM_FI_PROF_DRAM_ACTIVE": upTo, "DCGM_FI_PROF_DRAM_UTIL_RATIO": only49,
		"DCGM_FI_DEV_FB_USED": upTo, "DCGM_FI_DEV_FB_USED_BYTES": only49,
		"DCGM_FI_DEV_FB_FREE": upTo, "DCGM_FI_DEV_FB_FREE_BYTES": only49,
		"DCGM_FI_DEV_FB_RESERVED": upTo, "DCGM_FI_DEV_FB_RESERVED_BYTES": only49,
		"DCGM_FI_DEV_FB_TOTAL": upTo, "DCGM_FI_DEV_FB_CAPACITY_BYTES": only49,
		"DCGM_FI_DEV_GPU_TEMP": upTo, "DCGM_FI_DEV_GPU_TEMP_CELSIUS": only49,
		"DCGM_FI_DEV_POWER_USAGE": upTo, "DCGM_FI_DEV_BOARD_POWER_WATTS": only49,
		"DCGM_FI_DEV_SM_CLOCK": upTo, "DCGM_FI_DEV_SM_CLOCK_HERTZ": only49,
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": {DCGM3, DCGM45},
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS":   {DCGM48, DCGM49},
		"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":      all,
		"DCGM_EXP_XID_ERRORS_COUNT":          all,
		"DCGM_FI_DEV_XID_ERRORS":             upTo, "DCGM_FI_DEV_XID_ERROR": only49,

		"DCGM_FI_DEV_MEM_COPY_UTIL": upTo, "DCGM_FI_DEV_MEMORY_UTIL_RATIO": only49,
		"DCGM_FI_DEV_ENC_UTIL": upTo, "DCGM_FI_DEV_ENC_UTIL_RATIO": only49,
		"DCGM_FI_DEV_DEC_UTIL": upTo, "DCGM_FI_DEV_DEC_UTIL_RATIO": only49,
		"DCGM_FI_DEV_MEMORY_TEMP": upTo, "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS": only49,
		"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": upTo, "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL": only49,
		"DCGM_FI_DEV_POWER_MGMT_LIMIT": all,
		"DCGM_FI_DEV_MEM_CLOCK":        upTo, "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ": only49,
		"DCGM_FI_DEV_PCIE_TX_THROUGHPUT": {DCGM3}, "DCGM_FI_PROF_PCIE_TX_BYTES": from45,
		"DCGM_FI_DEV_PCIE_RX_THROUGHPUT": {DCGM3}, "DCGM_FI_PROF_PCIE_RX_BYTES": from45,
		"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": upTo, "DCGM_FI_DEV_PCIE_REPLAY_TOTAL": only49,
		"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": upTo, "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL": only49,
		"DCGM_FI_DEV_VGPU_LICENSE_STATUS": all,
		"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":   all,
		"DCGM_FI_DEV_RETIRED_SBE":         all, "DCGM_FI_DEV_RETIRED_DBE": all, "DCGM_FI_DEV_RETIRED_PENDING": all,
		"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": upTo, "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL": only49,
		"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": upTo, "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL": only49,
		"DCGM_FI_DEV_ROW_REMAP_PENDING": all,
		"DCGM_FI_DEV_ROW_REMAP_FAILURE": upTo, "DCGM_FI_DEV_ROW_REMAP_FAILED": only49,
	}
	dcgmOff = map[string][]Version{
		// 3.x's default counters file has neither FB_RESERVED nor the profiling fields.
		"DCGM_FI_DEV_FB_RESERVED": {DCGM3}, "DCGM_FI_PROF_GR_ENGINE_ACTIVE": {DCGM3},
		"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": {DCGM3}, "DCGM_FI_PROF_DRAM_ACTIVE": {DCGM3},
		"DCGM_FI_DEV_FB_TOTAL": upTo, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": all, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": all,
		"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": all, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": all, "DCGM_EXP_XID_ERRORS_COUNT": all,
		"DCGM_FI_DEV_POWER_MGMT_LIMIT": all, "DCGM_FI_DEV_RETIRED_SBE": all, "DCGM_FI_DEV_RETIRED_DBE": all,
		"DCGM_FI_DEV_RETIRED_PENDING": all, "DCGM_FI_DEV_ROW_REMAP_PENDING": all,
	}
)

// In reports whether the name is its field's name in dcgm-exporter version v.
func (n Name) In(v Version) bool {
	return n.Exporter == DCGM && slices.Contains(dcgmIn[n.Metric], v)
}

// DefaultIn reports whether version v's default counters file has the name on.
func (n Name) DefaultIn(v Version) bool {
	return n.In(v) && !slices.Contains(dcgmOff[n.Metric], v)
}

// DCGMName returns the field's name in dcgm-exporter version v: the one on by default where
// the version has two (the XID field before DCGM_EXP_XID_ERRORS_COUNT), else the one a
// counters file enables; false when the version has no name for the signal.
func (f Field) DCGMName(v Version) (Name, bool) {
	var off *Name
	for i, n := range f.Names {
		if n.DefaultIn(v) {
			return n, true
		}
		if n.In(v) && off == nil {
			off = &f.Names[i]
		}
	}
	if off != nil {
		return *off, true
	}
	return Name{}, false
}

// DCGMShape returns the field's name of the given shape in version v (DCGM_EXP_XID_ERRORS_COUNT
// is XID's WindowCount name).
func (f Field) DCGMShape(v Version, shape Shape) (Name, bool) {
	for _, n := range f.Names {
		if n.In(v) && n.Shape == shape {
			return n, true
		}
	}
	return Name{}, false
}

// DCGMName returns the signal's name in version v (see Field.DCGMName), for a signal of
// Fields or ExtraFields.
func DCGMName(s Signal, v Version) (Name, bool) {
	f, ok := Find(s)
	if !ok {
		return Name{}, false
	}
	return f.DCGMName(v)
}

// DefaultSignals lists the signals version v's default counters file exports, in the order of
// All.
func DefaultSignals(v Version) []Signal {
	var out []Signal
	for _, f := range All() {
		if n, ok := f.DCGMName(v); ok && n.DefaultIn(v) {
			out = append(out, f.Signal)
		}
	}
	return out
}

// Confirmed says, for people, where each 4.9 name was read: "header" where NVIDIA/go-dcgm's
// dcgm_fields.h (DCGM 4.6.1 support, 2026-08) defines it, "field reference" where only DCGM
// 4.7's Field Identifiers reference does (as quoted in a public summary; not in the header yet),
// "inferred" where the name is our reading of the release notes (a deprecated field's
// canonical name) with no source spelling it as an exporter metric. That dcgm-exporter 4.9's
// counters file uses each canonical name as the metric name is itself inferred from the
// release notes ("renames the 23 default fields DCGM 4.7 deprecates"): the 23 are the names
// only49 holds for default fields, one per default row of 4.8 except VGPU_LICENSE_STATUS and
// the PROF_PCIE pair.
var Confirmed = map[string]string{
	"DCGM_FI_DEV_GPU_UTIL_RATIO":                "field reference (1613; the header's 203 alias is percent)",
	"DCGM_FI_DEV_MEMORY_UTIL_RATIO":             "field reference (1614)",
	"DCGM_FI_DEV_ENC_UTIL_RATIO":                "field reference (1615)",
	"DCGM_FI_DEV_DEC_UTIL_RATIO":                "field reference (1616)",
	"DCGM_FI_DEV_FB_CAPACITY_BYTES":             "field reference (1625)",
	"DCGM_FI_DEV_FB_FREE_BYTES":                 "field reference (1626)",
	"DCGM_FI_DEV_FB_USED_BYTES":                 "field reference (1627)",
	"DCGM_FI_DEV_FB_RESERVED_BYTES":             "field reference (1628)",
	"DCGM_FI_DEV_GPU_TEMP_CELSIUS":              "header (150)",
	"DCGM_FI_DEV_MEMORY_TEMP_CELSIUS":           "header (140)",
	"DCGM_FI_DEV_BOARD_POWER_WATTS":             "header (155)",
	"DCGM_FI_DEV_SM_CLOCK_HERTZ":                "header (1603)",
	"DCGM_FI_DEV_MEMORY_CLOCK_HERTZ":            "header (1604)",
	"DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL":       "header (1611); inferred as the rename of TOTAL_ENERGY_CONSUMPTION (mJ)",
	"DCGM_FI_DEV_PCIE_REPLAY_TOTAL":             "header (202)",
	"DCGM_FI_DEV_XID_ERROR":                     "header (230)",
	"DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL":       "header (449)",
	"DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL":   "header (394)",
	"DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL": "header (393)",
	"DCGM_FI_DEV_ROW_REMAP_FAILED":              "header (395)",
	"DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO":         "header (1001)",
	"DCGM_FI_PROF_TENSOR_UTIL_RATIO":            "header (1004)",
	"DCGM_FI_PROF_DRAM_UTIL_RATIO":              "header (1005)",
	"DCGM_FI_SYSTEM_DRIVER_VERSION":             "header (1) and the 4.9 release notes",
}
