// Package mockclock is what the probe's simulated GPUs need from a scenario: the truth of one
// GPU of one instance at one instant. The truth is served over HTTP by whoever holds the
// scenario (the test bed's loadgen) and read here by the probe's --mock mode, so the deployed
// probe links neither the scenario nor its test helpers. The package has no NVML dependency:
// a server built without cgo can serve it.
package mockclock

import "time"

// Systems the mock can play.
const (
	DGXA100 = "dgxa100"
	DGXH100 = "dgxh100"
)

// State is what one simulated GPU shows at one instant.
type State struct {
	UtilRatio, MemUsedRatio, MemBandwidthRatio float64
	MemTotalBytes                              uint64 // 0: the mock device's own size
	TempCelsius, PowerWatts, PowerLimitWatts   float64
	SMClockMHz, MemClockMHz                    uint32
	ThrottleReasons                            uint64 // NVML clock-event bitmask
	ECCCorrected, ECCUncorrected               uint64 // cumulative
	PCIeReplays                                uint64 // cumulative
	// XIDs are events near t; the mock delivers each once, when its time has come.
	XIDs []XID `json:",omitempty"`
	Lost bool  `json:",omitempty"`
}

// XID is one XID event.
type XID struct {
	At   time.Time
	Code uint64
}

// Clock gives the truth of GPU gpu of instance at time t.
type Clock interface {
	GPU(instance string, gpu int, t time.Time) State
}

// ClockFunc adapts a function to Clock.
type ClockFunc func(instance string, gpu int, t time.Time) State

// GPU calls f.
func (f ClockFunc) GPU(instance string, gpu int, t time.Time) State { return f(instance, gpu, t) }
