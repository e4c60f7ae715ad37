package dashboard

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/datasource"
	"github.com/inferscope/inferscope/pkg/engine"
)

// rowTitles are MISSION.md's seven rows, top to bottom.
var rowTitles = []string{"Status overview", "Latency tiers", "Throughput", "GPU resources", "Framework internals", "Business health", "Saturation"}

// grafanaKeys are the target keys Grafana itself owns.
var grafanaKeys = []string{"refId", "datasource", "queryType", "hide"}

func overview(t *testing.T) *Dashboard {
	t.Helper()
	d, err := Load(filepath.Join(Dir(), "inferscope-overview.json"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestEveryDashboardParses(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(Dir(), "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards in", Dir())
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Error(err)
		}
	}
}

func TestSevenRowsInOrder(t *testing.T) {
	d := overview(t)
	if d.UID != UID {
		t.Errorf("uid %q, want %q", d.UID, UID)
	}
	var got []string
	for _, r := range d.Rows() {
		got = append(got, r.Title)
	}
	if !slices.Equal(got, rowTitles) {
		t.Errorf("rows %q, want %q", got, rowTitles)
	}
	// Every row holds panels: the row after it starts only after at least one panel.
	count := 0
	for i, p := range d.Panels {
		if p.Type == "row" {
			if i > 0 && count == 0 {
				t.Errorf("row before %q is empty", p.Title)
			}
			count = len(p.Panels)
			continue
		}
		count++
	}
	if count == 0 {
		t.Error("the last row is empty")
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
	}
	if !strings.Contains(ids[LatencyPanelID], "P99 latency") || !strings.Contains(ids[GPUMemoryPanelID], "GPU memory") {
		t.Errorf("stable panel ids moved: %d=%q %d=%q", LatencyPanelID, ids[LatencyPanelID], GPUMemoryPanelID, ids[GPUMemoryPanelID])
	}
}

// readsField reports whether the backend's parser of queryType reads field: the field is set to
// a value no reader accepts, and the parser must refuse it by name. The allowed set thus comes
// from the parser itself, not from a list kept here.
func readsField(queryType string, target Target, field string) bool {
	probe := map[string]json.RawMessage{}
	for k, v := range substituted(target) {
		probe[k] = v
	}
	probe[field] = json.RawMessage(`{"not":"a value"}`)
	raw, _ := json.Marshal(probe)
	_, err := engine.ParseAs(queryType, raw)
	var fe *engine.FieldError
	return errors.As(err, &fe) && (fe.Field == field || strings.HasPrefix(fe.Field, field+"["))
}

func allTargets(d *Dashboard) map[string][]Target {
	out := map[string][]Target{}
	for _, p := range d.QueryPanels() {
		out[p.Title] = append(out[p.Title], p.Targets...)
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 {
			out["annotation "+a.Name] = append(out["annotation "+a.Name], a.Target)
		}
	}
	return out
}

func TestTargetsUseBackendTypesAndFields(t *testing.T) {
	d := overview(t)
	known := engine.Types()
	engineTypes := engine.Types()
	types := map[string]bool{}
	for title, targets := range allTargets(d) {
		if len(targets) == 0 {
			t.Errorf("%s: no query", title)
		}
		for _, tg := range targets {
			qt := tg.String("queryType")
			types[qt] = true
			if !slices.Contains(known, qt) {
				t.Errorf("%s: query type %q is not one the backend registers (%v)", title, qt, known)
				continue
			}
			if qt == "promql" {
				// The promql type's fields are checked against the running plugin (protocol test).
				if strings.TrimSpace(tg.String("expr")) == "" {
					t.Errorf("%s: empty expr", title)
				}
				continue
			}
			if !slices.Contains(engineTypes, qt) {
				t.Errorf("%s: %q is not an engine type", title, qt)
				continue
			}
			raw, _ := json.Marshal(substituted(tg))
			if _, err := engine.ParseAs(qt, raw); err != nil {
				t.Errorf("%s: the backend refuses the target: %v", title, err)
			}
			for field := range tg {
				if slices.Contains(grafanaKeys, field) {
					continue
				}
				if !readsField(qt, tg, field) {
					t.Errorf("%s: field %q is not one the backend reads for %s", title, field, qt)
				}
			}
		}
	}
	// Every engine type except none is on the dashboard: the panels use the types, not PromQL.
	for _, qt := range engineTypes {
		if !types[qt] {
			t.Errorf("no panel uses query type %s", qt)
		}
	}
}

// The probe itself must be able to fail: a field the parser does not know is reported.
func TestReadsFieldRejectsUnknown(t *testing.T) {
	tg := Target{"queryType": json.RawMessage(`"latency"`)}
	if readsField("latency", tg, "bogus") || !readsField("latency", tg, "quantiles") || !readsField("latency", tg, "warmupFilter") {
		t.Error("readsField does not tell read fields from unknown ones")
	}
}

func TestEveryVariableUsedAndChained(t *testing.T) {
	d := overview(t)
	raw := string(d.Raw())
	names := map[string]Variable{}
	for _, v := range d.Templating.List {
		names[v.Name] = v
	}
	for _, want := range []string{"datasource", "model", "version", "instance", "gpu", "warmup"} {
		if _, ok := names[want]; !ok {
			t.Errorf("no %q variable", want)
		}
	}
	if v := names["datasource"]; v.Type != "datasource" || string(v.Query) != `"inferscope-monitor-datasource"` {
		t.Errorf("datasource variable %+v", v)
	}
	for _, n := range []string{"model", "version", "instance", "gpu"} {
		v := names[n]
		var q struct{ Kind, Model, Instance string }
		if err := json.Unmarshal(v.Query, &q); err != nil || q.Kind != n || v.Type != "query" || !v.Multi || !v.IncludeAll ||
			v.Datasource == nil || v.Datasource.UID != "${datasource}" {
			t.Errorf("variable %s: %+v (%v)", n, v, err)
		}
		if n == "version" && q.Model != "$model" || n == "gpu" && q.Instance != "$instance" {
			t.Errorf("variable %s is not chained: %s", n, v.Query)
		}
	}
	if v := names["warmup"]; v.Type != "custom" || string(v.Query) != `"true,false"` {
		t.Errorf("warm-up switch %+v", v)
	}
	// Used: referenced outside its own definition, in a query of a panel.
	used := map[string]bool{}
	for _, targets := range allTargets(d) {
		for _, tg := range targets {
			b, _ := json.Marshal(tg)
			for _, r := range VariableRefs(string(b)) {
				used[r] = true
			}
		}
	}
	for n := range names {
		if !used[n] {
			t.Errorf("variable %s is used by no query", n)
		}
	}
	// Every engine-type target follows the warm-up switch.
	for title, targets := range allTargets(d) {
		for _, tg := range targets {
			if qt := tg.String("queryType"); qt != "promql" && tg.String("warmupFilter") != "$warmup" {
				t.Errorf("%s: %s target's warmupFilter is %s, want \"$warmup\"", title, qt, tg["warmupFilter"])
			}
		}
	}
	if strings.Contains(raw, "${node_pattern}") {
		t.Error("unknown variable")
	}
}

func TestNoHardCodedDataSource(t *testing.T) {
	d := overview(t)
	if len(d.Inputs) != 1 || d.Inputs[0].Type != "datasource" || d.Inputs[0].PluginID != datasource.PluginID {
		t.Errorf("__inputs %+v", d.Inputs)
	}
	check := func(where string, r *DataSourceRef) {
		if r == nil || r.Type != datasource.PluginID || r.UID != "${datasource}" {
			t.Errorf("%s: data source %+v, want {%s ${datasource}}", where, r, datasource.PluginID)
		}
	}
	for _, p := range d.QueryPanels() {
		check(p.Title, p.Datasource)
		for _, tg := range p.Targets {
			check(p.Title+" target", tg.Datasource())
		}
	}
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 0 {
			check("annotation "+a.Name, a.Datasource)
		}
	}
	// No uid of a provisioned data source anywhere in the file.
	if strings.Contains(string(d.Raw()), `"uid": "inferscope"`) {
		t.Error("the provisioned data source's uid is hard-coded")
	}
}

