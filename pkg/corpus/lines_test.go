package corpus

import (
	"slices"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed"
)

// The truth's lines follow the brief: an XID is due at once, a step of compute ×3 or more
// past the P0 line at once, a gateway's jitter crosses the gateway's line and none of the
// service's own (its time is unchanged), a quiet hour crosses none, and a line that already
// held before the case (vLLM's GPUs pre-allocated at 90 %, past the 85 % P1) is not the case's.
func TestTruthLines(t *testing.T) {
	if raceEnabled {
		t.Skip("arithmetic on the scenario alone, several times slower under the race detector; scripts/test.sh runs it without")
	}
	p := alerting.Defaults()
	lines := func(server string, pick func(testbed.Case) bool) (testbed.Case, map[string]time.Duration) {
		t.Helper()
		cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: 1, Servers: []string{server}})
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(cases, pick)
		if i < 0 {
			t.Fatalf("%s: no such case", server)
		}
		s, err := testbed.CorpusScenario(server, cases, testbed.DefaultEnd)
		if err != nil {
			t.Fatal(err)
		}
		prof, err := profile.ByName(server)
		if err != nil {
			t.Fatal(err)
		}
		c := s.Cases()[i]
		out := map[string]time.Duration{}
		for _, l := range TruthLines(s, c, p, ReadsOf(prof)) {
			out[l.Rule] = l.Held.Sub(c.Onset)
		}
		return c, out
	}
	of := func(k testbed.CaseKind, level int) func(testbed.Case) bool {
		return func(c testbed.Case) bool { return c.Kind == k && c.Level == level }
	}

	if c, got := lines("custom", of(testbed.CaseXID, testbed.LevelSevere)); got["xid-p1"] != 0 || len(got) < 2 {
		t.Errorf("%s (%s): lines %v, want xid-p1 at the onset and the latency it causes", c.ID, c.Summary, got)
	}
	if c, got := lines("custom", of(testbed.CaseComputeFlat, testbed.LevelSevere)); !has(got, "latency-p0") || got["latency-p0"] > time.Minute {
		t.Errorf("%s (%s): lines %v, want latency-p0 within a minute", c.ID, c.Summary, got)
	}
	c, got := lines("custom", of(testbed.CaseGatewayJitter, testbed.LevelSevere))
	if !has(got, "network-p1") || has(got, "latency-p1") || has(got, "latency-p0") {
		t.Errorf("%s (%s): lines %v, want the gateway's and not the service's", c.ID, c.Summary, got)
	}
	if c, got := lines("custom", func(c testbed.Case) bool { return c.Kind == testbed.CaseQuietHour }); len(got) != 0 {
		t.Errorf("%s (%s): lines %v, want none", c.ID, c.Summary, got)
	}
	c, got = lines("vllm", of(testbed.CaseKVCache, testbed.LevelSevere))
	if has(got, "gpumem-p1") || !has(got, "gpumem-p0") {
		t.Errorf("%s (%s): lines %v, want the KV cache's P0 and not the pre-allocated memory's P1", c.ID, c.Summary, got)
	}
}

func has(m map[string]time.Duration, k string) bool { _, ok := m[k]; return ok }
