package alerting

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

const fleetProfiles = "custom,vllm,triton,torchserve,tgi"

func fleetParams() Params {
	p := Defaults()
	p.Profile, p.DatasourceUID = fleetProfiles, "ds"
	return p
}

// The profile list is validated: known names, each once; one name renders as before.
func TestProfileList(t *testing.T) {
	p := Defaults()
	if err := p.Set("profile", " vllm , triton"); err != nil || p.Profile != "vllm,triton" || !slices.Equal(p.ProfileNames(), []string{"vllm", "triton"}) {
		t.Fatalf("vllm, triton: %v %q %v", err, p.Profile, p.ProfileNames())
	}
	for _, bad := range []string{"", "vllm,", "vllm,vllm", "onnx", "vllm;triton"} {
		if err := p.Set("profile", bad); err == nil {
			t.Errorf("profile %q accepted", bad)
		}
	}
	p.Profile = "vllm,vllm"
	if _, err := PrometheusRules(p); err == nil {
		t.Error("a profile named twice renders")
	}
}

// SetServers keeps each server's own label names; a single server renders as the profile with
// those label names does.
func TestSetServersKeepsEachServersLabels(t *testing.T) {
	vllm, _ := profile.ByName("vllm")
	triton, _ := profile.ByName("triton")
	renamed, err := triton.WithLabels("app", "", "")
	if err != nil {
		t.Fatal(err)
	}
	p := Defaults()
	p.SetServers([]profile.Profile{vllm, renamed})
	if p.Profile != "vllm,triton" {
		t.Fatalf("profile %q", p.Profile)
	}
	f, err := PrometheusRules(p)
	if err != nil {
		t.Fatal(err)
	}
	var triGroup string
	for _, g := range f.Groups {
		if g.Name == "inferscope-triton" {
			b, _ := json.Marshal(g)
			triGroup = string(b)
		}
	}
	if !strings.Contains(triGroup, "by (app, version, instance)") || strings.Contains(triGroup, "model_name") {
		t.Errorf("the Triton group does not read its renamed model label:\n%.600s", triGroup)
	}
	one := Defaults()
	one.SetServers([]profile.Profile{renamed})
	alone := Defaults()
	alone.Profile, alone.ModelLabel = "triton", "app"
	a, _ := RenderPrometheus(one)
	b, _ := RenderPrometheus(alone)
	if string(a) != string(b) {
		t.Error("one server set by SetServers renders differently from the profile with its label names")
	}
}

