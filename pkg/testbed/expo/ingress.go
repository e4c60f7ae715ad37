package expo

import (
	"time"
)

// An ingress-nginx controller in front of a server: the server's own targets unchanged, plus one
// target, the controller (job IngressNginxJob, instance IngressNginxInstance), whose socket
// collector observes every request of every instance (ingress-nginx's
// internal/ingress/metric/collectors/socket.go):
//
//	nginx_ingress_controller_response_duration_seconds{status,method,path,namespace,ingress,service,canary}
//	    histogram: the upstream response time, Q + C + N per request (the scenario's Gateway)
//	nginx_ingress_controller_request_duration_seconds{…}   histogram: the request time (here the same)
//	nginx_ingress_controller_requests{…}                   counter (no _total: ingress-nginx's name)
//
// with the constant labels controller_namespace, controller_class and controller_pod. The
// histograms use the controller's default time buckets (client_golang's DefBuckets). A Kubernetes
// service per model, named IngressService(model), in namespace IngressNamespace; the controller
// names no upstream pod, so the network segment through it is the model's over all instances.
// The controller never restarts: its counts keep growing across a server instance's restart.
const (
	IngressNginx         = "ingress-nginx"
	IngressNginxJob      = "ingress-nginx"
	IngressNginxInstance = "ingress-nginx-controller:10254"
	IngressNamespace     = "inference"
)

// IngressNginxBuckets are client_golang's DefBuckets, ingress-nginx's default --time-buckets.
var IngressNginxBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// IngressService is the Kubernetes service of a model behind the controller.
func IngressService(model string) string { return model + "-svc" }

// BehindIngressNginx is the naming of a server behind ingress-nginx ("vllm+ingress-nginx").
func BehindIngressNginx(server string) string { return server + "+" + IngressNginx }

// BehindServers are the servers whose namings come behind ingress-nginx too.
var BehindServers = []string{"vllm", "triton"}

func init() {
	for _, s := range BehindServers {
		fleets[BehindIngressNginx(s)] = behindIngress{server: s}
	}
}

type behindIngress struct{ server string }

func (b behindIngress) Name() string { return BehindIngressNginx(b.server) }

func (b behindIngress) Targets(src Source) []Target {
	p, err := Lookup(b.server)
	if err != nil {
		panic("expo: " + err.Error()) // the built-in namings are checked by their tests
	}
	return append(p.Targets(src), IngressNginxTarget(src))
}

// IngressNginxTarget is the controller's target in front of src's instances.
func IngressNginxTarget(src Source) Target {
	const prefix = "nginx_ingress_controller_"
	upstream := Family{Name: prefix + "response_duration_seconds", Help: "The time spent on receiving the response from the upstream server",
		Type: HistogramType, Bounds: IngressNginxBuckets, FormatLe: formatRust}
	request := Family{Name: prefix + "request_duration_seconds", Help: "The request processing time in milliseconds",
		Type: HistogramType, Bounds: IngressNginxBuckets, FormatLe: formatRust}
	requests := Family{Name: prefix + "requests", Help: "The total number of client requests", Type: CounterType}
	for _, model := range allModels(src) {
		labels := []Label{
			{"canary", ""}, {"controller_class", "k8s.io/ingress-nginx"}, {"controller_namespace", "ingress-nginx"},
			{"controller_pod", "ingress-nginx-controller-6b9c5d7f4-k2x8p"}, {"ingress", model}, {"method", "POST"},
			{"namespace", IngressNamespace}, {"path", "/v1/" + model}, {"service", IngressService(model)}, {"status", "200"},
		}
		streams := modelStreams(src, model)
		since := streams[0].Since
		for _, st := range streams {
			if st.Since.Before(since) {
				since = st.Since
			}
		}
		hist := func(t time.Time) Point { return gatewayHistogram(src, streams, IngressNginxBuckets, t) }
		upstream.Series = append(upstream.Series, Series{Labels: labels, Since: since, At: hist})
		request.Series = append(request.Series, Series{Labels: labels, Since: since, At: hist})
		requests.Series = append(requests.Series, Series{Labels: labels, Since: since, At: func(t time.Time) Point {
			return Point{Value: gatewayHistogram(src, streams, nil, t).Count}
		}})
	}
	return Target{Instance: IngressNginxInstance, Job: IngressNginxJob, Families: []Family{upstream, request, requests}}
}

// allModels lists the source's models in order of first appearance.
func allModels(src Source) []string {
	var out []string
	seen := map[string]bool{}
	for _, inst := range src.Instances() {
		for _, m := range models(src, inst) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

func modelStreams(src Source, model string) []Stream {
	var out []Stream
	for _, inst := range src.Instances() {
		for _, st := range src.Streams(inst) {
			if st.Model == model {
				out = append(out, st)
			}
		}
	}
	return out
}

// gatewayHistogram is the gateway's cumulative upstream-time histogram over the streams: each
// instance's counts since its process start plus what its earlier processes had counted when
// they ended (the gateway saw those requests too and does not restart with the server).
func gatewayHistogram(src Source, streams []Stream, bounds []float64, t time.Time) Point {
	p := Point{Buckets: make([]float64, len(bounds))}
	add := func(st Stream, at time.Time) {
		if at.Before(st.Since) {
			return
		}
		cum, n, sum := src.Histogram(st, GatewayTime, bounds, at)
		for i := range cum {
			p.Buckets[i] += cum[i]
		}
		p.Count += n
		p.Sum += sum
	}
	for _, st := range streams {
		add(st, t)
		for start := src.ProcessStart(st.Instance, t); !start.IsZero(); {
			end := start.Add(-time.Millisecond)
			prev := src.ProcessStart(st.Instance, end)
			if prev.IsZero() {
				break
			}
			add(st, end)
			start = prev
		}
	}
	return p
}
