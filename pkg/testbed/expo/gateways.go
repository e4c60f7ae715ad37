package expo

import (
	"time"
)

// Envoy and Istio in front of a server, next to ingress-nginx (ingress.go): the server's own
// targets unchanged, plus the gateway's.
//
// Envoy (Envoy Gateway's proxy, job EnvoyJob, instance EnvoyInstance) serves its statistics as
// Envoy's Prometheus stats endpoint writes them — no HELP lines, milliseconds, Envoy's default
// histogram buckets (EnvoyBuckets), one upstream cluster per route rule, named
// EnvoyCluster(model) = "httproute/<namespace>/<model>/rule/0":
//
//	envoy_cluster_upstream_rq_time{envoy_cluster_name}   histogram (ms): Q + C + N per request
//	envoy_cluster_upstream_rq_total{envoy_cluster_name}  counter
//
// Istio (the mesh's ingress gateway, job IstioGatewayJob, instance IstioGatewayInstance) writes
// Istio's standard metrics, also through Envoy's stats endpoint (ms, EnvoyBuckets, no HELP), as
// the calling proxy: reporter="source", source_workload="istio-ingressgateway",
// destination_workload IstioWorkload(model) = "<model>-predictor":
//
//	istio_request_duration_milliseconds{reporter,source_workload,destination_workload,destination_service,
//	    destination_service_name,destination_version,response_code,…}   histogram (ms): Q + C + N
//	istio_requests_total{…}                                               counter
//
// Each server pod's sidecar (job IstioSidecarJob, instance <node>:15090) reports the same
// metrics with reporter="destination": the server's own time (Q + C), since the sidecar sits
// beside the server and never sees the network in between; its counts restart with the pod.
//
// Neither gateway names the upstream pod, so the network segment through them is the model's
// over all its instances, as through ingress-nginx. The gateways never restart.
const (
	Envoy                = "envoy"
	EnvoyJob             = "envoy"
	EnvoyInstance        = "envoy-gateway:19001"
	Istio                = "istio"
	IstioGatewayJob      = "istio-ingressgateway"
	IstioGatewayInstance = "istio-ingressgateway:15090"
	IstioSidecarJob      = "istio-sidecar"
	istioSidecarPort     = "15090"
)

// EnvoyBuckets are Envoy's default histogram bucket bounds, in milliseconds.
var EnvoyBuckets = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000}

// EnvoyCluster is the upstream cluster of a model's route behind Envoy Gateway.
func EnvoyCluster(model string) string {
	return "httproute/" + IngressNamespace + "/" + model + "/rule/0"
}

// IstioWorkload is the Kubernetes workload that serves a model in the mesh.
func IstioWorkload(model string) string { return model + "-predictor" }

// Behind is the naming of a server behind a gateway ("vllm+envoy"); gateway is one of
// GatewayNames.
func Behind(server, gateway string) string { return server + "+" + gateway }

// GatewayNames are the gateways the test bed plays in front of BehindServers.
var GatewayNames = []string{IngressNginx, Envoy, Istio}

func init() {
	for _, s := range BehindServers {
		fleets[Behind(s, Envoy)] = behindGateway{server: s, gateway: Envoy}
		fleets[Behind(s, Istio)] = behindGateway{server: s, gateway: Istio}
	}
}

type behindGateway struct{ server, gateway string }

func (b behindGateway) Name() string { return Behind(b.server, b.gateway) }

func (b behindGateway) Targets(src Source) []Target {
	p, err := Lookup(b.server)
	if err != nil {
		panic("expo: " + err.Error()) // the built-in namings are checked by their tests
	}
	out := p.Targets(src)
	if b.gateway == Envoy {
		return append(out, EnvoyTarget(src))
	}
	return append(out, IstioTargets(src)...)
}

// msBounds are bounds in milliseconds as seconds, for the source's histograms.
func msBounds(ms []float64) []float64 {
	out := make([]float64, len(ms))
	for i, b := range ms {
		out[i] = b / 1000
	}
	return out
}

// inMilliseconds turns a histogram point's sum from seconds into milliseconds.
func inMilliseconds(p Point) Point {
	p.Sum *= 1000
	return p
}

// modelSince is when the first of the model's streams starts.
func modelSince(streams []Stream) time.Time {
	since := streams[0].Since
	for _, st := range streams {
		if st.Since.Before(since) {
			since = st.Since
		}
	}
	return since
}

