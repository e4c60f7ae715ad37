package engine

import (
	"testing"

	"github.com/inferscope/inferscope/pkg/profile"
)

// TestErrorsPerModel: TorchServe's error counter (Requests5XX) carries no model, the others'
// do; with the names Prometheus has known, the measure resolved is the one judged, and a profile
// whose error counter is absent has no ratio to mistake.
func TestErrorsPerModel(t *testing.T) {
	for _, c := range []struct {
		profile string
		present map[string]bool
		want    bool
	}{
		{"torchserve", nil, false},
		{"custom", nil, true},
		{"vllm", nil, true},
		{"torchserve", map[string]bool{}, true},
		{"torchserve", present(t, "torchserve", profile.Errors), false},
	} {
		p, err := profile.ByName(c.profile)
		if err != nil {
			t.Fatal(err)
		}
		if got := (&Engine{Profile: p, Present: c.present}).ErrorsPerModel(); got != c.want {
			t.Errorf("%s (present %v): ErrorsPerModel %v, want %v", c.profile, c.present, got, c.want)
		}
	}
}

// present is the set of names a profile's first measure of role needs.
func present(t *testing.T, name string, role profile.Role) map[string]bool {
	t.Helper()
	p, err := profile.ByName(name)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := p.Measures(role)
	out := map[string]bool{}
	for _, n := range ms[0].Required() {
		out[n] = true
	}
	return out
}