// The fleet's Prometheus file: a group per server and one GPU group, every recording of a server
// group labelled with its server, every alert there reading only its server's recordings, the
// GPU rules once; promtool accepts it.
func TestPrometheusFleetGroups(t *testing.T) {
	p := fleetParams()
	f, err := PrometheusRules(p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	recName := regexp.MustCompile(`inferscope:[a-z0-9_:]+`)
	for _, g := range f.Groups {
		names = append(names, g.Name)
		server := strings.TrimPrefix(g.Name, "inferscope-")
		for _, r := range g.Rules {
			switch {
			case g.Name == "inferscope-gpu":
				if r.Alert != "" && r.Labels[ScopeLabel] != string(ScopeGPU) || r.Record != "" && r.Record != RecGPUMemory {
					t.Errorf("GPU group holds %s%s", r.Record, r.Alert)
				}
				if strings.Contains(r.Expr, ServerLabel) {
					t.Errorf("GPU rule %s%s selects a server: %s", r.Record, r.Alert, r.Expr)
				}
			case r.Record != "" && r.Labels[ServerLabel] != server:
				t.Errorf("%s: recording %s labelled %v", g.Name, r.Record, r.Labels)
			case r.Alert != "" && (r.Labels[ServerLabel] != server || r.Labels[ScopeLabel] != string(ScopeService)):
				t.Errorf("%s: alert %s labelled %v", g.Name, r.Alert, r.Labels)
			}
			if g.Name == "inferscope-gpu" {
				continue
			}
			// Every recorded series a server's rule reads is its own server's.
			for _, m := range recName.FindAllStringIndex(r.Expr, -1) {
				rest := r.Expr[m[1]:]
				if want := `{` + ServerLabel + `="` + server + `"}`; !strings.HasPrefix(rest, want) {
					t.Errorf("%s: %s%s reads %s without %s", g.Name, r.Record, r.Alert, r.Expr[m[0]:m[1]], want)
				}
			}
		}
	}
	if want := []string{"inferscope-custom", "inferscope-vllm", "inferscope-triton", "inferscope-torchserve", "inferscope-tgi", "inferscope-gpu"}; !slices.Equal(names, want) {
		t.Fatalf("groups %v, want %v", names, want)
	}
	count := func(alert string) int {
		n := 0
		for _, g := range f.Groups {
			for _, r := range g.Rules {
				if r.Alert == alert {
					n++
				}
			}
		}
		return n
	}
	// GPU rules once (the hardware rules too); queue on every server; latency on every server (the mean on Triton and
	// TorchServe, which have no latency histogram), jitter only where a histogram is (custom,
	// vllm, tgi); cache drop on custom, vllm, triton; warm-up on custom and vllm (a load state:
	// model_loading_status, vLLM's sleep state).
	for alert, want := range map[string]int{"InferscopeGPUMemoryCritical": 1, "InferscopeGPUIdleUnderTraffic": 1, "InferscopeGPUMemoryForecast": 1, "InferscopeGPUXID": 1,
		"InferscopeGPUClocksHeldDown": 1, "InferscopeGPUUncorrectedECC": 1,
		"InferscopeQueueDominating": 5, "InferscopeLatencyCritical": 5, "InferscopeLatencyJitter": 3, "InferscopeCacheHitRateDrop": 3, "InferscopeWarmupLong": 2, "InferscopeNetworkLatencyHigh": 1} {
		if got := count(alert); got != want {
			t.Errorf("%s rendered %d times, want %d", alert, got, want)
		}
	}
	body, err := RenderPrometheus(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"one group per server", "# Not rendered for triton: jitter-p1", "# Not rendered for tgi: cache-drop-p2"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the file's header lacks %q", want)
		}
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "rules.yml"), body)
	if out, err := tool(t, dir, "promtool", "check", "rules", "rules.yml"); err != nil || !strings.Contains(out, "SUCCESS: 108 rules found") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// The fleet's Grafana group: engine rules once with the single-profile uid, PromQL rules once
