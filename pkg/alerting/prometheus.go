package alerting

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v2"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
)

// Names of the recording rules behind the alerts. The current values and the baselines are
// recorded so that the alert expressions stay short and the numbers can be graphed; the
// baselines read history through subqueries, so they work from the first evaluation on.
const (
	RecLatency        = engine.RecordedLatency // the engine's fast path reads it
	RecLatencyDayMean = "inferscope:latency_quantile:day_mean_seconds"
	// RecLatencyModelDayMean is the day means per model and instance, all versions together:
	// the baseline of a version too new to have its own.
	RecLatencyModelDayMean = "inferscope:latency_quantile:model_day_mean_seconds"
	RecLatencyBaseline     = "inferscope:latency_quantile:baseline_seconds"
	// The network rule's (networkRatio): the service's latency per model and instance (per model
	// behind a gateway that does not name the instance), all versions together, and its day
	// means without the warm-up filter; the gateway's likewise.
	RecLatencyModel           = "inferscope:latency_quantile:model_seconds"
	RecLatencyModelAllDayMean = "inferscope:latency_quantile:model_day_mean_unfiltered_seconds"
	RecGatewayLatency         = "inferscope:gateway_latency_quantile:seconds"
	RecGatewayDayMean         = "inferscope:gateway_latency_quantile:day_mean_unfiltered_seconds"
	RecLatencyRatio           = "inferscope:latency_quantile:baseline_ratio"
	RecJitter                 = "inferscope:latency_p99_over_p50:ratio"
	RecErrors                 = "inferscope:errors:ratio"
	RecQueueShare             = "inferscope:queue_time:share"
	RecNodeWarming            = "inferscope:node_warming"
	RecGPUMemory              = "inferscope:gpu_memory_used:ratio"
	RecNodeQPS                = "inferscope:node_requests:rate"
	RecNodeQPSDayMean         = "inferscope:node_requests:day_mean_rate"
	RecNodeQPSBaseline        = "inferscope:node_requests:baseline_rate"
	RecCacheHits              = "inferscope:cache_hits:ratio"
	RecCacheDayMean           = "inferscope:cache_hits:day_mean_ratio"
	RecCacheBaseline          = "inferscope:cache_hits:baseline_ratio"
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

// PrometheusRules renders the catalog as Prometheus rule groups: the recording rules the
// available alerts need, then the alerts. Rules the profile cannot feed are left out (Catalog
// says why). One server makes one group. Several (a mixed fleet) make one group per server,
// named after the group and the server, with the service rules and the node warming and
// request-rate recordings, each recorded series labelled ServerLabel and each alert reading its
// own server's; then one group, the group name and "-gpu", with the GPU rules, which read every
// server's node recordings.
func PrometheusRules(p Params) (PromRuleFile, error) {
	if err := p.Validate(); err != nil {
		return PromRuleFile{}, err
	}
	bs, err := newBuilders(p)
	if err != nil {
		return PromRuleFile{}, err
	}
	interval := promDuration(p.Interval)
	if len(bs) == 1 {
		return PromRuleFile{Groups: []PromGroup{{Name: p.Group, Interval: interval, Rules: bs[0].promRules(true, true, nil)}}}, nil
	}
	var f PromRuleFile
	for _, b := range bs {
		f.Groups = append(f.Groups, PromGroup{Name: p.Group + "-" + b.server, Interval: interval, Rules: b.promRules(true, false, nil)})
	}
	gpu := *bs[0]
	gpu.server = ""
	f.Groups = append(f.Groups, PromGroup{Name: p.Group + GPUGroupSuffix, Interval: interval, Rules: gpu.promRules(false, true, bs)})
	return f, nil
}

// GPUGroupSuffix ends the name of a fleet's GPU rule group.
const GPUGroupSuffix = "-gpu"

// promRules renders the builder's recording rules and alerts: the service part (service
// alerts, the node recordings), the GPU part (GPU memory recording, GPU alerts), or both.
// fleet, for a fleet's GPU part, are the servers whose node request rates the GPU idle rule
// reads (nil: the builder's own).
func (b *builder) promRules(service, gpu bool, fleet []*builder) []PromRule {
	p := b.p
	available := map[string]bool{}
	for _, s := range specs {
		available[s.id] = s.needs(b) == ""
		if fleet != nil {
			available[s.id] = len(feeds(fleet, s)) > 0
		}
	}
	rec := b.recordings(service, gpu, available)
	alerts := map[string]string{
		"latency-p0": fmt.Sprintf("%s > %s", b.rec(RecLatencyRatio), fmtFloat(p.LatencyCritRatio)),
		// The P1s leave the range above the P0 line to the P0 rule, as the Grafana rendering's
		// conditions do (ruleCondition), so both renderings fire the same episodes.
		"latency-p1": fmt.Sprintf("%s > %s <= %s", b.rec(RecLatencyRatio), fmtFloat(p.LatencyWarnRatio), fmtFloat(p.LatencyCritRatio)),
		"network-p1": fmt.Sprintf("(\n%s\n)\n> %s", indent(b.networkRatio(b.rec(RecGatewayLatency), b.rec(RecGatewayDayMean), b.rec(RecLatencyModel), b.rec(RecLatencyModelAllDayMean))), fmtFloat(p.LatencyWarnRatio)),
		"gpumem-p0":  b.memoryAbove(p.GPUMemCrit),
		"gpumem-p1":  fmt.Sprintf("(\n%s\n)\nunless %s (\n%s\n)", indent(b.memoryAbove(p.GPUMemWarn)), on(NodeLabel, "gpu"), indent(b.memoryAbove(p.GPUMemCrit))),
		// On a fleet the node recordings carry ServerLabel: the idle GPU counts as under traffic
		// when any server on its node is above its own baseline (set operations take the
		// duplicates on their right), and as warming when any server there is.
		"gpu-idle-p0": fmt.Sprintf("%s <= %s\nand %s (%s > %s * %s)\nunless %s %s",
			b.gpuUtilMaxOver(p.GPUIdleFor), fmtFloat(idleEpsilon),
			on(NodeLabel), RecNodeQPS, fmtFloat(p.GPUIdleQPSFraction), RecNodeQPSBaseline, on(NodeLabel), RecNodeWarming),
		"errors-p0": fmt.Sprintf("%s > %s", b.rec(RecErrors), fmtFloat(p.ErrorRatio)),
		"jitter-p1": fmt.Sprintf("%s > %s", b.rec(RecJitter), fmtFloat(p.JitterRatio)),
		"queue-p1":  fmt.Sprintf("%s > %s", b.rec(RecQueueShare), fmtFloat(p.QueueShare)),
		"xid-p1":    fmt.Sprintf("(\n%s\n) > 0", indent(b.xidEvents(p.XIDWindow))),
		// The hardware rules, as the XID rule, are not masked during a warm-up: a warm-up does not
		// cause them, and an uncorrected ECC error often crashes the server whose restart would
		// then hide it.
		"gpu-throttle-p1": fmt.Sprintf("(\n%s\n) > 0", indent(b.hardwareThrottle())),
		"gpu-ecc-p1":      fmt.Sprintf("(\n%s\n) > 0", indent(b.eccErrors(p.XIDWindow))),
		// The trend is fitted on steady samples only, as the data source's forecast does: a
		// restart's dip and reload are not a trend.
		"gpumem-forecast-p2": fmt.Sprintf("(\n  predict_linear((%s unless %s %s)[%s:%s], %s) > %s\n  and %s <= %s\n)\nunless %s %s\nunless %s %s",
			RecGPUMemory, on(NodeLabel), RecNodeWarming, promDuration(p.ForecastWindow), promDuration(p.SubqueryStep), fmtSeconds(p.ForecastHorizon),
			fmtFloat(p.ForecastThreshold), RecGPUMemory, fmtFloat(p.ForecastThreshold), on(NodeLabel), RecNodeWarming, on(NodeLabel), b.kvCacheByNode()),
		"cache-drop-p2":  fmt.Sprintf("%s / %s < %s", b.rec(RecCacheHits), b.rec(RecCacheBaseline), fmtFloat(p.CacheDropRatio)),
		"warmup-long-p2": b.warmupLong(),
	}
	c := ctx{b: b, value: "$value", model: b.model, version: b.version, instance: b.instance, node: NodeLabel, queries: true, fleet: fleet}
	out := rec
	for _, s := range specs {
		if !available[s.id] || (s.scope == ScopeGPU && !gpu) || (s.scope == ScopeService && !service) {
			continue
		}
		c := c
		c = c.forRule(s)
		r := PromRule{Alert: s.alert, Expr: alerts[s.id], Labels: ruleLabels(p, s), Annotations: c.annotations(s)}
		if d := s.hold(p); d > 0 {
			r.For = promDuration(d)
		}
		for k, v := range c.contextLabels(s) {
			r.Labels[k] = v
		}
		if b.server != "" {
			r.Labels[ServerLabel] = b.server
		}
		out = append(out, r)
	}
	return out
}

// recordings are the recording rules behind the available alerts of the service part, the GPU
// part, or both (in the order one group has always had). On a fleet each carries ServerLabel and
// reads its own server's recordings.
func (b *builder) recordings(service, gpu bool, available map[string]bool) []PromRule {
	p := b.p
	var rec []PromRule
	record := func(name, expr string) {
		r := PromRule{Record: name, Expr: expr}
		if b.server != "" {
			r.Labels = map[string]string{ServerLabel: b.server}
		}
		rec = append(rec, r)
	}
	g := b.group()
	if service && (available["latency-p0"] || available["latency-p1"]) {
		current := b.steady(b.latency(g))
		record(RecLatency, current)
		record(RecLatencyDayMean, b.dayMeans(current))
		// A version without baselineMinDays of history (a new one) is judged against its
		// model's baseline on the instance, whatever the versions it was made of.
		mg := b.modelGroup()
		record(RecLatencyModelDayMean, b.dayMeans(b.steady(b.latency(mg))))
		// A day counts when it served requests: a version exported without traffic (Triton lists
		// every loaded version at 0) has NaN day means, which are no data.
		day, modelDay := "("+b.rec(RecLatencyDayMean)+" > 0)", "("+b.rec(RecLatencyModelDayMean)+" > 0)"
		record(RecLatencyBaseline, fmt.Sprintf("(\n  avg without (%s) %s\n  and %s\n  count without (%s) %s >= %d\n)\nor\n(\n  0 * %s\n  + %s group_left ()\n  (avg without (%s) %s and %s count without (%s) %s >= %d)\n)",
			dayLabel, day, on(g...), dayLabel, day, p.BaselineMinDays,
			b.rec(RecLatency), on(mg...), dayLabel, modelDay, on(mg...), dayLabel, modelDay, p.BaselineMinDays))
		record(RecLatencyRatio, b.rec(RecLatency)+" / "+b.rec(RecLatencyBaseline))
	}
	if service && available["network-p1"] {
		gw, gwDays, svc, svcDays := b.networkParts()
		record(RecLatencyModel, svc)
		record(RecLatencyModelAllDayMean, svcDays)
		record(RecGatewayLatency, gw)
		record(RecGatewayDayMean, gwDays)
	}
	if service && available["jitter-p1"] {
		record(RecJitter, b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.quantile(profile.Latency, 0.99), b.quantile(profile.Latency, 0.5))))
	}
	if service && available["errors-p0"] {
		em, _ := b.measure(profile.Errors, profile.Counter)
		record(RecErrors, b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.rateSum(em.Metrics, "", em.Matchers, g), b.requests(g))))
	}
	if service && available["queue-p1"] {
		q, c := b.mean(profile.QueueTime), b.mean(profile.ComputeTime)
		record(RecQueueShare, b.steady(fmt.Sprintf("%s\n/\n(%s + %s)", q, q, c)))
	}
	if service {
		record(RecNodeWarming, b.nodeWarming())
	}
	if gpu {
		record(RecGPUMemory, b.gpuMemory())
	}
	if service && available["gpu-idle-p0"] {
		record(RecNodeQPS, b.nodeQPS())
		record(RecNodeQPSDayMean, b.dayMeans(b.nodeQPS()))
		record(RecNodeQPSBaseline, fmt.Sprintf("avg without (%s) (%s)", dayLabel, b.rec(RecNodeQPSDayMean)))
	}
	if service && available["cache-drop-p2"] {
		hm, _ := b.measure(profile.CacheHits, profile.Counter)
		qm, _ := b.measure(profile.CacheQueries, profile.Counter)
		current := b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.rateSum(hm.Metrics, "", hm.Matchers, g), b.rateSum(qm.Metrics, "", qm.Matchers, g)))
		record(RecCacheHits, current)
		record(RecCacheDayMean, b.dayMeans(current))
		record(RecCacheBaseline, fmt.Sprintf("avg without (%s) (%s)\nand %s\ncount without (%s) (%s) >= %d",
			dayLabel, b.rec(RecCacheDayMean), on(g...), dayLabel, b.rec(RecCacheDayMean), p.BaselineMinDays))
	}
	return rec
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
	if names := p.ProfileNames(); len(names) > 1 {
		fmt.Fprintf(&buf, "# Inferscope alert rules for Prometheus (a fleet of %s: one group per server, its series labelled %s; GPU names: %s).\n",
			strings.Join(names, ", "), ServerLabel, p.GPUNaming)
	} else {
		fmt.Fprintf(&buf, "# Inferscope alert rules for Prometheus (profile %s, GPU names: %s).\n", p.Profile, p.GPUNaming)
	}
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

// unavailable lists, as YAML comments, the rules the profile cannot feed, and on a fleet the
// rules each server cannot feed.
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
	for _, r := range rules {
		if r.NotMeasured != "" && r.Unavailable == "" {
			fmt.Fprintf(&b, "# Rendered but not measured on this fleet, so it cannot fire: %s (%s): %s\n", r.ID, r.Title, strings.ReplaceAll(r.NotMeasured, "\n", " "))
		}
	}
	for _, server := range p.ProfileNames() {
		for _, r := range rules {
			if why, ok := r.UnavailableOn[server]; ok {
				fmt.Fprintf(&b, "# Not rendered for %s: %s (%s): %s\n", server, r.ID, r.Title, strings.ReplaceAll(why, "\n", " "))
			}
		}
	}
	return b.String()
}
