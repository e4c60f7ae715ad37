package testbed

import (
	"math"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed/expo"
)

// The hosts under the inference instances, as node_exporter sees them (expo.NodeTargets). Host
// counters count since the host's boot (bootBefore the instance's first process start) and do
// not reset when the inference server restarts. Load follows the requests served, so it
// follows traffic (diurnal) and every incident's traffic change; the shapes are documented in
// doc.go ("Hosts").
const (
	hostCPUs       = 8
	hostMemTotal   = 1 << 40 // 1 TiB
	hostMemBase    = 96 << 30
	hostMemProcess = 48 << 30 // the serving process (weights staged in host memory, pinned buffers)
	hostMemTraffic = 16 << 30 // request buffers at the mean rate
	bootBefore     = 2 * time.Hour

	// Per-CPU steady background (daemons, scrapes), seconds per second.
	bgUser, bgSystem, bgIOWait = 0.03, 0.015, 0.004
	// Request CPU: pre-processing costs cpuPerElement per input element; user/system split.
	cpuPerElement = 30e-6
	userShare     = 0.75
	// A preempted request is re-tokenised and its pinned buffers rebuilt: request CPU grows by
	// preemptCPU per preemption share (x1.8 in the compute slowdown, whose preemption share is 2 %).
	preemptCPU = 40.0
	// The CPU fallback path's own compute, per fallback request (seconds of CPU).
	fallbackCPU = 0.045
	// Model loading after a (re)start reads weights from disk: the disk is busy loadDiskBusy of
	// the time and every CPU waits loadIOWait of its time, for LoadDuration.
	loadDiskBusy, loadIOWait = 0.9, 0.15
	diskBase, diskPerRequest = 0.01, 20e-6 // busy seconds per second, per request (request log)
	// Network: request bytes = header + 4 bytes per input element; response bytes per model.
	reqHeaderBytes, bytesPerElement = 600.0, 4.0
	bgRxBytes, bgTxBytes            = 40e3, 25e3 // bytes per second of background traffic
)

// responseBytes is the size of one answer: a ranked list (recsys), a 768-d float32 embedding.
var responseBytes = map[string]float64{"recsys-ranker": 640, "text-embedder": 3600}

// HostSource is the scenario's hosts for the naming layer (expo.NodeTargets).
func (s *Scenario) HostSource() expo.HostSource { return source{s} }

// Nodes lists the host names ("node-a", …).
func (s *Scenario) Nodes() []string {
	var out []string
	for _, in := range s.instances {
		out = append(out, Node(in.name))
	}
	return out
}

func (s *Scenario) nodeInstance(node string) *instanceSpec {
	for i := range s.instances {
		if Node(s.instances[i].name) == node {
			return &s.instances[i]
		}
	}
	return nil
}

func (s *Scenario) boot(in *instanceSpec) time.Time { return in.starts[0].Add(-bootBefore) }

// requestCPU is the expected CPU seconds a request of the stream costs in regime r.
func requestCPU(r *regime) float64 {
	return cpuPerElement*r.input.mean()*(1+preemptCPU*r.preempt) + fallbackCPU*r.fallback
}

func requestBytes(st *stream, r *regime, transmit bool) float64 {
	if transmit {
		return responseBytes[baseModel(st.m.name)]
	}
	return reqHeaderBytes + bytesPerElement*r.input.mean()
}

// hostCumulative sums a per-request expectation over every request the node served since boot:
// each process's requests, the earlier processes' counts carried over their restarts.
func (s *Scenario) hostCumulative(in *instanceSpec, t time.Time, key string, f func(*stream, *regime) float64) float64 {
	var v float64
	for _, st := range s.streamsFor(in.name, "", "") {
		st := st
		per := func(r *regime) float64 { return f(st, r) }
		v += st.cumulative(t, key, per)
		for _, rs := range in.starts[1:] {
			if !rs.After(t) {
				v += st.cumulative(rs.Add(-time.Nanosecond), key, per)
			}
		}
	}
	return v
}

// loadingSeconds is how long the node's processes have spent loading models up to t.
func loadingSeconds(in *instanceSpec, t time.Time) float64 {
	var d float64
	for _, rs := range in.starts {
		d += math.Max(0, math.Min(t.Sub(rs).Seconds(), LoadDuration.Seconds()))
	}
	return d
}

// cpuWeight spreads request CPU over the CPUs (0.8 … 1.2, mean 1), so CPUs differ.
func cpuWeight(cpu int) float64 { return 1 + 0.2*(float64(cpu)-3.5)/3.5 }

