package alerting

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gpufields"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// PromQL of the catalog, built from a metric profile's names. Metric and label names are
// validated and every literal goes through pkg/prom's Quote (via prom.Selector), so a profile or
// a label rename cannot change an expression's shape.

// NodeLabel is the label the renderings give a node (a GPU's host, an instance without its port).
const NodeLabel = "inferscope_node"

// ServerLabel names, on a fleet's recorded series and alerts, the server (metric profile) they
// were read from: the Prometheus rendering makes one rule group per server, whose recording
// rules share their names.
const ServerLabel = "inferscope_server"

// dayLabel keeps the previous days apart while they are averaged.
const dayLabel = "inferscope_day"

// idleEpsilon is the utilisation that counts as zero (the probe reports whole percent).
const idleEpsilon = 0.005

// hostRegex takes the host out of an instance label ("node-a:8000" → "node-a").
const hostRegex = "(.+?)(?::[0-9]+)?"

// builder renders the catalog's expressions for one profile (one server of a fleet).
type builder struct {
	p    Params
	prof profile.Profile
	// Label names: model and version may be "" (the server has none); instance never is.
	model, version, instance string
	// server is the server's name when the rules cover several servers (ServerLabel marks its
	// recorded series), "" for one server.
	server string
}

// newBuilders returns a builder per server the parameters name, in their order.
func newBuilders(p Params) ([]*builder, error) {
	ps, err := p.serverProfiles()
	if err != nil {
		return nil, err
	}
	out := make([]*builder, len(ps))
	for i, prof := range ps {
		b := &builder{p: p, prof: prof, model: prof.ModelLabel, version: prof.VersionLabel, instance: prof.InstanceLabel}
		if b.instance == "" {
			b.instance = "instance"
		}
		if len(ps) > 1 {
			b.server = prof.Name
		}
		out[i] = b
	}
	return out, nil
}

// newBuilder is the builder of the parameters' first (or only) server.
func newBuilder(p Params) (*builder, error) {
	bs, err := newBuilders(p)
	if err != nil {
		return nil, err
	}
	return bs[0], nil
}

// rec selects a recorded series: by name, and on a fleet the builder's server's only.
func (b *builder) rec(name string) string {
	if b.server == "" {
		return name
	}
	s, err := prom.Selector(name, prom.Eq(ServerLabel, b.server))
	if err != nil {
		panic("alerting: " + err.Error()) // recording names and profile names are fixed
	}
	return s
}

// measure returns the role's first measure of the given kinds, or why there is none.
func (b *builder) measure(r profile.Role, kinds ...profile.Kind) (profile.Measure, string) {
	ms, why := b.prof.Measures(r)
	for _, m := range ms {
		for _, k := range kinds {
			if m.Kind == k {
				return m, ""
			}
		}
	}
	if why == "" {
		why = fmt.Sprintf("%s measures %s in a way a Prometheus rule cannot use", b.prof.Title, r)
	}
	return profile.Measure{}, why
}

// has reports whether the profile measures the role in one of the kinds.
func (b *builder) has(r profile.Role, kinds ...profile.Kind) bool {
	_, why := b.measure(r, kinds...)
	return why == ""
}

// group lists the labels service series are kept apart by: model, version, instance.
func (b *builder) group() []string { return nonEmpty2(b.model, b.version, b.instance) }

// modelGroup lists model and instance (load state carries no version).
func (b *builder) modelGroup() []string { return nonEmpty2(b.model, b.instance) }

