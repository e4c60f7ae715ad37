package corpus

import (
	"slices"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/alerting"
	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/triage"
)

// The engineer asks what the first alert's triage link opens: a GPU alert's node and GPU (its
// series name no model), a service alert's model on the instance it names.
func TestQuestionFollowsTheAlertsLink(t *testing.T) {
	cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: 1, Servers: []string{"custom"}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cases, func(c testbed.Case) bool { return c.Kind == testbed.CaseXID })
	if i < 0 {
		t.Fatal("no XID case in the corpus")
	}
	c := cases[i]
	s, err := testbed.CorpusScenario("custom", cases, testbed.DefaultEnd)
	if err != nil {
		t.Fatal(err)
	}
	at := c.Onset.Add(time.Minute)
	gpuAlert := Outcome{Alert: &backtest.EpisodeReport{Start: at, Labels: map[string]string{"node": c.Node(), "gpu": "5"}}}
	q := question(c, gpuAlert, s, alerting.ScopeGPU)
	if q.Model != "" || q.Node != c.Node() || q.GPU != "5" || !q.To.Equal(at) || q.To.Sub(q.From) != triage.DefaultWindow {
		t.Errorf("GPU alert: asked %+v", q)
	}
	// A KV cache's memory page names the node and no GPU: its link asks about the whole node.
	nodeAlert := Outcome{Alert: &backtest.EpisodeReport{Start: at, Labels: map[string]string{"node": c.Node()}}}
	q = question(c, nodeAlert, s, alerting.ScopeGPU)
	if q.Model != "" || q.Node != c.Node() || q.GPU != "" || !q.To.Equal(at) {
		t.Errorf("node alert: asked %+v", q)
	}
	svcAlert := Outcome{Alert: &backtest.EpisodeReport{Start: at, Labels: map[string]string{"model": c.Model, "instance": c.Instance}}}
	q = question(c, svcAlert, s, alerting.ScopeService)
	if q.Model != c.Model || q.Instance != c.Instance || q.Node != "" || !q.To.Equal(at) {
		t.Errorf("service alert: asked %+v", q)
	}
	q = question(c, Outcome{}, s, "")
	if q.Model != c.Model || q.Instance != "" || !q.To.Equal(c.Onset.Add(UncaughtAsk)) {
		t.Errorf("no alert: asked %+v", q)
	}
}

// A node question's causes can name any model served there: another model's cause is wrong,
// and a GPU idle that reported an XID accepts the hardware cause, one that did not does not.
func TestJudgeSubjectAndXID(t *testing.T) {
	cases, err := testbed.GenerateCorpus(testbed.CorpusOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var idleXID, idleQuiet, xid *testbed.Case
	for i := range cases {
		c := &cases[i]
		switch {
		case c.Kind == testbed.CaseGPUIdle && c.XID() == 43 && idleXID == nil:
			idleXID = c
		case c.Kind == testbed.CaseGPUIdle && c.XID() == 0 && idleQuiet == nil:
			idleQuiet = c
		case c.Kind == testbed.CaseXID && xid == nil:
			xid = c
		}
	}
	if idleXID == nil || idleQuiet == nil || xid == nil || xid.XID() == 0 {
		t.Fatal("the corpus lacks a GPU idle with and without an XID, or an XID case")
	}
	for _, tc := range []struct {
		name       string
		c          testbed.Case
		cause      string
		causeModel string
		top1       bool
	}{
		{"XID named hardware", *xid, triage.CauseHardware, "", true},
		{"XID, another model's hardware", *xid, triage.CauseHardware, xid.Model + "-other", false},
		{"idle with XID 43, hardware", *idleXID, triage.CauseHardware, "", true},
		{"idle with XID 43, idle", *idleXID, triage.CauseGPUIdle, idleXID.Model, true},
		{"idle without XID, hardware", *idleQuiet, triage.CauseHardware, "", false},
	} {
		o := Outcome{Case: tc.c, Verdict: triage.Diagnosed, Causes: []string{tc.cause}, CauseModel: tc.causeModel}
		judge(&o)
		if o.Top1 != tc.top1 || o.Wrong == tc.top1 {
			t.Errorf("%s: top1 %v wrong %v", tc.name, o.Top1, o.Wrong)
		}
	}
}
