package engine

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// publicTypes are the query-type names dashboards and alert rules store: never renamed.
var publicTypes = []string{"baseline", "errors", "gpu", "gpu_idle_under_traffic", "gpu_live", "gpumem_forecast",
	"jitter", "latency", "promql", "split", "throughput"}

func TestRegistryHoldsThePublicTypes(t *testing.T) {
	if got := Types(); !reflect.DeepEqual(got, publicTypes) {
		t.Errorf("types %v, want %v", got, publicTypes)
	}
	if _, ok := Spec(DefaultType); !ok {
		t.Errorf("the default type %q is not registered", DefaultType)
	}
}

func TestEverySpecDocumented(t *testing.T) {
	selection := []string{"model", "version", "instance", "gpu"}
	check := func(where string, f FieldSpec) {
		if f.Name == "" || f.Kind == "" || strings.TrimSpace(f.Doc) == "" {
			t.Errorf("%s: field %+v lacks a name, kind or description", where, f)
		}
		if (f.Kind == KindChoice || f.Kind == KindChoices) && len(f.Allowed) == 0 {
			t.Errorf("%s.%s: a choice without allowed values", where, f.Name)
		}
		if f.Kind == KindChoice && !slices.Contains(f.Allowed, f.DefaultString()) {
			t.Errorf("%s.%s: default %q is not allowed", where, f.Name, f.DefaultString())
		}
	}
	for _, s := range Specs() {
		if s.Title == "" || s.Doc == "" || s.parse == nil {
			t.Errorf("%s: title %q, doc %q, parser %v", s.Name, s.Title, s.Doc, s.parse != nil)
		}
		seen := map[string]bool{}
		for _, f := range s.Fields {
			check(s.Name, f)
			if seen[f.Name] {
				t.Errorf("%s: field %s twice", s.Name, f.Name)
			}
			seen[f.Name] = true
			if slices.ContainsFunc(CommonFields(), func(c FieldSpec) bool { return c.Name == f.Name }) {
				t.Errorf("%s: own field %s shadows a common field", s.Name, f.Name)
			}
		}
		for _, flt := range s.Filters {
			if !slices.Contains(selection, flt) {
				t.Errorf("%s: filter %q is not a selection field", s.Name, flt)
			}
		}
	}
	for _, f := range CommonFields() {
		check("common", f)
	}
}

// TestDefaultsParse: every stated default, sent explicitly, is accepted and parses to what the
// field's absence gives, so the registry says what the parsers do.
func TestDefaultsParse(t *testing.T) {
	for _, s := range Specs() {
		base := `{"expr":"up"}`
		absent, err := ParseAs(s.Name, []byte(base))
		if err != nil {
			t.Errorf("%s with no fields: %v", s.Name, err)
			continue
		}
		explicit := map[string]any{"expr": "up"}
		for _, f := range s.Fields {
			switch d := f.Default.(type) {
			case nil:
				continue
			case time.Duration:
				explicit[f.Name] = formatDuration(d)
			default:
				explicit[f.Name] = d
			}
		}
		raw, _ := json.Marshal(explicit)
		got, err := ParseAs(s.Name, raw)
		if err != nil {
			t.Errorf("%s with its defaults %s: %v", s.Name, raw, err)
			continue
		}
		if !reflect.DeepEqual(got, absent) {
			t.Errorf("%s: defaults sent explicitly parse to %+v, absent to %+v", s.Name, got, absent)
		}
	}
}

// TestBoundsAreChecked: a value just outside a stated bound is refused, naming the field.
func TestBoundsAreChecked(t *testing.T) {
	for _, s := range Specs() {
		for _, f := range s.Fields {
			if !f.bounded() {
				continue
			}
			var bad any
			switch f.Kind {
			case KindNumber, KindInt:
				bad = f.Max + 1
			case KindDuration:
				bad = formatDuration(seconds(f.Max) + time.Second)
			default:
				continue
			}
			raw, _ := json.Marshal(map[string]any{f.Name: bad, "expr": "up"})
			_, err := ParseAs(s.Name, raw)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != f.Name {
				t.Errorf("%s.%s = %v: %v, want an error naming the field", s.Name, f.Name, bad, err)
			}
		}
	}
}

