package alerting

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Labels and annotations shared by the renderings: every alert says which model, version,
// instance, node and GPU it is about, its current value, the traffic, and links to the last ten
// minutes of the overview's latency panel.

// ctx describes where a rendering's alert labels come from.
type ctx struct {
	b *builder
	// value is the template expression of the alert's value ($value, or $values.B.Value).
	value string
	// service labels the expression's series carry (model, version, instance), and whether GPU
	// series carry NodeLabel (Prometheus) or "node" (the data source's GPU types).
	model, version, instance string
	node                     string
	// queries: whether the templates may run PromQL (Prometheus can, Grafana cannot).
	queries bool
	// fleet, for a fleet's GPU rules, are the servers whose traffic and models on the node the
	// annotations list (nil: the builder's own).
	fleet []*builder
}

// contextLabels are the normalised labels of an alert of the given scope.
func (c ctx) contextLabels(s spec) map[string]string {
	out := map[string]string{}
	if s.scope == ScopeGPU {
		// The GPU's label comes with the series (GPULabel); a KV cache's memory alert has none,
		// and a template for it would expand to nothing.
		out[NodeOutLabel] = tmplLabel(c.node)
		return out
	}
	if c.model != "" {
		out[ModelLabel] = tmplLabel(c.model)
	}
	if c.version != "" {
		out[VersionLabel] = tmplLabel(c.version)
	}
	if c.instance != "" {
		out[InstanceLabel] = tmplLabel(c.instance)
		out[NodeOutLabel] = "{{ " + hostOfTemplate(c.instance) + " }}"
	}
	return out
}

// forRule drops from the context the labels a rule's series do not carry: the version of the
// per-model rules, the instance of the network rule behind a gateway that does not name it.
func (c ctx) forRule(s spec) ctx {
	if perModel(s) {
		c.version = ""
	}
	if s.id == "network-p1" && !slices.Contains(c.b.networkGroup(), c.b.instance) {
		c.instance = ""
	}
	return c
}

func tmplLabel(name string) string { return "{{ " + labelRef(name) + " }}" }

// hostOfTemplate is the template expression of an instance label's host.
func hostOfTemplate(instanceLabel string) string {
	return fmt.Sprintf("reReplaceAll %s %s %s", strconv.Quote("^"+hostRegex+"$"), strconv.Quote("$1"), labelRef(instanceLabel))
}

// who names the alert's subject in a sentence.
func (c ctx) who(s spec) string {
	if s.scope == ScopeGPU {
		// Every GPU rule's series carries its GPU but a KV cache's memory alert, whose summary
		// words its own subject (the cache is the server's); a GPU-less series reads as the node's.
		return "{{ with " + labelRef("gpu") + " }}GPU {{ . }}{{ else }}the GPUs{{ end }} on " + tmplLabel(c.node)
	}
	var parts []string
	for _, l := range []string{c.model, c.version} {
		if l != "" {
			parts = append(parts, tmplLabel(l))
		}
	}
	subject := strings.Join(parts, " ")
	if subject == "" {
		subject = "the service"
	}
	if c.instance != "" {
		subject += " on " + tmplLabel(c.instance)
	}
	return subject
}

// valueText formats the alert's value the way the rule reads it.
func (c ctx) valueText(s spec) string {
	switch s.id {
	case "latency-p0", "latency-p1":
		return fmt.Sprintf(`{{ printf "%%.2f" %s }}× baseline`, c.value)
	case "network-p1":
		return fmt.Sprintf(`{{ printf "%%.2f" %s }}× baseline at the gateway`, c.value)
	case "jitter-p1":
		return fmt.Sprintf(`{{ printf "%%.1f" %s }}`, c.value)
	case "gpu-idle-p0":
		return fmt.Sprintf(`{{ humanizePercentage %s }} utilisation`, c.value)
	case "cache-drop-p2":
		return fmt.Sprintf(`{{ humanizePercentage %s }} of baseline`, c.value)
	case "warmup-long-p2":
		return "not ready"
	case "xid-p1":
		return fmt.Sprintf(`{{ printf "%%.0f" %s }} XID events`, c.value)
	case "gpu-throttle-p1":
		return fmt.Sprintf(`{{ printf "%%.0f" %s }} hardware clock-event reasons active`, c.value)
	case "gpu-ecc-p1":
		return fmt.Sprintf(`{{ printf "%%.0f" %s }} uncorrected ECC errors`, c.value)
	}
	return fmt.Sprintf("{{ humanizePercentage %s }}", c.value)
}

