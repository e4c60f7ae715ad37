package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// Template safety: selection values reach PromQL only through pkg/prom's matchers. These tests
// parse what the engine builds with Prometheus' own parser and require every selector to hold
// exactly the matchers meant, whatever the value.

var hostileValues = []string{
	"plain", `"`, `\`, `\"`, `"}`, `"} or vector(1)`, `a"} or vector(1) or up{b="`, `x", job=~".+`, `.*`, `a|b`,
	`(?i)A`, `[`, `$1`, "line\nbreak", "nul\x00byte", "del\x7f", `\x41`, "ünïcødé 模型 🚀", "\u2028", "\ufffd", "`", "{{model}}",
	"$__all", `)) or vector(1) #`, `offset 1d`, "]", "[5m]",
}

// checkSelection parses expr and checks that every vector selector's matchers on the selection
// labels select exactly the wanted values, and that no other label is matched except the
// metric name and the measure's fixed matchers.
func checkSelection(t *testing.T, expr string, want map[string][]string, allowed map[string]bool) {
	t.Helper()
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("expression does not parse: %v\n%s", err, expr)
	}
	selectors := 0
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		selectors++
		seen := map[string]int{}
		for _, m := range vs.LabelMatchers {
			seen[m.Name]++
			if m.Name == "__name__" || allowed[m.Name] {
				continue
			}
			values, ok := want[m.Name]
			if !ok {
				t.Errorf("selector %s matches label %s, which nothing asked for", vs, m.Name)
				continue
			}
			checkMatcher(t, m, values)
		}
		for name, n := range seen {
			if n > 1 {
				t.Errorf("selector %s matches %s %d times", vs, name, n)
			}
		}
		return nil
	})
	if selectors == 0 {
		t.Errorf("no selector in %s", expr)
	}
}

