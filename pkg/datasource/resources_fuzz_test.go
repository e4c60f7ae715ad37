package datasource

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/triage"
)

// FuzzResourceBodies: the backtest and rules resources' body decoding never panics, and a body
// it refuses is named in a message of bounded length.
func FuzzResourceBodies(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"params":{"latencyWarnFor":"3m"},"from":"0","to":"1700000000","rules":["latency-p0"]}`,
		`{"last":"400d"}`, `{"action":"render","params":{},"existing":null}`, `[]`, `null`, `{"from":1}`,
		`{"params":{"x":` + strings.Repeat("[", 500), `{"a":1}{"b":2}`, "\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var b backtestRequest
		if err := decodeBody(body, &b, "backtest", "{…}"); err != nil && len(err.Error()) > 2000 {
			t.Fatalf("a %d-byte message for a %d-byte body", len(err.Error()), len(body))
		}
		var r rulesRequest
		_ = decodeBody(body, &r, "rules", "{…}")
	})
}

// FuzzResourceQueries: the triage and gate resources' query strings never panic their readers,
// and an unknown parameter is quoted back clipped and as valid UTF-8.
func FuzzResourceQueries(f *testing.F) {
	for _, seed := range []string{
		"model=m&from=0&to=1700000000", "model=m&before=1h&gpu=0%7C1", "windw=15m", "model=%zz", "at=-1&window=0s",
		"latencyThreshold=10%25&memoryThreshold=0.05&minRequests=NaN&minPoints=1e99", "statusCodes=maybe",
		"kind=version&model=a%7Cb%7C%24__all&from=0&to=1", "kind=gpu&instance=node-a&modle=x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if q, err := resourceQuery("triage?"+raw, "triage", triage.QueryKeys...); err == nil {
			_, _ = triage.OptionsFromQuery(q)
		} else if !utf8.ValidString(err.Error()) {
			t.Fatalf("message is not UTF-8: %q", err.Error())
		}
		if q, err := resourceQuery("gate?"+raw, "gate", append([]string{"statusCodes"}, gate.QueryKeys...)...); err == nil {
			_, _ = gate.OptionsFromQuery(q)
		}
		if vr, err := parseVariableRequest("variables?" + raw); err == nil {
			for _, v := range append(vr.models, vr.instances...) { // "a|b" is the set {a, b}: no value keeps a "|"
				if v == "" || v == "$__all" || strings.Contains(v, "|") {
					t.Fatalf("variables?%s: value %q", raw, v)
				}
			}
		} else if !utf8.ValidString(err.Error()) {
			t.Fatalf("variables: message is not UTF-8: %q", err.Error())
		}
		_, _ = url.ParseQuery(raw)
	})
}
