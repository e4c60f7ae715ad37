//go:build cgo

package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/inferscope/inferscope/pkg/datasource"
	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/probetest"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
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

// valueAt is the value of the response's series whose label name has value at t (false when
// the series or the instant is missing).
func valueAt(frames data.Frames, name, value string, at time.Time) (float64, bool) {
	v, ok := allValues(frames, name, value)[at.UTC()]
	return v, ok
}

// allValues lists every (time, value) of the response's series whose label name has value.
func allValues(frames data.Frames, name, value string) map[time.Time]float64 {
	out := map[time.Time]float64{}
	for _, f := range frames {
		var ts *data.Field
		for _, fd := range f.Fields {
			if fd.Type() == data.FieldTypeTime || fd.Type() == data.FieldTypeNullableTime {
				ts = fd
			}
		}
		if ts == nil {
			continue
		}
		for _, fd := range f.Fields {
			if fd == ts || fd.Labels[name] != value {
				continue
			}
			for i := 0; i < fd.Len(); i++ {
				tv, ok1 := ts.ConcreteAt(i)
				v, ok2 := fd.ConcreteAt(i)
				if x, ok3 := v.(float64); ok1 && ok2 && ok3 {
					out[tv.(time.Time).UTC()] = x
				}
			}
		}
	}
	return out
}

// TestEveryPanelReturnsData runs each panel's queries through the built plugin over gRPC against
// the test bed's Prometheus and mock probes, at a range holding the restart, the compute slowdown
// and the idle GPU, with the template variables at "All" as Grafana interpolates them.
func TestEveryPanelReturnsData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	d := overview(t)
	dir, s := tbtest.TSDB(t)
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
		panel, refID string
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
			origins[ref] = origin{title, tg.String("refId")}
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
		if rows == 0 {
			t.Errorf("%s (%s): no data", o.panel, ref)
		}
	}
	byPanel := func(title, refID string) data.Frames {
		for ref, o := range origins {
			if o.panel == title && o.refID == refID {
				return resp.Responses[ref].Frames
			}
		}
		t.Fatalf("no query %s of panel %q", refID, title)
		return nil
	}

	// Saturation truth: in the middle of the compute slowdown (a steady regime over the whole
	// 5m rate window) node-b's received bytes and CPU busy share are the scenario's, within
	// 0.5 % (the truth is the instantaneous rate at the window's middle; traffic curvature over
	// 5 minutes is far below that); node-b's CPU is busier than node-a's (pre-processing of
	// preempted requests).
	at := slow.Start.Add(20 * time.Minute)
	mid := at.Add(-150 * time.Second)
	within := func(what string, got, want, rel float64) {
		t.Helper()
		if math.Abs(got-want) > rel*math.Abs(want) {
			t.Errorf("%s = %v, want %v ±%.1f%%", what, got, want, rel*100)
		}
	}
	if got, ok := valueAt(byPanel("Network throughput", "A"), "instance", "node-b:9100", at); !ok {
		t.Errorf("Network throughput: no node-b:9100 value at %s", at.Format(time.RFC3339))
	} else {
		within("node-b received bytes/s", got, s.HostNetworkRate("node-b", false, mid), 0.005)
	}
	cpu := byPanel("CPU busy", "A")
	busyB, okB := valueAt(cpu, "instance", "node-b:9100", at)
	busyA, okA := valueAt(cpu, "instance", "node-a:9100", at)
	if !okA || !okB {
		t.Errorf("CPU busy: no node-a/node-b value at %s", at.Format(time.RFC3339))
	} else {
		within("node-b CPU busy", busyB, s.HostCPUBusy("node-b", mid), 0.005)
		if busyB <= busyA {
			t.Errorf("CPU busy during the compute slowdown: node-b %v not above node-a %v", busyB, busyA)
		}
	}

	// Cache hit ratio truth: the custom service's compile cache, every grid point of the range,
	// to float rounding (rate windows on the history grid are exact); the ratio falls below
	// 0.95 after node-c's restart, while its caches are cold, and is 0.985 elsewhere.
	cache := byPanel("Cache hit rate", "A")
	for _, model := range s.Models() {
		pts := allValues(cache, "model_name", model)
		if len(pts) == 0 {
			t.Errorf("Cache hit rate: no %s series", model)
			continue
		}
		low, checked := 1.0, 0
		for ts, got := range pts {
			if ts.Unix()%int64(testbed.DefaultHistoryStep/time.Second) != 0 {
				continue
			}
			step := testbed.DefaultHistoryStep
			want := s.Increase(testbed.CompileHits, "", model, "", ts.Add(-5*time.Minute), ts, step) /
				s.Increase(testbed.CompileLookups, "", model, "", ts.Add(-5*time.Minute), ts, step)
			within(fmt.Sprintf("%s cache hit ratio at %s", model, ts.Format(time.RFC3339)), got, want, 1e-9)
			low = math.Min(low, got)
			checked++
		}
		if checked < 100 || low > 0.95 {
			t.Errorf("%s cache hit ratio: %d grid points checked, lowest %v (want a cold-cache dip below 0.95)", model, checked, low)
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
