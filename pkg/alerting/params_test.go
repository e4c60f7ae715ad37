package alerting

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParamsRoundTrip(t *testing.T) {
	p := Defaults()
	for _, d := range ParamDefs() {
		v, ok := p.Get(d.Name)
		if !ok || v != d.Default {
			t.Errorf("%s: Get %q, default %q", d.Name, v, d.Default)
		}
		if err := p.Set(d.Flag(), v); err != nil && d.Default != "" {
			t.Errorf("%s: setting its own default %q: %v", d.Name, v, err)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestParseParams(t *testing.T) {
	raw := map[string]json.RawMessage{
		"gpuMemCrit":       json.RawMessage(`"95%"`),
		"latencyWarnFor":   json.RawMessage(`"90s"`),
		"observation":      json.RawMessage(`false`),
		"jitterRatio":      json.RawMessage(`6`),
		"baselineMinDays":  json.RawMessage(`"2"`),
		"latencyPanelId":   json.RawMessage(`null`),
		"latency-crit-for": json.RawMessage(`"30s"`),
	}
	p, err := ParseParams(raw)
	if err != nil {
		t.Fatal(err)
	}
	if p.GPUMemCrit != 0.95 || p.LatencyWarnFor != 90*time.Second || p.Observation || p.JitterRatio != 6 ||
		p.BaselineMinDays != 2 || p.LatencyPanelID != Defaults().LatencyPanelID || p.LatencyCritFor != 30*time.Second {
		t.Fatalf("%+v", p)
	}
	_, err = ParseParams(map[string]json.RawMessage{
		"gpuMemCrit": json.RawMessage(`1.5`), "nope": json.RawMessage(`1`), "interval": json.RawMessage(`[1]`),
	})
	for _, want := range []string{"gpuMemCrit: must be a fraction", `unknown parameter "nope"`, "interval: must be a string, a number or true/false"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func TestCatalogIDsAndUIDs(t *testing.T) {
	p := grafanaParams()
	seen := map[string]bool{}
	for _, s := range specs {
		uid := RuleUID(p, s.id)
		if seen[s.id] || seen[s.alert] || len(uid) > 40 || !uidRE.MatchString(uid) {
			t.Errorf("%s: duplicate or bad uid %q", s.id, uid)
		}
		seen[s.id], seen[s.alert] = true, true
	}
	other := p
	other.Group = "inferscope-canary"
	if RuleUID(p, "latency-p0") == RuleUID(other, "latency-p0") {
		t.Error("two groups share rule uids")
	}
}

// Every parameter is documented in docs/alerting.md.
func TestParamsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/alerting.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ParamDefs() {
		if !strings.Contains(string(doc), "| `"+d.Name+"` | `--"+d.Flag()+"` |") {
			t.Errorf("docs/alerting.md does not document %s (--%s)", d.Name, d.Flag())
		}
	}
	for _, s := range specs {
		if !strings.Contains(string(doc), "| `"+s.id+"` |") {
			t.Errorf("docs/alerting.md does not list rule %s", s.id)
		}
	}
}
