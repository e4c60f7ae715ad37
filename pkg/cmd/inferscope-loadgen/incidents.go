package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
)

// triageQuestion is what an on-call engineer would ask `inferscope triage` about an incident,
// and when: a few minutes into it (the first 5 are the rate windows catching up), for at most
// 15 minutes; a restart's first 3 minutes; the canary's last 15 minutes, since it is still on.
func triageQuestion(in testbed.Incident, end time.Time) []string {
	from, to := in.Start.Add(5*time.Minute), in.Start.Add(20*time.Minute)
	switch in.Kind {
	case testbed.WarmupRestart:
		from, to = in.Start, in.Start.Add(3*time.Minute)
	case testbed.CanarySlower:
		from, to = end.Add(-15*time.Minute), end
	}
	to = minTime(to, in.End, end)
	var q []string
	switch {
	case in.Kind == testbed.GPUIdle && len(in.GPUs) == 1:
		q = []string{"--node", testbed.Node(in.Instance), "--gpu", strconv.Itoa(in.GPUs[0])} // as a GPU alert asks
	case in.Model == "":
		q = []string{"--node", testbed.Node(in.Instance)} // every model on the node
	default:
		q = []string{"--model", in.Model}
		if in.Version != "" {
			q = append(q, "--version", in.Version)
		}
	}
	return append(q, "--from", from.UTC().Format(time.RFC3339), "--to", to.UTC().Format(time.RFC3339))
}

func minTime(t time.Time, others ...time.Time) time.Time {
	for _, o := range others {
		if o.Before(t) {
			t = o
		}
	}
	return t
}

// printIncidents lists the scenario's scripted incidents up to end, each with the triage
// question that finds it.
func printIncidents(w io.Writer, s *testbed.Scenario, end time.Time) error {
	if _, err := fmt.Fprintf(w, "Scripted incidents of the scenario ending %s:\n", end.UTC().Format(time.RFC3339)); err != nil {
		return err
	}
	for _, in := range s.Incidents() {
		if !in.Start.Before(end) {
			continue
		}
		length := in.End.Sub(in.Start).String()
		if in.End.After(end) {
			length = "ongoing"
		}
		if _, err := fmt.Fprintf(w, "\n%s  %s (%s) on %s: %s\n  inferscope triage %s\n", in.Kind, in.Start.UTC().Format(time.RFC3339),
			length, in.Instance, in.Summary, strings.Join(triageQuestion(in, end), " ")); err != nil {
			return err
		}
	}
	return nil
}
