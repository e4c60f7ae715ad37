package datasource

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func postRules(t *testing.T, d *Datasource, body string) (int, RulesAnswer, string) {
	t.Helper()
	res := resourceAnswer(t, d, &backend.CallResourceRequest{Method: http.MethodPost, Path: "rules", Body: []byte(body),
		PluginContext: backend.PluginContext{OrgID: 3, DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "inferscope-test"}}})
	var ans RulesAnswer
	if res.Status == http.StatusOK {
		if err := json.Unmarshal(res.Body, &ans); err != nil {
			t.Fatalf("answer: %v: %s", err, res.Body)
		}
	}
	return res.Status, ans, string(res.Body)
}

func TestRulesResourceCatalog(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "custom", "warmupWindow": "90s"}, nil))
	status, ans, body := postRules(t, d, `{"action":"catalog","params":{"profile":"tgi","datasourceUid":"other","jitterRatio":6}}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if ans.Profile.Name != "custom" || ans.Profile.Detected || ans.Folder.UID != "inferscope" || ans.Group != "inferscope" {
		t.Fatalf("answer %+v", ans)
	}
	if len(ans.Catalog) != 15 {
		t.Fatalf("%d rules in the catalog", len(ans.Catalog))
	}
	values := map[string]RulesParam{}
	for _, p := range ans.Params {
		values[p.Name] = p
	}
	// The settings decide the profile, the data source and the warm-up window; the rest is the
	// request's.
	if values["profile"].Value != "custom" || !values["profile"].Fixed || values["datasourceUid"].Value != "inferscope-test" ||
		values["warmupWindow"].Value != "1m30s" || values["jitterRatio"].Value != "6" || values["jitterRatio"].Fixed {
		t.Fatalf("params %+v", values)
	}
	// The custom service measures everything the catalog needs (its compile cache included).
	for _, r := range ans.Catalog {
		if r.Unavailable != "" || ans.RuleUIDs[r.ID] == "" {
			t.Errorf("%s for the custom profile: unavailable %q, uid %q", r.ID, r.Unavailable, ans.RuleUIDs[r.ID])
		}
	}
}

func TestRulesResourceRenderAndDiff(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "vllm"}, nil))
	status, ans, body := postRules(t, d, `{"action":"render","params":{"observation":false,"grafanaUrl":"https://grafana.example"}}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	g := ans.RuleGroup
	// Every rule of the catalog: vLLM feeds the warm-up rule through its sleep state.
	if g == nil || len(g.Rules) != 14 || ans.MuteTiming == nil || ans.MuteTiming.Name != alerting.RecordOnlyTiming {
		t.Fatalf("render: %+v", ans)
	}
	for _, r := range g.Rules {
		if r.OrgID != 3 || r.Labels[alerting.ObservationLabel] != "" || !strings.HasPrefix(r.Annotations["dashboard"], "https://grafana.example/d/") {
			t.Errorf("rule %s: org %d labels %v", r.Title, r.OrgID, r.Labels)
		}
		for _, q := range r.Data {
			if q.DatasourceUID != alerting.ExprUID && q.DatasourceUID != "inferscope-test" {
				t.Errorf("rule %s queries %s", r.Title, q.DatasourceUID)
			}
		}
	}
	if !strings.Contains(ans.Files["prometheus"], "vllm:e2e_request_latency_seconds_bucket") ||
		!strings.Contains(ans.Files["alertmanager"], "inhibit_rules:") ||
		!strings.Contains(ans.Files["grafana-provisioning"], "datasourceUid: inferscope-test") {
		t.Errorf("files: %v", len(ans.Files))
	}

	existing, _ := json.Marshal(g)
	for _, tc := range []struct{ existing, want string }{
		{"null", alerting.DiffMissing},
		{string(existing), alerting.DiffUnchanged},
		{`{"title":"inferscope","interval":60,"rules":[{"uid":"x","title":"Someone's rule","labels":{}}]}`, alerting.DiffForeign},
	} {
		status, ans, body := postRules(t, d, `{"action":"diff","params":{"observation":false,"grafanaUrl":"https://grafana.example"},"existing":`+tc.existing+`}`)
		if status != http.StatusOK || ans.Diff == nil || ans.Diff.Status != tc.want {
			t.Errorf("diff against %.40s: %d %s", tc.existing, status, body)
		}
	}
	// Observation mode back on: every rule changes.
	_, ans, _ = postRules(t, d, `{"action":"diff","params":{"grafanaUrl":"https://grafana.example"},"existing":`+string(existing)+`}`)
	if ans.Diff == nil || ans.Diff.Status != alerting.DiffChanged || len(ans.Diff.Rules) != len(g.Rules) {
		t.Errorf("observation on: %+v", ans.Diff)
	}
}

func TestRulesResourceErrors(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "custom"}, nil))
	for _, tc := range []struct{ body, want string }{
		{`not json`, "the body must be JSON"},
		{`{"action":"catalog","params":{"gpuMemCrit":"2"}}`, "invalid parameters: gpuMemCrit: must be a fraction between 0 and 1"},
		{`{"action":"catalog","params":{"group":"alerts"}}`, `group: must start with "inferscope"`},
		{`{"action":"catalog","params":{"gpuMemWarn":0.95}}`, "gpuMemCrit (0.92) must be above gpuMemWarn (0.95)"},
		{`{"action":"export"}`, `unknown action "export"`},
		{`{"action":"diff","existing":[1]}`, "the existing rule group is not the provisioning API's JSON"},
	} {
		status, _, body := postRules(t, d, tc.body)
		var e errorBody
		_ = json.Unmarshal([]byte(body), &e)
		if status != http.StatusBadRequest || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.body, status, body, tc.want)
		}
	}
	r := callResource(t, d, http.MethodGet, "rules")
	if r.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET rules: %d %s", r.Status, r.Body)
	}
}

// With profile auto and no Prometheus to ask, the answer says so and renders with the
// parameters' profile.
func TestRulesResourceProfileNotDetected(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{}, nil))
	status, ans, body := postRules(t, d, `{"action":"catalog"}`)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	if ans.Profile.Name != "custom" || ans.Profile.Detected || !strings.Contains(ans.Profile.Notice, "could not be detected") {
		t.Fatalf("profile %+v", ans.Profile)
	}
}

// The app's Jest tests replay the resource's answers from src/pages/AlertRules/testdata; they
// must be what the data source answers today. INFERSCOPE_UPDATE_FIXTURES=1 rewrites them.
func TestRulesResourceRecordedAnswersAreCurrent(t *testing.T) {
	d := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "custom"}, nil))
	for _, tc := range []struct{ file, body string }{
		{"rules-catalog.json", `{"action":"catalog","params":{"grafanaUrl":"http://localhost:3000"}}`},
		{"rules-render.json", `{"action":"render","params":{"grafanaUrl":"http://localhost:3000"}}`},
	} {
		status, ans, body := postRules(t, d, tc.body)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.file, status, body)
		}
		ans.Files = nil // the renderings are tested on their own; the page only downloads them
		checkRecorded(t, filepath.Join("..", "..", "src", "pages", "AlertRules", "testdata", tc.file), ans)
	}
}
