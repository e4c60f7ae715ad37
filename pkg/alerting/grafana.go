package alerting

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v2"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Grafana-managed rendering: one rule group for Grafana's provisioning API
// (PUT /api/v1/provisioning/folder/{folderUid}/rule-groups/{group}) whose rules query the
// Inferscope data source's own query types and decide with server-side expressions: the data
// query A, a reduce B (last value), the condition C (threshold, or math for the P1 rules that
// leave the P0 range to the P0 rule), and for context a request-rate query D with its reduce E.

// DatasourceType is the plugin id of the data source the rules query.
const DatasourceType = "inferscope-monitor-datasource"

// ExprUID is the data source uid of Grafana's server-side expressions.
const ExprUID = "__expr__"

// RecordOnlyTiming is the mute timing (always active) that keeps P2 and observation-mode rules
// from sending while they are evaluated and recorded.
const RecordOnlyTiming = "inferscope-record-only"

// Query refIds of every rendered rule.
const (
	refData      = "A"
	refReduce    = "B"
	refCondition = "C"
	refQPS       = "D"
	refQPSReduce = "E"
)

// GrafanaGroup is the provisioning API's AlertRuleGroup.
type GrafanaGroup struct {
	Title     string        `json:"title"`
	FolderUID string        `json:"folderUid"`
	Interval  int64         `json:"interval"`
	Rules     []GrafanaRule `json:"rules"`
}

// GrafanaRule is the provisioning API's ProvisionedAlertRule.
type GrafanaRule struct {
	UID                  string                `json:"uid"`
	OrgID                int64                 `json:"orgID"`
	FolderUID            string                `json:"folderUID"`
	RuleGroup            string                `json:"ruleGroup"`
	Title                string                `json:"title"`
	Condition            string                `json:"condition"`
	Data                 []GrafanaQuery        `json:"data"`
	NoDataState          string                `json:"noDataState"`
	ExecErrState         string                `json:"execErrState"`
	For                  string                `json:"for"`
	Annotations          map[string]string     `json:"annotations"`
	Labels               map[string]string     `json:"labels"`
	IsPaused             bool                  `json:"isPaused"`
	NotificationSettings *NotificationSettings `json:"notification_settings,omitempty"`
}

// GrafanaQuery is one query or expression of a rule.
type GrafanaQuery struct {
	RefID             string            `json:"refId"`
	QueryType         string            `json:"queryType"`
	RelativeTimeRange RelativeTimeRange `json:"relativeTimeRange"`
	DatasourceUID     string            `json:"datasourceUid"`
	Model             map[string]any    `json:"model"`
}

// RelativeTimeRange is seconds before the evaluation.
type RelativeTimeRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// NotificationSettings route a rule straight to a contact point (Grafana's simplified routing).
type NotificationSettings struct {
	Receiver          string   `json:"receiver"`
	GroupBy           []string `json:"group_by,omitempty"`
	GroupWait         string   `json:"group_wait,omitempty"`
	GroupInterval     string   `json:"group_interval,omitempty"`
	RepeatInterval    string   `json:"repeat_interval,omitempty"`
	MuteTimeIntervals []string `json:"mute_time_intervals,omitempty"`
}

// MuteTiming is the provisioning API's MuteTimeInterval.
type MuteTiming struct {
	Name          string         `json:"name"`
	TimeIntervals []TimeInterval `json:"time_intervals"`
}

// TimeInterval is a mute timing's interval.
type TimeInterval struct {
	Times []TimeRange `json:"times"`
}

// TimeRange is a time of day range.
type TimeRange struct {
	StartTime string `json:"start_time"`
	EndTime   string `json:"end_time"`
}

// RecordOnlyMuteTiming is the mute timing RecordOnlyTiming names: all day, every day.
func RecordOnlyMuteTiming() MuteTiming {
	return MuteTiming{Name: RecordOnlyTiming, TimeIntervals: []TimeInterval{{Times: []TimeRange{{StartTime: "00:00", EndTime: "24:00"}}}}}
}

// ErrNoDatasource is a Grafana rendering without the data source to query.
var ErrNoDatasource = errors.New("datasourceUid is required for the Grafana renderings: the uid of the Inferscope data source the rules query")

