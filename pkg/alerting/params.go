package alerting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Params are everything a rendering can be told: thresholds and hold times (the brief's numbers
// by default), where the rules live in Grafana, how they are routed, and which metric names
// they read. Every field is listed in ParamDefs, which the command line turns into flags and the
// app page into a form; Set and Get go through that table.
type Params struct {
	// Placement.
	Folder    string        // Grafana folder title
	FolderUID string        // Grafana folder uid
	Group     string        // rule group name; always starts with GroupPrefix
	Interval  time.Duration // evaluation interval of the group
	// Grafana specifics.
	DatasourceUID  string // the Inferscope data source the Grafana rules query
	DashboardUID   string // the overview dashboard the alerts link to
	LatencyPanelID int    // its latency panel
	GrafanaURL     string // base URL for links in notifications ("" = path-only links)
	ContactP0      string // Grafana contact point for P0
	ContactP1      string // Grafana contact point for P1 (P2 is never sent)
	// Observation mode: rules are evaluated and recorded, never sent.
	Observation bool

	// Routing (Alertmanager rendering and Grafana notification settings).
	P0GroupWait, P0GroupInterval, P0RepeatInterval time.Duration
	P1GroupWait, P1GroupInterval, P1RepeatInterval time.Duration
	P0WebhookURL, P1WebhookURL                     string

	// Warm-up filter and rates.
	WarmupWindow time.Duration
	RateWindow   time.Duration

	// Latency against the same-time-of-day baseline.
	LatencyQuantile  float64
	BaselineDays     int
	BaselineWindow   time.Duration // half-width of the same-time-of-day window
	BaselineMinDays  int
	SubqueryStep     time.Duration // resolution of the subqueries behind baselines and trends
	LatencyWarnRatio float64
	LatencyWarnFor   time.Duration
	LatencyCritRatio float64
	LatencyCritFor   time.Duration

	// GPU memory.
	GPUMemWarn, GPUMemCrit       float64
	GPUMemWarnFor, GPUMemCritFor time.Duration
	// GPU idle under traffic.
	GPUIdleFor         time.Duration
	GPUIdleQPSFraction float64
	// Errors.
	ErrorRatio float64
	ErrorFor   time.Duration
	// Jitter.
	JitterRatio float64
	JitterFor   time.Duration
	// Queue time dominating.
	QueueShare float64
	QueueFor   time.Duration
	// P2: memory forecast, cache hit-rate drop, long warm-up.
	ForecastThreshold float64
	ForecastHorizon   time.Duration
	ForecastWindow    time.Duration
	CacheDropRatio    float64
	CacheDropFor      time.Duration
	WarmupMaxLoad     time.Duration
	// XID: events counted over this window (the alert fires while it holds one); the
	// uncorrected ECC rule counts over the same window.
	XIDWindow time.Duration
	// Hardware clock-event reasons: held this long before the P1 fires.
	GPUThrottleFor time.Duration

	// Metric names. Profile is one profile name (custom, vllm, triton, torchserve, tgi) or, for
	// a mixed fleet, several separated by commas ("vllm,triton"): the Prometheus rendering then
	// makes one rule group per server (ProfileNames).
	Profile                                 string
	ModelLabel, VersionLabel, InstanceLabel string // renames; "" = the profile's own
	GPUNaming                               string // auto (every exporter's names), inferscope (the probe), dcgm or triton

	// servers, when set (SetServers), are the fleet's profiles with their own label renames;
	// they replace what Profile and the label fields would resolve to.
	servers []profile.Profile
	// present, when set (SetPresent, FollowEngine), holds the metric names the fleet's
	// Prometheus has: a rule whose signal has none of its names there is "not measured".
	present map[string]bool

	// gateway, when set (SetGateway, FollowEngine), is the gateway in front of the servers, whose
	// upstream time the network rule reads (else the profile's own gateway histogram, if any).
	gateway *gateway.Gateway

	// period is the seasonality of the baseline (one day). Only tests that play a day in
	// minutes change it.
	period time.Duration
}

// GPU namings the rules can read (GPUNaming).
const (
	GPUNamingAuto   = "auto"
	GPUNamingProbe  = "inferscope"
	GPUNamingDCGM   = "dcgm"
	GPUNamingTriton = "triton"
)

// GroupPrefix starts the name of every rule group the renderings make; with the
// ManagedLabel on each rule it marks what Inferscope may replace.
const GroupPrefix = "inferscope"

// Defaults returns the brief's numbers: baseline ratios 1.5× for 3 min and 3× at once, GPU
// memory 85 % / 92 %, idle for 10 min at more than half the usual traffic, P99/P50 above 5, a
// 2 min warm-up window, new rules in observation mode.
func Defaults() Params {
	return Params{
		Folder: "Inferscope", FolderUID: "inferscope", Group: "inferscope", Interval: time.Minute,
		DashboardUID: "inferscope-overview", LatencyPanelID: 13,
		ContactP0: "grafana-default-email", ContactP1: "grafana-default-email",
		Observation: true,

		P0GroupWait: 10 * time.Second, P0GroupInterval: time.Minute, P0RepeatInterval: 30 * time.Minute,
		P1GroupWait: time.Minute, P1GroupInterval: 5 * time.Minute, P1RepeatInterval: 4 * time.Hour,

		WarmupWindow: 2 * time.Minute, RateWindow: 5 * time.Minute,

		LatencyQuantile: 0.95, BaselineDays: 7, BaselineWindow: 10 * time.Minute, BaselineMinDays: 3,
		SubqueryStep:     time.Minute,
		LatencyWarnRatio: 1.5, LatencyWarnFor: 3 * time.Minute,
		LatencyCritRatio: 3, LatencyCritFor: 0,

		GPUMemWarn: 0.85, GPUMemWarnFor: 5 * time.Minute,
		GPUMemCrit: 0.92, GPUMemCritFor: time.Minute,
		GPUIdleFor: 10 * time.Minute, GPUIdleQPSFraction: 0.5,
		ErrorRatio: 0.05, ErrorFor: 2 * time.Minute,
		JitterRatio: 5, JitterFor: 5 * time.Minute,
		QueueShare: 0.6, QueueFor: 10 * time.Minute,
		ForecastThreshold: 0.92, ForecastHorizon: time.Hour, ForecastWindow: 30 * time.Minute,
		CacheDropRatio: 0.8, CacheDropFor: 15 * time.Minute,
		WarmupMaxLoad:  5 * time.Minute,
		XIDWindow:      10 * time.Minute,
		GPUThrottleFor: 2 * time.Minute,

		Profile: "custom", GPUNaming: GPUNamingAuto,
		period: 24 * time.Hour,
	}
}

// Kinds of parameter values.
const (
	KindString   = "string"
	KindBool     = "bool"
	KindInt      = "int"
	KindNumber   = "number"
	KindRatio    = "ratio" // a fraction 0..1, shown as a percentage
	KindDuration = "duration"
)

// ParamDef describes one parameter: its name (JSON and, in kebab case, the command-line flag),
// what it holds and how to read and write it.
type ParamDef struct {
	Name    string   `json:"name"`
	Section string   `json:"section"`
	Kind    string   `json:"kind"`
	Help    string   `json:"help"`
	Default string   `json:"default"`
	Choices []string `json:"choices,omitempty"`
	// Items are the values of a list parameter, one or more of them separated by commas.
	Items []string `json:"items,omitempty"`
	Min   *float64 `json:"min,omitempty"`
	Max   *float64 `json:"max,omitempty"`

	get func(*Params) string
	set func(*Params, string) error
}

// Flag is the parameter's command-line flag name ("latencyCritRatio" → "latency-crit-ratio").
func (d ParamDef) Flag() string {
	var b strings.Builder
	for i, r := range d.Name {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Sections of the parameter table, in display order.
const (
	SectionPlacement  = "placement"
	SectionGrafana    = "grafana"
	SectionRouting    = "routing"
	SectionThresholds = "thresholds"
	SectionMetrics    = "metrics"
)

func num(v float64) *float64 { return &v }

// ParamDefs lists every parameter in display order.
func ParamDefs() []ParamDef {
	d := Defaults()
	defs := []ParamDef{
		str(SectionPlacement, "folder", "Grafana folder title", func(p *Params) *string { return &p.Folder }, nonEmpty),
		str(SectionPlacement, "folderUid", "Grafana folder uid", func(p *Params) *string { return &p.FolderUID }, validUID),
		str(SectionPlacement, "group", "rule group name; must start with \""+GroupPrefix+"\" (it marks groups Inferscope manages)", func(p *Params) *string { return &p.Group }, validGroup),
		dur(SectionPlacement, "interval", "evaluation interval of the rule group", func(p *Params) *time.Duration { return &p.Interval }, time.Second, 24*time.Hour),

		str(SectionGrafana, "datasourceUid", "uid of the Inferscope data source the Grafana-managed rules query", func(p *Params) *string { return &p.DatasourceUID }, optionalUID),
		str(SectionGrafana, "dashboardUid", "uid of the overview dashboard the notifications link to", func(p *Params) *string { return &p.DashboardUID }, validUID),
		integer(SectionGrafana, "latencyPanelId", "id of the overview dashboard's latency panel", func(p *Params) *int { return &p.LatencyPanelID }, 1, 1_000_000),
		str(SectionGrafana, "grafanaUrl", "Grafana's base URL for links in notifications (empty: links without a host)", func(p *Params) *string { return &p.GrafanaURL }, optionalURL),
		str(SectionGrafana, "contactP0", "Grafana contact point for P0 (phone and urgent chat)", func(p *Params) *string { return &p.ContactP0 }, nonEmpty),
		str(SectionGrafana, "contactP1", "Grafana contact point for P1 (normal chat); P2 is recorded, never sent", func(p *Params) *string { return &p.ContactP1 }, nonEmpty),
		boolean(SectionGrafana, "observation", "observation mode: rules are evaluated and recorded but nothing is sent", func(p *Params) *bool { return &p.Observation }),

		dur(SectionRouting, "p0GroupWait", "P0: wait before the first notification of a group", func(p *Params) *time.Duration { return &p.P0GroupWait }, 0, time.Hour),
		dur(SectionRouting, "p0GroupInterval", "P0: wait before notifying about new alerts of a group", func(p *Params) *time.Duration { return &p.P0GroupInterval }, time.Second, 24*time.Hour),
		dur(SectionRouting, "p0RepeatInterval", "P0: resend a firing alert after", func(p *Params) *time.Duration { return &p.P0RepeatInterval }, time.Second, 7*24*time.Hour),
		dur(SectionRouting, "p1GroupWait", "P1: wait before the first notification of a group", func(p *Params) *time.Duration { return &p.P1GroupWait }, 0, time.Hour),
		dur(SectionRouting, "p1GroupInterval", "P1: wait before notifying about new alerts of a group", func(p *Params) *time.Duration { return &p.P1GroupInterval }, time.Second, 24*time.Hour),
		dur(SectionRouting, "p1RepeatInterval", "P1: resend a firing alert after", func(p *Params) *time.Duration { return &p.P1RepeatInterval }, time.Second, 7*24*time.Hour),
		str(SectionRouting, "p0WebhookUrl", "Alertmanager: webhook of the P0 receiver (phone/urgent chat bridge); empty leaves the receiver for you to fill", func(p *Params) *string { return &p.P0WebhookURL }, optionalURL),
		str(SectionRouting, "p1WebhookUrl", "Alertmanager: webhook of the P1 receiver (chat bridge); empty leaves the receiver for you to fill", func(p *Params) *string { return &p.P1WebhookURL }, optionalURL),

		dur(SectionThresholds, "warmupWindow", "warm-up window after a (re)start or load: samples in it are recorded, never alerted on", func(p *Params) *time.Duration { return &p.WarmupWindow }, 0, time.Hour),
		dur(SectionThresholds, "rateWindow", "window of every rate()", func(p *Params) *time.Duration { return &p.RateWindow }, time.Second, time.Hour),
		number(SectionThresholds, "latencyQuantile", "latency quantile compared with its baseline", func(p *Params) *float64 { return &p.LatencyQuantile }, 0.5, 0.999),
		integer(SectionThresholds, "baselineDays", "previous days the baseline averages", func(p *Params) *int { return &p.BaselineDays }, 1, 28),
		dur(SectionThresholds, "baselineWindow", "half-width of the same-time-of-day window of each previous day", func(p *Params) *time.Duration { return &p.BaselineWindow }, time.Minute, 6*time.Hour),
		integer(SectionThresholds, "baselineMinDays", "days with data needed before the baseline judges", func(p *Params) *int { return &p.BaselineMinDays }, 1, 28),
		dur(SectionThresholds, "subqueryStep", "resolution of the subqueries behind baselines and trends", func(p *Params) *time.Duration { return &p.SubqueryStep }, time.Second, time.Hour),
		number(SectionThresholds, "latencyWarnRatio", "P1: latency above this multiple of its baseline", func(p *Params) *float64 { return &p.LatencyWarnRatio }, 1.01, 100),
		dur(SectionThresholds, "latencyWarnFor", "P1: … for this long", func(p *Params) *time.Duration { return &p.LatencyWarnFor }, 0, 24*time.Hour),
		number(SectionThresholds, "latencyCritRatio", "P0: latency above this multiple of its baseline", func(p *Params) *float64 { return &p.LatencyCritRatio }, 1.01, 100),
		dur(SectionThresholds, "latencyCritFor", "P0: … for this long (0: at once)", func(p *Params) *time.Duration { return &p.LatencyCritFor }, 0, 24*time.Hour),
		ratio(SectionThresholds, "gpuMemWarn", "P1: GPU memory used above", func(p *Params) *float64 { return &p.GPUMemWarn }),
		dur(SectionThresholds, "gpuMemWarnFor", "P1: … for this long", func(p *Params) *time.Duration { return &p.GPUMemWarnFor }, 0, 24*time.Hour),
		ratio(SectionThresholds, "gpuMemCrit", "P0: GPU memory used above", func(p *Params) *float64 { return &p.GPUMemCrit }),
		dur(SectionThresholds, "gpuMemCritFor", "P0: … for this long", func(p *Params) *time.Duration { return &p.GPUMemCritFor }, 0, 24*time.Hour),
		dur(SectionThresholds, "gpuIdleFor", "P0 GPU idle: utilisation 0 for this long …", func(p *Params) *time.Duration { return &p.GPUIdleFor }, time.Second, 24*time.Hour),
		number(SectionThresholds, "gpuIdleQpsFraction", "… while the node's QPS is above this fraction of its baseline (and the model ready)", func(p *Params) *float64 { return &p.GPUIdleQPSFraction }, 0.01, 10),
		ratio(SectionThresholds, "errorRatio", "P0: share of failed requests above", func(p *Params) *float64 { return &p.ErrorRatio }),
		dur(SectionThresholds, "errorFor", "P0 errors: … for this long", func(p *Params) *time.Duration { return &p.ErrorFor }, 0, 24*time.Hour),
		number(SectionThresholds, "jitterRatio", "P1: P99/P50 above (a jitter source on the path)", func(p *Params) *float64 { return &p.JitterRatio }, 1.01, 1000),
		dur(SectionThresholds, "jitterFor", "P1 jitter: … sustained this long", func(p *Params) *time.Duration { return &p.JitterFor }, 0, 24*time.Hour),
		ratio(SectionThresholds, "queueShare", "P1: queue time's share of the service time above", func(p *Params) *float64 { return &p.QueueShare }),
		dur(SectionThresholds, "queueFor", "P1 queue: … for this long", func(p *Params) *time.Duration { return &p.QueueFor }, 0, 24*time.Hour),
		ratio(SectionThresholds, "forecastThreshold", "P2: GPU memory level the forecast watches", func(p *Params) *float64 { return &p.ForecastThreshold }),
		dur(SectionThresholds, "forecastHorizon", "P2: … crossed within", func(p *Params) *time.Duration { return &p.ForecastHorizon }, time.Minute, 7*24*time.Hour),
		dur(SectionThresholds, "forecastWindow", "P2: trend fitted over", func(p *Params) *time.Duration { return &p.ForecastWindow }, time.Minute, 24*time.Hour),
		ratio(SectionThresholds, "cacheDropRatio", "P2: cache hit rate below this fraction of its baseline", func(p *Params) *float64 { return &p.CacheDropRatio }),
		dur(SectionThresholds, "cacheDropFor", "P2 cache: … for this long", func(p *Params) *time.Duration { return &p.CacheDropFor }, 0, 24*time.Hour),
		dur(SectionThresholds, "warmupMaxLoad", "P2: a model still not ready this long after its instance started", func(p *Params) *time.Duration { return &p.WarmupMaxLoad }, time.Second, 24*time.Hour),

		dur(SectionThresholds, "xidWindow", "P1 XID and uncorrected ECC: a GPU with an XID event (an uncorrected ECC error) in this window (the alert lasts as long)", func(p *Params) *time.Duration { return &p.XIDWindow }, time.Minute, 24*time.Hour),
		dur(SectionThresholds, "gpuThrottleFor", "P1 clocks held down: a hardware clock-event reason (HW slowdown, thermal, power brake) active for this long", func(p *Params) *time.Duration { return &p.GPUThrottleFor }, 0, 24*time.Hour),

		profiles(SectionMetrics, "profile", "metric profile whose names the rules read, or several separated by commas for a mixed fleet (one Prometheus rule group per server)"),
		str(SectionMetrics, "modelLabel", "model label name (empty: the profile's)", func(p *Params) *string { return &p.ModelLabel }, optionalLabel),
		str(SectionMetrics, "versionLabel", "version label name (empty: the profile's)", func(p *Params) *string { return &p.VersionLabel }, optionalLabel),
		str(SectionMetrics, "instanceLabel", "instance label name (empty: the profile's)", func(p *Params) *string { return &p.InstanceLabel }, optionalLabel),
		choice(SectionMetrics, "gpuNaming", "GPU metric names read: auto (the probe's, dcgm-exporter's of every version and Triton's), or only inferscope (the probe), dcgm (dcgm-exporter) or triton", func(p *Params) *string { return &p.GPUNaming }, GPUNamingAuto, GPUNamingProbe, GPUNamingDCGM, GPUNamingTriton),
	}
	for i := range defs {
		defs[i].Default = defs[i].get(&d)
	}
	return defs
}

// ParamDefByName returns one parameter's definition.
func ParamDefByName(name string) (ParamDef, bool) {
	for _, d := range ParamDefs() {
		if d.Name == name || d.Flag() == name {
			return d, true
		}
	}
	return ParamDef{}, false
}

// Set parses value into the named parameter (JSON or flag name).
func (p *Params) Set(name, value string) error {
	d, ok := ParamDefByName(name)
	if !ok {
		return fmt.Errorf("unknown parameter %q (see the list with --help)", clip.Text(name, 60))
	}
	if err := d.set(p, strings.TrimSpace(value)); err != nil {
		return fmt.Errorf("%s: %w", d.Name, err)
	}
	return nil
}

// Get returns the named parameter as text.
func (p *Params) Get(name string) (string, bool) {
	d, ok := ParamDefByName(name)
	if !ok {
		return "", false
	}
	return d.get(p), true
}

// Values returns every parameter as text, keyed by JSON name.
func (p Params) Values() map[string]string {
	out := map[string]string{}
	for _, d := range ParamDefs() {
		out[d.Name] = d.get(&p)
	}
	return out
}

// ParseParams starts from the defaults and applies the given values (JSON names; strings,
// numbers or booleans). Every problem is reported at once.
func ParseParams(values map[string]json.RawMessage) (Params, error) {
	p := Defaults()
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	var problems []string
	for _, n := range names {
		text, err := scalarText(values[n])
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", clip.Text(n, 60), err))
			continue
		}
		if text == nil {
			continue // null keeps the default
		}
		if err := p.Set(n, *text); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if err := p.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return Params{}, errors.New(strings.Join(problems, "; "))
	}
	return p, nil
}

func scalarText(raw json.RawMessage) (*string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("not a JSON value")
	}
	switch x := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &x, nil
	case bool:
		s := strconv.FormatBool(x)
		return &s, nil
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		return &s, nil
	}
	return nil, fmt.Errorf("must be a string, a number or true/false")
}

