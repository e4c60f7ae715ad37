package datasource

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/plugintest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// updateGolden rewrites testdata/golden/<type>.json from the plugin's answers instead of
// comparing: go test ./pkg/datasource -run Golden -update.
var updateGolden = flag.Bool("update", false, "rewrite the golden frame files under testdata/golden")

// goldenQuery is one query of the golden set: its type (the golden file's name), time range,
// step and JSON model.
type goldenQuery struct {
	name     string
	from, to time.Time
	step     time.Duration
	model    map[string]any
}

// goldenBedQueries is one query per Prometheus-backed query type on the test bed's history,
// each on an incident that gives its answer notices, warm-up intervals or thresholds to show.
func goldenBedQueries(t *testing.T, s *testbed.Scenario) []goldenQuery {
	t.Helper()
	incident := func(k testbed.IncidentKind) testbed.Incident {
		in, ok := s.Incident(k)
		if !ok {
			t.Fatalf("the scenario has no %s incident", k)
		}
		return in
	}
	restart, slow, jitter := incident(testbed.WarmupRestart), incident(testbed.ComputeSlowdown), incident(testbed.NetworkJitter)
	idle, canary := incident(testbed.GPUIdle), incident(testbed.CanarySlower)
	q := func(name string, from, to time.Time, step time.Duration, fields map[string]any) goldenQuery {
		fields["refId"], fields["queryType"] = "A", name
		return goldenQuery{name: name, from: from, to: to, step: step, model: fields}
	}
	return []goldenQuery{
		q("promql", restart.Start.Add(-30*time.Minute), restart.End.Add(30*time.Minute), 5*time.Minute, map[string]any{
			"expr": `sum by (model_name) (rate(inference_requests_total[5m]))`, "legendFormat": "{{model_name}} QPS"}),
		q("latency", restart.Start.Add(-10*time.Minute), restart.End.Add(10*time.Minute), time.Minute, map[string]any{
			"model": "recsys-ranker", "by": "instance"}),
		q("split", slow.Start.Add(-20*time.Minute), slow.End, 5*time.Minute, map[string]any{
			"model": "recsys-ranker", "instance": "node-b:8000"}),
		q("jitter", jitter.Start.Add(-15*time.Minute), jitter.End.Add(15*time.Minute), 5*time.Minute, map[string]any{
			"model": "text-embedder"}),
		q("baseline", slow.Start.Add(-10*time.Minute), slow.End, 5*time.Minute, map[string]any{
			"model": "recsys-ranker", "instance": "node-b:8000", "by": "instance"}),
		q("throughput", canary.Start.Add(-30*time.Minute), canary.Start.Add(30*time.Minute), 10*time.Minute, map[string]any{
			"model": "recsys-ranker", "by": "version"}),
		q("errors", idle.Start.Add(-10*time.Minute), idle.End.Add(10*time.Minute), 5*time.Minute, map[string]any{
			"model": "text-embedder"}),
		q("gpu", slow.Start.Add(-10*time.Minute), slow.End, 10*time.Minute, map[string]any{
			"instance": "node-b:8000", "gpu": "0|5", "metrics": []string{"util", "memory", "temperature", "power"}}),
		q("gpumem_forecast", slow.Start.Add(-45*time.Minute), slow.Start.Add(5*time.Minute), 5*time.Minute, map[string]any{
			"instance": "node-b", "gpu": "0"}),
		q("gpu_idle_under_traffic", idle.Start.Add(-5*time.Minute), idle.End.Add(5*time.Minute), time.Minute, map[string]any{
			"instance": idle.Instance, "gpu": "6"}),
	}
}

// TestGoldenFrames runs one query of each Prometheus-backed type through the built plugin over
// gRPC, against a real Prometheus on the test bed's history (custom naming, its fixed end), and
// compares each answer's frames with testdata/golden/<type>.json: what the data source answers
// is a contract that refactors of the engine must keep.
func TestGoldenFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the plugin executable")
	}
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	p := plugintest.Start(t, plugintest.Binary(t, protocolVersion))
	pc := plugintest.PluginContext(PluginID, instanceSettings(t, srv.URL, nil, nil))
	for _, gq := range goldenBedQueries(t, s) {
		t.Run(gq.name, func(t *testing.T) {
			resp, err := p.QueryData(context.Background(), pc, dataQuery("A", gq.from, gq.to, gq.step, gq.model))
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, gq, resp.Responses["A"], map[string]string{srv.URL: "PROMETHEUS"})
		})
	}
	if p.Exited() {
		t.Error("the plugin process exited")
	}
}

