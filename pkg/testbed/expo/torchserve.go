package expo

import (
	"strconv"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The torchserve profile is TorchServe's metrics API in Prometheus mode: per-model microsecond
// counters over the answered requests only, while ts_inference_requests_total counts every
// request on receipt (so rate(latency)/rate(requests) is the mean latency biased low by the
// failed share, as on a real TorchServe), host-level
// response counters without a model label (Requests5XX counts errors and timeouts alike), and
// GPU utilisation in percent per DeviceId.
//
//	ts_inference_requests_total{model_name,model_version,hostname}       counter
//	ts_inference_latency_microseconds{model_name,model_version,hostname} counter, µs (queue included;
//	                                                                     answered requests only)
//	ts_queue_latency_microseconds{model_name,model_version,hostname}     counter, µs (answered only)
//	Requests2XX / Requests5XX{Level="Host",Hostname}                     counters
//	GPUUtilization{Level="Host",DeviceId,Hostname}                       gauge, percent
type torchserve struct{ n torchserveNames }

type torchserveNames struct {
	model, version           string
	requests, latency, queue string
	errors5xx, gpuUtil       string
}

func init() {
	n := profileNames("torchserve")
	latency := n.measure(profile.Latency, profile.MicrosecondCounter)
	ts := torchserveNames{
		model:     n.label("model", n.p.ModelLabel),
		version:   n.label("version", n.p.VersionLabel),
		requests:  n.metric(profile.Requests, profile.Counter),
		latency:   latency.Metrics[0],
		queue:     n.metric(profile.QueueTime, profile.MicrosecondCounter),
		errors5xx: n.metric(profile.Errors, profile.Counter),
		gpuUtil:   n.metric(profile.GPUUtil, profile.Gauge),
	}
	if latency.Count[0] != ts.requests {
		n.errs = append(n.errs, "latency must divide by the request counter")
	}
	register(torchserve{ts}, n.err())
}

func (torchserve) Name() string { return "torchserve" }

func (ts torchserve) Targets(src Source) []Target {
	var out []Target
	for _, inst := range src.Instances() {
		out = append(out, Target{Instance: inst, Families: ts.families(src, inst)})
	}
	return out
}

func (ts torchserve) families(src Source, inst string) []Family {
	n := ts.n
	host := node(inst)
	gs := groups(src, inst, true)
	perGroup := func(name, help string, at func(group) func(time.Time) Point) Family {
		f := Family{Name: name, Help: help, Type: CounterType}
		for _, g := range gs {
			f.Series = append(f.Series, Series{Labels: []Label{{n.model, g.Model}, {n.version, g.Version}, {"hostname", host}}, Since: g.Since, At: at(g)})
		}
		return f
	}
	hostLabels := []Label{{"Level", "Host"}, {"Hostname", host}}
	hostCounter := func(name string, cs ...Counter) Family {
		at := func(t time.Time) Point {
			var v float64
			for _, g := range gs {
				for _, c := range cs {
					v += g.count(src, c)(t).Value
				}
			}
			return Point{Value: v}
		}
		return Family{Name: name, Help: "Torchserve prometheus counter metric with unit: Count", Type: CounterType,
			Series: []Series{{Labels: hostLabels, At: at}}}
	}
	gpuUtil := Family{Name: n.gpuUtil, Help: "Torchserve prometheus gauge metric with unit: Percent", Type: GaugeType}
	for i := 0; i < src.GPUsPerInstance(); i++ {
		gpu := i
		gpuUtil.Series = append(gpuUtil.Series, Series{Labels: []Label{{"Level", "Host"}, {"DeviceId", strconv.Itoa(gpu)}, {"Hostname", host}},
			At: func(t time.Time) Point { return Point{Value: 100 * src.GPUUtilRatio(inst, gpu, t)} }})
	}
	const usHelp = "Torchserve prometheus counter metric with unit: Microseconds"
	return []Family{
		hostCounter("Requests2XX", RequestsOK),
		hostCounter(n.errors5xx, Errors, Timeouts),
		perGroup(n.requests, "Torchserve prometheus counter metric with unit: Count", func(g group) func(time.Time) Point { return g.count(src, Requests) }),
		perGroup(n.latency, usHelp, func(g group) func(time.Time) Point { return g.total(src, Latency, RequestsOK, 1e6) }),
		perGroup(n.queue, usHelp, func(g group) func(time.Time) Point { return g.total(src, QueueTime, RequestsOK, 1e6) }),
		gpuUtil,
	}
}
