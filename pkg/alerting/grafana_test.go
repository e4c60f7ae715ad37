package alerting

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	"github.com/grafana/grafana-openapi-client-go/models"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v2"

	"github.com/inferscope/inferscope/pkg/engine"
)

func grafanaParams() Params {
	p := Defaults()
	p.DatasourceUID = "inferscope"
	return p
}

// decodeStrict decodes JSON into v, refusing fields v does not have.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checkGroup validates a rendered group the way Grafana's API would see it: against the
// published models (strictly: no field they lack, every required one present, valid
// durations), plus what the models cannot say (one condition, references that resolve, query
// types the data source has, PromQL that parses).
func checkGroup(p Params, raw []byte) error {
	var g models.AlertRuleGroup
	if err := decodeStrict(raw, &g); err != nil {
		return fmt.Errorf("does not decode into AlertRuleGroup: %w", err)
	}
	if err := g.Validate(strfmt.Default); err != nil {
		return fmt.Errorf("AlertRuleGroup.Validate: %w", err)
	}
	if g.Interval <= 0 || g.Interval%10 != 0 {
		return fmt.Errorf("interval %ds is not a positive multiple of Grafana's 10 s base interval", g.Interval)
	}
	if len(g.Rules) == 0 {
		return fmt.Errorf("no rules")
	}
	uids := map[string]bool{}
	for _, r := range g.Rules {
		if err := checkRule(p, g, r); err != nil {
			return fmt.Errorf("rule %s: %w", *r.Title, err)
		}
		if uids[r.UID] {
			return fmt.Errorf("uid %s used twice", r.UID)
		}
		uids[r.UID] = true
	}
	return nil
}

var refInMath = regexp.MustCompile(`\$\{?([A-Za-z0-9_]+)\}?`)