// summary is one line for the notification's title.
func (c ctx) summary(s spec) string {
	who := c.who(s)
	p := c.b.p
	switch s.id {
	case "latency-p0", "latency-p1":
		return fmt.Sprintf(`%s: %s is {{ printf "%%.2f" %s }}× its same-time-of-day baseline`, who, c.latencyName(), c.value)
	case "network-p1":
		return fmt.Sprintf(`%s: P%s at the gateway, less the service's own rise, is {{ printf "%%.2f" %s }}× its same-time-of-day baseline: the time is added on the way to the service`, who, fmtFloat(p.LatencyQuantile*100), c.value)
	case "gpumem-p0", "gpumem-p1":
		return fmt.Sprintf(`{{ with %s }}%s: memory {{ humanizePercentage %s }} used{{ else }}%s: its fullest KV cache is {{ humanizePercentage %s }} used{{ end }}`,
			labelRef("gpu"), who, c.value, tmplLabel(c.node), c.value)
	case "gpu-idle-p0":
		return fmt.Sprintf(`%s: utilisation 0 for %s while traffic flows and the models are ready`, who, promDuration(p.GPUIdleFor))
	case "errors-p0":
		return fmt.Sprintf(`%s: {{ humanizePercentage %s }} of requests fail`, who, c.value)
	case "jitter-p1":
		return fmt.Sprintf(`%s: P99/P50 is {{ printf "%%.1f" %s }}, a jitter source is on the path`, who, c.value)
	case "queue-p1":
		return fmt.Sprintf(`%s: queue time is {{ humanizePercentage %s }} of the service time`, who, c.value)
	case "gpumem-forecast-p2":
		return fmt.Sprintf(`%s: memory trend reaches %s within %s`, who, pct(p.ForecastThreshold), promDuration(p.ForecastHorizon))
	case "cache-drop-p2":
		return fmt.Sprintf(`%s: cache hit rate is {{ humanizePercentage %s }} of its baseline`, who, c.value)
	case "warmup-long-p2":
		return fmt.Sprintf(`%s: still not ready %s after start`, who, promDuration(p.WarmupMaxLoad))
	case "xid-p1":
		return fmt.Sprintf(`%s: XID events in the last %s: {{ printf "%%.0f" %s }}`, who, promDuration(p.XIDWindow), c.value)
	case "gpu-throttle-p1":
		return fmt.Sprintf(`%s: clocks held down by the hardware (thermal, power brake or HW slowdown) for %s`, who, promDuration(p.GPUThrottleFor))
	case "gpu-ecc-p1":
		return fmt.Sprintf(`%s: uncorrected ECC errors in the last %s: {{ printf "%%.0f" %s }}`, who, promDuration(p.XIDWindow), c.value)
	}
	return who
}

// annotations are the rule's annotations: summary, description, value, QPS, the GPUs or models
// involved (where the templates can query) and the dashboard link.
func (c ctx) annotations(s spec) map[string]string {
	p := c.b.p
	out := map[string]string{
		"summary":     c.summary(s),
		"description": fmt.Sprintf("%s: %s (for %s). %s", s.sev, s.cond(p), promDuration(s.hold(p)), s.why),
		"value":       c.valueText(s),
		"dashboard":   c.dashboardLink(s),
		"triage":      c.triageLink(s),
	}
	if c.queries {
		out["qps"] = c.qpsQuery(s)
		if s.scope == ScopeGPU {
			out["models"] = c.modelsQuery()
		} else if c.instance != "" {
			out["gpus"] = c.gpusQuery()
		}
	}
	return out
}

