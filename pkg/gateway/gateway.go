// Package gateway describes the gateways that sit in front of an inference server (ingress-nginx,
// Envoy, Istio, or a user's own) and maps the labels of their upstream-time histograms to the
// model, version and instance the servers' own metrics carry. The network segment of the latency
// split is the gateway's upstream time for a model minus the service's own time.
//
// A gateway is not a server profile: it sits in front of any server, so it is configured apart
// from the profiles and read next to whichever profile serves the model.
//
// The package is pure data and matching: no I/O, no Prometheus client types.
package gateway

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Preset names.
const (
	IngressNginx = "ingress-nginx"
	Envoy        = "envoy"
	Istio        = "istio"
	Custom       = "custom"
)

// Units a gateway histogram may be in, and their factor to seconds.
var units = map[string]float64{
	"seconds":      1,
	"s":            1,
	"milliseconds": 1e-3,
	"ms":           1e-3,
	"microseconds": 1e-6,
	"us":           1e-6,
}

// Preset is what is known of one gateway's upstream-time histogram.
type Preset struct {
	Name, Title string
	// Metric is the histogram's base name (series <Metric>_bucket, _sum, _count).
	Metric string
	Unit   string
	// Matchers are fixed label matchers (Istio's reporter).
	Matchers map[string]string
	// Model is the default rule giving the model from the gateway's labels.
	Model Rule
	// Labels lists the labels the histogram carries (for people and the fixture tests).
	Labels []string
	// Note says what the time is and is not; shown next to the network segment.
	Note string
}

// Presets are the built-in gateways, in the order the settings list them. Facts: ingress-nginx
// internal/ingress/metric/collectors/socket.go (labels status, method, path, namespace, ingress,
// service, canary, plus controller_namespace, controller_class, controller_pod); Envoy's cluster
// statistics (upstream_rq_time, milliseconds, label envoy_cluster_name in Prometheus form);
// Istio's standard metrics (istio_request_duration_milliseconds, reporter source|destination).
var Presets = []Preset{
	{
		Name: IngressNginx, Title: "ingress-nginx", Metric: "nginx_ingress_controller_response_duration_seconds", Unit: "seconds",
		Model:  Rule{Label: "service"},
		Labels: []string{"status", "method", "path", "namespace", "ingress", "service", "canary", "controller_namespace", "controller_class", "controller_pod"},
		Note: "ingress-nginx's upstream response time (nginx_ingress_controller_response_duration_seconds) per Kubernetes service; " +
			"it does not name the upstream pod, so the network segment is the model's, over all its instances",
	},
	{
		Name: Envoy, Title: "Envoy", Metric: "envoy_cluster_upstream_rq_time", Unit: "milliseconds",
		Model:  Rule{Label: "envoy_cluster_name"},
		Labels: []string{"envoy_cluster_name"},
		Note: "Envoy's upstream request time per cluster (ms, scaled to seconds); it counts every retry attempt on its own and " +
			"names no upstream host, so the network segment is the model's, over all its instances",
	},
	{
		Name: Istio, Title: "Istio", Metric: "istio_request_duration_milliseconds", Unit: "milliseconds",
		Matchers: map[string]string{"reporter": "source"},
		Model:    Rule{Label: "destination_workload"},
		Labels: []string{"reporter", "source_workload", "destination_workload", "destination_service", "destination_service_name",
			"destination_version", "response_code"},
		Note: "Istio's request duration as the calling proxy or gateway reports it (reporter=\"source\", ms scaled to seconds): " +
			"the destination's own sidecar (reporter=\"destination\") sits beside the server and never sees the network between them",
	},
	{
		Name: Custom, Title: "Custom gateway histogram", Unit: "seconds",
		Note: "the configured gateway histogram",
	},
}

// Names lists the preset names.
func Names() []string {
	out := make([]string, len(Presets))
	for i, p := range Presets {
		out[i] = p.Name
	}
	return out
}

// UnitNames lists the accepted units.
func UnitNames() []string {
	return slices.Sorted(maps.Keys(units))
}

// Rule gives one of model, version or instance from a gateway label: Map first (a static map of
// label value to result), then Regex (anchored at both ends, like Prometheus relabelling; default
// "(.*)") expanded into Replacement (default "$1"). A value neither matches is not mapped.
type Rule struct {
	Label       string
	Regex       string
	Replacement string
	Map         map[string]string
}

