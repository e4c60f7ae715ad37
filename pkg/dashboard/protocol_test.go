//go:build cgo

package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/inferscope/inferscope/pkg/datasource"
	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/probe/probetest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// startMockProbe serves a real probe over the scenario's mock GPUs of instance's node, frozen at now.
func startMockProbe(t *testing.T, s *testbed.Scenario, instance string, now time.Time) string {
	return probetest.Start(t, s, instance, now)
}

// variableValues asks the running plugin for a variable's values, as the variable editor's
// query does in Grafana (resource path and query string apart).
func variableValues(t *testing.T, p *plugintest.Plugin, pc *pluginv2.PluginContext, query string) []string {
	t.Helper()
	stream, err := p.Resource.CallResource(context.Background(), &pluginv2.CallResourceRequest{PluginContext: pc, Method: "GET", Path: "variables", Url: "variables?" + query})
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	for {
		chunk, err := stream.Recv()
		if err != nil {
			break
		}
		if chunk.Code != 0 && chunk.Code != 200 {
			t.Fatalf("variables?%s: HTTP %d", query, chunk.Code)
		}
		body = append(body, chunk.Body...)
	}
	var ans struct{ Values []string }
	if err := json.Unmarshal(body, &ans); err != nil || len(ans.Values) == 0 {
		t.Fatalf("variables?%s: %s (%v)", query, body, err)
	}
	return ans.Values
}

// promQLAll formats a multi-value for a PromQL string the way src/datasource/interpolate.ts does.
func promQLAll(values []string) string {
	parts := make([]string, len(values))
	for i, v := range values {
		v = regexp.MustCompile(`[\\^$.*+?()[\]{}|]`).ReplaceAllString(v, `\$0`)
		parts[i] = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, "|") + ")"
}

// exemptMetric: series the custom test bed does not have, whose panels are empty there by design
// (their descriptions say which exporter or server they need).
var exemptMetric = regexp.MustCompile(`^(node_|vllm:)`)

var metricName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{|__name__="([^"]+)"`)

func onlyExemptMetrics(expr string) bool {
	ms := metricName.FindAllStringSubmatch(expr, -1)
	if len(ms) == 0 {
		return false
	}
	for _, m := range ms {
		if !exemptMetric.MatchString(m[1] + m[2]) {
			return false
		}
	}
	return true
}

// TestEveryPanelReturnsData runs each panel's queries through the built plugin over gRPC against
// the test bed's Prometheus and mock probes, at a range holding the restart, the compute slowdown
// and the idle GPU, with the template variables at "All" as Grafana interpolates them.
func TestEveryPanelReturnsData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	d := overview(t)
	dir, s := testbed.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	end := s.End()
	from, to := end.Add(-19*time.Hour), end.Add(-10*time.Hour)
	slow, _ := s.Incident(testbed.ComputeSlowdown)
	var probes []string
	for _, inst := range s.Instances() {
		probes = append(probes, startMockProbe(t, s, inst, slow.Start.Add(10*time.Minute)))
	}
	p := plugintest.Start(t, plugintest.Binary(t, "0.0.0-dashboard"))
	jd, _ := json.Marshal(map[string]any{"probeUrls": probes})
	pc := plugintest.PluginContext(datasource.PluginID, backend.DataSourceInstanceSettings{
		UID: "inferscope-test", Name: "Inferscope", URL: srv.URL, JSONData: jd, Updated: time.Now()})

	window := fmt.Sprintf("&from=%d&to=%d", from.UnixMilli(), to.UnixMilli())
	all := map[string][]string{}
	all["model"] = variableValues(t, p, pc, "kind=model"+window)
	all["version"] = variableValues(t, p, pc, "kind=version&model="+strings.Join(all["model"], "|")+window)
	all["instance"] = variableValues(t, p, pc, "kind=instance"+window)
	all["gpu"] = variableValues(t, p, pc, "kind=gpu&instance="+strings.Join(all["instance"], "|")+window)

	// substitute interpolates like the data source's applyTemplateVariables: selection fields
	// in "pipe" format, expr in the PromQL format, the warm-up switch at its default.
	substitute := func(tg Target) map[string]any {
		out := map[string]any{}
		for k, v := range tg {
			var x any
			_ = json.Unmarshal(v, &x)
			str, ok := x.(string)
			if !ok || !strings.Contains(str, "$") {
				out[k] = x
				continue
			}
			str = varRef.ReplaceAllStringFunc(str, func(m string) string {
				name := VariableRefs(m)[0]
				switch {
				case name == "warmup":
					return "true"
				case k == "expr":
					return promQLAll(all[name])
				default:
					return strings.Join(all[name], "|")
				}
			})
			out[k] = str
		}
		return out
	}

	var queries []backend.DataQuery
	type origin struct {
		panel  string
		exempt bool
	}
	origins := map[string]origin{}
	n := 0
	for title, targets := range allTargets(d) {
		for _, tg := range targets {
			n++
			ref := fmt.Sprintf("Q%d", n)
			q := substitute(tg)
			q["refId"] = ref
			raw, _ := json.Marshal(q)
			queries = append(queries, backend.DataQuery{RefID: ref, QueryType: tg.String("queryType"), JSON: raw,
				TimeRange: backend.TimeRange{From: from, To: to}, Interval: time.Minute, MaxDataPoints: 600})
			origins[ref] = origin{title, tg.String("queryType") == "promql" && onlyExemptMetrics(tg.String("expr"))}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	resp, err := p.QueryData(ctx, pc, queries...)
	if err != nil {
		t.Fatal(err)
	}
	for ref, o := range origins {
		r := resp.Responses[ref]
		if r.Error != nil {
			t.Errorf("%s (%s): %v", o.panel, ref, r.Error)
			continue
		}
		rows := 0
		for _, f := range r.Frames {
			if len(f.Fields) > 0 {
				rows += f.Rows()
			}
		}
		switch {
		case o.exempt:
			t.Logf("%s: %d rows (needs an exporter the test bed lacks)", o.panel, rows)
		case rows == 0:
			t.Errorf("%s (%s): no data", o.panel, ref)
		}
	}

	// Every promql field a target sets is one the plugin reads: set to an object, it is refused
	// by name (unknown fields are ignored by the plugin, so they would pass unnoticed).
	var probesQ []backend.DataQuery
	fields := map[string]string{}
	for title, targets := range allTargets(d) {
		for _, tg := range targets {
			if tg.String("queryType") != "promql" {
				continue
			}
			for field := range tg {
				if field == "refId" || field == "datasource" || field == "queryType" || field == "hide" {
					continue
				}
				q := substitute(tg)
				q[field] = map[string]any{"not": "a value"}
				ref := fmt.Sprintf("F%d", len(probesQ))
				q["refId"] = ref
				raw, _ := json.Marshal(q)
				probesQ = append(probesQ, backend.DataQuery{RefID: ref, QueryType: "promql", JSON: raw, TimeRange: backend.TimeRange{From: from, To: to}})
				fields[ref] = title + ": " + field
			}
		}
	}
	resp, err = p.QueryData(ctx, pc, probesQ...)
	if err != nil {
		t.Fatal(err)
	}
	for ref, what := range fields {
		field := what[strings.LastIndex(what, ": ")+2:]
		if r := resp.Responses[ref]; r.Error == nil || !strings.Contains(r.Error.Error(), "field "+field) {
			t.Errorf("%s: the plugin does not read this promql field (%v)", what, r.Error)
		}
	}
	if p.Exited() {
		t.Error("the plugin exited")
	}
}