func checkMatcher(t *testing.T, m *labels.Matcher, values []string) {
	t.Helper()
	if len(values) == 1 && (m.Type != labels.MatchEqual || m.Value != values[0]) {
		t.Errorf("matcher %s, want %s=%q", m, m.Name, values[0])
	}
	if len(values) > 1 && m.Type != labels.MatchRegexp && m.Type != labels.MatchNotRegexp {
		t.Errorf("matcher %s, want a regex over %q", m, values)
	}
	if m.Type == labels.MatchNotRegexp {
		for _, v := range values {
			if m.Matches(v) || !m.Matches(v+"x") || !m.Matches("") {
				t.Errorf("matcher %s does not exclude exactly %q", m, values)
			}
		}
		return
	}
	for _, v := range values {
		if !m.Matches(v) {
			t.Errorf("matcher %s does not match %q", m, v)
		}
		for _, other := range []string{v + "x", "x" + v, v + "\n", strings.ToUpper(v) + "_", ""} {
			if !contains(values, other) && m.Matches(other) {
				t.Errorf("matcher %s also matches %q", m, other)
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// builderExprs returns every expression shape the engine builds for a profile.
func builderExprs(t *testing.T, x *Exec) []string {
	t.Helper()
	var out []string
	by := x.groupLabels()
	for _, role := range profile.AllRoles {
		ms, _ := x.e.Profile.Measures(role)
		for _, m := range ms {
			switch m.Kind {
			case profile.Histogram, profile.Summary, profile.MicrosecondCounter:
				for _, q := range []float64{0, 0.95} {
					for _, off := range []time.Duration{0, 3 * day} {
						e, err := x.latencyExpr(m, q, by, off)
						if err != nil {
							t.Fatalf("%s %s: %v", role, m.Kind, err)
						}
						out = append(out, e)
					}
				}
			case profile.Counter:
				sel, err := selector(m.Metrics, x.measureMatchers(scopeModelVersion, m))
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, rateExpr("rate", sel, x.rateWindow()))
			}
		}
	}
	sel := part{op: "sum", metric: "inference_latency_seconds_bucket", matchers: x.matchers(scopeModelVersion, nil), rate: true, by: by}
	pl, err := x.plan([]part{sel, {op: "max", metric: "x", matchers: sel.matchers, by: by, perInstance: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, unionExpr(pl.exprs))
	sig, err := x.signalsExpr()
	if err != nil {
		t.Fatal(err)
	}
	if sig != "" {
		out = append(out, sig)
	}
	return out
}

func testExec(t *testing.T, p profile.Profile, c Common) *Exec {
	t.Helper()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	x, err := (&Engine{Profile: p}).newExec(c, p, Range{Start: now.Add(-time.Hour), End: now})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// fixedLabels are the labels a profile's measures match by fixed values (Matchers, OneOf).
func fixedLabels(p profile.Profile) map[string]bool {
	out := map[string]bool{}
	for _, ms := range p.Roles {
		for _, m := range ms {
			for l := range m.Matchers {
				out[l] = true
			}
			for l := range m.OneOf {
				out[l] = true
			}
		}
	}
	return out
}

func TestPromQLSelectionIsExact(t *testing.T) {
	for _, p := range profile.All() {
		for _, v := range hostileValues {
			c := Common{Model: []string{v}, Version: []string{v, "v2"}, Instance: []string{"node-a:8000", v}, WarmupFilter: true}
			x := testExec(t, p, c)
			want := map[string][]string{x.instanceLabel: c.Instance}
			if x.modelLabel != "" {
				want[x.modelLabel] = c.Model
			}
			if x.versionLabel != "" {
				want[x.versionLabel] = c.Version
			}
			allowed := fixedLabels(p)
			for _, e := range builderExprs(t, x) {
				checkSelection(t, e, want, allowed)
			}
		}
	}
}

// The warm-up split of a read: steady instances summed by Prometheus (instance!~warming), the
// warming ones fetched on their own (instance=~warming), whatever their names.
func TestPlanWarmingInstances(t *testing.T) {
	custom, _ := profile.ByName("custom")
	for _, v := range hostileValues {
		x := testExec(t, custom, Common{Model: []string{v}, WarmupFilter: true})
		warming := []string{"node-c:8000", v}
		p := part{op: "sum", metric: "inference_requests_total", matchers: x.matchers(scopeModelVersion, nil), rate: true, by: []string{"model_name"}}
		pl, err := x.plan([]part{p}, warming)
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.exprs) != 2 || pl.steady[0] != 0 || pl.own[0] != 1 {
			t.Fatalf("plan %+v", pl)
		}
		for _, e := range pl.exprs {
			checkSelection(t, e, map[string][]string{"model_name": {v}, "instance": warming}, nil)
		}
		if !strings.Contains(pl.exprs[0], "instance!~") || !strings.Contains(pl.exprs[1], "sum by (model_name, instance)") {
			t.Errorf("plan %q", pl.exprs)
		}
	}
}

// Grouped per instance, a latency quantile is taken by Prometheus even while an instance warms
// up: one series per quantile and group, masked afterwards like the buckets were (each group is
// one instance), instead of every bucket of every group (TestLatencyByInstanceWarmup checks the
// numbers against the scenario). Grouped per version, the warming instance's buckets are still
// read on their own.
func TestPlanPerInstanceQuantilesWhileWarming(t *testing.T) {
	custom, _ := profile.ByName("custom")
	x := testExec(t, custom, Common{WarmupFilter: true})
	ms, _ := custom.Measures(profile.Latency)
	if len(ms) == 0 || ms[0].Kind != profile.Histogram {
		t.Fatalf("the custom profile's latency is %+v, want a histogram first", ms)
	}
	for _, c := range []struct {
		by        []string
		quantiles bool // Prometheus takes the quantile
	}{
		{[]string{"model_name", "model_version", "instance"}, true},
		{[]string{"model_name", "model_version"}, false},
	} {
		pl := &latencyPlan{x: x, by: c.by}
		var dst []stat
		if err := pl.plan(latencyReq{ms[0], []float64{0.95}}, &dst); err != nil {
			t.Fatal(err)
		}
		rp, err := x.plan(pl.parts, []string{"node-c:8000"})
		if err != nil {
			t.Fatal(err)
		}
		q := strings.Contains(strings.Join(rp.exprs, " "), "histogram_quantile(0.95, ")
		if q != c.quantiles || (c.quantiles && (len(rp.exprs) != 1 || rp.own[0] != 0 || strings.Contains(rp.exprs[0], "instance!~"))) {
			t.Errorf("by %v: %q (own %v), want Prometheus' quantiles %v", c.by, rp.exprs, rp.own, c.quantiles)
		}
	}
}

// FuzzPromQLSelection: no model, version or instance value can change what a selector means.
func FuzzPromQLSelection(f *testing.F) {
	for _, v := range hostileValues {
		f.Add(v, "v1")
	}
	custom, _ := profile.ByName("custom")
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || a == "" || b == "" {
			t.Skip() // JSON decoding only yields valid UTF-8; empty values mean "all"
		}
		c := Common{Model: []string{a}, Version: []string{a, b}, Instance: []string{b}, WarmupFilter: true}
		if a == b {
			c.Version = []string{a}
		}
		x := testExec(t, custom, c)
		want := map[string][]string{"model_name": c.Model, "model_version": c.Version, "instance": c.Instance}
		for _, e := range builderExprs(t, x) {
			checkSelection(t, e, want, map[string]bool{"status": true})
		}
	})
}

// TestQueriesAcceptedByPrometheus runs every query type of every profile with hostile selection
// values against a real (empty) Prometheus: every expression must be accepted, and every
// selector in it must hold exactly the selection.
func TestQueriesAcceptedByPrometheus(t *testing.T) {
	srv := promtest.Start(t, promtest.Options{})
	c, err := prom.New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	end := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	types := []string{"latency", "split", "jitter", "baseline", "throughput", "errors"}
	for _, p := range profile.All() {
		e := &Engine{Prom: c, Profile: p}
		for _, v := range []string{`"} or vector(1) or up{a="`, `a|b`, "ünï\ncødé"} {
			for _, typ := range types {
				raw := fmt.Sprintf(`{"queryType":%q,"model":[%q,"m2"],"version":[%q],"instance":[%q]}`, typ, v, v, v) // lists: never split on "|"
				raw = strings.ReplaceAll(raw, "\n", `\n`)
				q, err := Parse([]byte(raw))
				if err != nil {
					t.Fatalf("%s: %v", raw, err)
				}
				res, err := e.Run(context.Background(), q, Range{Start: end.Add(-time.Hour), End: end, MinStep: time.Minute})
				if err != nil {
					t.Fatalf("%s %s: %v", p.Name, typ, err)
				}
				if len(res.Series) != 0 {
					t.Errorf("%s %s: an empty Prometheus gave %d series", p.Name, typ, len(res.Series))
				}
				want := map[string][]string{e.Profile.InstanceLabel: {v}}
				if p.ModelLabel != "" {
					want[p.ModelLabel] = []string{v, "m2"}
				}
				if p.VersionLabel != "" {
					want[p.VersionLabel] = []string{v}
				}
				for _, expr := range res.Queries {
					checkSelection(t, expr, want, fixedLabels(p))
				}
			}
		}
	}
}
