// Package gpuclock is the test bed's side of the probe's mock mode: the scenario's GPUs as a
// mockclock.Clock, and the HTTP server the loadgen mounts so that mock probes follow the same
// scenario clock as its traffic without linking the test bed.
package gpuclock

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/inferscope/inferscope/pkg/probe/mockclock"
	"github.com/inferscope/inferscope/pkg/testbed"
)

// FromScenario follows a test-bed scenario. The scenario describes A100-SXM4-40GB GPUs; on
// DGXH100 its ratios are kept and the absolute figures (memory size, power, clocks) become
// the H100's. GPU ids beyond the scenario's GPUs per instance repeat its GPUs, so large
// simulated nodes (benchmarks) stay busy instead of lost.
func FromScenario(s *testbed.Scenario, system string) mockclock.Clock {
	n := s.GPUsPerInstance()
	h100 := system == mockclock.DGXH100
	return mockclock.ClockFunc(func(instance string, gpu int, t time.Time) mockclock.State {
		g := s.GPU(instance, gpu%n, t)
		st := mockclock.State{
			UtilRatio: g.UtilRatio, MemUsedRatio: g.MemUsedRatio, MemBandwidthRatio: g.MemBandwidthRatio,
			MemTotalBytes: g.MemTotalBytes, TempCelsius: g.TempCelsius, PowerWatts: g.PowerWatts,
			PowerLimitWatts: g.PowerLimitWatts, SMClockMHz: g.SMClockMHz, MemClockMHz: g.MemClockMHz,
			ThrottleReasons: g.ThrottleReasons, ECCCorrected: g.ECCCorrected, ECCUncorrected: g.ECCUncorrected,
			Lost: g.Lost,
		}
		for _, x := range g.XIDs {
			st.XIDs = append(st.XIDs, mockclock.XID{At: x.Time, Code: x.Code})
		}
		if h100 {
			st.MemTotalBytes = 0 // the mock H100's own 80 GB
			st.PowerWatts *= 700.0 / 400
			st.PowerLimitWatts *= 700.0 / 400
			st.SMClockMHz = uint32(float64(st.SMClockMHz) * 1980 / 1410)
			st.MemClockMHz = 2619
		}
		return st
	})
}

// ScenarioInstance checks instance against the scenario's instances; "" picks the first.
func ScenarioInstance(s *testbed.Scenario, instance string) (string, error) {
	known := s.Instances()
	if instance == "" && len(known) > 0 {
		return known[0], nil
	}
	if !slices.Contains(known, instance) {
		return "", fmt.Errorf("unknown scenario instance %q (known: %v)", instance, known)
	}
	return instance, nil
}

// Handler serves the scenario's clock at mockclock.Path for probes started with --mock.
func Handler(s *testbed.Scenario) http.Handler {
	return mockclock.Server{
		Clock:    func(system string) mockclock.Clock { return FromScenario(s, system) },
		Instance: func(instance string) (string, error) { return ScenarioInstance(s, instance) },
	}
}
