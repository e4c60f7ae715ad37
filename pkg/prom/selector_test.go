package prom

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// The fuzz tests parse what we build with Prometheus' own PromQL parser and check that the
// selector holds exactly the matchers we meant, whatever the value.

var nastyValues = []string{
	"",
	"plain",
	`"`,
	`\`,
	`\"`,
	`"}`,
	`"} or vector(1)`,
	`a"} or vector(1) or up{b="`,
	`x", job=~".+`,
	`.*`,
	`a|b`,
	`(?i)A`,
	`[`,
	`$1`,
	"line\nbreak",
	"cr\rtab\t",
	"nul\x00byte",
	"del\x7f",
	"bell\a\b\f\v",
	`\x41`,
	`\u0041`,
	"ünïcødé 模型 🚀",
	"\u2028\u2029",
	"\ufeffbom",
	"\xff\xfe invalid",
	"trail\xc3",
	"\ufffd replacement",
	"`backtick`",
	`'single'`,
	"{{model}}",
	"$__all",
}

func addSeeds(f *testing.F) {
	for _, v := range nastyValues {
		f.Add(v)
	}
}

func mustParseSelector(t *testing.T, sel string) []*labels.Matcher {
	t.Helper()
	ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(sel)
	if err != nil {
		t.Fatalf("selector %s does not parse: %v", sel, err)
	}
	return ms
}

func FuzzQuote(f *testing.F) {
	addSeeds(f)
	p := parser.NewParser(parser.Options{})
	f.Fuzz(func(t *testing.T, value string) {
		lit := Quote(value)
		// The literal on its own decodes to the value, byte for byte.
		expr, err := p.ParseExpr(lit)
		if err != nil {
			t.Fatalf("Quote(%q) = %s does not parse: %v", value, lit, err)
		}
		sl, ok := expr.(*parser.StringLiteral)
		if !ok {
			t.Fatalf("Quote(%q) = %s parses as %T, not a string literal", value, lit, expr)
		}
		if sl.Val != value {
			t.Fatalf("Quote(%q) = %s decodes to %q", value, lit, sl.Val)
		}
		if strings.ContainsAny(lit[1:len(lit)-1], "\n\r") {
			t.Fatalf("Quote(%q) = %s holds a raw line break", value, lit)
		}

		sel, err := Selector("inference_requests_total", Eq("model_name", value), NotEq("model_version", value))
		if !utf8.ValidString(value) {
			if err == nil {
				t.Fatalf("Selector accepted invalid UTF-8 %q", value)
			}
			return
		}
		if err != nil {
			t.Fatalf("Selector(%q): %v", value, err)
		}
		ms := mustParseSelector(t, sel)
		want := []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "__name__", "inference_requests_total"),
			labels.MustNewMatcher(labels.MatchEqual, "model_name", value),
			labels.MustNewMatcher(labels.MatchNotEqual, "model_version", value),
		}
		checkMatchers(t, sel, ms, want)
	})
}

func FuzzMatchAny(f *testing.F) {
	for i, a := range nastyValues {
		f.Add(a, nastyValues[(i+1)%len(nastyValues)], nastyValues[(i+7)%len(nastyValues)])
	}
	f.Add("a", "b", "a|b")
	f.Add("a.b", "c", "axb")
	f.Add("", "x", "")
	f.Fuzz(func(t *testing.T, a, b, probe string) {
		sel, err := Selector("m", In("gpu", a, b), Eq("instance", "n1"))
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			if err == nil {
				t.Fatalf("Selector accepted invalid UTF-8 %q / %q", a, b)
			}
			return
		}
		if err != nil {
			t.Fatalf("Selector(%q, %q): %v", a, b, err)
		}
		ms := mustParseSelector(t, sel)
		checkMatchers(t, sel, ms, []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "__name__", "m"),
			labels.MustNewMatcher(labels.MatchRegexp, "gpu", AnyOfRegex([]string{a, b})),
			labels.MustNewMatcher(labels.MatchEqual, "instance", "n1"),
		})
		gpu := byName(ms)["gpu"]
		// The regex matches both values and nothing else.
		for _, v := range []string{a, b} {
			if !gpu.Matches(v) {
				t.Fatalf("regex %q (from %q, %q) does not match %q", gpu.Value, a, b, v)
			}
		}
		if utf8.ValidString(probe) {
			if got, want := gpu.Matches(probe), probe == a || probe == b; got != want {
				t.Fatalf("regex %q (from %q, %q) matches %q: %v, want %v", gpu.Value, a, b, probe, got, want)
			}
		}
	})
}

