package corpus

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/triage"
)

// The tests' subset of the corpus: seed 1's custom and TorchServe fleets (the naming with the most
// signals and the one with the fewest; histories the benchmark builds and caches), judged on the
// first case of each kind at its highest level and the first of each control: 36 cases.
const subsetSeed = 1

var subsetServers = []string{"custom", "torchserve"}

func subset(t *testing.T) []testbed.Case {
	t.Helper()
	cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: subsetSeed, Servers: subsetServers})
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

// inSubset picks, per server and kind, the first case of the kind's highest level.
func inSubset(cases []testbed.Case) func(testbed.Case) bool {
	pick := map[string]string{} // server/kind → case id
	best := map[string]int{}
	for _, c := range cases {
		k := c.Server + "/" + string(c.Kind)
		if l, ok := best[k]; !ok || c.Level > l {
			best[k], pick[k] = c.Level, c.ID
		}
	}
	return func(c testbed.Case) bool { return pick[c.Server+"/"+string(c.Kind)] == c.ID }
}

// TestExpectedCoversEveryKind: every harmful kind has an expected cause set, every control none.
func TestExpectedCoversEveryKind(t *testing.T) {
	for _, k := range testbed.CaseKinds {
		if got := Expected(k); k.Control() != (got == nil) {
			t.Errorf("%s: expected %v (control %v)", k, got, k.Control())
		}
	}
}

// TestCorpusSubset replays the fixed-seed subset and checks the measurement: every case has one
// outcome that the table counts once; the figures that hold today are asserted per kind
// (knownGood), the others are only measured (see docs/benchmarks.md).
func TestCorpusSubset(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two corpus fleets on first use (cached with the benchmark's)")
	}
	if raceEnabled {
		t.Skip("the replay runs several times slower under the race detector; scripts/test.sh runs this test without -race")
	}
	cases := subset(t)
	var outs []Outcome
	for _, server := range subsetServers {
		own := casesOf(cases, server)
		e, s, _ := startFleet(t, server, own, 0)
		o, _, err := Replay(t.Context(), e, s, ReplayOptions{Only: inSubset(own)})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, c := range own {
			want += b2i(inSubset(own)(c))
		}
		if len(o) != want || want < 10 {
			t.Fatalf("%s: %d outcomes for %d cases", server, len(o), want)
		}
		outs = append(outs, o...)
	}
	var buf bytes.Buffer
	WriteCases(&buf, outs)
	t.Log("\n" + buf.String())

	for _, o := range outs {
		n := b2i(o.Top1) + b2i(o.Wrong) + b2i(o.NoDirection) + b2i(o.Missed)
		if n != 1 {
			t.Errorf("%s: %d judgements (top1 %v wrong %v no-direction %v missed %v)", o.Case.ID, n, o.Top1, o.Wrong, o.NoDirection, o.Missed)
		}
		if (o.Question.Model != o.Case.Model && o.Question.Node == "") || o.Question.To.Before(o.Case.Onset) || o.Question.To.Sub(o.Question.From) != triage.DefaultWindow {
			t.Errorf("%s: asked %+v", o.Case.ID, o.Question)
		}
		if o.Alert != nil && (o.Delay < 0 || o.Delay > alertSearch) {
			t.Errorf("%s: alert %s %s after onset", o.Case.ID, o.Rule, o.Delay)
		}
		if o.Err != "" {
			t.Errorf("%s: triage failed: %s", o.Case.ID, o.Err)
		}
	}
	rows := Summarize(outs)
	all := rows[len(rows)-1]
	sum := Row{}
	for _, r := range rows[:len(rows)-1] {
		sum.Cases += r.Cases
		sum.Top1 += r.Top1
		sum.Wrong += r.Wrong
		sum.NoDirection += r.NoDirection
		sum.Missed += r.Missed
		if r.Top1+r.Wrong+r.NoDirection+r.Missed != r.Cases {
			t.Errorf("%s: outcomes do not add up: %+v", r.Kind, r)
		}
	}
	if sum.Cases != len(outs) || sum.Cases != all.Cases || sum.Top1 != all.Top1 || sum.Wrong != all.Wrong ||
		sum.NoDirection != all.NoDirection || sum.Missed != all.Missed {
		t.Errorf("kind rows %+v do not add up to the total %+v", sum, all)
	}

	// The acceptance's line that holds today: no control (nor a warm-up) raises a notification.
	for _, o := range outs {
		if !Harmful(o.Case.Kind) && o.Notifications > 0 {
			t.Errorf("%s (%s): notified by %v; a control or a warm-up raises none", o.Case.ID, o.Case.Kind, o.NotifiedBy)
		}
	}
	// A control's truth crosses no line (else it is no control), and every case whose truth
	// crossed a line is caught (the subset's cases are at their highest level), the gateway's
	// jitter by the network rule.
	for _, o := range outs {
		if !Harmful(o.Case.Kind) && len(o.Lines) > 0 {
			t.Errorf("%s (%s): a control crossed %+v", o.Case.ID, o.Case.Kind, o.Lines)
		}
		if len(o.Lines) > 0 && o.Alert == nil {
			t.Errorf("%s (%s): its truth crossed %+v, and no P0/P1 fired", o.Case.ID, o.Case.Kind, o.Lines)
		}
	}
	// What holds today, per kind.
	for _, o := range outs {
		if slices.Contains(knownGood, o.Case.Kind) && !o.Top1 {
			t.Errorf("%s (%s): first cause %v verdict %s, want one of %v", o.Case.ID, o.Case.Kind, o.Causes, o.Verdict, Acceptable(o.Case))
		}
	}
	buf.Reset()
	WriteTable(&buf, rows)
	t.Log("\n" + buf.String())
}