// per server that can feed them (uid and title naming it), their context queries every server's
// traffic marked with the engine's server label.
func TestGrafanaFleetRules(t *testing.T) {
	p := fleetParams()
	g, err := GrafanaRules(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]bool{}
	byID := map[string][]GrafanaRule{}
	for _, r := range g.Rules {
		if uids[r.UID] || len(r.UID) > 40 {
			t.Errorf("uid %s repeated or too long", r.UID)
		}
		uids[r.UID] = true
		byID[r.Labels[RuleLabel]] = append(byID[r.Labels[RuleLabel]], r)
	}
	for _, id := range []string{"latency-p0", "latency-p1", "gpumem-p0", "gpu-idle-p0", "errors-p0", "jitter-p1", "queue-p1", "gpumem-forecast-p2"} {
		rs := byID[id]
		if len(rs) != 1 || rs[0].UID != RuleUID(p, id) || rs[0].Labels[ServerLabel] != "" {
			t.Errorf("%s: %d rules (want one, uid %s)", id, len(rs), RuleUID(p, id))
			continue
		}
		qps, _ := rs[0].Data[3].Model["expr"].(string)
		for _, server := range []string{"custom", "vllm", "triton", "torchserve", "tgi"} {
			if !strings.Contains(qps, `"`+engine.ServerLabel+`", "`+server+`"`) {
				t.Errorf("%s: the context query lacks %s's traffic: %s", id, server, qps)
			}
		}
	}
	if m := byID["queue-p1"][0].Labels[ModelLabel]; m != `{{ (or (index $labels "model_name") (index $labels "model")) }}` {
		t.Errorf("queue-p1's model label reads %s", m)
	}
	for id, servers := range map[string][]string{"cache-drop-p2": {"custom", "vllm", "triton"}, "warmup-long-p2": {"custom", "vllm"}} {
		var got []string
		for _, r := range byID[id] {
			s := r.Labels[ServerLabel]
			got = append(got, s)
			if r.UID != ServerRuleUID(p, id, s) || !strings.Contains(r.Title, "("+s+")") {
				t.Errorf("%s on %s: uid %s title %q", id, s, r.UID, r.Title)
			}
		}
		if !slices.Equal(got, servers) {
			t.Errorf("%s rendered for %v, want %v", id, got, servers)
		}
	}
	plans, err := Plans(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != len(g.Rules) {
		t.Errorf("%d plans for %d rules", len(plans), len(g.Rules))
	}
	catalog, _ := Catalog(p)
	for _, r := range catalog {
		if r.Unavailable != "" {
			t.Errorf("%s unavailable on the whole fleet: %s", r.ID, r.Unavailable)
		}
		if r.ID == "latency-p0" && len(r.UnavailableOn) > 0 {
			t.Errorf("latency-p0 unavailable on %v (Triton and TorchServe are judged on the mean)", r.UnavailableOn)
		}
		if r.ID == "jitter-p1" && (r.UnavailableOn["triton"] == "" || r.UnavailableOn["vllm"] != "") {
			t.Errorf("jitter-p1 unavailable on %v", r.UnavailableOn)
		}
	}
}

// inlineRules writes every recording the file holds into the alerts that read it, as the
// rule evaluation would store and select them: a recording is its expression with its rule's
// labels set, and a recorded name selects the recordings of every group of that name (filtered
// by its server matcher, if any). The alerts of group are returned by name.
func inlineRules(f PromRuleFile, group string) map[string]string {
	type recording struct{ server, expr string }
	recs := map[string][]recording{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recs[r.Record] = append(recs[r.Record], recording{r.Labels[ServerLabel], r.Expr})
			}
		}
	}
	ref := regexp.MustCompile(`inferscope:[a-z0-9_:]+(\{` + ServerLabel + `="([a-z]+)"\})?`)
	var inline func(expr string) string
	inline = func(expr string) string {
		return ref.ReplaceAllStringFunc(expr, func(m string) string {
			sub := ref.FindStringSubmatch(m)
			name := strings.TrimSuffix(m, sub[1])
			var parts []string
			for _, r := range recs[name] {
				e := "(" + inline(r.expr) + ")"
				if r.server != "" {
					e = fmt.Sprintf("label_replace(%s, %q, %q, \"\", \"\")", e, ServerLabel, r.server)
				}
				parts = append(parts, e)
			}
			union := "(" + strings.Join(parts, " or ") + ")"
			if sub[2] != "" {
				union = fmt.Sprintf("(%s and on (%s) label_replace(vector(1), %q, %q, \"\", \"\"))", union, ServerLabel, ServerLabel, sub[2])
			}
			return union
		})
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		if g.Name != group {
			continue
		}
		for _, r := range g.Rules {
			switch {
			case r.Alert != "":
				out[r.Alert] = inline(r.Expr)
			case r.Labels[ServerLabel] != "":
				out["record "+r.Record] = inline(fmt.Sprintf("%s{%s=%q}", r.Record, ServerLabel, r.Labels[ServerLabel]))
			default:
				out["record "+r.Record] = inline(r.Record)
			}
		}
	}
	return out
}

// instantAt runs an instant query and returns "labels value" lines, sorted, without the labels
// listed in drop.
func instantAt(t *testing.T, base, expr string, at time.Time, drop ...string) []string {
	t.Helper()
	resp, err := http.PostForm(base+"/api/v1/query", url.Values{"query": {expr}, "time": {strconv.FormatInt(at.Unix(), 10)}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query: %v %s\n%.400s", err, body.Error, expr)
	}
	var out []string
	for _, r := range body.Data.Result {
		for _, d := range drop {
			delete(r.Metric, d)
		}
		v, _ := strconv.ParseFloat(r.Value[1].(string), 64)
		out = append(out, fmt.Sprintf("%s %.9g", engine.Labels(r.Metric).String(), v))
	}
	sort.Strings(out)
	return out
}

// dayMeans are the recordings that average a day of history per day of the baseline: each one
// inlined is a subquery over the whole baseline, so an expression reading them through other
// recordings repeats that work several times over.
var dayMeans = []string{RecLatencyDayMean, RecLatencyModelDayMean, RecNodeQPSDayMean, RecCacheDayMean}

// readsOf lists the recorded names expr reads, directly and through the recordings it reads.
func readsOf(f PromRuleFile, expr string) []string {
	exprs := map[string][]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				exprs[r.Record] = append(exprs[r.Record], r.Expr)
			}
		}
	}
	ref := regexp.MustCompile(`inferscope:[a-z0-9_:]+`)
	seen := map[string]bool{}
	var walk func(string)
	walk = func(e string) {
		for _, name := range ref.FindAllString(e, -1) {
			if !seen[name] {
				seen[name] = true
				for _, sub := range exprs[name] {
					walk(sub)
				}
			}
		}
	}
	walk(expr)
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// fleetComparison is how one rule of a server's group is compared with the same rule rendered for
// the server alone.
type fleetComparison struct {
	name                 string
	fleetExpr, aloneExpr string // inlined, as evaluated
	times                []time.Time
}

