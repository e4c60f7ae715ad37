package corpus

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/triage"
)

// Row is one kind's figures.
type Row struct {
	Kind                                    testbed.CaseKind
	Cases, Top1, Wrong, NoDirection, Missed int
	// Harmful kinds: cases caught by a P0/P1 after onset, their delays and the delays less the
	// rule's own hold (when the condition first held); controls (and warm-ups): cases with a
	// notification on the subject.
	Caught  int
	Delays  []time.Duration
	Crossed []time.Duration
	// Owed: harmful cases whose truth crossed a line (Outcome.Owed); OwedCaught of them caught,
	// InTime caught within DueWithin of the line being due.
	Owed, OwedCaught, InTime int
	Notified                 int
	Servers                  map[string]int
}

// Summarize groups outcomes per kind (testbed.CaseKinds order) plus a total row (Kind "all").
func Summarize(outs []Outcome) []Row {
	byKind := map[testbed.CaseKind]*Row{}
	all := &Row{Kind: "all", Servers: map[string]int{}}
	for _, o := range outs {
		r, ok := byKind[o.Case.Kind]
		if !ok {
			r = &Row{Kind: o.Case.Kind, Servers: map[string]int{}}
			byKind[o.Case.Kind] = r
		}
		for _, x := range []*Row{r, all} {
			x.Cases++
			x.Servers[o.Case.Server]++
			x.Top1 += b2i(o.Top1)
			x.Wrong += b2i(o.Wrong)
			x.NoDirection += b2i(o.NoDirection)
			x.Missed += b2i(o.Missed)
			if o.Alert != nil && Harmful(o.Case.Kind) {
				x.Caught++
				x.Delays = append(x.Delays, o.Delay)
				x.Crossed = append(x.Crossed, o.Delay-o.Hold)
			}
			if o.Owed() {
				x.Owed++
				if o.Alert != nil {
					x.OwedCaught++
					x.InTime += b2i(o.DueDelay <= DueWithin)
				}
			}
			if !Harmful(o.Case.Kind) && o.Notifications > 0 {
				x.Notified++
			}
		}
	}
	var out []Row
	for _, k := range testbed.CaseKinds {
		if r, ok := byKind[k]; ok {
			out = append(out, *r)
		}
	}
	return append(out, *all)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func pct(n, d int) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(n)/float64(d))
}

// WriteTable writes the per-kind table (Markdown).
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintln(w, "| kind | cases | servers | top-1 | wrong cause | no direction | healthy (missed) | P0/P1 caught | delay median / max | less the rule's hold | owed a page | owed: caught, within 3 min of due | controls notified |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		caught, delay, crossed, owed, owedCaught, notified := "–", "–", "–", "–", "–", "–"
		harmful := r.Kind == "all" || Harmful(r.Kind)
		if harmful {
			n := 0
			if r.Kind == "all" {
				for _, x := range rows {
					if x.Kind != "all" && Harmful(x.Kind) {
						n += x.Cases
					}
				}
			} else {
				n = r.Cases
			}
			caught = fmt.Sprintf("%d/%d", r.Caught, n)
			delay, crossed = medianMax(r.Delays), medianMax(r.Crossed)
			owed = fmt.Sprintf("%d/%d", r.Owed, n)
			if r.Owed > 0 {
				owedCaught = fmt.Sprintf("%d, %d", r.OwedCaught, r.InTime)
			}
		}
		if r.Kind == "all" || !Harmful(r.Kind) {
			notified = fmt.Sprintf("%d", r.Notified)
		}
		var servers []string
		for s := range r.Servers {
			servers = append(servers, s)
		}
		sort.Strings(servers)
		sv := fmt.Sprint(len(servers))
		if len(servers) < 6 {
			sv = fmt.Sprint(servers)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Kind, r.Cases, sv,
			pct(r.Top1, r.Cases), pct(r.Wrong, r.Cases), pct(r.NoDirection, r.Cases), pct(r.Missed, r.Cases), caught, delay, crossed, owed, owedCaught, notified)
	}
}

// medianMax writes "median / max" of durations ("–" for none).
func medianMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "–"
	}
	d := slices.Clone(ds)
	slices.Sort(d)
	return fmt.Sprintf("%s / %s", d[len(d)/2], d[len(d)-1])
}

// WriteCases writes one line per case: what it was, when the alert fired, what triage said.
func WriteCases(w io.Writer, outs []Outcome) {
	for _, o := range outs {
		alert := "no P0/P1"
		if o.Alert != nil {
			alert = fmt.Sprintf("%s +%s (held %s)", o.Rule, o.Delay, o.Hold)
		}
		mark := "ok"
		switch {
		case o.Wrong:
			mark = "WRONG"
		case o.NoDirection:
			mark = "no-direction"
		case o.Missed:
			mark = "missed"
		}
		fmt.Fprintf(w, "%s %-26s L%d %-13s %-12s %s | lines %s | %s | asked %s %s → %s %v %s | notified %d %v\n", o.Case.ID, o.Case.Kind, o.Case.Level,
			o.Case.Model, o.Case.Instance, o.Case.Onset.Format("01-02 15:04"), linesText(o), alert, asked(o.Question), o.Question.To.Format("15:04:05"),
			o.Verdict, o.Causes, mark, o.Notifications, o.NotifiedBy)
		if o.Err != "" {
			fmt.Fprintf(w, "    error: %s\n", o.Err)
		}
	}
}

// linesText lists a case's lines as "rule +when due" after the onset ("none": under every line).
func linesText(o Outcome) string {
	if len(o.Lines) == 0 {
		return "none"
	}
	var parts []string
	for _, l := range o.Lines {
		parts = append(parts, fmt.Sprintf("%s +%s", l.Rule, l.Held.Sub(o.Case.Onset)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// asked names the subject a question narrowed to: its instance, or a GPU alert's node and GPU.
func asked(q triage.Options) string {
	if q.Node != "" {
		return q.Node + " GPU " + q.GPU
	}
	return q.Instance
}