// knownGood are the kinds today's triage answers right on the subset (top-1; for the warm-up and
// the controls: healthy or warmup); every kind of the subset is listed (the traffic surges, asked
// a minute after their onset, are diagnosed since a traffic step past the surge line stands one
// point after the change).
var knownGood = []testbed.CaseKind{
	testbed.CaseTrafficSurge, testbed.CaseLostCapacity, testbed.CaseSmallerBatches,
	testbed.CaseComputeMemory, testbed.CaseComputeFlat, testbed.CaseComputeNoProbe, testbed.CaseInputShift, testbed.CaseMemorySwap,
	testbed.CaseThrottle, testbed.CaseXID, testbed.CaseECC, testbed.CaseGPUIdle, testbed.CaseGatewayJitter, testbed.CaseCanary, testbed.CaseWarmup,
	testbed.CaseQuietHour, testbed.CaseBusyHour, testbed.CaseFasterVersion, testbed.CaseDeploy,
}

// TestReplayRulesNameTheFleetsMetrics: the replayed rules are rendered for the fleet's server.
// Rendered with the defaults (the custom service's names), the GPU memory rules' warm-up filter
// read inference_requests_total, which no other server exports, so every restart of a server
// whose memory or KV cache spikes after it paged.
func TestReplayRulesNameTheFleetsMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the TorchServe corpus fleet on first use (cached with the benchmark's)")
	}
	e, _, _ := startFleet(t, "torchserve", casesOf(subset(t), "torchserve"), 0)
	file, err := alerting.RenderPrometheus(replayParams(e))
	if err != nil {
		t.Fatal(err)
	}
	text := string(file)
	if !strings.Contains(text, "resets(ts_inference_requests_total[") {
		t.Errorf("the warm-up filter does not read TorchServe's requests counter:\n%s", clip(text))
	}
	if strings.Contains(text, "resets(inference_requests_total[") {
		t.Errorf("the rules read the custom service's requests counter on a TorchServe fleet")
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// INFERSCOPE_CORPUS_CASES keeps exactly the listed ids; unset, every case.
func TestCaseFilter(t *testing.T) {
	if caseFilter("") != nil {
		t.Error("an empty list filters")
	}
	keep := caseFilter("triton-39,vllm-12")
	for id, want := range map[string]bool{"triton-39": true, "vllm-12": true, "triton-3": false, "vllm-120": false, "": false} {
		if got := keep(testbed.Case{ID: id}); got != want {
			t.Errorf("%q: kept %v, want %v", id, got, want)
		}
	}
}