// RuleUID is the uid of a catalog rule in a group: stable, so that writing the group again
// replaces the same rules, and distinct per folder and group.
func RuleUID(p Params, id string) string {
	h := fnv.New32a()
	h.Write([]byte(p.FolderUID + "/" + p.Group))
	return fmt.Sprintf("isc-%s-%08x", id, h.Sum32())
}

// ServerRuleUID is the uid of a rule rendered once per server of a fleet (a PromQL rule read
// from that server's names).
func ServerRuleUID(p Params, id, server string) string { return RuleUID(p, id+"-"+server) }

// RuleUIDs maps each rule the Grafana rendering makes to its uid: by rule id; on a fleet a rule
// rendered per server also by "id/server" (its id alone then names the first server's).
func RuleUIDs(p Params) map[string]string {
	out := map[string]string{}
	bs, err := newBuilders(p)
	if err != nil {
		return out
	}
	for _, s := range specs {
		fed := feeds(bs, s)
		switch {
		case len(fed) == 0:
		case len(bs) == 1 || !perServer(s):
			out[s.id] = RuleUID(p, s.id)
		default:
			out[s.id] = ServerRuleUID(p, s.id, fed[0].server)
			for _, b := range fed {
				out[s.id+"/"+b.server] = ServerRuleUID(p, s.id, b.server)
			}
		}
	}
	return out
}

// perServer says whether the Grafana rendering of a rule is PromQL from one profile's names
// (rendered once per server on a fleet) rather than an engine query (rendered once: the data
// source reads each model with its own server's profile).
func perServer(s spec) bool {
	return s.id == "cache-drop-p2" || s.id == "warmup-long-p2" || s.id == "network-p1"
}

// perModel says whether a service rule's alerts are per model and instance, not per version:
// the load state is per model, and a gateway routes to a model whichever versions serve it.
func perModel(s spec) bool { return s.id == "warmup-long-p2" || s.id == "network-p1" }

// GrafanaRules renders the rule group. orgID is the organisation the rules belong to (1 for
// file provisioning). Over several servers a rule that any server can feed is rendered: once
// when it queries the data source's engine, once per server that can feed it when it is PromQL
// (its uid and title naming the server).
func GrafanaRules(p Params, orgID int64) (GrafanaGroup, error) {
	if err := p.Validate(); err != nil {
		return GrafanaGroup{}, err
	}
	if p.DatasourceUID == "" {
		return GrafanaGroup{}, ErrNoDatasource
	}
	bs, err := newBuilders(p)
	if err != nil {
		return GrafanaGroup{}, err
	}
	g := GrafanaGroup{Title: p.Group, FolderUID: p.FolderUID, Interval: int64(p.Interval / time.Second)}
	for _, s := range specs {
		fed := feeds(bs, s)
		switch {
		case len(fed) == 0:
		case len(bs) == 1:
			g.Rules = append(g.Rules, grafanaRule(p, bs[0], s, orgID, nil))
		case perServer(s):
			for _, b := range fed {
				g.Rules = append(g.Rules, grafanaRule(p, b, s, orgID, nil))
			}
		default:
			once := *bs[0]
			once.server = ""
			g.Rules = append(g.Rules, grafanaRule(p, &once, s, orgID, bs))
		}
	}
	return g, nil
}

