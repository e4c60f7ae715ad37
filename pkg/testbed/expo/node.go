package expo

import (
	"strconv"
	"time"
)

// The node naming is node_exporter's, for the hosts the inference instances run on: a lean
// subset (CPU time by mode, memory, disk busy time, network bytes) that the saturation row
// reads. Prometheus scrapes it as job NodeJob, one target per host, instance "<node>:9100":
//
//	node_cpu_seconds_total{cpu,mode}                    counter; mode idle, user, system, iowait
//	node_memory_MemTotal_bytes                          gauge
//	node_memory_MemAvailable_bytes                      gauge
//	node_disk_io_time_seconds_total{device}             counter; device NodeDisk
//	node_network_receive_bytes_total{device}            counter; device NodeNIC
//	node_network_transmit_bytes_total{device}           counter; device NodeNIC
const (
	NodeJob  = "node"
	NodePort = "9100"
	NodeDisk = "nvme0n1"
	NodeNIC  = "eth0"

	NodeCPUSeconds      = "node_cpu_seconds_total"
	NodeMemTotal        = "node_memory_MemTotal_bytes"
	NodeMemAvailable    = "node_memory_MemAvailable_bytes"
	NodeDiskIOTime      = "node_disk_io_time_seconds_total"
	NodeNetworkReceive  = "node_network_receive_bytes_total"
	NodeNetworkTransmit = "node_network_transmit_bytes_total"
)

// CPUModes are the node_cpu_seconds_total modes the naming exposes.
var CPUModes = []string{"idle", "user", "system", "iowait"}

// HostSource is what the hosts of a fleet measure, as pure functions of time. Cumulative
// values count since the host's boot (they do not reset when an inference server restarts).
type HostSource interface {
	// Nodes lists the host names, e.g. "node-a".
	Nodes() []string
	CPUs() int
	CPUSeconds(node string, cpu int, mode string, t time.Time) float64
	MemTotalBytes(node string) float64
	MemAvailableBytes(node string, t time.Time) float64
	DiskIOSeconds(node string, t time.Time) float64
	// NetworkBytes is received bytes, or transmitted ones when transmit is set.
	NetworkBytes(node string, transmit bool, t time.Time) float64
}

// NodeInstance is the instance label of a host's node_exporter ("node-a" → "node-a:9100").
func NodeInstance(node string) string { return node + ":" + NodePort }

// NodeTargets are the hosts' node_exporter targets: job NodeJob, instance NodeInstance.
func NodeTargets(h HostSource) []Target {
	var out []Target
	for _, n := range h.Nodes() {
		out = append(out, Target{Instance: NodeInstance(n), Job: NodeJob, Families: nodeFamilies(h, n)})
	}
	return out
}

func nodeFamilies(h HostSource, node string) []Family {
	gauge := func(f func(time.Time) float64) func(time.Time) Point {
		return func(t time.Time) Point { return Point{Value: f(t)} }
	}
	cpu := Family{Name: NodeCPUSeconds, Help: "Seconds the CPUs spent in each mode.", Type: CounterType}
	for c := 0; c < h.CPUs(); c++ {
		for _, mode := range CPUModes {
			c, mode := c, mode
			cpu.Series = append(cpu.Series, Series{Labels: []Label{{"cpu", strconv.Itoa(c)}, {"mode", mode}},
				At: gauge(func(t time.Time) float64 { return h.CPUSeconds(node, c, mode, t) })})
		}
	}
	dev := func(d string) []Label { return []Label{{"device", d}} }
	return []Family{
		cpu,
		{Name: NodeMemAvailable, Help: "Memory information field MemAvailable_bytes.", Type: GaugeType,
			Series: []Series{{At: gauge(func(t time.Time) float64 { return h.MemAvailableBytes(node, t) })}}},
		{Name: NodeMemTotal, Help: "Memory information field MemTotal_bytes.", Type: GaugeType,
			Series: []Series{{At: gauge(func(time.Time) float64 { return h.MemTotalBytes(node) })}}},
		{Name: NodeDiskIOTime, Help: "Total seconds spent doing I/Os.", Type: CounterType,
			Series: []Series{{Labels: dev(NodeDisk), At: gauge(func(t time.Time) float64 { return h.DiskIOSeconds(node, t) })}}},
		{Name: NodeNetworkReceive, Help: "Network device statistic receive_bytes.", Type: CounterType,
			Series: []Series{{Labels: dev(NodeNIC), At: gauge(func(t time.Time) float64 { return h.NetworkBytes(node, false, t) })}}},
		{Name: NodeNetworkTransmit, Help: "Network device statistic transmit_bytes.", Type: CounterType,
			Series: []Series{{Labels: dev(NodeNIC), At: gauge(func(t time.Time) float64 { return h.NetworkBytes(node, true, t) })}}},
	}
}