func TestDrillDownLinks(t *testing.T) {
	d := overview(t)
	byTitle := map[string]Panel{}
	for _, p := range d.QueryPanels() {
		byTitle[p.Title] = p
	}
	need := func(title, wantVars string, wantPanel int) {
		t.Helper()
		p, ok := byTitle[title]
		if !ok {
			t.Errorf("no panel %q", title)
			return
		}
		links := p.FieldConfig.Defaults.Links
		if len(links) == 0 {
			t.Errorf("%s: no data link", title)
			return
		}
		for _, l := range links {
			if !strings.HasPrefix(l.URL, "/d/"+UID+"/") || !strings.Contains(l.URL, "${__url_time_range}") {
				t.Errorf("%s: link %q does not keep the dashboard and time range", title, l.URL)
			}
			for _, v := range strings.Fields(wantVars) {
				if !strings.Contains(l.URL, v) {
					t.Errorf("%s: link %q lacks %s", title, l.URL, v)
				}
			}
			if wantPanel > 0 && !strings.Contains(l.URL, "viewPanel="+itoa(wantPanel)) {
				t.Errorf("%s: link %q does not open panel %d", title, l.URL, wantPanel)
			}
			if !strings.Contains(l.URL, "${datasource:queryparam}") || !strings.Contains(l.URL, "${warmup:queryparam}") {
				t.Errorf("%s: link %q drops the data source or warm-up switch", title, l.URL)
			}
		}
	}
	need("GPUs online", "${instance:queryparam} ${gpu:queryparam}", GPUMemoryPanelID)
	need("GPU memory used / total", "${instance:queryparam} ${gpu:queryparam}", GPUMemoryPanelID)
	need("Hottest GPUs (memory used)", "var-instance=${__field.labels.node} var-gpu=${__field.labels.gpu}", GPUMemoryPanelID)
	for _, title := range []string{"P50 latency by model version", "P95 latency by model version", "P99 latency by model version"} {
		need(title, "var-model=${__field.labels. var-version=${__field.labels.", 23)
	}
	for _, title := range []string{"GPU memory used", "GPU utilisation", "GPU temperature", "GPU power", "GPU idle under traffic", "GPUs now (live from the probes)", "Time until 92 % GPU memory"} {
		need(title, "var-instance=$__all var-gpu=$__all ${model:queryparam}", 0)
	}
	if split := byTitle["Queue / compute / network split"]; split.ID != 23 {
		t.Errorf("split panel id %d, links open 23", split.ID)
	}
	if gm := byTitle["GPU memory used"]; gm.ID != GPUMemoryPanelID {
		t.Errorf("GPU memory panel id %d", gm.ID)
	}
}