// Validate checks what single parameters cannot: orderings between them.
func (p Params) Validate() error {
	var problems []string
	if p.LatencyCritRatio <= p.LatencyWarnRatio {
		problems = append(problems, fmt.Sprintf("latencyCritRatio (%g) must be above latencyWarnRatio (%g)", p.LatencyCritRatio, p.LatencyWarnRatio))
	}
	if p.GPUMemCrit <= p.GPUMemWarn {
		problems = append(problems, fmt.Sprintf("gpuMemCrit (%g) must be above gpuMemWarn (%g)", p.GPUMemCrit, p.GPUMemWarn))
	}
	if p.BaselineMinDays > p.BaselineDays {
		problems = append(problems, fmt.Sprintf("baselineMinDays (%d) cannot exceed baselineDays (%d)", p.BaselineMinDays, p.BaselineDays))
	}
	if p.SubqueryStep > p.BaselineWindow {
		problems = append(problems, "subqueryStep must not be longer than baselineWindow")
	}
	if p.period <= 2*p.BaselineWindow {
		problems = append(problems, "the baseline window must be shorter than half a day")
	}
	if p.Interval%time.Second != 0 {
		problems = append(problems, "interval must be whole seconds")
	}
	for _, r := range []struct {
		name           string
		wait, interval time.Duration
		repeat         time.Duration
	}{{"p0", p.P0GroupWait, p.P0GroupInterval, p.P0RepeatInterval}, {"p1", p.P1GroupWait, p.P1GroupInterval, p.P1RepeatInterval}} {
		if r.repeat < r.interval {
			problems = append(problems, fmt.Sprintf("%sRepeatInterval must not be shorter than %sGroupInterval", r.name, r.name))
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// Table builders. Each reads and writes one field through a pointer accessor.

func str(section, name, help string, field func(*Params) *string, check func(string) error) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindString, Help: help,
		get: func(p *Params) string { return *field(p) },
		set: func(p *Params, v string) error {
			if err := check(v); err != nil {
				return err
			}
			*field(p) = v
			return nil
		}}
}

func choice(section, name, help string, field func(*Params) *string, choices ...string) ParamDef {
	d := str(section, name, help, field, func(v string) error {
		for _, c := range choices {
			if v == c {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s, got %q", strings.Join(choices, ", "), clip.Text(v, 40))
	})
	d.Choices = choices
	return d
}

// profiles reads the profile list: one or more known profile names separated by commas, each
// once. Setting it forgets servers set by SetServers.
func profiles(section, name, help string) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindString, Help: help, Items: profile.Names(),
		get: func(p *Params) string { return p.Profile },
		set: func(p *Params, v string) error {
			names, err := ParseProfiles(v)
			if err != nil {
				return err
			}
			p.Profile, p.servers = strings.Join(names, ","), nil
			return nil
		}}
}

// ParseProfiles reads a profile list ("vllm", "vllm, triton"): known names, each once.
func ParseProfiles(v string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if _, err := profile.ByName(n); err != nil {
			return nil, fmt.Errorf("must be one of %s, or several separated by commas, got %q", strings.Join(profile.Names(), ", "), clip.Text(v, 80))
		}
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("names profile %s twice", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// ProfileNames lists the servers the rules are rendered for: the names of Profile, or of the
// profiles SetServers gave.
func (p Params) ProfileNames() []string {
	ps, err := p.serverProfiles()
	if err != nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, s := range ps {
		out[i] = s.Name
	}
	return out
}

// SetServers renders the rules for these servers, each with its own profile and label names (a
// fleet's servers as the engine found them, renames applied): Profile becomes their names. One
// server renders exactly as Profile naming it would with its label names.
func (p *Params) SetServers(servers []profile.Profile) {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	p.Profile, p.servers = strings.Join(names, ","), slices.Clone(servers)
}

// serverProfiles resolves the servers: those SetServers gave, else each profile Profile names
// with the label renames.
func (p Params) serverProfiles() ([]profile.Profile, error) {
	if len(p.servers) > 0 {
		return p.servers, nil
	}
	var out []profile.Profile
	for _, n := range strings.Split(p.Profile, ",") {
		prof, err := profile.ByName(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(q profile.Profile) bool { return q.Name == prof.Name }) {
			return nil, fmt.Errorf("profile names %s twice", prof.Name)
		}
		if prof, err = prof.WithLabels(p.ModelLabel, p.VersionLabel, p.InstanceLabel); err != nil {
			return nil, err
		}
		out = append(out, prof)
	}
	return out, nil
}

func boolean(section, name, help string, field func(*Params) *bool) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindBool, Help: help,
		get: func(p *Params) string { return strconv.FormatBool(*field(p)) },
		set: func(p *Params, v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("must be true or false, got %q", clip.Text(v, 40))
			}
			*field(p) = b
			return nil
		}}
}