// qpsQuery renders the current request rate of the alert's subject; a fleet's GPU rule gives
// each server's on the node.
func (c ctx) qpsQuery(s spec) string {
	b := c.b
	m, _ := b.measure(profile.Requests, profile.Counter)
	window := promDuration(b.p.RateWindow)
	if s.scope == ScopeGPU && c.fleet != nil {
		var parts []string
		for _, fb := range c.fleet {
			if fb.has(profile.Requests, profile.Counter) {
				parts = append(parts, fb.server+" "+ctx{b: fb, node: c.node, queries: true}.qpsQuery(s))
			}
		}
		return strings.Join(parts, "; ")
	}
	var q string
	if s.scope == ScopeGPU {
		q = fmt.Sprintf("%s(%s(rate(%s[%s]), %s, \"$1\", %s, %s) and on (%s) %s)",
			"sum", "label_replace", escapePercent(selector(m.Metrics, "", m.Matchers)), window,
			escapePercent(prom.Quote(NodeLabel)), escapePercent(prom.Quote(b.instance)), escapePercent(prom.Quote(hostRegex)),
			NodeLabel, nodeVector())
		q = "{{ with " + queryTemplateArgs(q, labelRef(c.node)) + " }}"
	} else {
		labels := nonEmpty2(c.model, c.version, c.instance)
		q = fmt.Sprintf("sum(rate(%s[%s]))", dynSelector(m.Metrics, m.Matchers, labels), window)
		q = "{{ with " + queryTemplate(q, labels...) + " }}"
	}
	return q + `{{ . | first | value | printf "%.1f" }} req/s{{ else }}no traffic{{ end }}`
}

// modelsQuery lists the model versions served on a GPU's node; a fleet's GPU rule lists each
// server's.
func (c ctx) modelsQuery() string {
	if c.fleet != nil {
		var parts []string
		for _, fb := range c.fleet {
			parts = append(parts, fb.server+": "+ctx{b: fb, node: c.node, queries: true}.modelsQuery())
		}
		return strings.Join(parts, " | ")
	}
	b := c.b
	m, _ := b.measure(profile.Requests, profile.Counter)
	labels := nonEmpty2(b.model, b.version)
	if len(labels) == 0 {
		return "the server exports no model label"
	}
	q := fmt.Sprintf("count %s (label_replace(%s, %s, \"$1\", %s, %s) and on (%s) %s)",
		by(labels...), escapePercent(selector(m.Metrics, "", m.Matchers)),
		escapePercent(prom.Quote(NodeLabel)), escapePercent(prom.Quote(b.instance)), escapePercent(prom.Quote(hostRegex)),
		NodeLabel, nodeVector())
	var item []string
	for _, l := range labels {
		item = append(item, "{{ index .Labels "+strconv.Quote(l)+" }}")
	}
	return "{{ with " + queryTemplateArgs(q, labelRef(c.node)) + " }}{{ range . }}" + strings.Join(item, " ") +
		"; {{ end }}{{ else }}none found{{ end }}"
}

// gpusQuery lists the memory use of the GPUs on a service alert's node, fullest first.
func (c ctx) gpusQuery() string {
	q := fmt.Sprintf("sort_desc(%s and on (%s) %s)", escapePercent(c.b.gpuMemory()), NodeLabel, nodeVector())
	return "{{ with " + queryTemplateArgs(q, "("+hostOfTemplate(c.instance)+")") +
		` }}{{ range . }}GPU {{ index .Labels "gpu" }} {{ humanizePercentage .Value }} memory; {{ end }}{{ else }}none found{{ end }}`
}

// nodeVector is a one-element vector carrying the node named by the format's %q.
func nodeVector() string {
	return fmt.Sprintf("label_replace(vector(1), %s, %%q, \"\", \"\")", escapePercent(prom.Quote(NodeLabel)))
}

// queryTemplateArgs is queryTemplate with template expressions as arguments.
func queryTemplateArgs(format string, args ...string) string {
	return fmt.Sprintf("printf %s %s | query", strconv.Quote(format), strings.Join(args, " "))
}