// checkMatchers compares the parsed matchers with want, ignoring order (the parser moves the
// metric name), and requires each label to appear exactly once.
func checkMatchers(t *testing.T, sel string, got, want []*labels.Matcher) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("selector %s parses to %d matchers %v, want %v", sel, len(got), got, want)
	}
	gotBy := byName(got)
	if len(gotBy) != len(got) {
		t.Fatalf("selector %s repeats a label: %v", sel, got)
	}
	for _, w := range want {
		g, ok := gotBy[w.Name]
		if !ok || g.Type != w.Type || g.Value != w.Value {
			t.Fatalf("selector %s: matcher for %s is %v, want %s", sel, w.Name, g, w)
		}
	}
}

func byName(ms []*labels.Matcher) map[string]*labels.Matcher {
	out := make(map[string]*labels.Matcher, len(ms))
	for _, m := range ms {
		out[m.Name] = m
	}
	return out
}

func TestSelectorShapes(t *testing.T) {
	cases := []struct {
		metric   string
		matchers []Matcher
		want     string
	}{
		{"up", nil, "up"},
		{"vllm:num_requests_running", []Matcher{Eq("model_name", "llama")}, `vllm:num_requests_running{model_name="llama"}`},
		{"", []Matcher{Eq("__name__", "up")}, `{__name__="up"}`},
		{"m", []Matcher{In("v", "b", "a", "b")}, `m{v=~"a|b"}`},
		{"m", []Matcher{In("v", "1.0")}, `m{v=~"1\\.0"}`},
		{"m", []Matcher{Regex("v", "canary-.*")}, `m{v=~"canary-.*"}`},
		{"m", []Matcher{Eq("v", "a\"b\\c\n")}, `m{v="a\"b\\c\n"}`},
		{"m", EqAll(map[string]string{"job": "gw", "code": "5xx", "le": "+Inf"}), `m{code="5xx",job="gw",le="+Inf"}`},
		{"m", EqAll(nil), "m"},
	}
	for _, c := range cases {
		got, err := Selector(c.metric, c.matchers...)
		if err != nil {
			t.Errorf("Selector(%q, %v): %v", c.metric, c.matchers, err)
			continue
		}
		if got != c.want {
			t.Errorf("Selector(%q, %v) = %s, want %s", c.metric, c.matchers, got, c.want)
		}
		mustParseSelector(t, got)
	}
}

func TestSelectorRejects(t *testing.T) {
	cases := []struct {
		name     string
		metric   string
		matchers []Matcher
		wantErr  string
	}{
		{"empty", "", nil, "needs a metric name"},
		{"bad metric", "up{}", nil, "invalid metric name"},
		{"metric with injection", `up or vector(1)`, nil, "invalid metric name"},
		{"bad label", "m", []Matcher{Eq(`a="b",c`, "x")}, "invalid label name"},
		{"label starting with digit", "m", []Matcher{Eq("1a", "x")}, "invalid label name"},
		{"empty label", "m", []Matcher{Eq("", "x")}, "invalid label name"},
		{"no values", "m", []Matcher{In("gpu")}, "no values"},
		{"bad regex", "m", []Matcher{Regex("v", "(")}, "invalid regular expression"},
		{"invalid utf8", "m", []Matcher{Eq("v", "\xff")}, "not valid UTF-8"},
		{"unknown type", "m", []Matcher{{Label: "v", Type: "=="}}, "unknown match type"},
	}
	for _, c := range cases {
		_, err := Selector(c.metric, c.matchers...)
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.wantErr)
		}
	}
}

func TestMatchersText(t *testing.T) {
	got, err := MatchersText(Eq("a", "1"), In("b", "x", "y"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `a="1",b=~"x|y"`; got != want {
		t.Fatalf("MatchersText = %s, want %s", got, want)
	}
	mustParseSelector(t, "{"+got+"}")
}