func integer(section, name, help string, field func(*Params) *int, lo, hi int) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindInt, Help: help, Min: num(float64(lo)), Max: num(float64(hi)),
		get: func(p *Params) string { return strconv.Itoa(*field(p)) },
		set: func(p *Params, v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo || n > hi {
				return fmt.Errorf("must be a whole number from %d to %d, got %q", lo, hi, clip.Text(v, 40))
			}
			*field(p) = n
			return nil
		}}
}

func number(section, name, help string, field func(*Params) *float64, lo, hi float64) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindNumber, Help: help, Min: num(lo), Max: num(hi),
		get: func(p *Params) string { return strconv.FormatFloat(*field(p), 'g', -1, 64) },
		set: func(p *Params, v string) error {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(x) || x < lo || x > hi {
				return fmt.Errorf("must be a number from %g to %g, got %q", lo, hi, clip.Text(v, 40))
			}
			*field(p) = x
			return nil
		}}
}

// ratio accepts a fraction ("0.92") or a percentage ("92%").
func ratio(section, name, help string, field func(*Params) *float64) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindRatio, Help: help, Min: num(0), Max: num(1),
		get: func(p *Params) string { return strconv.FormatFloat(*field(p), 'g', -1, 64) },
		set: func(p *Params, v string) error {
			text, pct := strings.CutSuffix(v, "%")
			x, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
			if pct {
				x /= 100
			}
			if err != nil || math.IsNaN(x) || x <= 0 || x >= 1 {
				return fmt.Errorf("must be a fraction between 0 and 1 (or a percentage such as 92%%), got %q", clip.Text(v, 40))
			}
			*field(p) = x
			return nil
		}}
}