func checkRule(p Params, g models.AlertRuleGroup, r *models.ProvisionedAlertRule) error {
	if *r.RuleGroup != g.Title || *r.FolderUID != g.FolderUID {
		return fmt.Errorf("group/folder %s/%s differ from the group's %s/%s", *r.RuleGroup, *r.FolderUID, g.Title, g.FolderUID)
	}
	if _, err := strfmt.ParseDuration(r.For.String()); err != nil {
		return fmt.Errorf("for: %w", err)
	}
	refs := map[string]*models.AlertQuery{}
	for _, q := range r.Data {
		if refs[q.RefID] != nil {
			return fmt.Errorf("refId %s used twice", q.RefID)
		}
		refs[q.RefID] = q
	}
	cond := refs[*r.Condition]
	if cond == nil {
		return fmt.Errorf("condition %s names no query", *r.Condition)
	}
	conditions := 0
	for _, q := range r.Data {
		m, ok := q.Model.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: model is not an object", q.RefID)
		}
		if m["refId"] != q.RefID {
			return fmt.Errorf("%s: model refId %v", q.RefID, m["refId"])
		}
		if q.DatasourceUID == ExprUID {
			if q.RelativeTimeRange == nil || q.RelativeTimeRange.From != 0 {
				return fmt.Errorf("%s: an expression has a time range", q.RefID)
			}
			expr, _ := m["expression"].(string)
			switch m["type"] {
			case "reduce":
				if refs[expr] == nil || expr == q.RefID {
					return fmt.Errorf("%s: reduce of unknown %q", q.RefID, expr)
				}
			case "threshold":
				conditions++
				cs, _ := m["conditions"].([]any)
				if refs[expr] == nil || len(cs) != 1 {
					return fmt.Errorf("%s: threshold needs one condition on a known query", q.RefID)
				}
			case "math":
				conditions++
				found := refInMath.FindAllStringSubmatch(expr, -1)
				if len(found) == 0 {
					return fmt.Errorf("%s: math %q references nothing", q.RefID, expr)
				}
				for _, f := range found {
					if refs[f[1]] == nil {
						return fmt.Errorf("%s: math references unknown $%s", q.RefID, f[1])
					}
				}
			default:
				return fmt.Errorf("%s: unexpected expression type %v", q.RefID, m["type"])
			}
			continue
		}
		if q.DatasourceUID != p.DatasourceUID {
			return fmt.Errorf("%s: data source %s, want %s", q.RefID, q.DatasourceUID, p.DatasourceUID)
		}
		if q.RelativeTimeRange == nil || q.RelativeTimeRange.From <= 0 {
			return fmt.Errorf("%s: a data query needs a time range", q.RefID)
		}
		if m["queryType"] != q.QueryType {
			return fmt.Errorf("%s: queryType %q outside, %v inside the model", q.RefID, q.QueryType, m["queryType"])
		}
		body, _ := json.Marshal(m)
		if q.QueryType == "promql" {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(m["expr"].(string)); err != nil {
				return fmt.Errorf("%s: PromQL does not parse: %w", q.RefID, err)
			}
			continue
		}
		if !slices.Contains(engine.Types(), q.QueryType) {
			return fmt.Errorf("%s: query type %q is not one the data source knows (%v)", q.RefID, q.QueryType, engine.Types())
		}
		if _, err := engine.ParseAs(q.QueryType, body); err != nil {
			return fmt.Errorf("%s: the data source refuses the query: %w", q.RefID, err)
		}
	}
	if conditions != 1 {
		return fmt.Errorf("%d threshold/math expressions, want exactly the one condition", conditions)
	}
	if m, _ := cond.Model.(map[string]any); cond.DatasourceUID != ExprUID || (m["type"] != "threshold" && m["type"] != "math") {
		return fmt.Errorf("the condition is not a threshold or math expression")
	}
	ns := r.NotificationSettings
	if ns == nil || ns.Receiver == nil || *ns.Receiver == "" {
		return fmt.Errorf("no contact point")
	}
	if !slices.Contains(ns.GroupBy, "alertname") || !slices.Contains(ns.GroupBy, "grafana_folder") {
		return fmt.Errorf("group_by %v lacks alertname or grafana_folder", ns.GroupBy)
	}
	for _, d := range []string{ns.GroupWait, ns.GroupInterval, ns.RepeatInterval} {
		if _, err := time.ParseDuration(d); d != "" && err != nil {
			return fmt.Errorf("notification duration %q: %w", d, err)
		}
	}
	muted := slices.Contains(ns.MuteTimeIntervals, RecordOnlyTiming)
	if want := r.Labels[SeverityLabel] == string(P2) || p.Observation; muted != want {
		return fmt.Errorf("record-only mute timing %v, want %v", muted, want)
	}
	for _, l := range []string{SeverityLabel, RuleLabel, ManagedLabel, ScopeLabel} {
		if r.Labels[l] == "" {
			return fmt.Errorf("label %s missing", l)
		}
	}
	return nil
}

func TestGrafanaGroupMatchesAPIModels(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Params)
	}{
		{"defaults", func(*Params) {}},
		{"observation off", func(p *Params) { p.Observation = false }},
		{"vllm profile", func(p *Params) { p.Profile = "vllm" }},
		{"triton profile", func(p *Params) { p.Profile = "triton" }},
		{"other group", func(p *Params) { p.Group, p.FolderUID, p.Interval = "inferscope-canary", "ops", 30*time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := grafanaParams()
			tc.edit(&p)
			g, err := GrafanaRules(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkGroup(p, raw); err != nil {
				t.Fatal(err)
			}
			rules, _ := Catalog(p)
			available := 0
			for _, r := range rules {
				if r.Unavailable == "" {
					available++
				}
			}
			if len(g.Rules) != available {
				t.Fatalf("%d rules rendered, %d available in the catalog", len(g.Rules), available)
			}
		})
	}
}