// checkGolden compares an answer, serialized with goldenJSON, with testdata/golden/<name>.json
// (or rewrites it with -update). Each URL of placeholders (loopback ports change run to run) is
// replaced by its placeholder.
func checkGolden(t *testing.T, gq goldenQuery, r backend.DataResponse, placeholders map[string]string) {
	t.Helper()
	got, err := goldenJSON(gq, r)
	if err != nil {
		t.Fatal(err)
	}
	for url, name := range placeholders {
		got = bytes.ReplaceAll(got, []byte(url), []byte(name))
	}
	path := filepath.Join("testdata", "golden", gq.name+".json")
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: write it with go test ./pkg/datasource -run Golden -update", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			g, w := lineAt(gl, i), lineAt(wl, i)
			if g != w {
				t.Fatalf("%s differs from the answer at line %d:\n got: %s\nwant: %s\n(go test ./pkg/datasource -run Golden -update rewrites it, if the change is meant)", path, i+1, g, w)
			}
		}
	}
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<end of file>"
}

// goldenAnswer is the stable form of an answer: its status and error, and every frame with its
// name, meta, and each field's name, type, labels, config and values.
type goldenAnswer struct {
	Query  map[string]any `json:"query"`
	From   string         `json:"from"`
	To     string         `json:"to"`
	Step   string         `json:"step"`
	Status int            `json:"status"`
	Error  string         `json:"error,omitempty"`
	Frames []goldenFrame  `json:"frames"`
}

type goldenFrame struct {
	Name   string          `json:"name"`
	RefID  string          `json:"refId"`
	Meta   *data.FrameMeta `json:"meta"`
	Fields []goldenField   `json:"fields"`
}

type goldenField struct {
	Name   string            `json:"name"`
	Type   string            `json:"type"`
	Labels data.Labels       `json:"labels,omitempty"`
	Config *data.FieldConfig `json:"config,omitempty"`
	Values []any             `json:"values"`
}

func goldenJSON(gq goldenQuery, r backend.DataResponse) ([]byte, error) {
	a := goldenAnswer{Query: gq.model, From: gq.from.UTC().Format(time.RFC3339), To: gq.to.UTC().Format(time.RFC3339),
		Step: gq.step.String(), Status: int(r.Status), Frames: []goldenFrame{}}
	if r.Error != nil {
		a.Error = r.Error.Error()
	}
	for _, f := range r.Frames {
		gf := goldenFrame{Name: f.Name, RefID: f.RefID, Meta: f.Meta, Fields: []goldenField{}}
		if f.Meta != nil && f.Meta.ExecutedQueryString != "" {
			// The engine sends a query's Prometheus requests concurrently and records each as it
			// is sent, so their order changes run to run; the set of requests is the contract.
			m := *f.Meta
			lines := strings.Split(m.ExecutedQueryString, "\n")
			slices.Sort(lines)
			m.ExecutedQueryString = strings.Join(lines, "\n")
			gf.Meta = &m
		}
		for _, fd := range f.Fields {
			vals := make([]any, fd.Len())
			for i := range vals {
				vals[i] = goldenValue(fd.At(i))
			}
			gf.Fields = append(gf.Fields, goldenField{Name: fd.Name, Type: fd.Type().String(), Labels: fd.Labels, Config: fd.Config, Values: vals})
		}
		a.Frames = append(a.Frames, gf)
	}
	out, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// goldenValue writes a cell as JSON can hold it: times in RFC 3339, nulls as null, non-finite
// numbers as strings. Numbers keep 12 significant digits: the answers are sums and ratios whose
// last bits depend on the order of additions, which is no part of the contract.
func goldenValue(v any) any {
	switch x := v.(type) {
	case *float64:
		if x == nil {
			return nil
		}
		return goldenValue(*x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
		return r
	case *time.Time:
		if x == nil {
			return nil
		}
		return goldenValue(*x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case *string:
		if x == nil {
			return nil
		}
		return *x
	case *bool:
		if x == nil {
			return nil
		}
		return *x
	case *int64:
		if x == nil {
			return nil
		}
		return *x
	case string, bool, int64, int32, uint64:
		return x
	}
	return fmt.Sprintf("%T %v", v, v)
}
