package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
	"github.com/inferscope/inferscope/pkg/units"
)

// The test bed's last day holds every incident (pkg/testbed doc): over it, the GPU idle incident
// fires gpu-idle-p0 on node-a GPU 6, and the compute slowdown (node-b) and the queue surge (node-a)
// latency-p0 on recsys v1.4.0; node-c's restart is the one warm-up and the recsys canary the one
// deploy.
func TestBacktestCommand(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	end := testbed.DefaultEnd.Format(time.RFC3339)
	args := []string{"backtest", "--prometheus", srv.URL, "--to", end, "--last", "1d", "--rule", "gpu-idle-p0", "--rule", "latency-p0,warmup-long-p2"}

	code, out, errOut := runCLI(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	var r backtest.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	fired := map[string]int{}
	for _, rr := range r.Rules {
		fired[rr.ID] = rr.Fired
	}
	if len(r.Rules) != 3 || fired["gpu-idle-p0"] != 1 || fired["latency-p0"] != 2 || fired["warmup-long-p2"] != 0 {
		t.Errorf("fired %v, want gpu-idle-p0 once, latency-p0 twice, warmup-long-p2 never", fired)
	}
	if !r.From.Equal(testbed.DefaultEnd.Add(-24*time.Hour)) || len(r.Warmups) != 1 || len(r.Deploys) != 1 {
		t.Errorf("from %s, warm-ups %+v, deploys %+v", r.From, r.Warmups, r.Deploys)
	}
	// Progress goes to standard error, one line per rule when it is not a terminal.
	if n := strings.Count(errOut, "backtest: ["); n != 3 {
		t.Errorf("%d progress lines: %q", n, errOut)
	}

	code, out, errOut = runCLI(t, append(args, "--quiet")...)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"RULE", "gpu-idle-p0", "P0", "gpu=6,node=node-a", "latency-p0", "model_name=recsys-ranker,model_version=v1.4.0",
		"warmup node-c:8000", "deploy node-c:8000", "recsys-ranker v1.5.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("human output lacks %q:\n%s", want, out)
		}
	}
	// A lower line fires more: at queueShare 50 % the queue rule catches the queue surge.
	code, out, _ = runCLI(t, "backtest", "--prometheus", srv.URL, "--to", end, "--last", "1d", "--rule", "queue-p1", "--queue-share", "50%", "--json", "--quiet")
	if err := json.Unmarshal([]byte(out), &r); code != exitOK || err != nil || len(r.Rules) != 1 || r.Rules[0].Fired == 0 {
		t.Fatalf("queue-share 50%%: exit %d, %s", code, out)
	}
	// The peak carries the unit of the rule's series: the queue's share of the service time is a
	// ratio, written as a percentage in the table.
	if ep := r.Rules[0].Episodes[0]; ep.Unit != "percentunit" {
		t.Errorf("queue-p1 peak unit %q, want percentunit", ep.Unit)
	}
	_, out, _ = runCLI(t, "backtest", "--prometheus", srv.URL, "--to", end, "--last", "1d", "--rule", "queue-p1", "--queue-share", "50%", "--quiet")
	if peak := units.Percent(r.Rules[0].Episodes[0].Peak); !strings.Contains(out, "  "+peak+"  ") {
		t.Errorf("the PEAK column lacks %q:\n%s", peak, out)
	}
}

func TestBacktestCommandErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"backtest", "--help"}, exitOK, ""},
		{[]string{"backtest"}, exitUsage, "--prometheus is required"},
		{[]string{"backtest", "--prometheus", "http://127.0.0.1:1", "--from", "2026-11-01T00:00:00Z", "--last", "7d"}, exitUsage, "either --from or --last"},
		{[]string{"backtest", "--prometheus", "http://127.0.0.1:1", "--last", "forever"}, exitUsage, "--last"},
		{[]string{"backtest", "--prometheus", "http://127.0.0.1:1", "--from", "2026-11-23T00:00:00Z", "--to", "2026-11-01T00:00:00Z"}, exitUsage, "must be before"},
		{[]string{"backtest", "--prometheus", "http://127.0.0.1:1", "--latency-warn-ratio", "9"}, exitUsage, "latencyCritRatio"},
		{[]string{"backtest", "--prometheus", "http://127.0.0.1:1", "--profile", "custom"}, exitUnavailable, ""},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %d with %q", c.args, code, errOut, c.code, c.want)
		}
		if c.args[len(c.args)-1] == "--help" {
			for _, want := range []string{"--rule ID", "--last DURATION", "--queue-share", "Exit status: 0 done", "4 the backtest could not run"} {
				if !strings.Contains(out, want) {
					t.Errorf("help lacks %q", want)
				}
			}
		}
	}
	// An unknown rule is a usage error once Prometheus answers.
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	if code, _, errOut := runCLI(t, "backtest", "--prometheus", srv.URL, "--rule", "nope", "--quiet"); code != exitUsage || !strings.Contains(errOut, `unknown rule "nope"`) {
		t.Errorf("unknown rule: exit %d, %q", code, errOut)
	}
}
