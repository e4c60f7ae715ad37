package alerting

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v2"

	"github.com/inferscope/inferscope/pkg/profile"
)

// Names of the recording rules behind the alerts. The current values and the baselines are
// recorded so that the alert expressions stay short and the numbers can be graphed; the
// baselines read history through subqueries, so they work from the first evaluation on.
const (
	RecLatency         = "inferscope:latency_quantile:seconds"
	RecLatencyDayMean  = "inferscope:latency_quantile:day_mean_seconds"
	RecLatencyBaseline = "inferscope:latency_quantile:baseline_seconds"
	RecLatencyRatio    = "inferscope:latency_quantile:baseline_ratio"
	RecJitter          = "inferscope:latency_p99_over_p50:ratio"
	RecErrors          = "inferscope:errors:ratio"
	RecQueueShare      = "inferscope:queue_time:share"
	RecNodeWarming     = "inferscope:node_warming"
	RecGPUMemory       = "inferscope:gpu_memory_used:ratio"
	RecNodeQPS         = "inferscope:node_requests:rate"
	RecNodeQPSDayMean  = "inferscope:node_requests:day_mean_rate"
	RecNodeQPSBaseline = "inferscope:node_requests:baseline_rate"
	RecCacheHits       = "inferscope:cache_hits:ratio"
	RecCacheDayMean    = "inferscope:cache_hits:day_mean_ratio"
	RecCacheBaseline   = "inferscope:cache_hits:baseline_ratio"
)

// Long expressions and templates stay on one line in the YAML (yaml.v2 would fold them at 80
// columns, which is valid but unreadable).
func init() { yaml.FutureLineWrap() }

// PromRuleFile is a Prometheus rule file.
type PromRuleFile struct {
	Groups []PromGroup `yaml:"groups"`
}

// PromGroup is one rule group.
type PromGroup struct {
	Name     string     `yaml:"name"`
	Interval string     `yaml:"interval,omitempty"`
	Rules    []PromRule `yaml:"rules"`
}

// PromRule is a recording or an alerting rule.
type PromRule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// PrometheusRules renders the catalog as one Prometheus rule group: the recording rules the
// available alerts need, then the alerts. Rules the profile cannot feed are left out (Catalog
// says why).
func PrometheusRules(p Params) (PromRuleFile, error) {
	if err := p.Validate(); err != nil {
		return PromRuleFile{}, err
	}
	b, err := newBuilder(p)
	if err != nil {
		return PromRuleFile{}, err
	}
	c := ctx{b: b, value: "$value", model: b.model, version: b.version, instance: b.instance, node: NodeLabel, queries: true}
	available := map[string]bool{}
	for _, s := range specs {
		available[s.id] = s.needs(b) == ""
	}
	var rec []PromRule
	record := func(name, expr string) { rec = append(rec, PromRule{Record: name, Expr: expr}) }
	g := b.group()
	if available["latency-p0"] || available["latency-p1"] {
		current := b.steady(b.quantile(profile.Latency, p.LatencyQuantile))
		record(RecLatency, current)
		record(RecLatencyDayMean, b.dayMeans(current))
		record(RecLatencyBaseline, fmt.Sprintf("avg without (%s) (%s)\nand %s\ncount without (%s) (%s) >= %d",
			dayLabel, RecLatencyDayMean, on(g...), dayLabel, RecLatencyDayMean, p.BaselineMinDays))
		record(RecLatencyRatio, RecLatency+" / "+RecLatencyBaseline)
	}
	if available["jitter-p1"] {
		record(RecJitter, b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.quantile(profile.Latency, 0.99), b.quantile(profile.Latency, 0.5))))
	}
	if available["errors-p0"] {
		em, _ := b.measure(profile.Errors, profile.Counter)
		record(RecErrors, b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.rateSum(em.Metrics, "", em.Matchers, g), b.requests(g))))
	}
	if available["queue-p1"] {
		q, c := b.mean(profile.QueueTime), b.mean(profile.ComputeTime)
		record(RecQueueShare, b.steady(fmt.Sprintf("%s\n/\n(%s + %s)", q, q, c)))
	}
	record(RecNodeWarming, b.nodeWarming())
	record(RecGPUMemory, b.gpuMemory())
	if available["gpu-idle-p0"] {
		record(RecNodeQPS, b.nodeQPS())
		record(RecNodeQPSDayMean, b.dayMeans(b.nodeQPS()))
		record(RecNodeQPSBaseline, fmt.Sprintf("avg without (%s) (%s)", dayLabel, RecNodeQPSDayMean))
	}
	if available["cache-drop-p2"] {
		hm, _ := b.measure(profile.CacheHits, profile.Counter)
		qm, _ := b.measure(profile.CacheQueries, profile.Counter)
		current := b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.rateSum(hm.Metrics, "", hm.Matchers, g), b.rateSum(qm.Metrics, "", qm.Matchers, g)))
		record(RecCacheHits, current)
		record(RecCacheDayMean, b.dayMeans(current))
		record(RecCacheBaseline, fmt.Sprintf("avg without (%s) (%s)\nand %s\ncount without (%s) (%s) >= %d",
			dayLabel, RecCacheDayMean, on(g...), dayLabel, RecCacheDayMean, p.BaselineMinDays))
	}

	alerts := map[string]string{
		"latency-p0": fmt.Sprintf("%s > %s", RecLatencyRatio, fmtFloat(p.LatencyCritRatio)),
		"latency-p1": fmt.Sprintf("%s > %s", RecLatencyRatio, fmtFloat(p.LatencyWarnRatio)),
		"gpumem-p0":  b.memoryAbove(p.GPUMemCrit),
		"gpumem-p1":  b.memoryAbove(p.GPUMemWarn),
		"gpu-idle-p0": fmt.Sprintf("%s <= %s\nand %s (%s > %s * %s)\nunless %s %s",
			b.gpuUtilMaxOver(p.GPUIdleFor), fmtFloat(idleEpsilon),
			on(NodeLabel), RecNodeQPS, fmtFloat(p.GPUIdleQPSFraction), RecNodeQPSBaseline, on(NodeLabel), RecNodeWarming),
		"errors-p0": fmt.Sprintf("%s > %s", RecErrors, fmtFloat(p.ErrorRatio)),
		"jitter-p1": fmt.Sprintf("%s > %s", RecJitter, fmtFloat(p.JitterRatio)),
		"queue-p1":  fmt.Sprintf("%s > %s", RecQueueShare, fmtFloat(p.QueueShare)),
		"gpumem-forecast-p2": fmt.Sprintf("(\n  predict_linear((%s)[%s:%s], %s) > %s\n  and %s <= %s\n)\nunless %s %s\nunless %s %s",
			b.gpuMemory(), promDuration(p.ForecastWindow), promDuration(p.SubqueryStep), fmtSeconds(p.ForecastHorizon),
			fmtFloat(p.ForecastThreshold), RecGPUMemory, fmtFloat(p.ForecastThreshold), on(NodeLabel), RecNodeWarming, on(NodeLabel), b.kvCacheByNode()),
		"cache-drop-p2":  fmt.Sprintf("%s / %s < %s", RecCacheHits, RecCacheBaseline, fmtFloat(p.CacheDropRatio)),
		"warmup-long-p2": b.warmupLong(),
	}

	out := rec
	for _, s := range specs {
		if !available[s.id] {
			continue
		}
		c := c
		if s.id == "warmup-long-p2" {
			c.version = "" // the load state is per model, not per version
		}
		r := PromRule{Alert: s.alert, Expr: alerts[s.id], Labels: ruleLabels(p, s), Annotations: c.annotations(s)}
		if d := s.hold(p); d > 0 {
			r.For = promDuration(d)
		}
		for k, v := range c.contextLabels(s) {
			r.Labels[k] = v
		}
		out = append(out, r)
	}
	return PromRuleFile{Groups: []PromGroup{{Name: p.Group, Interval: promDuration(p.Interval), Rules: out}}}, nil
}