// grafanaRule renders one rule from the builder's names; fleet, for an engine rule over several
// servers, are the servers whose label names its series may carry and whose request rates its
// context query adds.
func grafanaRule(p Params, b *builder, s spec, orgID int64, fleet []*builder) GrafanaRule {
	main, rangeFrom, viaPromQL := grafanaMainQuery(p, b, s)
	// Labels the data query's series carry: the engine's service types, queried by instance,
	// keep model/version/instance apart, its GPU types node/gpu; the promql ones carry what the
	// expression groups by.
	c := ctx{b: b, value: "$values." + refReduce + ".Value", node: "node", fleet: fleet}
	var qpsBy []string
	switch {
	case s.scope == ScopeGPU:
		qpsBy = []string{"node"}
	case viaPromQL:
		c.model, c.version, c.instance = b.model, b.version, b.instance
		c = c.forRule(s)
		qpsBy = nonEmpty2(c.model, c.version, c.instance)
	case fleet != nil:
		c.model = alternatives(fleet, func(b *builder) string { return b.model })
		c.version = alternatives(fleet, func(b *builder) string { return b.version })
		c.instance = alternatives(fleet, func(b *builder) string { return b.instance })
	default:
		c.model, c.version, c.instance = b.model, b.version, b.instance
		qpsBy = nonEmpty2(c.model, c.version, c.instance)
	}
	qps := grafanaQPS(b, s, qpsBy)
	if fleet != nil {
		qps = grafanaFleetQPS(fleet, s)
	}
	data := []GrafanaQuery{
		dsQuery(p, refData, main, rangeFrom),
		reduce(refReduce, refData),
		grafanaCondition(p, s),
		dsQuery(p, refQPS, map[string]any{"queryType": "promql", "expr": qps, "legendFormat": ""}, int64(p.RateWindow/time.Second)*2),
		reduce(refQPSReduce, refQPS),
	}
	ann := c.annotations(s)
	ann["qps"] = "{{ with $values." + refQPSReduce + ` }}{{ printf "%.1f" .Value }} req/s{{ end }}`
	ann["__dashboardUid__"] = p.DashboardUID
	ann["__panelId__"] = strconv.Itoa(p.LatencyPanelID)
	labels := ruleLabels(p, s)
	for k, v := range c.contextLabels(s) {
		labels[k] = v
	}
	title, uid := s.sev.title(s.title), RuleUID(p, s.id)
	if b.server != "" {
		title += " (" + b.server + ")"
		uid = ServerRuleUID(p, s.id, b.server)
		labels[ServerLabel] = b.server
	}
	if p.Group != GroupPrefix {
		title += " (" + p.Group + ")"
	}
	return GrafanaRule{
		UID: uid, OrgID: orgID, FolderUID: p.FolderUID, RuleGroup: p.Group,
		Title: title, Condition: refCondition, Data: data,
		NoDataState: "OK", ExecErrState: "Error", For: promDuration(s.hold(p)),
		Annotations: ann, Labels: labels, NotificationSettings: notificationSettings(p, s.sev),
	}
}

func (sev Severity) title(t string) string { return string(sev) + " " + t }