// TestFrontMatchesJSON: each typed query parses to what its JSON does, and every struct field
// reaches the registry (build refuses a name the spec lacks).
func TestFrontMatchesJSON(t *testing.T) {
	sel := Select{RefID: "A", Model: []string{"m"}, Version: []string{"v1", "v2"}, Instance: []string{"node-a:8000"}, GPU: []string{"0"},
		KeepWarmup: true, RateInterval: 2 * time.Minute, Series: []string{"x"}, LegendFormat: "{{model_name}}"}
	common := `"refId":"A","model":["m"],"version":["v1","v2"],"instance":["node-a:8000"],"gpu":["0"],"warmupFilter":false,` +
		`"rateInterval":"2m","series":["x"],"legendFormat":"{{model_name}}"`
	cases := []struct {
		typ   string
		front Front
		own   string
	}{
		{"latency", Latency{sel, []float64{0.9}, ByInstance}, `"quantiles":[0.9],"by":"instance"`},
		{"split", Split{sel, 2 * time.Hour, ByInstance}, `"baselineWindow":"2h","by":"instance"`},
		{"jitter", Jitter{sel, 4, ByInstance}, `"threshold":4,"by":"instance"`},
		{"baseline", Baseline{sel, 0.9, 5, 20 * time.Minute, 2, 4, 5 * time.Minute, 2, ByInstance},
			`"quantile":0.9,"days":5,"window":"20m","ratioWarn":2,"ratioCrit":4,"for":"5m","minDays":2,"by":"instance"`},
		{"throughput", Throughput{sel, "total"}, `"by":"total"`},
		{"errors", Errors{sel, ByInstance}, `"by":"instance"`},
		{"gpu", GPU{sel, []GPUMetric{GPUPower}}, `"metrics":["power"]`},
		{"gpumem_forecast", GPUMemForecast{sel, 0.9, time.Hour}, `"threshold":0.9,"window":"1h"`},
		{"gpu_idle_under_traffic", GPUIdleUnderTraffic{sel, 20 * time.Minute, 0.3}, `"idleFor":"20m","qpsFraction":0.3`},
		{"gpu_live", GPULive{sel}, `"refId":"A"`},
		{"promql", PromQL{sel, "up"}, `"expr":"up"`},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.typ] = true
		got, err := c.front.Query()
		if err != nil {
			t.Errorf("%s: %v", c.typ, err)
			continue
		}
		want, err := ParseAs(c.typ, []byte("{"+common+","+c.own+"}"))
		if err != nil {
			t.Fatalf("%s JSON: %v", c.typ, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: typed %+v\n JSON %+v", c.typ, got, want)
		}
		// Every field set differs from the default: the typed query is not the default one.
		if def, _ := ParseAs(c.typ, []byte(`{"expr":"up"}`)); c.typ != "gpu_live" && c.typ != "promql" && reflect.DeepEqual(got.Runner(), def.Runner()) {
			t.Errorf("%s: the typed fields did not reach the parser", c.typ)
		}
	}
	for _, typ := range Types() {
		if !covered[typ] {
			t.Errorf("%s: no typed front tested", typ)
		}
	}
	// Zero values are the defaults; a bad value is refused with the JSON's message.
	if _, err := (Jitter{Threshold: 0.5}).Query(); err == nil || !strings.Contains(err.Error(), "field threshold") {
		t.Errorf("bad threshold: %v", err)
	}
	if _, err := build(&jitterSpec, Select{}, "treshold", 4.0); err == nil || !strings.Contains(err.Error(), `no field "treshold"`) {
		t.Errorf("misspelt field: %v", err)
	}
}
