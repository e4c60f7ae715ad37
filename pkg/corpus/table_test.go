package corpus

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/testbed"
)

func TestRuleHold(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"3m", 3 * time.Minute},
		{"0s", 0},
		{"1h30m", 90 * time.Minute},
		{"", 0},
		{"soon", 0},
	} {
		if got := ruleHold(c.in); got != c.want {
			t.Errorf("ruleHold(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

// The table shows each caught case's delay and, beside it, the delay less the rule's own hold:
// a P1 held 3 minutes by design caught 4 minutes after onset crossed its line after 1.
func TestTableDelaysLessTheRulesHold(t *testing.T) {
	caught := func(kind testbed.CaseKind, delay, hold time.Duration) Outcome {
		return Outcome{Case: testbed.Case{Kind: kind, Server: "custom"}, Alert: &backtest.EpisodeReport{}, Delay: delay, Hold: hold, Top1: true}
	}
	owed := func(o Outcome, dueDelay time.Duration) Outcome {
		o.Lines, o.DueDelay = []Line{{Rule: "gpu-throttle-p1", Held: time.Unix(0, 0)}}, dueDelay
		return o
	}
	outs := []Outcome{
		owed(caught(testbed.CaseThrottle, 4*time.Minute, 3*time.Minute), 2*time.Minute),
		owed(caught(testbed.CaseThrottle, 5*time.Minute, 3*time.Minute), 4*time.Minute),
		caught(testbed.CaseThrottle, 90*time.Second, 0),
		{Case: testbed.Case{Kind: testbed.CaseQuietHour, Server: "custom"}, Top1: true},
	}
	rows := Summarize(outs)
	if len(rows) != 3 || rows[0].Kind != testbed.CaseThrottle || rows[2].Kind != "all" {
		t.Fatalf("rows %+v", rows)
	}
	var buf bytes.Buffer
	WriteTable(&buf, rows)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Two of the three owed a page (their truth crossed a line); one came within 3 minutes of
	// being due, the other 4 minutes after.
	want := "| clock_throttling | 3 | [custom] | 100 % | 0 % | 0 % | 0 % | 3/3 | 4m0s / 5m0s | 1m30s / 2m0s | 2/3 | 2, 1 | – |"
	if lines[2] != want {
		t.Errorf("row\n got %s\nwant %s", lines[2], want)
	}
	if !strings.HasSuffix(lines[3], "| – | – | – | – | – | 0 |") {
		t.Errorf("control row %s", lines[3])
	}
}

// Each case's line names the truth's lines with when each was due, or "none".
func TestCaseLineListsTheTruthsLines(t *testing.T) {
	onset := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	o := Outcome{Case: testbed.Case{ID: "custom-01", Kind: testbed.CaseXID, Onset: onset},
		Lines: []Line{{Rule: "xid-p1", Held: onset}, {Rule: "latency-p1", Held: onset.Add(3 * time.Minute)}}}
	var buf bytes.Buffer
	WriteCases(&buf, []Outcome{o, {Case: testbed.Case{ID: "custom-02", Kind: testbed.CaseSmallerBatches, Onset: onset}}})
	out := buf.String()
	if !strings.Contains(out, "lines [xid-p1 +0s, latency-p1 +3m0s]") || !strings.Contains(out, "lines none") {
		t.Errorf("case lines:\n%s", out)
	}
}