// grafanaMainQuery is the rule's data query: the data source's own query type where one
// computes the signal, PromQL through the data source otherwise. It returns the model, how far
// back the query must reach, and whether it is PromQL.
func grafanaMainQuery(p Params, b *builder, s spec) (map[string]any, int64, bool) {
	rate := promDuration(p.RateWindow)
	base := func(t string, series ...string) map[string]any {
		return map[string]any{"queryType": t, "warmupFilter": true, "rateInterval": rate, "series": series}
	}
	// The service types read one series per instance, so a problem on one instance is not
	// averaged over the others (and the alert names it).
	service := func(t string, series ...string) map[string]any {
		m := base(t, series...)
		m["by"] = engine.ByInstance
		return m
	}
	tenMin := int64(600)
	switch s.id {
	case "latency-p0", "latency-p1":
		m := service("baseline", "ratio")
		m["quantile"], m["days"], m["window"], m["minDays"] = p.LatencyQuantile, p.BaselineDays, promDuration(p.BaselineWindow), p.BaselineMinDays
		m["ratioWarn"], m["ratioCrit"], m["for"] = p.LatencyWarnRatio, p.LatencyCritRatio, promDuration(p.LatencyWarnFor)
		return m, tenMin, false
	case "network-p1":
		// The Prometheus rendering's signal, its recordings written out.
		return map[string]any{"queryType": "promql", "expr": b.networkRatio(b.networkParts()), "legendFormat": ""}, tenMin, true
	case "gpumem-p0", "gpumem-p1":
		// The Prometheus rendering's memory signal, warm-up filter included, so both renderings
		// (and the backtest, which follows this query) judge the same samples.
		return map[string]any{"queryType": "promql", "expr": asNodeGPU(b.memorySignal(p)), "legendFormat": ""}, tenMin, false
	case "gpu-idle-p0":
		m := base("gpu_idle_under_traffic", "idle_under_traffic")
		m["idleFor"], m["qpsFraction"] = promDuration(p.GPUIdleFor), p.GPUIdleQPSFraction
		return m, tenMin, false
	case "errors-p0":
		return service("errors", "error_ratio"), tenMin, false
	case "jitter-p1":
		return service("jitter", "jitter"), tenMin, false
	case "queue-p1":
		return service("split", "queue_share"), tenMin, false
	case "gpumem-forecast-p2":
		m := base("gpumem_forecast", "eta")
		m["threshold"], m["window"] = p.ForecastThreshold, promDuration(p.ForecastWindow)
		return m, max(tenMin, int64(p.ForecastWindow/time.Second)), false
	case "cache-drop-p2":
		hm, _ := b.measure(profile.CacheHits, profile.Counter)
		qm, _ := b.measure(profile.CacheQueries, profile.Counter)
		g := b.group()
		current := b.steady(fmt.Sprintf("%s\n/\n(%s > 0)", b.rateSum(hm.Metrics, "", hm.Matchers, g), b.rateSum(qm.Metrics, "", qm.Matchers, g)))
		expr := fmt.Sprintf("(\n%s\n)\n/\navg without (%s) (\n%s\n)", indent(current), dayLabel, indent(b.dayMeans(current)))
		return map[string]any{"queryType": "promql", "expr": expr, "legendFormat": ""}, tenMin, true
	case "warmup-long-p2":
		return map[string]any{"queryType": "promql", "expr": b.warmupLong(), "legendFormat": ""}, tenMin, true
	case "xid-p1":
		// The Prometheus rendering's count.
		return map[string]any{"queryType": "promql", "expr": asNodeGPU(b.xidEvents(p.XIDWindow)), "legendFormat": ""}, tenMin, false
	case "gpu-throttle-p1":
		return map[string]any{"queryType": "promql", "expr": asNodeGPU(b.hardwareThrottle()), "legendFormat": ""}, tenMin, false
	case "gpu-ecc-p1":
		return map[string]any{"queryType": "promql", "expr": asNodeGPU(b.eccErrors(p.XIDWindow)), "legendFormat": ""}, tenMin, false
	}
	panic("alerting: no Grafana query for rule " + s.id)
}

// grafanaCondition is the rule's condition C on the reduced value B, rendered from the
// condition the backtest evaluates (ruleCondition), so the two cannot drift.
func grafanaCondition(p Params, s spec) GrafanaQuery {
	c := ruleCondition(p, s)
	switch c.Op {
	case OpGreater:
		return threshold("gt", c.Lo)
	case OpLess:
		return threshold("lt", c.Hi)
	case OpWithin:
		return mathExpr(fmt.Sprintf("$%s > %s && $%s <= %s", refReduce, fmtFloat(c.Lo), refReduce, fmtFloat(c.Hi)))
	}
	panic("alerting: no Grafana condition for operator " + c.Op)
}

// grafanaFleetQPS is the request rate of every server, grouped like an engine rule's series on a
// fleet: each server's by its own labels and marked with the engine's server label, or summed
// per node for the GPU rules.
func grafanaFleetQPS(fleet []*builder, s spec) string {
	var parts []string
	for _, b := range fleet {
		if !b.has(profile.Requests, profile.Counter) {
			continue
		}
		expr := b.requests(b.group())
		if s.scope == ScopeGPU {
			expr = fmt.Sprintf("label_replace(%s, \"node\", \"$1\", %s, %s)", b.requests([]string{b.instance}), prom.Quote(b.instance), prom.Quote(hostRegex))
		}
		parts = append(parts, fmt.Sprintf("label_replace(%s, %s, %s, \"\", \"\")", expr, prom.Quote(engine.ServerLabel), prom.Quote(b.prof.Name)))
	}
	expr := strings.Join(parts, "\nor\n")
	if s.scope == ScopeGPU {
		return fmt.Sprintf("sum by (node) (\n%s\n)", indent(expr))
	}
	return expr
}

// grafanaQPS is the request rate grouped like the rule's series.
func grafanaQPS(b *builder, s spec, labels []string) string {
	if s.scope == ScopeGPU {
		return fmt.Sprintf("sum by (node) (label_replace(%s, \"node\", \"$1\", %s, %s))", b.requests([]string{b.instance}), prom.Quote(b.instance), prom.Quote(hostRegex))
	}
	return b.requests(labels)
}