// IsZero reports whether the rule is unset.
func (r Rule) IsZero() bool {
	return r.Label == "" && r.Regex == "" && r.Replacement == "" && len(r.Map) == 0
}

// over returns r with the unset fields taken from def.
func (r Rule) over(def Rule) Rule {
	if r.Label == "" {
		r.Label = def.Label
	}
	if r.Regex == "" && r.Replacement == "" && len(r.Map) == 0 {
		r.Regex, r.Replacement, r.Map = def.Regex, def.Replacement, def.Map
	}
	return r
}

// Config is a user's gateway configuration (data-source settings, command flags).
type Config struct {
	// Preset is one of Names; "" means no gateway.
	Preset string
	// Metric and Unit override the preset's (required for custom).
	Metric, Unit string
	// Matchers are fixed label matchers, over the preset's (e.g. reporter=destination).
	Matchers map[string]string
	// Model, Version and Instance map the gateway's labels; Model defaults to the preset's rule,
	// Version and Instance to none (the presets' gateways do not carry them).
	Model, Version, Instance Rule
}

// Gateway is a validated configuration, ready for the engine.
type Gateway struct {
	Name, Title string
	Metric      string
	Scale       float64 // to seconds
	Matchers    map[string]string
	Note        string
	model       mapper
	version     *mapper
	instance    *mapper
}