// dynSelector is a printf format of a selector whose dynamic matchers take %q values.
func dynSelector(metrics []string, fixed map[string]string, dyn []string) string {
	base := escapePercent(selector(metrics, "", fixed))
	var extra []string
	for _, l := range dyn {
		extra = append(extra, l+"=%q")
	}
	if len(extra) == 0 {
		return base
	}
	if strings.HasSuffix(base, "}") {
		return strings.TrimSuffix(base, "}") + "," + strings.Join(extra, ",") + "}"
	}
	return base + "{" + strings.Join(extra, ",") + "}"
}

// dashboardLink points at the overview's latency panel, the alert's subject selected. With
// PromQL in templates the window is the ten minutes before the evaluation; otherwise it is the
// last ten minutes when the link is opened.
func (c ctx) dashboardLink(s spec) string {
	p := c.b.p
	base := strings.TrimSuffix(p.GrafanaURL, "/") + "/d/" + url.PathEscape(p.DashboardUID) + "/"
	q := "?orgId=1&viewPanel=panel-" + strconv.Itoa(p.LatencyPanelID) + c.window(10*60)
	for _, v := range c.subject(s) {
		q += "&var-" + v.name + "={{ " + labelRef(v.label) + " | urlquery }}"
	}
	return base + q
}

// TriagePath is the app's triage page, which the triage link opens.
const TriagePath = "/a/inferscope-monitor-app/triage"

// triageLink opens the app's triage page on the alert's subject and the fifteen minutes before
// the evaluation (the brief's triage path), so the first diagnosis is one click away.
func (c ctx) triageLink(s spec) string {
	q := "?orgId=1" + c.window(15*60)
	for _, v := range c.subject(s) {
		name := v.name
		if s.scope == ScopeGPU && name == "instance" {
			name = "node" // a GPU alert names the node, not a service instance
		}
		q += "&" + name + "={{ " + labelRef(v.label) + " | urlquery }}"
	}
	return strings.TrimSuffix(c.b.p.GrafanaURL, "/") + TriagePath + q
}

// window is the from/to of a link: the seconds before the evaluation where templates can
// query, else the same length ending when the link is opened.
func (c ctx) window(seconds int) string {
	if c.queries {
		return fmt.Sprintf(`&from={{ with query "vector((time() - %d) * 1000)" }}{{ . | first | value | printf "%%.0f" }}{{ end }}`, seconds) +
			`&to={{ with query "vector(time() * 1000)" }}{{ . | first | value | printf "%.0f" }}{{ end }}`
	}
	return fmt.Sprintf("&from=now-%dm&to=now", seconds/60)
}

type linkVar struct{ name, label string }

// subject is the alert's subject as the dashboard's variables name it (a GPU's node goes in
// the instance variable, which takes a node for the GPU panels), with the label holding each.
func (c ctx) subject(s spec) []linkVar {
	var vars []linkVar
	if s.scope == ScopeGPU {
		vars = []linkVar{{"instance", c.node}, {"gpu", "gpu"}}
	} else {
		vars = []linkVar{{"model", c.model}, {"version", c.version}, {"instance", c.instance}}
	}
	out := vars[:0]
	for _, v := range vars {
		if v.label != "" {
			out = append(out, v)
		}
	}
	return out
}

// latencyName names what the latency rules compare: the quantile, or the mean on a server
// without a latency histogram (on a fleet's engine rule, whichever each server gives).
func (c ctx) latencyName() string {
	q := "P" + fmtFloat(c.b.p.LatencyQuantile*100) + " latency"
	bs := c.fleet
	if bs == nil {
		bs = []*builder{c.b}
	}
	var means []string
	for _, b := range bs {
		if b.latencyIsMean() && latencyNeeds(b) == "" {
			means = append(means, b.prof.Title)
		}
	}
	switch {
	case len(means) == 0:
		return q
	case len(means) == len(bs):
		return "mean latency (the server has no latency histogram)"
	}
	return q + " (the mean on " + strings.Join(means, ", ") + ")"
}