func exprDatasource() map[string]any { return map[string]any{"type": "__expr__", "uid": ExprUID} }

func dsQuery(p Params, ref string, model map[string]any, from int64) GrafanaQuery {
	m := map[string]any{"refId": ref, "datasource": map[string]any{"type": DatasourceType, "uid": p.DatasourceUID},
		"intervalMs": p.Interval.Milliseconds(), "maxDataPoints": 43200}
	for k, v := range model {
		m[k] = v
	}
	qt, _ := model["queryType"].(string)
	return GrafanaQuery{RefID: ref, QueryType: qt, RelativeTimeRange: RelativeTimeRange{From: from}, DatasourceUID: p.DatasourceUID, Model: m}
}

func reduce(ref, of string) GrafanaQuery {
	return GrafanaQuery{RefID: ref, DatasourceUID: ExprUID, Model: map[string]any{
		"refId": ref, "type": "reduce", "expression": of, "reducer": "last", "settings": map[string]any{"mode": "dropNN"},
		"datasource": exprDatasource(),
	}}
}

func threshold(op string, v float64) GrafanaQuery {
	return GrafanaQuery{RefID: refCondition, DatasourceUID: ExprUID, Model: map[string]any{
		"refId": refCondition, "type": "threshold", "expression": refReduce,
		"conditions": []any{map[string]any{"evaluator": map[string]any{"type": op, "params": []float64{v}}}},
		"datasource": exprDatasource(),
	}}
}

func mathExpr(expr string) GrafanaQuery {
	return GrafanaQuery{RefID: refCondition, DatasourceUID: ExprUID, Model: map[string]any{
		"refId": refCondition, "type": "math", "expression": expr, "datasource": exprDatasource(),
	}}
}

// notificationSettings send P0 and P1 to their contact points with their timings; P2, and every
// rule in observation mode, are muted all the time (evaluated and recorded, never sent).
func notificationSettings(p Params, sev Severity) *NotificationSettings {
	n := &NotificationSettings{GroupBy: []string{"alertname", "grafana_folder", NodeOutLabel}}
	switch sev {
	case P0:
		n.Receiver, n.GroupWait, n.GroupInterval, n.RepeatInterval = p.ContactP0, promDuration(p.P0GroupWait), promDuration(p.P0GroupInterval), promDuration(p.P0RepeatInterval)
	default:
		n.Receiver, n.GroupWait, n.GroupInterval, n.RepeatInterval = p.ContactP1, promDuration(p.P1GroupWait), promDuration(p.P1GroupInterval), promDuration(p.P1RepeatInterval)
	}
	if sev == P2 || p.Observation {
		n.MuteTimeIntervals = []string{RecordOnlyTiming}
	}
	return n
}

// Grafana's file provisioning form (provisioning/alerting/*.yaml).

type fileProvisioning struct {
	APIVersion int             `yaml:"apiVersion"`
	MuteTimes  []fileMuteTime  `yaml:"muteTimes"`
	Groups     []fileRuleGroup `yaml:"groups"`
}

type fileMuteTime struct {
	OrgID         int64          `yaml:"orgId"`
	Name          string         `yaml:"name"`
	TimeIntervals []TimeInterval `yaml:"time_intervals"`
}

type fileRuleGroup struct {
	OrgID    int64      `yaml:"orgId"`
	Name     string     `yaml:"name"`
	Folder   string     `yaml:"folder"`
	Interval string     `yaml:"interval"`
	Rules    []fileRule `yaml:"rules"`
}

type fileRule struct {
	UID                  string                `yaml:"uid"`
	Title                string                `yaml:"title"`
	Condition            string                `yaml:"condition"`
	Data                 []fileQuery           `yaml:"data"`
	NoDataState          string                `yaml:"noDataState"`
	ExecErrState         string                `yaml:"execErrState"`
	For                  string                `yaml:"for"`
	Annotations          map[string]string     `yaml:"annotations"`
	Labels               map[string]string     `yaml:"labels"`
	IsPaused             bool                  `yaml:"isPaused"`
	NotificationSettings *NotificationSettings `yaml:"notification_settings,omitempty"`
}