func TestPanelsSayWhatTheyAnswer(t *testing.T) {
	for _, p := range overview(t).QueryPanels() {
		if len(p.Description) < 40 {
			t.Errorf("%s: description %q", p.Title, p.Description)
		}
		for _, tg := range p.Targets {
			if tg.String("queryType") == "promql" && !strings.Contains(p.Description, "PromQL") {
				t.Errorf("%s: hand-written PromQL without saying so", p.Title)
			}
		}
	}
}

// sampleValues are values Grafana could interpolate for the variables (multi-values joined by
// "|", the data source's format for the selection fields).
var sampleValues = map[string]string{"model": "m1|m2", "version": "v1", "instance": "node-a:8000|node-b:8000", "gpu": "0|3", "warmup": "false", "datasource": "ds"}

// substituted replaces $var and ${var} in the target's string values with sampleValues.
func substituted(tg Target) Target {
	out := Target{}
	for k, v := range tg {
		var s string
		if json.Unmarshal(v, &s) == nil && strings.Contains(s, "$") {
			s = varRef.ReplaceAllStringFunc(s, func(m string) string {
				name := VariableRefs(m)
				if len(name) == 1 {
					if val, ok := sampleValues[name[0]]; ok {
						return val
					}
				}
				return m
			})
			v, _ = json.Marshal(s)
		}
		out[k] = v
	}
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// The app includes the dashboard by the path it has in dist/ (the build copies dashboards/ there).
func TestAppIncludesTheDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(Dir(), "..", "src", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var app struct {
		Includes []struct{ Type, UID, Path string } `json:"includes"`
	}
	if err := json.Unmarshal(raw, &app); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, inc := range app.Includes {
		if inc.Type == "dashboard" {
			found = inc.UID == UID && inc.Path == "dashboards/inferscope-overview.json"
		}
	}
	if !found {
		t.Errorf("src/plugin.json does not include dashboards/inferscope-overview.json with uid %s: %+v", UID, app.Includes)
	}
}

// TestAlertLinksLandOnTheLatencyPanel keeps the alert rules' context link and the dashboard in
// step: the default dashboard uid and latency panel id the rules link to exist here, the panel
// is a latency query, and the variables the links set are the dashboard's.
func TestAlertLinksLandOnTheLatencyPanel(t *testing.T) {
	d := overview(t)
	p := alerting.Defaults()
	if d.UID != p.DashboardUID {
		t.Fatalf("alert rules link to dashboard %q, the overview's uid is %q", p.DashboardUID, d.UID)
	}
	var found *Panel
	for _, q := range d.QueryPanels() {
		if q.ID == p.LatencyPanelID {
			found = &q
		}
	}
	if found == nil {
		t.Fatalf("alert rules link to panel %d, which the overview does not have", p.LatencyPanelID)
	}
	if len(found.Targets) == 0 || found.Targets[0].String("queryType") != "latency" {
		t.Errorf("panel %d (%q) is not a latency panel", found.ID, found.Title)
	}
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
	}
	for _, name := range []string{"model", "version", "instance", "gpu"} {
		if !vars[name] {
			t.Errorf("alert links set var-%s, the dashboard has no such variable", name)
		}
	}
}
