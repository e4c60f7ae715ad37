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
	outs := []Outcome{
		caught(testbed.CaseThrottle, 4*time.Minute, 3*time.Minute),
		caught(testbed.CaseThrottle, 5*time.Minute, 3*time.Minute),
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
	want := "| clock_throttling | 3 | [custom] | 100 % | 0 % | 0 % | 0 % | 3/3 | 4m0s / 5m0s | 1m30s / 2m0s | – |"
	if lines[2] != want {
		t.Errorf("row\n got %s\nwant %s", lines[2], want)
	}
	if !strings.HasSuffix(lines[3], "| – | – | – | 0 |") {
		t.Errorf("control row %s", lines[3])
	}
}