// EnvoyTarget is Envoy Gateway's proxy in front of src's instances.
func EnvoyTarget(src Source) Target {
	rqTime := Family{Name: "envoy_cluster_upstream_rq_time", Type: HistogramType, Bounds: EnvoyBuckets, FormatLe: formatRust}
	rqTotal := Family{Name: "envoy_cluster_upstream_rq_total", Type: CounterType}
	bounds := msBounds(EnvoyBuckets)
	for _, model := range allModels(src) {
		labels := []Label{{"envoy_cluster_name", EnvoyCluster(model)}}
		streams := modelStreams(src, model)
		since := modelSince(streams)
		rqTime.Series = append(rqTime.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
			return inMilliseconds(gatewayHistogram(src, streams, bounds, t))
		}})
		rqTotal.Series = append(rqTotal.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
			return Point{Value: gatewayHistogram(src, streams, nil, t).Count}
		}})
	}
	return Target{Instance: EnvoyInstance, Job: EnvoyJob, Families: []Family{rqTime, rqTotal}}
}

// istioLabels are Istio's standard labels of a request to model, as reporter reports it.
func istioLabels(reporter, model string) []Label {
	policy := "unknown" // the calling gateway does not know the server's mTLS policy
	if reporter == "destination" {
		policy = "mutual_tls"
	}
	return []Label{
		{"reporter", reporter}, {"source_workload", "istio-ingressgateway"}, {"source_workload_namespace", "istio-system"},
		{"source_canonical_service", "istio-ingressgateway"}, {"source_app", "istio-ingressgateway"},
		{"destination_workload", IstioWorkload(model)}, {"destination_workload_namespace", IngressNamespace},
		{"destination_service", model + "." + IngressNamespace + ".svc.cluster.local"}, {"destination_service_name", model},
		{"destination_service_namespace", IngressNamespace}, {"destination_canonical_service", model},
		{"destination_version", "v1"}, {"request_protocol", "http"}, {"response_code", "200"}, {"response_flags", "-"},
		{"connection_security_policy", policy},
	}
}

// IstioTargets are the mesh's ingress gateway in front of src's instances and each instance's
// sidecar.
func IstioTargets(src Source) []Target {
	const (
		duration = "istio_request_duration_milliseconds"
		requests = "istio_requests_total"
	)
	bounds := msBounds(EnvoyBuckets)
	gwTime := Family{Name: duration, Type: HistogramType, Bounds: EnvoyBuckets, FormatLe: formatRust}
	gwTotal := Family{Name: requests, Type: CounterType}
	for _, model := range allModels(src) {
		labels := istioLabels("source", model)
		streams := modelStreams(src, model)
		since := modelSince(streams)
		gwTime.Series = append(gwTime.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
			return inMilliseconds(gatewayHistogram(src, streams, bounds, t))
		}})
		gwTotal.Series = append(gwTotal.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
			return Point{Value: gatewayHistogram(src, streams, nil, t).Count}
		}})
	}
	out := []Target{{Instance: IstioGatewayInstance, Job: IstioGatewayJob, Families: []Family{gwTime, gwTotal}}}
	for _, inst := range src.Instances() {
		sdTime := Family{Name: duration, Type: HistogramType, Bounds: EnvoyBuckets, FormatLe: formatRust}
		sdTotal := Family{Name: requests, Type: CounterType}
		for _, model := range models(src, inst) {
			var streams []Stream
			for _, st := range src.Streams(inst) {
				if st.Model == model {
					streams = append(streams, st)
				}
			}
			labels := istioLabels("destination", model)
			since := modelSince(streams)
			sdTime.Series = append(sdTime.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
				return inMilliseconds(sidecarHistogram(src, streams, bounds, t))
			}})
			sdTotal.Series = append(sdTotal.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
				return Point{Value: sidecarHistogram(src, streams, nil, t).Count}
			}})
		}
		out = append(out, Target{Instance: node(inst) + ":" + istioSidecarPort, Job: IstioSidecarJob, Families: []Family{sdTime, sdTotal}})
	}
	return out
}

// sidecarHistogram is a server pod's sidecar's view of its model's requests: the server's own
// time, counted since the pod's current process started.
func sidecarHistogram(src Source, streams []Stream, bounds []float64, t time.Time) Point {
	p := Point{Buckets: make([]float64, len(bounds))}
	for _, st := range streams {
		if t.Before(st.Since) {
			continue
		}
		cum, n, sum := src.Histogram(st, Latency, bounds, t)
		for i := range cum {
			p.Buckets[i] += cum[i]
		}
		p.Count += n
		p.Sum += sum
	}
	return p
}
