package expo

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FleetName is the mixed fleet: the six serving stacks in one Prometheus, each serving its own
// copy of the source's models on its own port of every host, in its own naming.
const FleetName = "fleet"

// FleetServers are the stacks of the mixed fleet, in the order of their ports (8000 + index).
var FleetServers = []string{"custom", "vllm", "triton", "torchserve", "tgi", "sglang"}

// FleetModel is the name under which server serves the source's model in the mixed fleet: the
// custom server keeps the source's names (its part is the default scenario unchanged), the
// others prefix theirs ("vllm-recsys-ranker").
func FleetModel(server, model string) string {
	if server == "custom" {
		return model
	}
	return server + "-" + model
}

// FleetInstance is the scrape target of server on the source's instance host:port: the port
// moves by the server's index (node-a:8000 → node-a:8001 for vLLM).
func FleetInstance(server, instance string) string {
	i := fleetIndex(server)
	host, port, ok := strings.Cut(instance, ":")
	p, err := strconv.Atoi(port)
	if !ok || err != nil || i <= 0 {
		return instance
	}
	return host + ":" + strconv.Itoa(p+i)
}

// FleetPart is the name of the naming that writes one server's part of the mixed fleet alone
// ("fleet-vllm"): the same series as in the fleet, for comparing a fleet with that server alone.
func FleetPart(server string) string { return FleetName + "-" + server }

func fleetIndex(server string) int {
	for i, s := range FleetServers {
		if s == server {
			return i
		}
	}
	return -1
}

// fleets are the fleet namings, kept apart from the one-stack profiles ProfileNames lists.
var fleets = map[string]Profile{}

func init() {
	fleets[FleetName] = fleet{servers: FleetServers}
	for _, s := range FleetServers {
		fleets[FleetPart(s)] = fleet{name: FleetPart(s), servers: []string{s}}
	}
}

// FleetNames lists the fleet namings: FleetName, then each server's part alone.
func FleetNames() []string {
	out := []string{FleetName}
	for _, s := range FleetServers {
		out = append(out, FleetPart(s))
	}
	return out
}

// fleet writes each server's view of the source in that server's naming.
type fleet struct {
	name    string // "" = FleetName
	servers []string
}

func (f fleet) Name() string {
	if f.name == "" {
		return FleetName
	}
	return f.name
}

func (f fleet) Targets(src Source) []Target {
	var out []Target
	for _, s := range f.servers {
		p, err := Lookup(s)
		if err != nil {
			panic(fmt.Sprintf("expo: fleet server %s: %v", s, err)) // the built-in namings are checked by their tests
		}
		out = append(out, p.Targets(serverView{src: src, server: s})...)
	}
	return out
}

// serverView is the source as one server of the fleet serves it: instances and models renamed.
type serverView struct {
	src    Source
	server string
}

func (v serverView) inst(i string) string { return FleetInstance(v.server, i) }

// orig maps a view instance back to the source's.
func (v serverView) orig(i string) string {
	for _, in := range v.src.Instances() {
		if v.inst(in) == i {
			return in
		}
	}
	return i
}

func (v serverView) origModel(m string) string {
	if v.server == "custom" {
		return m
	}
	return strings.TrimPrefix(m, v.server+"-")
}

func (v serverView) origStream(st Stream) Stream {
	st.Instance, st.Model = v.orig(st.Instance), v.origModel(st.Model)
	return st
}

func (v serverView) Instances() []string {
	in := v.src.Instances()
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = v.inst(s)
	}
	return out
}

func (v serverView) GPUsPerInstance() int { return v.src.GPUsPerInstance() }

func (v serverView) Streams(instance string) []Stream {
	sts := v.src.Streams(v.orig(instance))
	out := make([]Stream, len(sts))
	for i, st := range sts {
		st.Instance, st.Model = instance, FleetModel(v.server, st.Model)
		out[i] = st
	}
	return out
}

func (v serverView) Count(st Stream, c Counter, t time.Time) float64 {
	return v.src.Count(v.origStream(st), c, t)
}

func (v serverView) Total(st Stream, m Measure, c Counter, t time.Time) float64 {
	return v.src.Total(v.origStream(st), m, c, t)
}

func (v serverView) Histogram(st Stream, m Measure, bounds []float64, t time.Time) ([]float64, float64, float64) {
	return v.src.Histogram(v.origStream(st), m, bounds, t)
}

func (v serverView) Queued(st Stream, t time.Time) float64 { return v.src.Queued(v.origStream(st), t) }
func (v serverView) Running(st Stream, t time.Time) float64 {
	return v.src.Running(v.origStream(st), t)
}

func (v serverView) KVCacheUsage(instance, model string, t time.Time) float64 {
	return v.src.KVCacheUsage(v.orig(instance), v.origModel(model), t)
}

func (v serverView) Ready(instance string, t time.Time) bool { return v.src.Ready(v.orig(instance), t) }

func (v serverView) ProcessStart(instance string, t time.Time) time.Time {
	return v.src.ProcessStart(v.orig(instance), t)
}

func (v serverView) GPUUtilRatio(instance string, gpu int, t time.Time) float64 {
	return v.src.GPUUtilRatio(v.orig(instance), gpu, t)
}

func (v serverView) GPUUUID(instance string, gpu int) string {
	return v.src.GPUUUID(v.orig(instance), gpu)
}

func (v serverView) ModelGPUs(model string) []int { return v.src.ModelGPUs(v.origModel(model)) }

func (v serverView) Quantile(st Stream, m Measure, q float64, t time.Time) float64 {
	return v.src.Quantile(v.origStream(st), m, q, t)
}