type mapper struct {
	label string
	re    *regexp.Regexp
	repl  string
	m     map[string]string
	// mapOnly: a static map without a regex maps only the values it lists.
	mapOnly bool
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
var metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func newMapper(what string, r Rule) (mapper, error) {
	if !labelName.MatchString(r.Label) {
		return mapper{}, fmt.Errorf("gateway %s label %q is not a valid Prometheus label name", what, r.Label)
	}
	expr := r.Regex
	if expr == "" {
		expr = "(.*)"
	}
	re, err := regexp.Compile("^(?:" + expr + ")$")
	if err != nil {
		return mapper{}, fmt.Errorf("gateway %s regex %q: %w", what, r.Regex, err)
	}
	repl := r.Replacement
	if repl == "" {
		repl = "$1"
	}
	mapOnly := len(r.Map) > 0 && r.Regex == "" && r.Replacement == ""
	return mapper{label: r.Label, re: re, repl: repl, m: r.Map, mapOnly: mapOnly}, nil
}

func (m mapper) apply(labels map[string]string) (string, bool) {
	v, ok := labels[m.label]
	if !ok {
		return "", false
	}
	if out, ok := m.m[v]; ok {
		return out, out != ""
	}
	if m.mapOnly {
		return "", false
	}
	idx := m.re.FindStringSubmatchIndex(v)
	if idx == nil {
		return "", false
	}
	out := string(m.re.ExpandString(nil, m.repl, v, idx))
	return out, out != ""
}

// New validates a configuration; a Config without Preset gives nil (no gateway).
func New(c Config) (*Gateway, error) {
	if c.Preset == "" || c.Preset == "none" {
		return nil, nil
	}
	var p Preset
	found := false
	for _, q := range Presets {
		if q.Name == c.Preset {
			p, found = q, true
		}
	}
	if !found {
		return nil, fmt.Errorf("unknown gateway %q (known: %s)", c.Preset, strings.Join(Names(), ", "))
	}
	g := &Gateway{Name: p.Name, Title: p.Title, Metric: p.Metric, Note: p.Note, Matchers: map[string]string{}}
	if c.Metric != "" {
		g.Metric = c.Metric
	}
	if g.Metric == "" {
		return nil, fmt.Errorf("the %s gateway needs the name of its upstream-time histogram", p.Name)
	}
	if !metricName.MatchString(g.Metric) {
		return nil, fmt.Errorf("gateway metric %q is not a valid Prometheus metric name", g.Metric)
	}
	unit := p.Unit
	if c.Unit != "" {
		unit = c.Unit
	}
	scale, ok := units[unit]
	if !ok {
		return nil, fmt.Errorf("gateway unit %q is not one of %s", unit, strings.Join(UnitNames(), ", "))
	}
	g.Scale = scale
	maps.Copy(g.Matchers, p.Matchers)
	for k, v := range c.Matchers {
		if !labelName.MatchString(k) {
			return nil, fmt.Errorf("gateway matcher label %q is not a valid Prometheus label name", k)
		}
		g.Matchers[k] = v
	}
	model := c.Model.over(p.Model)
	if model.Label == "" {
		return nil, fmt.Errorf("the %s gateway needs the label that names the model", p.Name)
	}
	var err error
	if g.model, err = newMapper("model", model); err != nil {
		return nil, err
	}
	for _, r := range []struct {
		what string
		rule Rule
		dst  **mapper
	}{{"version", c.Version, &g.version}, {"instance", c.Instance, &g.instance}} {
		if r.rule.IsZero() {
			continue
		}
		m, err := newMapper(r.what, r.rule)
		if err != nil {
			return nil, err
		}
		*r.dst = &m
	}
	return g, nil
}

// Target is what one gateway series stands for.
type Target struct{ Model, Version, Instance string }

// SourceLabels are the gateway labels the mapping reads (what a query groups the gateway by).
func (g *Gateway) SourceLabels() []string {
	set := map[string]bool{g.model.label: true}
	for _, m := range []*mapper{g.version, g.instance} {
		if m != nil {
			set[m.label] = true
		}
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out
}

// Mapping is one label mapping as a rule renderer needs it, the defaults applied: Source is
// the gateway label read; a value listed in Map gives its entry (an empty entry: not mapped);
// any other value, unless MapOnly, matches Regex (anchored at both ends) and gives Replacement
// expanded ("$1"); an empty result is not mapped.
type Mapping struct {
	Source, Regex, Replacement string
	Map                        map[string]string
	MapOnly                    bool
}

func (m mapper) mapping() Mapping {
	re := strings.TrimSuffix(strings.TrimPrefix(m.re.String(), "^(?:"), ")$")
	return Mapping{Source: m.label, Regex: re, Replacement: m.repl, Map: maps.Clone(m.m), MapOnly: m.mapOnly}
}

// ModelMapping is how the gateway's labels give the model.
func (g *Gateway) ModelMapping() Mapping { return g.model.mapping() }

// InstanceMapping is how they give the instance; false when the gateway does not name it.
func (g *Gateway) InstanceMapping() (Mapping, bool) {
	if g.instance == nil {
		return Mapping{}, false
	}
	return g.instance.mapping(), true
}

// HasVersion and HasInstance report whether the mapping gives versions and instances.
func (g *Gateway) HasVersion() bool  { return g.version != nil }
func (g *Gateway) HasInstance() bool { return g.instance != nil }

// Map gives the target of a gateway series' labels; false when the model is not mapped (the series
// stands for something else behind the same gateway) or a configured version or instance rule
// does not match.
func (g *Gateway) Map(labels map[string]string) (Target, bool) {
	var t Target
	var ok bool
	if t.Model, ok = g.model.apply(labels); !ok {
		return Target{}, false
	}
	if g.version != nil {
		if t.Version, ok = g.version.apply(labels); !ok {
			return Target{}, false
		}
	}
	if g.instance != nil {
		if t.Instance, ok = g.instance.apply(labels); !ok {
			return Target{}, false
		}
	}
	return t, true
}

// Describe is one line for people: which histogram, how it is mapped.
func (g *Gateway) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s gateway: %s", g.Title, g.Metric)
	if len(g.Matchers) > 0 {
		keys := slices.Sorted(maps.Keys(g.Matchers))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%q", k, g.Matchers[k])
		}
		fmt.Fprintf(&b, "{%s}", strings.Join(parts, ","))
	}
	fmt.Fprintf(&b, ", model from %s", g.model.label)
	if g.version != nil {
		fmt.Fprintf(&b, ", version from %s", g.version.label)
	}
	if g.instance != nil {
		fmt.Fprintf(&b, ", instance from %s", g.instance.label)
	}
	return b.String()
}

// ParseMap reads a static map written "from=to,from2=to2" (the flag and setting form).
func ParseMap(s string) (map[string]string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("gateway map entry %q is not from=to", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

// ParseMatchers reads fixed matchers written "label=value,label2=value2".
func ParseMatchers(s string) (map[string]string, error) {
	m, err := ParseMap(s)
	if err != nil {
		return nil, fmt.Errorf("gateway matchers: %w", err)
	}
	return m, nil
}
