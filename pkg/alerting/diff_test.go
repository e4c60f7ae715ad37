package alerting

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// asGrafanaReturnsIt is the rendered group as GET …/rule-groups/{group} answers it: Grafana's
// own fields added, durations in Go's spelling, query defaults filled in.
func asGrafanaReturnsIt(t *testing.T, g GrafanaGroup) []byte {
	t.Helper()
	raw, _ := json.Marshal(g)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for i, r := range m["rules"].([]any) {
		rule := r.(map[string]any)
		rule["id"] = float64(100 + i)
		rule["updated"] = "2026-11-30T06:00:00Z"
		rule["provenance"] = ""
		if rule["for"] == "3m" {
			rule["for"] = "3m0s"
		}
		for _, q := range rule["data"].([]any) {
			q.(map[string]any)["model"].(map[string]any)["hide"] = false
		}
	}
	out, _ := json.Marshal(m)
	return out
}

func TestDiffMissingGroup(t *testing.T) {
	g, err := GrafanaRules(grafanaParams(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, existing := range [][]byte{nil, []byte("null"), []byte("  ")} {
		d, err := Diff(g, existing)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != DiffMissing || len(d.Rules) != len(g.Rules) || d.Rules[0].Change != "added" {
			t.Fatalf("diff against nothing: %+v", d)
		}
	}
}

func TestDiffSameGroupIsUnchanged(t *testing.T) {
	p := grafanaParams()
	g, err := GrafanaRules(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Diff(g, asGrafanaReturnsIt(t, g))
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != DiffUnchanged || len(d.Rules) != 0 {
		t.Fatalf("the group Grafana holds is the rendering, diff says %+v", d)
	}
}

func TestDiffSeesChanges(t *testing.T) {
	p := grafanaParams()
	old, _ := GrafanaRules(p, 1)
	existing := asGrafanaReturnsIt(t, old)

	p.Observation = false
	p.LatencyCritRatio = 4
	p.Interval *= 2
	now, _ := GrafanaRules(p, 1)
	d, err := Diff(now, existing)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != DiffChanged || d.Interval != "1m → 2m" {
		t.Fatalf("diff %+v", d)
	}
	fields := map[string][]string{}
	for _, r := range d.Rules {
		if r.Change != "changed" {
			t.Fatalf("unexpected %s of %s", r.Change, r.Title)
		}
		fields[r.UID] = r.Fields
	}
	if got := fields[RuleUID(p, "latency-p0")]; !reflect.DeepEqual(got, []string{"annotations", "data", "labels", "notification_settings"}) {
		t.Errorf("latency-p0 changed fields %v", got)
	}
	// P2 stays muted when observation mode ends: its observation label goes, and its queries
	// follow the new interval.
	if got := fields[RuleUID(p, "gpumem-forecast-p2")]; !reflect.DeepEqual(got, []string{"data", "labels"}) {
		t.Errorf("gpumem-forecast-p2 changed fields %v", got)
	}
}

func TestDiffAddedAndRemovedRules(t *testing.T) {
	p := grafanaParams()
	g, _ := GrafanaRules(p, 1)
	var m map[string]any
	_ = json.Unmarshal(asGrafanaReturnsIt(t, g), &m)
	rules := m["rules"].([]any)
	gone := rules[0].(map[string]any)
	stale := map[string]any{}
	for k, v := range gone {
		stale[k] = v
	}
	stale["uid"], stale["title"] = "isc-retired-rule", "P2 retired rule"
	m["rules"] = append(rules[1:], stale)
	existing, _ := json.Marshal(m)
	d, err := Diff(g, existing)
	if err != nil {
		t.Fatal(err)
	}
	want := []RuleChange{{UID: g.Rules[0].UID, Title: g.Rules[0].Title, Change: "added"}, {UID: "isc-retired-rule", Title: "P2 retired rule", Change: "removed"}}
	if d.Status != DiffChanged || !reflect.DeepEqual(d.Rules, want) {
		t.Fatalf("diff %+v, want %+v", d.Rules, want)
	}
}

func TestDiffRefusesGroupsItDidNotCreate(t *testing.T) {
	g, _ := GrafanaRules(grafanaParams(), 1)
	foreign := `{"title":"inferscope","folderUid":"inferscope","interval":60,"rules":[
	  {"uid":"abc","title":"Team latency","labels":{"team":"search"},"condition":"A","data":[]}]}`
	d, err := Diff(g, []byte(foreign))
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != DiffForeign || !strings.Contains(d.Reason, "Team latency") || !strings.Contains(d.Reason, ManagedLabel) {
		t.Fatalf("diff %+v", d)
	}
	// One unmarked rule among ours is enough to refuse.
	var m map[string]any
	_ = json.Unmarshal(asGrafanaReturnsIt(t, g), &m)
	delete(m["rules"].([]any)[3].(map[string]any)["labels"].(map[string]any), ManagedLabel)
	mixed, _ := json.Marshal(m)
	if d, _ := Diff(g, mixed); d.Status != DiffForeign {
		t.Fatalf("a group with an unmarked rule: %+v", d)
	}
}

func TestDiffRejectsGarbage(t *testing.T) {
	g, _ := GrafanaRules(grafanaParams(), 1)
	for _, bad := range []string{`[1,2]`, `{"rules": 5}`, `{"rules": ["x"]}`, `<html>`} {
		if _, err := Diff(g, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
