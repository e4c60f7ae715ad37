// Package snapshot holds the probe's live JSON contract (GET /api/v1/gpus).
// The probe serves these types and probeclient decodes them: one definition for both.
//
// Optional fields are pointers or nil slices: null means NVML does not support the reading
// on that device (or the GPU is lost), never zero.
package snapshot

import "time"

// GPU states.
const (
	StateUp    = "up"
	StateLost  = "lost"
	StateError = "error"
)

// Snapshot is one collection cycle over every GPU of a node.
type Snapshot struct {
	Hostname      string    `json:"hostname"`
	DriverVersion string    `json:"driverVersion"`
	CUDAVersion   string    `json:"cudaVersion"`
	CollectedAt   time.Time `json:"collectedAt"`
	// AgeSeconds is filled when the snapshot is served: now minus CollectedAt.
	AgeSeconds float64 `json:"ageSeconds"`
	// CollectSeconds is how long the collection cycle took.
	CollectSeconds float64 `json:"collectSeconds"`
	// NVML says whether the library could be initialised, and why not.
	NVML NVMLStatus `json:"nvml"`
	// Mock names the simulated system ("dgxa100", "dgxh100") when the probe runs without a GPU.
	Mock string `json:"mock,omitempty"`
	GPUs []GPU  `json:"gpus"`
}

// NVMLStatus reports whether NVML is usable.
type NVMLStatus struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// XIDWindow is the window RecentXIDs counts over: dcgm-exporter's default
// --xid-count-window-size (gpufields.DefaultWindow).
const XIDWindow = 5 * time.Minute

// GPU is one physical GPU.
type GPU struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
	// Minor is the /dev/nvidiaN number; nil when unknown.
	Minor *int `json:"minor"`
	// PCIBusID is NVML's PCI bus id ("00000000:07:00.0"); empty when unknown.
	PCIBusID string `json:"pciBusId,omitempty"`
	State    string `json:"state"`
	Error    string `json:"error"`

	UtilRatio         *float64 `json:"utilRatio"`
	MemUsedBytes      *uint64  `json:"memUsedBytes"`
	MemTotalBytes     *uint64  `json:"memTotalBytes"`
	MemReservedBytes  *uint64  `json:"memReservedBytes"`
	MemUsedRatio      *float64 `json:"memUsedRatio"`
	MemBandwidthRatio *float64 `json:"memBandwidthRatio"`
	// The GPU performance monitor's activity over the last collection interval (Hopper and
	// later, not on MIG devices); nil where not measured.
	EngineActiveRatio *float64 `json:"engineActiveRatio,omitempty"`
	TensorActiveRatio *float64 `json:"tensorActiveRatio,omitempty"`
	DRAMActiveRatio   *float64 `json:"dramActiveRatio,omitempty"`

	TemperatureCelsius *float64 `json:"temperatureCelsius"`
	PowerWatts         *float64 `json:"powerWatts"`
	PowerLimitWatts    *float64 `json:"powerLimitWatts"`
	SMClockMHz         *uint32  `json:"smClockMHz"`
	MemClockMHz        *uint32  `json:"memClockMHz"`

	// ThrottleReasons lists the active clock-event reasons by name (see ThrottleReasonNames);
	// an empty list means none is active, null means unsupported.
	ThrottleReasons []string `json:"throttleReasons"`
	// ThrottleReasonsMask is NVML's raw clock-event bitmask.
	ThrottleReasonsMask *uint64 `json:"throttleReasonsMask"`

	PCIeRxBytesPerSecond *float64 `json:"pcieRxBytesPerSecond"`
	PCIeTxBytesPerSecond *float64 `json:"pcieTxBytesPerSecond"`
	PCIeReplays          *uint64  `json:"pcieReplays"`

	// ECC counts are volatile (since the driver loaded).
	ECCCorrected   *uint64 `json:"eccCorrected"`
	ECCUncorrected *uint64 `json:"eccUncorrected"`

	RetiredPagesSingleBit *uint64 `json:"retiredPagesSingleBit"`
	RetiredPagesDoubleBit *uint64 `json:"retiredPagesDoubleBit"`
	RetiredPagesPending   *bool   `json:"retiredPagesPending"`

	RemappedRowsCorrectable   *uint64 `json:"remappedRowsCorrectable"`
	RemappedRowsUncorrectable *uint64 `json:"remappedRowsUncorrectable"`
	RowRemapPending           *bool   `json:"rowRemapPending"`
	RowRemapFailure           *bool   `json:"rowRemapFailure"`

	// XIDErrors counts XID events per code since the probe started (key: decimal code): empty
	// while the XID watcher runs and none came, nil when XIDs are not watched (not measured).
	XIDErrors map[string]uint64 `json:"xidErrors"`
	// LastXID is the most recent XID code seen, nil before the first one.
	LastXID *uint64 `json:"lastXid"`
	// RecentXIDs counts XID events per code over the last XIDWindow before CollectedAt (key:
	// decimal code), as dcgm-exporter's DCGM_EXP_XID_ERRORS_COUNT does; nil when none.
	RecentXIDs map[string]uint64 `json:"recentXids,omitempty"`

	Processes []Process `json:"processes"`

	MIGEnabled *bool       `json:"migEnabled"`
	MIGDevices []MIGDevice `json:"migDevices,omitempty"`
}

// MIGDevice is one MIG instance of a GPU.
type MIGDevice struct {
	Index             int    `json:"index"`
	UUID              string `json:"uuid"`
	Name              string `json:"name"`
	Profile           string `json:"profile"`
	GPUInstanceID     *int   `json:"gpuInstanceId"`
	ComputeInstanceID *int   `json:"computeInstanceId"`
	Error             string `json:"error"`

	UtilRatio        *float64  `json:"utilRatio"`
	MemUsedBytes     *uint64   `json:"memUsedBytes"`
	MemTotalBytes    *uint64   `json:"memTotalBytes"`
	MemReservedBytes *uint64   `json:"memReservedBytes"`
	MemUsedRatio     *float64  `json:"memUsedRatio"`
	Processes        []Process `json:"processes"`
}

// Process is one process holding GPU memory. Container, pod and namespace are best effort.
type Process struct {
	PID             uint32 `json:"pid"`
	Name            string `json:"name"`
	UsedMemoryBytes uint64 `json:"usedMemoryBytes"`
	Container       string `json:"container"`
	Pod             string `json:"pod"`
	Namespace       string `json:"namespace"`
}

// ThrottleReason is one NVML clock-event reason bit.
type ThrottleReason struct {
	Bit  uint64
	Name string
}

// ThrottleReasonNames lists NVML's clock-event reason bits in order, with the names used
// in the JSON and in metric labels.
var ThrottleReasonNames = []ThrottleReason{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// ThrottleReasonList names the bits set in mask.
func ThrottleReasonList(mask uint64) []string {
	out := make([]string, 0, 2)
	for _, r := range ThrottleReasonNames {
		if mask&r.Bit != 0 {
			out = append(out, r.Name)
		}
	}
	return out
}