func (src source) Nodes() []string { return src.s.Nodes() }
func (src source) CPUs() int       { return hostCPUs }

func (src source) CPUSeconds(node string, cpu int, mode string, t time.Time) float64 {
	s := src.s
	in := s.nodeInstance(node)
	if in == nil || cpu < 0 || cpu >= hostCPUs {
		return math.NaN()
	}
	up := math.Max(0, t.Sub(s.boot(in)).Seconds())
	w := cpuWeight(cpu) / hostCPUs
	req := func() float64 {
		return w * s.hostCumulative(in, t, "host:cpu", func(_ *stream, r *regime) float64 { return requestCPU(r) })
	}
	user := func() float64 { return bgUser*up + userShare*req() }
	system := func() float64 { return bgSystem*up + (1-userShare)*req() }
	iowait := func() float64 { return bgIOWait*up + loadIOWait*loadingSeconds(in, t) }
	switch mode {
	case "user":
		return user()
	case "system":
		return system()
	case "iowait":
		return iowait()
	case "idle":
		return up - bgUser*up - bgSystem*up - req() - iowait()
	}
	return math.NaN()
}

func (src source) MemTotalBytes(string) float64 { return hostMemTotal }

func (src source) MemAvailableBytes(node string, t time.Time) float64 {
	return hostMemTotal - src.s.HostMemUsedBytes(node, t)
}

func (src source) DiskIOSeconds(node string, t time.Time) float64 {
	s := src.s
	in := s.nodeInstance(node)
	if in == nil {
		return math.NaN()
	}
	up := math.Max(0, t.Sub(s.boot(in)).Seconds())
	return diskBase*up + loadDiskBusy*loadingSeconds(in, t) +
		s.hostCumulative(in, t, "host:disk", func(*stream, *regime) float64 { return diskPerRequest })
}

func (src source) NetworkBytes(node string, transmit bool, t time.Time) float64 {
	s := src.s
	in := s.nodeInstance(node)
	if in == nil {
		return math.NaN()
	}
	up := math.Max(0, t.Sub(s.boot(in)).Seconds())
	bg, key := bgRxBytes, "host:rx"
	if transmit {
		bg, key = bgTxBytes, "host:tx"
	}
	return bg*up + s.hostCumulative(in, t, key, func(st *stream, r *regime) float64 { return requestBytes(st, r, transmit) })
}

// HostMemUsedBytes is the memory in use on a node: a base, the serving process (growing while
// it loads) and request buffers following the traffic.
func (s *Scenario) HostMemUsedBytes(node string, t time.Time) float64 {
	in := s.nodeInstance(node)
	if in == nil {
		return math.NaN()
	}
	used := float64(hostMemBase)
	if st := s.ProcessStart(in.name, t); !st.IsZero() {
		used += hostMemProcess * math.Min(1, t.Sub(st).Seconds()/LoadDuration.Seconds())
	}
	var q, mean float64
	for _, st := range s.streamsFor(in.name, "", "") {
		q += st.qps(t)
	}
	for _, m := range s.models {
		mean += m.baseQPS
	}
	return used + hostMemTraffic*q/mean
}

// HostNetworkRate is the expected bytes per second a node receives (or transmits): background
// traffic plus each request's payload (request: header + 4 bytes per input element; response:
// 640 bytes recsys, 3600 bytes embedder) at the current request rate.
func (s *Scenario) HostNetworkRate(node string, transmit bool, t time.Time) float64 {
	in := s.nodeInstance(node)
	if in == nil {
		return math.NaN()
	}
	v := bgRxBytes
	if transmit {
		v = bgTxBytes
	}
	for _, st := range s.streamsFor(in.name, "", "") {
		if r := st.regimeAt(t); r != nil {
			v += st.qps(t) * requestBytes(st, r, transmit)
		}
	}
	return v
}

// HostCPUBusy is the expected non-idle share of a node's CPUs at t: background, request
// pre-processing (input length, preemptions and CPU fallbacks) and IO wait while models load.
func (s *Scenario) HostCPUBusy(node string, t time.Time) float64 {
	in := s.nodeInstance(node)
	if in == nil {
		return math.NaN()
	}
	busy := bgUser + bgSystem + bgIOWait
	if st := s.ProcessStart(in.name, t); !st.IsZero() && t.Sub(st) < LoadDuration {
		busy += loadIOWait
	}
	var cpu float64
	for _, st := range s.streamsFor(in.name, "", "") {
		if r := st.regimeAt(t); r != nil {
			cpu += st.qps(t) * requestCPU(r)
		}
	}
	return busy + cpu/hostCPUs
}
