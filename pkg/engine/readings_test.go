package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/inferscope/pkg/profile"
)

// TestWindowMeanMatchersSorted: the gate's window mean writes every selector with its matchers
// in label order, the same text on every call, although a measure's fixed matchers are a map
// (whose iteration order Go varies call by call).
func TestWindowMeanMatchersSorted(t *testing.T) {
	p, err := profile.ByName("custom")
	if err != nil {
		t.Fatal(err)
	}
	m := p.Roles[profile.Latency][0]
	m.Matchers = map[string]string{"zone": "eu", "cluster": "c1", "job": "infer", "shard": "3", "app": "rec"}
	roles := map[profile.Role][]profile.Measure{}
	for r, ms := range p.Roles {
		roles[r] = ms
	}
	roles[profile.Latency] = []profile.Measure{m}
	p.Roles = roles
	present := map[string]bool{}
	for _, n := range m.Required() {
		present[n] = true
	}
	r := (&Engine{Profile: p, Present: present}).Reader()
	q := WindowMeanQuery{Role: profile.Latency, Model: "recsys-ranker", Versions: []string{"v2", "v1"},
		Instances: []string{"node-b:8000", "node-a:8000"}, Window: 2 * time.Hour, At: time.Unix(1e9, 0)}
	first, why := r.windowMeanExpr(q)
	if why != "" {
		t.Fatal(why)
	}
	for i := 0; i < 50; i++ {
		if got, _ := r.windowMeanExpr(q); got != first {
			t.Fatalf("call %d wrote\n%s\nthe first wrote\n%s", i, got, first)
		}
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(first)
	if err != nil {
		t.Fatalf("%s: %v", first, err)
	}
	selectors := 0
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		selectors++
		var names []string
		for _, lm := range vs.LabelMatchers {
			if lm.Name != "__name__" {
				names = append(names, lm.Name)
			}
		}
		want := "app cluster instance job model_name model_version shard zone"
		if got := strings.Join(names, " "); got != want {
			t.Errorf("selector %s: matchers %s, want %s", vs, got, want)
		}
		return nil
	})
	if selectors != 2 {
		t.Errorf("%d selectors in %s, want the sum's and the count's", selectors, first)
	}
	t.Log(first)
}

// TestReaderWithoutPrometheus: a reader on an engine without Prometheus answers an error, not
// a panic, and counts no query.
func TestReaderWithoutPrometheus(t *testing.T) {
	p, _ := profile.ByName("custom")
	present := map[string]bool{}
	for _, n := range p.Roles[profile.Latency][0].Required() {
		present[n] = true
	}
	r := (&Engine{Profile: p, Present: present}).Reader()
	if _, err := r.RuleSeries(context.Background(), "up", time.Unix(0, 0), time.Unix(600, 0), time.Minute); err == nil {
		t.Error("no error without Prometheus")
	}
	if _, why := r.RoleWindowMean(context.Background(), WindowMeanQuery{Role: profile.Latency, Model: "m", Versions: []string{"a", "b"}, Window: time.Hour, At: time.Unix(3600, 0)}); !strings.Contains(why, "no Prometheus") {
		t.Errorf("window mean without Prometheus: %q", why)
	}
	if n := r.Queries(); n != 0 {
		t.Errorf("%d queries counted", n)
	}
}