func nonEmpty2(names ...string) []string {
	var out []string
	for _, n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

func by(labels ...string) string { return "by (" + strings.Join(labels, ", ") + ")" }
func on(labels ...string) string { return "on (" + strings.Join(labels, ", ") + ")" }

// selector selects a measure's samples: one metric by name, several through __name__, plus the
// measure's fixed matchers.
func selector(metrics []string, suffix string, fixed map[string]string) string {
	ms := prom.EqAll(fixed)
	name := ""
	if len(metrics) == 1 {
		name = metrics[0] + suffix
	} else {
		names := make([]string, len(metrics))
		for i, m := range metrics {
			names[i] = m + suffix
		}
		ms = append([]prom.Matcher{prom.In("__name__", names...)}, ms...)
	}
	s, err := prom.Selector(name, ms...)
	if err != nil {
		// Profile names are fixed and validated by pkg/profile's tests; a failure here is a bug.
		panic("alerting: " + err.Error())
	}
	return s
}

func (b *builder) window(d time.Duration) string { return "[" + promDuration(d) + "]" }

// rateSum is sum by (labels) (rate(<metrics><suffix>[rateWindow])). Several metrics are rated
// one by one, each marked with metricLabel before they are summed: rate drops the metric name,
// and two metrics whose series carry the same labels (Triton's compute-duration counters) would
// make one rate over both fail ("vector cannot contain metrics with the same labelset").
func (b *builder) rateSum(metrics []string, suffix string, fixed map[string]string, labels []string) string {
	if len(metrics) < 2 {
		return fmt.Sprintf("sum %s (rate(%s%s))", by(labels...), selector(metrics, suffix, fixed), b.window(b.p.RateWindow))
	}
	parts := make([]string, len(metrics))
	for i, m := range metrics {
		parts[i] = fmt.Sprintf("label_replace(rate(%s%s), %s, %s, \"\", \"\")",
			selector([]string{m}, suffix, fixed), b.window(b.p.RateWindow), prom.Quote(metricLabel), prom.Quote(m+suffix))
	}
	return fmt.Sprintf("sum %s (%s)", by(labels...), strings.Join(parts, " or "))
}

// metricLabel keeps apart the rates of the metrics of one measure until they are summed.
const metricLabel = "inferscope_metric"

// requests is the rate of every request per label set.
func (b *builder) requests(labels []string) string {
	m, _ := b.measure(profile.Requests, profile.Counter)
	return b.rateSum(m.Metrics, "", m.Matchers, labels)
}

// requestSelector selects the first request counter (for resets and presence).
func (b *builder) requestSelector() string {
	m, _ := b.measure(profile.Requests, profile.Counter)
	return selector(m.Metrics[:1], "", m.Matchers)
}

// quantile is the role's histogram quantile per service series.
func (b *builder) quantile(r profile.Role, q float64) string { return b.quantileBy(r, q, b.group()) }

// quantileBy is the role's histogram quantile per label set g.
func (b *builder) quantileBy(r profile.Role, q float64, g []string) string {
	m, _ := b.measure(r, profile.Histogram)
	return fmt.Sprintf("histogram_quantile(%s, sum %s (rate(%s%s)))",
		fmtFloat(q), by(append([]string{"le"}, g...)...), selector(m.Metrics, "_bucket", m.Matchers), b.window(b.p.RateWindow))
}

// mean is the role's mean per service series, in seconds.
func (b *builder) mean(r profile.Role) string {
	m, _ := b.measure(r, profile.Histogram, profile.Summary, profile.MicrosecondCounter)
	return b.meanOf(m, b.group())
}

// latencyIsMean: the server has no latency histogram (Triton without histograms, TorchServe),
// so the latency rules judge its mean latency.
func (b *builder) latencyIsMean() bool { return !b.has(profile.Latency, profile.Histogram) }

// latencyMeasure is the measure the latency rules read on a mean-only server: the duration
// counter where the server has one (always exported), else a summary's _sum/_count.
func (b *builder) latencyMeasure() (profile.Measure, string) {
	if m, why := b.measure(profile.Latency, profile.MicrosecondCounter); why == "" {
		return m, ""
	}
	return b.measure(profile.Latency, profile.Summary)
}

// latency is what the latency rules compare with its baseline, per label set g: the quantile of
// the latency histogram, or on a mean-only server the mean latency.
func (b *builder) latency(g []string) string {
	if !b.latencyIsMean() {
		return b.quantileBy(profile.Latency, b.p.LatencyQuantile, g)
	}
	m, _ := b.latencyMeasure()
	return b.meanOf(m, g)
}

// meanOf is a measure's mean per label set g, in seconds.
func (b *builder) meanOf(m profile.Measure, g []string) string {
	switch m.Kind {
	case profile.Histogram, profile.Summary:
		return fmt.Sprintf("(%s / %s)", b.rateSum(m.Metrics, "_sum", m.Matchers, g), b.rateSum(m.Metrics, "_count", m.Matchers, g))
	}
	total := b.rateSum(m.Metrics, "", m.Matchers, g)
	if len(m.Minus) > 0 {
		total = "(" + total + " - " + b.rateSum(m.Minus, "", m.Matchers, g) + ")"
	}
	den := b.rateSum(m.Count, "", nil, g)
	if len(m.CountMinus) > 0 { // executed requests: an absent subtrahend (no cache hits) is 0
		den = fmt.Sprintf("(%s - (%s or 0 * %s))", den, b.rateSum(m.CountMinus, "", nil, g), den)
	}
	expr := fmt.Sprintf("(%s / %s)", total, den)
	if m.Scale != 0 && m.Scale != 1 {
		expr = fmt.Sprintf("(%s * %s)", expr, fmtFloat(m.Scale))
	}
	return expr
}

// Warm-up. A rate at t holds the samples of [t − rateWindow, t], so a sample warming up at s
// taints every point until s + rateWindow: the filter looks back warmupWindow + rateWindow.
func (b *builder) warmLookback() time.Duration { return b.p.WarmupWindow + b.p.RateWindow }

// instanceWarming is 1 per instance that (re)started, reset a counter or first appeared within
// the look-back (labels: instance).
func (b *builder) instanceWarming() string {
	w := b.window(b.warmLookback())
	req := b.requestSelector()
	inst := b.instance
	parts := []string{}
	if m, why := b.measure(profile.ProcessStart, profile.Gauge); why == "" {
		parts = append(parts, fmt.Sprintf("((time() - max %s (%s)) < %s and %s (count %s (%s)))",
			by(inst), selector(m.Metrics, "", m.Matchers), fmtSeconds(b.warmLookback()), on(inst), by(inst), req))
	}
	parts = append(parts,
		fmt.Sprintf("(sum %s (resets(%s%s)) > 0)", by(inst), req, w),
		fmt.Sprintf("(count %s (%s) unless count %s (%s offset %s))", by(inst), req, by(inst), req, promDuration(b.warmLookback())),
	)
	return strings.Join(parts, "\nor\n")
}

// modelWarming is 1 per instance and model whose load state was not ready at some point of the
// look-back (labels: instance, model); "" when the server exports no load state.
func (b *builder) modelWarming() string {
	m, why := b.measure(profile.LoadState, profile.Gauge)
	if why != "" {
		return ""
	}
	return fmt.Sprintf("(min %s (min_over_time(%s%s)) < 1)", by(b.modelGroup()...), selector(m.Metrics, "", m.Matchers), b.window(b.warmLookback()))
}

// steady drops the series of warming instances and models from a service expression.
func (b *builder) steady(expr string) string {
	out := "(\n" + indent(expr) + "\n)\nunless " + on(b.instance) + " (\n" + indent(b.instanceWarming()) + "\n)"
	if mw := b.modelWarming(); mw != "" {
		out += "\nunless " + on(b.modelGroup()...) + " " + mw
	}
	return out
}

// nodeOf adds NodeLabel from the instance label's host.
func (b *builder) nodeOf(expr string) string {
	return fmt.Sprintf("label_replace(%s, %s, \"$1\", %s, %s)", expr, prom.Quote(NodeLabel), prom.Quote(b.instance), prom.Quote(hostRegex))
}

// nodeWarming is 1 per node with a warming instance or model (labels: NodeLabel).
func (b *builder) nodeWarming() string {
	expr := "(\n" + indent(b.instanceWarming()) + "\n)"
	if mw := b.modelWarming(); mw != "" {
		expr += "\nor\nmax " + by(b.instance) + " " + mw
	}
	return fmt.Sprintf("max %s (%s)", by(NodeLabel), b.nodeOf("(\n"+indent(expr)+"\n)"))
}

// nodeQPS is the request rate per node (labels: NodeLabel).
func (b *builder) nodeQPS() string {
	return fmt.Sprintf("sum %s (%s)", by(NodeLabel), b.nodeOf(b.requests([]string{b.instance})))
}

// GPU series: every name pkg/gpufields lists for the exporters the GPUNaming parameter admits
// (all of them by default), keyed by node and GPU. A GPU's node is its node label, else
// Hostname, else hostname, else its instance without the port (as the engine's GPUNode); its
// GPU is the gpu label, else Triton's gpu_uuid.

func (b *builder) gpuKey(expr string) string {
	out := expr
	for i, l := range []string{b.instance, "hostname", "Hostname", "node"} {
		re := "(.+)"
		if i == 0 {
			re = hostRegex
		}
		out = fmt.Sprintf("label_replace(%s, %s, \"$1\", %s, %s)", out, prom.Quote(NodeLabel), prom.Quote(l), prom.Quote(re))
	}
	out = fmt.Sprintf("label_replace(%s, \"gpu\", \"$1\", \"gpu_uuid\", \"(.+)\")", out)
	return fmt.Sprintf("max %s (%s)", by(NodeLabel, "gpu"), out)
}

// gpuExporters are the exporters whose names the GPU rules read.
func (b *builder) gpuExporters() []gpufields.Exporter {
	switch b.p.GPUNaming {
	case GPUNamingProbe:
		return []gpufields.Exporter{gpufields.Probe}
	case GPUNamingDCGM:
		return []gpufields.Exporter{gpufields.DCGM}
	case GPUNamingTriton:
		return []gpufields.Exporter{gpufields.Triton}
	}
	return []gpufields.Exporter{gpufields.Probe, gpufields.DCGM, gpufields.Triton}
}

// gpuByKey keys per-series expressions of the exporters and joins them: a GPU exporter (the
// probe, dcgm-exporter) wins where both it and Triton report a node — Triton names GPUs by
// UUID, the exporters by index, so a GPU would otherwise be counted twice.
func (b *builder) gpuByKey(perSeries func(gpufields.Exporter) string) string {
	var exporters, triton []string
	for _, x := range b.gpuExporters() {
		e := perSeries(x)
		switch {
		case e == "":
		case x == gpufields.Triton:
			triton = append(triton, e)
		default:
			exporters = append(exporters, e)
		}
	}
	switch {
	case len(exporters) == 0:
		return b.gpuKey(strings.Join(triton, " or "))
	case len(triton) == 0:
		return b.gpuKey(strings.Join(exporters, " or "))
	}
	ex := b.gpuKey(strings.Join(exporters, " or "))
	return fmt.Sprintf("(\n%s\nor\n(%s unless %s %s)\n)", ex, b.gpuKey(strings.Join(triton, " or ")), on(NodeLabel), ex)
}

// gpuMemoryRaw is the one GPU-memory definition (gpufields.MemoryRatio) per series of an
// exporter: used / total where the exporter has the total, else used / (used + free +
// reserved), else used / (used + free). Names pair by unit (a release writes one generation).
func gpuMemoryRaw(x gpufields.Exporter) string {
	type gen struct{ used, total, free, reserved string }
	gens := map[float64]*gen{}
	var scales []float64
	for _, part := range []struct {
		sig gpufields.Signal
		set func(g *gen, m string)
	}{
		{gpufields.MemUsed, func(g *gen, m string) { g.used = m }},
		{gpufields.MemTotal, func(g *gen, m string) { g.total = m }},
		{gpufields.MemFree, func(g *gen, m string) { g.free = m }},
		{gpufields.MemReserved, func(g *gen, m string) { g.reserved = m }},
	} {
		for _, n := range gpufields.Of(part.sig).Names {
			if n.Exporter != x {
				continue
			}
			if gens[n.Scale] == nil {
				gens[n.Scale] = &gen{}
				scales = append(scales, n.Scale)
			}
			part.set(gens[n.Scale], n.Metric)
		}
	}
	var alts []string
	for _, sc := range scales {
		g := gens[sc]
		if g.used == "" {
			continue
		}
		if g.total != "" {
			alts = append(alts, fmt.Sprintf("%s / %s", g.used, g.total))
		}
		if g.free != "" {
			if g.reserved != "" {
				alts = append(alts, fmt.Sprintf("%s / (%s + %s + %s)", g.used, g.used, g.free, g.reserved))
			}
			alts = append(alts, fmt.Sprintf("%s / (%s + %s)", g.used, g.used, g.free))
		}
	}
	return strings.Join(alts, " or ")
}

// gpuUtilMaxOver is the highest activity (0..1) of each GPU series of an exporter over d: the
// graphics engine's where dcgm-exporter exports it (`or` keeps the left side per GPU), else the
// utilisation, as the engine's idle-under-traffic reading judges it.
func (b *builder) gpuUtilMaxOver(d time.Duration) string {
	return b.gpuByKey(func(x gpufields.Exporter) string {
		var alts []string
		for _, n := range append(gpufields.Of(gpufields.EngineActive).Names, gpufields.Of(gpufields.Util).Names...) {
			if n.Exporter != x {
				continue
			}
			e := fmt.Sprintf("max_over_time(%s%s)", n.Metric, b.window(d))
			if n.Scale != 1 {
				e += " * " + fmtFloat(n.Scale)
			}
			alts = append(alts, e)
		}
		return strings.Join(alts, " or ")
	})
}

// gpuMemory is the memory ratio per node and GPU.
func (b *builder) gpuMemory() string { return b.gpuByKey(gpuMemoryRaw) }

// kvCacheByNode is the fullest KV cache of each node's servers, 0..1 (labels: NodeLabel): the
// memory-pressure signal of a node that pre-allocates. GPU memory rules leave these nodes out
// and read it instead.
func (b *builder) kvCacheByNode() string {
	return fmt.Sprintf("max %s (%s)", by(NodeLabel), b.nodeOf(selector(engine.KVCacheNames(), "", nil)))
}

// memoryAbove is the memory rules' signal above a line, per node and GPU (memoryUnion of the
// recorded GPU memory), warming nodes left out. The union's branches are disjoint by node, so
// the line may be drawn after it.
func (b *builder) memoryAbove(line float64) string {
	return fmt.Sprintf("(\n%s\n) > %s\nunless %s %s",
		indent(memoryUnion(RecGPUMemory, b.kvCacheByNode())), fmtFloat(line), on(NodeLabel), RecNodeWarming)
}

// memoryUnion is the memory rules' one signal: GPU memory used (mem), per node and GPU, on nodes
// without a KV-cache server; on nodes with one, the fullest KV cache (kv), per node. A KV cache
// belongs to a server, not to a GPU: an alert that named each of the node's GPUs would send its
// triage link to a GPU that may serve another model, and away from the GPU that went wrong.
func memoryUnion(mem, kv string) string {
	return fmt.Sprintf("(%s unless %s %s)\nor\n%s", mem, on(NodeLabel), kv, kv)
}

// dayMeans averages expr over the same time-of-day window on each previous day, one series per
// day (dayLabel "1" … "n"). It reads history through subqueries, so it works from the first
// evaluation on a Prometheus that already holds the days.
func (b *builder) dayMeans(expr string) string {
	w := b.p.BaselineWindow
	parts := make([]string, b.p.BaselineDays)
	for d := 1; d <= b.p.BaselineDays; d++ {
		offset := time.Duration(d)*b.p.period - w
		parts[d-1] = fmt.Sprintf("label_replace(avg_over_time((\n%s\n)[%s:%s] offset %s), %s, %s, \"\", \"\")",
			indent(expr), promDuration(2*w), promDuration(b.p.SubqueryStep), promDuration(offset),
			prom.Quote(dayLabel), prom.Quote(strconv.Itoa(d)))
	}
	return strings.Join(parts, "\nor\n")
}

// Template helpers: annotations run PromQL at alert time (Prometheus' query function), with the
// alert's own label values quoted by the template's printf %q (Go quoting, which PromQL reads).

// labelRef is the template expression of a label value.
// A name of the form "a|b" stands for alternatives (the same label under each server's name on a
// fleet; label names cannot hold "|"): the first one the alert carries.
func labelRef(name string) string {
	alts := strings.Split(name, labelAlt)
	if len(alts) == 1 {
		return fmt.Sprintf("(index $labels %s)", strconv.Quote(name))
	}
	refs := make([]string, len(alts))
	for i, a := range alts {
		refs[i] = labelRef(a)
	}
	return "(or " + strings.Join(refs, " ") + ")"
}

// labelAlt separates alternative label names (labelRef).
const labelAlt = "|"

// alternatives joins the distinct non-empty label names of the builders' role (see labelRef).
func alternatives(bs []*builder, name func(*builder) string) string {
	var out []string
	for _, b := range bs {
		if n := name(b); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return strings.Join(out, labelAlt)
}

// queryTemplate renders `printf "<format>" args… | query` for a PromQL format whose %q verbs
// take the given label values.
func queryTemplate(format string, labels ...string) string {
	args := make([]string, len(labels))
	for i, l := range labels {
		args[i] = labelRef(l)
	}
	return fmt.Sprintf("printf %s %s | query", strconv.Quote(format), strings.Join(args, " "))
}

// escapePercent keeps a static PromQL fragment literal inside a printf format.
func escapePercent(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// fmtFloat writes a number the shortest way that reads back exactly.
func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// fmtSeconds writes a duration as seconds for arithmetic with time().
func fmtSeconds(d time.Duration) string { return fmtFloat(d.Seconds()) }

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// xidEvents counts the XID events of each GPU in the last w (labels: NodeLabel, gpu), each
// event once, with engine.XIDEvents — the count triage reads — for every XID name of the
// exporters the rules read: the probe's counter by code, dcgm-exporter's last-value gauge
// (new err_code series included) and its windowed count (DCGM_EXP_XID_ERRORS_COUNT, at its
// default window). A GPU without any XID series has no value (not measured), never 0.
func (b *builder) xidEvents(w time.Duration) string {
	return b.gpuHardware(gpufields.XID, func(n gpufields.Name, sel func(...prom.Matcher) (string, error), by string) (string, error) {
		return engine.XIDEvents(n, sel, by, w, nil)
	})
}

// eccErrors counts the uncorrected ECC errors of each GPU in the last w (labels: NodeLabel,
// gpu) with engine.ECCErrorCount, the count triage reads: the counter's growth, a reset or an
// exporter's restart not counted. A GPU without ECC series has no value (not measured).
func (b *builder) eccErrors(w time.Duration) string {
	return b.gpuHardware(gpufields.ECCErrors, func(_ gpufields.Name, sel func(...prom.Matcher) (string, error), by string) (string, error) {
		s, err := sel()
		return engine.ECCErrorCount(s, by, w), err
	})
}

// hardwareThrottle is the number of hardware clock-event reasons (HW slowdown, SW and HW
// thermal slowdown, power brake) active on each GPU now (labels: NodeLabel, gpu), with
// engine.HardwareThrottle, the reasons triage lists: the probe's per-reason gauge or
// dcgm-exporter's bitmask (either name of field 112). A GPU without clock-event series has no
// value (not measured).
func (b *builder) hardwareThrottle() string {
	return b.gpuHardware(gpufields.ClockEvents, engine.HardwareThrottle)
}

// gpuHardware joins a hardware signal's expression over every name of the exporters the rules
// read, keyed by node and GPU. The names are joined with `or`, best first, per series of one
// exporter target, so a node whose exporter writes two of them is read from the better one;
// "" when no name of the signal is admitted.
func (b *builder) gpuHardware(sig gpufields.Signal, expr func(n gpufields.Name, sel func(...prom.Matcher) (string, error), by string) (string, error)) string {
	by := strings.Join(nonEmpty2("gpu", b.instance, "hostname", "Hostname", "node"), ", ")
	var alts []string
	for _, x := range b.gpuExporters() {
		for _, n := range gpufields.Of(sig).Names {
			if n.Exporter != x {
				continue
			}
			sel := func(extra ...prom.Matcher) (string, error) {
				return prom.Selector(n.Metric, append(prom.EqAll(n.Matchers), extra...)...)
			}
			e, err := expr(n, sel, by)
			if err != nil {
				panic("alerting: " + err.Error()) // the table's names are fixed
			}
			alts = append(alts, "("+e+")")
		}
	}
	if len(alts) == 0 {
		return ""
	}
	return b.gpuKey(strings.Join(alts, "\nor\n"))
}

// memorySignal is the memory rules' signal per node and GPU without recordings (the Grafana
// rendering's query): memoryUnion of the GPU memory read raw, nodes where any server of the
// parameters is warming left out — memoryAbove without the line.
func (b *builder) memorySignal(p Params) string {
	bs, err := newBuilders(p)
	if err != nil {
		panic("alerting: " + err.Error()) // the parameters were validated
	}
	var warming []string
	for _, fb := range bs {
		if fb.has(profile.Requests, profile.Counter) {
			fb.server = ""
			warming = append(warming, "("+fb.nodeWarming()+")")
		}
	}
	expr := "(\n" + indent(memoryUnion(b.gpuMemory(), b.kvCacheByNode())) + "\n)"
	if len(warming) > 0 {
		expr += fmt.Sprintf("\nunless %s (\n%s\n)", on(NodeLabel), indent(strings.Join(warming, "\nor\n")))
	}
	return expr
}
