package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/enginetest"
	"github.com/inferscope/inferscope/pkg/triage"
)

// questionOptions reads a triage question's flags as `inferscope triage` does.
func questionOptions(t *testing.T, args []string) triage.Options {
	t.Helper()
	var o triage.Options
	for i := 0; i+1 < len(args); i += 2 {
		v := args[i+1]
		switch args[i] {
		case "--node":
			o.Node = v
		case "--gpu":
			o.GPU = v
		case "--model":
			o.Model = v
		case "--version":
			o.Version = v
		case "--from", "--to":
			at, err := time.Parse(time.RFC3339, v)
			if err != nil {
				t.Fatal(err)
			}
			if args[i] == "--from" {
				o.From = at
			} else {
				o.To = at
			}
		default:
			t.Fatalf("unexpected flag %s in %v", args[i], args)
		}
	}
	return o
}

// TestIncidentQuestionsFindTheirCause: the triage question the demo suggests for each scripted
// incident, asked of the test bed's history, ranks that incident's own cause first.
func TestIncidentQuestionsFindTheirCause(t *testing.T) {
	e, s := enginetest.Start(t)
	// The queue surge is traffic ×1.5 on a batching that lets the queue grow: both causes are in
	// its truth.
	want := map[testbed.IncidentKind][]string{
		testbed.NetworkJitter:   {triage.CauseNetwork},
		testbed.WarmupRestart:   {triage.CauseWarmup},
		testbed.ComputeSlowdown: {triage.CauseComputeMemory},
		testbed.GPUIdle:         {triage.CauseGPUIdle},
		testbed.QueueSurge:      {triage.CauseQueue, triage.CauseTrafficSurge},
		testbed.CanarySlower:    {triage.CauseModelRegression},
	}
	for _, in := range s.Incidents() {
		t.Run(string(in.Kind), func(t *testing.T) {
			q := triageQuestion(in, testbed.DefaultEnd)
			r, err := triage.Diagnose(context.Background(), e, questionOptions(t, q))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range r.Causes {
				got = append(got, c.ID)
			}
			t.Logf("inferscope triage %s → %s %v", strings.Join(q, " "), r.Verdict, got)
			if r.Verdict != triage.Diagnosed || len(got) == 0 || !slices.Contains(want[in.Kind], got[0]) {
				t.Errorf("want %s first, got %s %v", want[in.Kind], r.Verdict, got)
			}
		})
	}
}

func TestIncidentsListing(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"--incidents", "--end=" + testbed.DefaultEnd.Format(time.RFC3339)}, &out, &errOut, nil); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, in := range testbed.Default(testbed.DefaultEnd).Incidents() {
		line := string(in.Kind) + "  " + in.Start.UTC().Format(time.RFC3339)
		if !strings.Contains(text, line) {
			t.Errorf("listing lacks %q:\n%s", line, text)
		}
	}
	if n := strings.Count(text, "\n  inferscope triage --"); n != len(testbed.Default(testbed.DefaultEnd).Incidents()) {
		t.Errorf("%d triage questions:\n%s", n, text)
	}
	if canary, _ := testbed.Default(testbed.DefaultEnd).Incident(testbed.CanarySlower); !strings.Contains(text, "canary_slower  "+canary.Start.UTC().Format(time.RFC3339)+" (ongoing)") {
		t.Errorf("the canary is not marked ongoing:\n%s", text)
	}
	if err := run(context.Background(), []string{"--incidents", "--serve"}, &out, &errOut, nil); err == nil || !strings.Contains(err.Error(), "--incidents only lists them") {
		t.Errorf("--incidents --serve: %v", err)
	}
}