// planFleetComparison decides, rule by rule, what is evaluated. A rule reading no recording is
// evaluated as it is (its selectors must pick the server's series out of the fleet's). A rule
// reading recordings whose text is the alone rule's with every read narrowed to the server's
// recordings is a function of those recordings only: it is evaluated inlined unless it reads a
// day-mean recording, whose equality is then proven by the day-mean's own comparison (evaluated
// once, at the first time: a day's mean barely moves between the two). Any other difference in text
// is evaluated inlined, whatever it costs.
func planFleetComparison(fleetFile, aloneFile PromRuleFile, server string, times []time.Time) (plan []fleetComparison, structural []string, missing []string) {
	raw := func(f PromRuleFile, group string) map[string]string {
		out := map[string]string{}
		for _, g := range f.Groups {
			if g.Name == group {
				for _, r := range g.Rules {
					if r.Alert != "" {
						out[r.Alert] = r.Expr
					} else {
						out["record "+r.Record] = r.Expr
					}
				}
			}
		}
		return out
	}
	fleetRaw, aloneRaw := raw(fleetFile, "inferscope-"+server), raw(aloneFile, "inferscope")
	inFleet, alone := inlineRules(fleetFile, "inferscope-"+server), inlineRules(aloneFile, "inferscope")
	names := make([]string, 0, len(alone))
	for name := range alone {
		names = append(names, name)
	}
	sort.Strings(names)
	narrowed := `{` + ServerLabel + `="` + server + `"}`
	for _, name := range names {
		if strings.HasPrefix(name, "InferscopeGPU") || name == "record "+RecGPUMemory {
			continue // the GPU rules are the fleet's, in their own group
		}
		fleetExpr, ok := inFleet[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		reads := readsOf(aloneFile, aloneRaw[name])
		sameText := strings.ReplaceAll(fleetRaw[name], narrowed, "") == aloneRaw[name]
		readsDayMean := slices.ContainsFunc(reads, func(r string) bool { return slices.Contains(dayMeans, r) })
		isDayMean := slices.ContainsFunc(dayMeans, func(r string) bool { return name == "record "+r })
		switch {
		case len(reads) > 0 && sameText && readsDayMean:
			structural = append(structural, name)
		case isDayMean:
			plan = append(plan, fleetComparison{name, fleetExpr, alone[name], times[:1]})
		default:
			plan = append(plan, fleetComparison{name, fleetExpr, alone[name], times})
		}
	}
	return plan, structural, missing
}

// TestFleetRulesEvaluateAsEachServerAlone: on one Prometheus holding the five servers, the
// recordings and alert expressions of the fleet file's vLLM and Triton groups, reading every
// group's recordings as Prometheus stores them, give exactly the series (labels and values) the
// file rendered for that server alone gives on a Prometheus holding that server alone, the
// server label aside, which names the server. Rules that only combine day-mean recordings with the
// same text are proven through those recordings (planFleetComparison). Known truth: during the
// queue surge vLLM's queue rule holds on the surging model at the scenario's queue share, and
// every server's node-a request rate is the source's (the servers serve copies of the same traffic).
func TestFleetRulesEvaluateAsEachServerAlone(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: expo.FleetName})
	// A day-mean recording inlined holds the baseline's day-mean subqueries: far heavier than a
	// rule evaluation, which reads the stored recordings. The default 2m query timeout is too short
	// on a loaded machine; the test compares results, not speed.
	slowQueries := []string{"--query.timeout=10m"}
	fleetURL := promtest.Start(t, promtest.Options{DataDir: dir, ExtraArgs: slowQueries}).URL
	fleetFile, err := PrometheusRules(fleetParams())
	if err != nil {
		t.Fatal(err)
	}
	surge, ok := s.Incident(testbed.QueueSurge)
	if !ok {
		t.Fatal("no queue surge in the scenario")
	}
	idle, _ := s.Incident(testbed.GPUIdle)
	times := []time.Time{surge.Start.Add(12 * time.Minute), idle.Start.Add(12 * time.Minute)}
	nodeQPS := map[string]string{}
	for _, server := range []string{"vllm", "triton"} {
		t.Run(server, func(t *testing.T) {
			partDir, _ := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: expo.FleetPart(server)})
			aloneURL := promtest.Start(t, promtest.Options{DataDir: partDir, ExtraArgs: slowQueries}).URL
			p := Defaults()
			p.Profile = server
			aloneFile, err := PrometheusRules(p)
			if err != nil {
				t.Fatal(err)
			}
			plan, structural, missing := planFleetComparison(fleetFile, aloneFile, server, times)
			for _, name := range missing {
				t.Errorf("%s: the fleet's group lacks it", name)
			}
			t.Logf("%d rules evaluated on both, %d proven through their day-mean recordings: %v", len(plan), len(structural), structural)
			nonEmpty := 0
			for _, c := range plan {
				for _, at := range c.times {
					got := instantAt(t, fleetURL, c.fleetExpr, at)
					want := instantAt(t, aloneURL, c.aloneExpr, at)
					for i, line := range got {
						if !strings.Contains(line, ServerLabel+`="`+server+`"`) {
							t.Errorf("%s: fleet series without its server label: %s", c.name, line)
						}
						got[i] = strings.Replace(strings.Replace(line, ServerLabel+`="`+server+`", `, "", 1), `, `+ServerLabel+`="`+server+`"`, "", 1)
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s at %s: the fleet gives\n%s\nthe server alone\n%s", c.name, at.Format(time.RFC3339), strings.Join(got, "\n"), strings.Join(want, "\n"))
					}
					nonEmpty += len(want)
				}
			}
			if nonEmpty == 0 {
				t.Fatal("no alert expression holds anywhere: the comparison says nothing")
			}
			inFleet := inlineRules(fleetFile, "inferscope-"+server)
			qps := instantAt(t, fleetURL, inFleet["record "+RecNodeQPS], times[0], ServerLabel)
			nodeQPS[server] = strings.Join(qps, "\n")
			if len(qps) == 0 {
				t.Errorf("no node request rate on %s", server)
			}
			if server != "vllm" {
				return
			}
			// The queue surge's model on node-a holds the queue rule at the scenario's share (0.69
			// in the segment means, above the 0.6 line).
			model := expo.FleetModel(server, surge.Model)
			q := instantAt(t, fleetURL, inFleet["InferscopeQueueDominating"], times[0])
			found := false
			for _, line := range q {
				if strings.Contains(line, `"`+model+`"`) && strings.Contains(line, expo.FleetInstance(server, "node-a:8000")) {
					v, _ := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
					found = math.Abs(v-0.69) < 0.05
					if !found {
						t.Errorf("queue share %g during the surge, want about 0.69", v)
					}
				}
			}
			if !found {
				t.Errorf("the queue rule does not hold on %s during the surge: %v", model, q)
			}
		})
	}
	// Both groups ran (a -run pattern may pick one): their node request rates are the source's.
	if nodeQPS["vllm"] != "" && nodeQPS["triton"] != "" && nodeQPS["vllm"] != nodeQPS["triton"] {
		t.Errorf("node request rates differ: vLLM\n%s\nTriton\n%s", nodeQPS["vllm"], nodeQPS["triton"])
	}
	// The GPU group reads every server's node recordings: the idle GPU of the scenario is found.
	idleAt := instantAt(t, fleetURL, inlineRules(fleetFile, "inferscope-gpu")["InferscopeGPUIdleUnderTraffic"], times[1])
	if len(idleAt) != 1 || !strings.HasPrefix(idleAt[0], `{gpu="6", inferscope_node="node-a"}`) {
		t.Errorf("GPU idle under traffic on the fleet: %v, want node-a's GPU 6", idleAt)
	}
}