// The checks catch what Grafana would refuse: they are not vacuous.
func TestGrafanaGroupChecksCatchBrokenPayloads(t *testing.T) {
	p := grafanaParams()
	g, err := GrafanaRules(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(g)
	for name, edit := range map[string]func(m map[string]any){
		"unknown field":     func(m map[string]any) { m["extra"] = 1 },
		"no condition":      func(m map[string]any) { delete(rule0(m), "condition") },
		"bad duration":      func(m map[string]any) { rule0(m)["for"] = "three minutes" },
		"bad exec state":    func(m map[string]any) { rule0(m)["execErrState"] = "Maybe" },
		"condition unknown": func(m map[string]any) { rule0(m)["condition"] = "Z" },
		"two conditions": func(m map[string]any) {
			data0(m)[3]["model"] = map[string]any{"refId": "D", "type": "math", "expression": "$B > 1"}
		},
		"unknown query type": func(m map[string]any) {
			data0(m)[0]["queryType"] = "p95"
			data0(m)[0]["model"].(map[string]any)["queryType"] = "p95"
		},
		"field the engine refuses": func(m map[string]any) {
			data0(m)[0]["model"].(map[string]any)["quantile"] = "high"
		},
		"title too long": func(m map[string]any) { rule0(m)["title"] = strings.Repeat("x", 191) },
	} {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		bad, _ := json.Marshal(m)
		if err := checkGroup(p, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func rule0(m map[string]any) map[string]any { return m["rules"].([]any)[0].(map[string]any) }

func data0(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, q := range rule0(m)["data"].([]any) {
		out = append(out, q.(map[string]any))
	}
	return out
}

func TestRecordOnlyMuteTimingMatchesAPIModel(t *testing.T) {
	raw, _ := json.Marshal(RecordOnlyMuteTiming())
	var mt models.MuteTimeInterval
	if err := decodeStrict(raw, &mt); err != nil {
		t.Fatal(err)
	}
	if err := mt.Validate(strfmt.Default); err != nil {
		t.Fatal(err)
	}
	if mt.Name != RecordOnlyTiming || len(mt.TimeIntervals) != 1 || len(mt.TimeIntervals[0].Times) != 1 ||
		mt.TimeIntervals[0].Times[0].StartTime != "00:00" || mt.TimeIntervals[0].Times[0].EndTime != "24:00" {
		t.Fatalf("not an all-day, every-day interval: %s", raw)
	}
}

func TestGrafanaRenderingNeedsDatasource(t *testing.T) {
	if _, err := GrafanaRules(Defaults(), 1); !errors.Is(err, ErrNoDatasource) {
		t.Fatalf("got %v, want ErrNoDatasource", err)
	}
}

// Rule-side silencing: in Grafana the P1 rules leave the P0 range to the P0 rule, since
// Grafana before 13 has no inhibition rules.
func TestGrafanaP1LeavesP0RangeToP0(t *testing.T) {
	p := grafanaParams()
	g, err := GrafanaRules(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		RuleUID(p, "latency-p1"): "$B > 1.5 && $B <= 3",
		RuleUID(p, "gpumem-p1"):  "$B > 0.85 && $B <= 0.92",
	}
	for _, r := range g.Rules {
		if w, ok := want[r.UID]; ok {
			if got := r.Data[2].Model["expression"]; got != w {
				t.Errorf("%s: condition %v, want %s", r.Title, got, w)
			}
			delete(want, r.UID)
		}
	}
	if len(want) != 0 {
		t.Fatalf("rules not rendered: %v", want)
	}
}

// ProvisioningParams are the parameters of the committed provisioning file: the development
// stack's data source (uid inferscope) and Grafana address.
func provisioningParams() Params {
	p := Defaults()
	p.DatasourceUID = "inferscope"
	p.GrafanaURL = "http://localhost:3000"
	return p
}

const provisioningFile = "../../provisioning/alerting/inferscope-rules.yaml"

// The committed file-provisioning form is exactly what the command renders; regenerate it
// with the command in its header when the catalog changes.
func TestCommittedProvisioningFileIsTheRendering(t *testing.T) {
	want, err := RenderGrafanaProvisioning(provisioningParams())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.FromSlash(provisioningFile))
	if err != nil {
		t.Fatalf("%v: generate it with\n  go run ./pkg/cmd/inferscope rules export --format grafana-provisioning --datasource-uid inferscope --grafana-url http://localhost:3000 > provisioning/alerting/inferscope-rules.yaml", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the rendering: regenerate it with\n  go run ./pkg/cmd/inferscope rules export --format grafana-provisioning --datasource-uid inferscope --grafana-url http://localhost:3000 > provisioning/alerting/inferscope-rules.yaml", provisioningFile)
	}
	// Grafana's file provisioning reads the keys below; the rules in it are the API payload's.
	var f struct {
		APIVersion int `yaml:"apiVersion"`
		MuteTimes  []struct {
			OrgID         int64  `yaml:"orgId"`
			Name          string `yaml:"name"`
			TimeIntervals []struct {
				Times []struct {
					StartTime string `yaml:"start_time"`
					EndTime   string `yaml:"end_time"`
				} `yaml:"times"`
			} `yaml:"time_intervals"`
		} `yaml:"muteTimes"`
		Groups []struct {
			OrgID    int64            `yaml:"orgId"`
			Name     string           `yaml:"name"`
			Folder   string           `yaml:"folder"`
			Interval string           `yaml:"interval"`
			Rules    []map[string]any `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.UnmarshalStrict(got, &f); err != nil {
		t.Fatal(err)
	}
	if f.APIVersion != 1 || len(f.Groups) != 1 || f.Groups[0].Folder != "Inferscope" || f.Groups[0].Interval != "1m" ||
		len(f.MuteTimes) != 1 || f.MuteTimes[0].Name != RecordOnlyTiming {
		t.Fatalf("unexpected provisioning file shape: %+v", f)
	}
	for _, r := range f.Groups[0].Rules {
		for _, k := range []string{"uid", "title", "condition", "data", "noDataState", "execErrState", "for", "labels", "annotations"} {
			if _, ok := r[k]; !ok {
				t.Errorf("rule %v lacks %s", r["title"], k)
			}
		}
	}
}

// The service rules that query the engine's types read one series per instance, so an alert
// names the instance (and its node) and a problem on one instance is not averaged over the
// others: the data query asks for it, the labels and links carry it, and the request rate D
// is grouped the same way. Renamed labels are followed.
func TestGrafanaServiceRulesNameTheInstance(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		model, version, inst string
		edit                 func(*Params)
	}{
		{"defaults", "model_name", "model_version", "instance", func(*Params) {}},
		{"renamed labels", "app", "rev", "pod", func(p *Params) { p.ModelLabel, p.VersionLabel, p.InstanceLabel = "app", "rev", "pod" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := grafanaParams()
			p.GrafanaURL = "http://grafana.example"
			tc.edit(&p)
			g, err := GrafanaRules(p, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref := func(l string) string { return `(index $labels "` + l + `")` }
			seen := 0
			for _, r := range g.Rules {
				if r.Labels[ScopeLabel] != string(ScopeService) || r.Data[0].QueryType == "promql" {
					if by, ok := r.Data[0].Model["by"]; ok {
						t.Errorf("%s: by %v on a query that is not a service type", r.Title, by)
					}
					continue
				}
				seen++
				if by := r.Data[0].Model["by"]; by != engine.ByInstance {
					t.Errorf("%s: data query by %v, want %q", r.Title, by, engine.ByInstance)
				}
				if got, want := r.Labels[InstanceLabel], "{{ "+ref(tc.inst)+" }}"; got != want {
					t.Errorf("%s: instance label %q, want %q", r.Title, got, want)
				}
				if !strings.Contains(r.Labels[NodeOutLabel], ref(tc.inst)) || r.Labels[ModelLabel] != "{{ "+ref(tc.model)+" }}" {
					t.Errorf("%s: labels %v", r.Title, r.Labels)
				}
				a := r.Annotations
				if !strings.Contains(a["summary"], " on {{ "+ref(tc.inst)+" }}:") ||
					!strings.Contains(a["dashboard"], "&var-instance={{ "+ref(tc.inst)+" | urlquery }}") ||
					!strings.Contains(a["triage"], "&instance={{ "+ref(tc.inst)+" | urlquery }}") {
					t.Errorf("%s: annotations do not name the instance: %v", r.Title, a)
				}
				if expr, _ := r.Data[3].Model["expr"].(string); !strings.HasPrefix(expr, "sum by ("+tc.model+", "+tc.version+", "+tc.inst+") (") {
					t.Errorf("%s: request rate D %q, want it grouped like A", r.Title, expr)
				}
			}
			if seen != 5 {
				t.Errorf("%d service rules on the engine's types, want 5 (latency-p0/p1, errors, jitter, queue)", seen)
			}
		})
	}
}