// warmupLong fires for a model whose load state stayed below ready for WarmupMaxLoad, on an
// instance that started at least that long ago.
func (b *builder) warmupLong() string {
	lm, why := b.measure(profile.LoadState, profile.Gauge)
	if why != "" {
		return ""
	}
	expr := fmt.Sprintf("max %s (max_over_time(%s%s)) < 1", by(b.modelGroup()...), selector(lm.Metrics, "", lm.Matchers), b.window(b.p.WarmupMaxLoad))
	if pm, why := b.measure(profile.ProcessStart, profile.Gauge); why == "" {
		expr += fmt.Sprintf("\nand %s ((time() - max %s (%s)) >= %s)", on(b.instance), by(b.instance), selector(pm.Metrics, "", pm.Matchers), fmtSeconds(b.p.WarmupMaxLoad))
	}
	return expr
}

// ruleLabels are the fixed labels of a rule: severity, its id, the ownership mark and, in
// observation mode, the observation mark.
func ruleLabels(p Params, s spec) map[string]string {
	l := map[string]string{SeverityLabel: string(s.sev), RuleLabel: s.id, ManagedLabel: "true", ScopeLabel: string(s.scope)}
	if p.Observation {
		l[ObservationLabel] = "true"
	}
	return l
}

// RenderPrometheus writes the rule file (YAML) with a header saying what it is.
func RenderPrometheus(p Params) ([]byte, error) {
	f, err := PrometheusRules(p)
	if err != nil {
		return nil, err
	}
	body, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Inferscope alert rules for Prometheus (profile %s, GPU names: %s).\n", p.Profile, p.GPUNaming)
	fmt.Fprintf(&buf, "# Generated by `inferscope rules export --format prometheus`; regenerate instead of editing.\n")
	if p.Observation {
		buf.WriteString("# Observation mode: every alert carries " + ObservationLabel + "=\"true\", which the Alertmanager\n# rendering routes to a receiver that sends nothing.\n")
	}
	if skipped := unavailable(p); skipped != "" {
		buf.WriteString(skipped)
	}
	buf.Write(body)
	return buf.Bytes(), nil
}

// unavailable lists, as YAML comments, the rules the profile cannot feed.
func unavailable(p Params) string {
	rules, err := Catalog(p)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, r := range rules {
		if r.Unavailable != "" {
			fmt.Fprintf(&b, "# Not rendered: %s (%s): %s\n", r.ID, r.Title, strings.ReplaceAll(r.Unavailable, "\n", " "))
		}
	}
	return b.String()
}