type fileQuery struct {
	RefID             string            `yaml:"refId"`
	QueryType         string            `yaml:"queryType,omitempty"`
	RelativeTimeRange RelativeTimeRange `yaml:"relativeTimeRange"`
	DatasourceUID     string            `yaml:"datasourceUid"`
	Model             map[string]any    `yaml:"model"`
}

// YAML keys of the shared types.
func (t TimeInterval) MarshalYAML() (any, error) {
	return map[string]any{"times": t.Times}, nil
}

// MarshalYAML writes a time range with Grafana's keys.
func (t TimeRange) MarshalYAML() (any, error) {
	return map[string]string{"start_time": t.StartTime, "end_time": t.EndTime}, nil
}

// MarshalYAML writes relative time ranges with Grafana's keys.
func (r RelativeTimeRange) MarshalYAML() (any, error) {
	return map[string]int64{"from": r.From, "to": r.To}, nil
}

// MarshalYAML writes notification settings with Grafana's keys.
func (n NotificationSettings) MarshalYAML() (any, error) {
	m := yaml.MapSlice{{Key: "receiver", Value: n.Receiver}}
	add := func(k string, v any, ok bool) {
		if ok {
			m = append(m, yaml.MapItem{Key: k, Value: v})
		}
	}
	add("group_by", n.GroupBy, len(n.GroupBy) > 0)
	add("group_wait", n.GroupWait, n.GroupWait != "")
	add("group_interval", n.GroupInterval, n.GroupInterval != "")
	add("repeat_interval", n.RepeatInterval, n.RepeatInterval != "")
	add("mute_time_intervals", n.MuteTimeIntervals, len(n.MuteTimeIntervals) > 0)
	return m, nil
}

// RenderGrafanaProvisioning writes the group as a Grafana alerting provisioning file (with the
// record-only mute timing it refers to).
func RenderGrafanaProvisioning(p Params) ([]byte, error) {
	g, err := GrafanaRules(p, 1)
	if err != nil {
		return nil, err
	}
	mt := RecordOnlyMuteTiming()
	f := fileProvisioning{APIVersion: 1,
		MuteTimes: []fileMuteTime{{OrgID: 1, Name: mt.Name, TimeIntervals: mt.TimeIntervals}},
		Groups:    []fileRuleGroup{{OrgID: 1, Name: g.Title, Folder: p.Folder, Interval: promDuration(p.Interval)}}}
	for _, r := range g.Rules {
		fr := fileRule{UID: r.UID, Title: r.Title, Condition: r.Condition, NoDataState: r.NoDataState, ExecErrState: r.ExecErrState,
			For: r.For, Annotations: r.Annotations, Labels: r.Labels, IsPaused: r.IsPaused, NotificationSettings: r.NotificationSettings}
		for _, q := range r.Data {
			fr.Data = append(fr.Data, fileQuery{RefID: q.RefID, QueryType: q.QueryType, RelativeTimeRange: q.RelativeTimeRange, DatasourceUID: q.DatasourceUID, Model: q.Model})
		}
		f.Groups[0].Rules = append(f.Groups[0].Rules, fr)
	}
	body, err := yaml.Marshal(f)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# Inferscope alert rules, Grafana-managed, for Grafana's file provisioning (data source uid %s).\n", p.DatasourceUID)
	buf.WriteString("# Generated by `inferscope rules export --format grafana-provisioning`; regenerate instead of editing.\n")
	buf.WriteString("# Rules provisioned from files cannot be edited in Grafana's UI; the app's Alert rules page writes\n# editable ones through the API instead.\n")
	buf.Write(body)
	return buf.Bytes(), nil
}

// asNodeGPU relabels a GPU expression of the Prometheus rendering (NodeLabel, gpu) as the data
// source's GPU types label their series (node, gpu).
func asNodeGPU(expr string) string {
	return fmt.Sprintf("max by (node, gpu) (label_replace(\n%s,\n\"node\", \"$1\", %s, \"(.+)\"))", indent(expr), prom.Quote(NodeLabel))
}