func dur(section, name, help string, field func(*Params) *time.Duration, lo, hi time.Duration) ParamDef {
	return ParamDef{Name: name, Section: section, Kind: KindDuration, Help: help,
		Min: num(lo.Seconds()), Max: num(hi.Seconds()),
		get: func(p *Params) string { return promDuration(*field(p)) },
		set: func(p *Params, v string) error {
			d, err := model.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("must be a duration such as 90s, 5m or 1h30m, got %q", clip.Text(v, 40))
			}
			if time.Duration(d) < lo || time.Duration(d) > hi {
				return fmt.Errorf("must be from %s to %s, got %s", promDuration(lo), promDuration(hi), v)
			}
			*field(p) = time.Duration(d)
			return nil
		}}
}

var uidRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,40}$`)

func nonEmpty(v string) error {
	if v == "" {
		return errors.New("must not be empty")
	}
	if len(v) > 190 {
		return errors.New("must be at most 190 characters")
	}
	return nil
}

func validUID(v string) error {
	if !uidRE.MatchString(v) {
		return fmt.Errorf("must be 1 to 40 letters, digits, - or _, got %q", clip.Text(v, 50))
	}
	return nil
}

func optionalUID(v string) error {
	if v == "" {
		return nil
	}
	return validUID(v)
}

func validGroup(v string) error {
	if err := nonEmpty(v); err != nil {
		return err
	}
	if !strings.HasPrefix(v, GroupPrefix) {
		return fmt.Errorf("must start with %q, which marks the groups Inferscope manages; got %q", GroupPrefix, clip.Text(v, 60))
	}
	if strings.ContainsAny(v, "/\\") {
		return errors.New("must not contain / or \\")
	}
	return nil
}

func optionalURL(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an http(s) URL, got %q", clip.Text(v, 80))
	}
	return nil
}

func optionalLabel(v string) error {
	if v != "" && !prom.ValidLabelName(v) {
		return fmt.Errorf("%q is not a valid Prometheus label name", clip.Text(v, 40))
	}
	return nil
}

// promDuration writes d as Prometheus does ("1m", "1h30m", "0s").
func promDuration(d time.Duration) string { return model.Duration(d).String() }

// FollowEngine makes the rules read what the engine reads: every server of its fleet, each with
// its profile and label renames, when it found several (SetServers); else its one profile
// (forced or detected) with its label names. The metric names it found mark the rules whose
// signal is not exported (SetPresent).
func (p *Params) FollowEngine(e *engine.Engine) {
	p.SetPresent(e.Present)
	p.SetGateway(e.Gateway)
	if e.Fleet != nil && len(e.Fleet.Servers) > 1 {
		servers := make([]profile.Profile, len(e.Fleet.Servers))
		for i, s := range e.Fleet.Servers {
			servers[i] = s.Profile
		}
		p.SetServers(servers)
		return
	}
	p.Profile, p.servers = e.Profile.Name, nil
	p.ModelLabel, p.VersionLabel, p.InstanceLabel = e.Profile.ModelLabel, e.Profile.VersionLabel, e.Profile.InstanceLabel
}

// SetGateway sets the gateway in front of the servers (nil: none configured), as the data
// source's settings or the command's --gateway flags give it: the network rule reads its
// upstream time, its labels mapped to the model (and the instance where it names it).
func (p *Params) SetGateway(g *gateway.Gateway) { p.gateway = g }

// SetPresent tells the catalog which metric names the fleet's Prometheus has (nil: unknown), so
// a rule whose signal is not exported there says so (Rule.NotMeasured) instead of staying
// silently quiet.
func (p *Params) SetPresent(names map[string]bool) { p.present = names }
