package engine

import (
	"fmt"
	"strings"
	"testing"
)

// TestSplitValues: "a|b" is the set of the literal names a and b in every reading; nothing in
// a value is a regular expression.
func TestSplitValues(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "[]",
		"a":                 "[a]",
		"a|b|a":             "[a b]",
		"a||b|":             "[a b]",
		"$__all":            "[]",
		"a.b|(c)":           "[a.b (c)]",
		"recsys-ranker|.*":  "[recsys-ranker .*]",
		`x"}|y`:             `[x"} y]`,
		"model-a|$__all|m2": "[model-a m2]",
	} {
		if got := fmt.Sprint(SplitValues(in)); got != want {
			t.Errorf("SplitValues(%q) = %s, want %s", in, got, want)
		}
	}
	// A selection field reads the string form the same way; a list is never split.
	f, err := ParseFields([]byte(`{"model":"a|b","version":["v1|v2"]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.Values("model")
	v, _ := f.Values("version")
	if fmt.Sprint(m) != "[a b]" || fmt.Sprint(v) != "[v1|v2]" {
		t.Errorf("model %q version %q", m, v)
	}
}

func TestOneValue(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", " a| ": "a", "a|": "a", "|a|a": "a"} {
		if got, err := OneValue("model", in); err != nil || got != want {
			t.Errorf("OneValue(%q) = %q, %v", in, got, err)
		}
	}
	_, err := OneValue("model", "a|b")
	if err == nil || err.Error() != `model "a|b" names 2 values (a, b): it takes one ("|" separates values)` {
		t.Errorf("a|b: %v", err)
	}
}

func TestUnknownErrorText(t *testing.T) {
	for _, c := range []struct {
		e    UnknownError
		want string
	}{
		{UnknownError{What: "model", Name: "m", Known: []string{"a", "b"}}, `unknown model "m": Prometheus has series of a, b`},
		{UnknownError{What: "version", Of: "of m", Name: "v9", Known: []string{"v1"}}, `unknown version "v9" of m: Prometheus has series of v1`},
		{UnknownError{What: "GPU", Of: "on node n", Name: "7"}, `unknown GPU "7" on node n: Prometheus has no series of any GPU on node n`},
		{UnknownError{What: "node", Name: strings.Repeat("x", 200), Known: make([]string, 25)}, "and 5 more"},
	} {
		if got := c.e.Error(); !strings.Contains(got, c.want) {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestSubjectOf: a query's subject is the selection fields its type reads; the GPU types take a
// node name for an instance and ignore the model filter.
func TestSubjectOf(t *testing.T) {
	for raw, want := range map[string]string{
		`{"queryType":"latency","model":"a|b","version":"v1","instance":"n:1","gpu":"0"}`: "{[a b] [v1] [n:1] [] [] false}",
		`{"queryType":"gpu","model":"a","instance":"node-a","gpu":"0|1"}`:                 "{[] [] [node-a] [] [0 1] true}",
		`{"queryType":"promql","expr":"up","model":"a"}`:                                  "{[] [] [] [] [] false}",
	} {
		q, err := Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(SubjectOf(q)); got != want {
			t.Errorf("%s: %s, want %s", raw, got, want)
		}
	}
}
