package testbed

import (
	"math"
	"time"
)

// GPUState is the truth about one GPU at an instant, as NVML would report it.
type GPUState struct {
	UtilRatio, MemUsedRatio, MemBandwidthRatio float64
	MemTotalBytes                              uint64
	TempCelsius, PowerWatts, PowerLimitWatts   float64
	SMClockMHz, MemClockMHz                    uint32
	ThrottleReasons                            uint64 // NVML clock-event bitmask
	ECCCorrected, ECCUncorrected               uint64 // cumulative
	// XIDs are the GPU's XID events up to t; the caller keeps those in its own interval.
	XIDs []XIDEvent
	Lost bool
}

// XIDEvent is an NVIDIA XID error reported by the driver.
type XIDEvent struct {
	Time time.Time
	Code uint64
}

// NVML clock-event reasons used by the scenario.
const (
	ThrottleGPUIdle    uint64 = 0x1
	ThrottleSWPowerCap uint64 = 0x4
)

const (
	gpuMemTotal     = 40 << 30 // A100-SXM4-40GB
	gpuPowerLimit   = 400.0
	memNearFull     = 0.92 // the ramp reaches this at the slowdown's start
	memDuringStall  = 0.935
	sawtoothPeriod  = 120.0 // seconds; reallocation saw-tooth while memory is near full
	eccOriginBefore = 30 * 24 * time.Hour
)

// GPU returns the truth for one GPU of an instance at t. Unknown instances or GPU ids give the
// zero state with Lost set.
func (s *Scenario) GPU(instance string, gpu int, t time.Time) GPUState {
	in := s.instance(instance)
	m := s.gpuModel(gpu)
	if in == nil || m == nil {
		return GPUState{Lost: true}
	}
	st := GPUState{MemTotalBytes: gpuMemTotal, PowerLimitWatts: gpuPowerLimit, MemClockMHz: 1215}
	offset := float64(gpu%4) - 1.5 // small per-GPU spread so GPUs are distinguishable

	start := s.ProcessStart(instance, t)
	switch {
	case start.IsZero():
		st.MemUsedRatio = 0.01
	case !s.Ready(instance, t): // weights loading
		frac := t.Sub(start).Seconds() / LoadDuration.Seconds()
		st.MemUsedRatio = 0.01 + (m.memBase-0.01)*frac
	default:
		st.MemUsedRatio = m.memBase + 0.004*offset
		qps := s.QPS(instance, m.name, "", t)
		peak := m.baseQPS * (1 + diurnalAmp) * (1 + weeklyAmp)
		st.UtilRatio = math.Min(0.98, 0.15+0.7*qps/peak+0.01*offset)
		if s.WarmupFactor(instance, t) > 1 {
			st.UtilRatio = 0.95 // kernels compiling, caches filling
		}
	}

	if inc, ok := s.gpuIncident(ComputeSlowdown, instance, gpu, t, memRampDuration); ok {
		switch {
		case t.Before(inc.Start): // memory creeps up before latency breaks
			frac := 1 - inc.Start.Sub(t).Seconds()/memRampDuration.Seconds()
			st.MemUsedRatio += (memNearFull - st.MemUsedRatio) * frac
		default:
			phase := math.Mod(t.Sub(inc.Start).Seconds(), sawtoothPeriod) / sawtoothPeriod
			st.MemUsedRatio = memDuringStall - 0.005 + 0.01*phase
			st.UtilRatio = 0.97
		}
	}
	idle := false
	if inc, ok := s.gpuIncident(GPUIdle, instance, gpu, t, 0); ok && !t.Before(inc.Start) {
		st.UtilRatio = 0
		idle = true
	}

	if s.ext != nil {
		s.ext.gpuLoad(&st, s, instance, gpu, m, t)
	}
	st.MemBandwidthRatio = 0.8 * st.UtilRatio
	st.TempCelsius = 34 + 40*st.UtilRatio
	st.PowerWatts = 60 + 320*st.UtilRatio
	st.SMClockMHz = 1410
	if st.UtilRatio == 0 {
		st.SMClockMHz = 210
		st.ThrottleReasons |= ThrottleGPUIdle
	}
	if st.PowerWatts > 0.95*gpuPowerLimit {
		st.PowerWatts = 0.985 * gpuPowerLimit
		st.SMClockMHz = 1290
		st.ThrottleReasons |= ThrottleSWPowerCap
	}
	if idle { // context lost: the driver reported it
		st.ThrottleReasons = ThrottleGPUIdle
	}

	// node-b's GPU 2 has a weak memory cell: a corrected ECC error every 6 hours.
	if instance == s.groupName("node-b:8000") && gpu == 2 {
		origin := s.end.Add(-eccOriginBefore)
		if t.After(origin) {
			st.ECCCorrected = uint64(t.Sub(origin) / (6 * time.Hour))
		}
	}
	for _, inc := range s.incidents {
		if inc.Kind == GPUIdle && inc.Instance == instance && containsInt(inc.GPUs, gpu) && !t.Before(inc.Start) {
			st.XIDs = append(st.XIDs, XIDEvent{Time: inc.Start, Code: 43}) // GPU stopped processing
		}
	}
	if s.ext != nil {
		s.ext.gpuEvents(&st, instance, gpu, t)
	}
	return st
}

// gpuModel returns the model served by a GPU id.
func (s *Scenario) gpuModel(gpu int) *modelSpec {
	for _, m := range s.models {
		if containsInt(m.gpus, gpu) {
			return m
		}
	}
	return nil
}

// gpuIncident finds an incident of kind on the GPU active at t or starting within lead after t.
func (s *Scenario) gpuIncident(kind IncidentKind, instance string, gpu int, t time.Time, lead time.Duration) (Incident, bool) {
	for _, inc := range s.incidents {
		if inc.Kind == kind && inc.Instance == instance && containsInt(inc.GPUs, gpu) &&
			!t.Before(inc.Start.Add(-lead)) && t.Before(inc.End) {
			return inc, true
		}
	}
	return Incident{}, false
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
