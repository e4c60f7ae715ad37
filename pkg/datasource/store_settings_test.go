package datasource

import (
	"strings"
	"testing"
)

// TestStoreSettings: Thanos' parameters come from jsonData (unset: nil, the querier's defaults);
// a value that is not a boolean, and a cluster URL cut short, are settings problems that say what
// the setting takes.
func TestStoreSettings(t *testing.T) {
	s, err := ParseSettings(instanceSettings(t, "http://thanos-query:10902", map[string]any{"thanosDedup": false, "thanosPartialResponse": true}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.Thanos.Dedup == nil || *s.Thanos.Dedup || s.Thanos.PartialResponse == nil || !*s.Thanos.PartialResponse {
		t.Errorf("thanos settings %+v", s.Thanos)
	}
	s, err = ParseSettings(instanceSettings(t, "http://thanos-query:10902", nil, nil))
	if err != nil || s.Thanos.Dedup != nil || s.Thanos.PartialResponse != nil {
		t.Errorf("unset thanos settings: %+v, %v", s.Thanos, err)
	}
	for _, c := range []struct {
		url  string
		json map[string]any
		want string
	}{
		{"http://thanos-query:10902", map[string]any{"thanosDedup": "no"}, "setting thanosDedup must be true or false"},
		{"http://vmselect:8481/select/0", nil, "/select/0/prometheus"},
		{"http://mimir:8080/prometheus/api/v1/", nil, "give the server's base URL"},
	} {
		_, err := ParseSettings(instanceSettings(t, c.url, c.json, nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: got %v, want %q", c.url, c.json, err, c.want)
		}
	}
}
