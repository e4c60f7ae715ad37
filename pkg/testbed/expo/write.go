package expo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// WriteText writes the families at t in the Prometheus text format 0.0.4, as a Python
// prometheus_client would serve them. extra labels (e.g. instance) are appended to every series.
func WriteText(w io.Writer, fams []Family, t time.Time, extra []Label) error {
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, f := range fams {
		type livePoint struct {
			s Series
			p Point
		}
		var live []livePoint
		for _, s := range f.Series {
			if t.Before(s.Since) {
				continue
			}
			if p := s.At(t); !p.Absent {
				live = append(live, livePoint{s, p})
			}
		}
		if len(live) == 0 {
			continue
		}
		if f.Help != "" { // servers without descriptions (TGI) write no HELP line
			fmt.Fprintf(bw, "# HELP %s %s\n", f.Name, escapeHelp(f.Help))
		}
		fmt.Fprintf(bw, "# TYPE %s %s\n", f.Name, f.Type)
		for _, l := range live {
			labels := append(append([]Label(nil), l.s.Labels...), extra...)
			for _, sl := range sampleLines(f, labels) {
				buf = append(buf[:0], sl.prefix...)
				buf = appendValue(buf, sl.value(l.p))
				buf = append(buf, '\n')
				bw.Write(buf)
			}
		}
	}
	return bw.Flush()
}

// familyGroup is one family name and the targets that expose it.
type familyGroup struct {
	name    string
	members []familyMember
}

type familyMember struct {
	target *Target
	family *Family
}

// groupFamilies orders the families of all targets by first appearance, each with the targets
// that expose it. A family must have the same type on every target.
func groupFamilies(targets []Target) ([]familyGroup, error) {
	var groups []familyGroup
	index := map[string]int{}
	for ti := range targets {
		tg := &targets[ti]
		for fi := range tg.Families {
			f := &tg.Families[fi]
			gi, ok := index[f.Name]
			if !ok {
				gi = len(groups)
				index[f.Name] = gi
				groups = append(groups, familyGroup{name: f.Name})
			} else if first := groups[gi].members[0]; first.family.Type != f.Type {
				return nil, fmt.Errorf("family %s is a %s on %s but a %s on %s", f.Name, first.family.Type, first.target.Instance, f.Type, tg.Instance)
			}
			groups[gi].members = append(groups[gi].members, familyMember{tg, f})
		}
	}
	return groups, nil
}

// HistoryOptions selects the span and resolution of written history.
type HistoryOptions struct {
	From, To time.Time     // inclusive; the first sample is at From rounded up to Step
	Step     time.Duration // sample spacing, ≥ 1s
	Job      string        // the job label written on every series
	// Progress, when set, is called after each series with the share of series written.
	Progress func(done, total int)
}

// WriteHistory writes the targets' series from From to To as OpenMetrics text (timestamps in
// seconds, "# EOF" at the end) for `promtool tsdb create-blocks-from openmetrics`. Families are
// not interleaved and each series' points are in time order, as OpenMetrics requires. The output
// is streamed: the writer's memory use does not grow with the span (a target's own Series.At may
// cache, as the test bed's GPU targets do). Targets need not expose the same families; a family
// is written once, with the series of every target that has it.
func WriteHistory(ctx context.Context, w io.Writer, targets []Target, opt HistoryOptions) error {
	if opt.Step < time.Second {
		return fmt.Errorf("history step must be at least 1s, got %s", opt.Step)
	}
	if !opt.To.After(opt.From) {
		return fmt.Errorf("history end %s is not after its start %s", opt.To.Format(time.RFC3339), opt.From.Format(time.RFC3339))
	}
	for _, tg := range targets {
		if opt.Job == "" && tg.Job == "" {
			return errors.New("history needs a job label")
		}
	}
	if len(targets) == 0 {
		return errors.New("no targets to write")
	}
	groups, err := groupFamilies(targets)
	if err != nil {
		return err
	}
	first := opt.From.Truncate(opt.Step)
	if first.Before(opt.From) {
		first = first.Add(opt.Step)
	}

	total := 0
	for _, tg := range targets {
		for _, f := range tg.Families {
			total += len(f.Series)
		}
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	done := 0
	// Families are not interleaved: each is written once, gathering its series from every target.
	for _, g := range groups {
		f := g.members[0].family
		om := omFamilyName(*f)
		fmt.Fprintf(bw, "# TYPE %s %s\n", om, f.Type)
		if f.Help != "" {
			fmt.Fprintf(bw, "# HELP %s %s\n", om, escapeHelp(f.Help))
		}
		for _, m := range g.members {
			job := m.target.Job
			if job == "" {
				job = opt.Job
			}
			for _, s := range m.family.Series {
				if err := ctx.Err(); err != nil {
					return err
				}
				labels := append(append([]Label(nil), s.Labels...), Label{"instance", m.target.Instance}, Label{"job", job})
				labels = append(labels, m.target.Labels...)
				lines := sampleLines(*m.family, labels)
				for t := first; !t.After(opt.To); t = t.Add(opt.Step) {
					if t.Before(s.Since) {
						continue
					}
					p := s.At(t)
					if p.Absent {
						continue
					}
					for _, l := range lines {
						buf = append(buf[:0], l.prefix...)
						buf = appendValue(buf, l.value(p))
						buf = append(buf, ' ')
						buf = appendTimestamp(buf, t)
						buf = append(buf, '\n')
						if _, err := bw.Write(buf); err != nil {
							return err
						}
					}
				}
				done++
				if opt.Progress != nil {
					opt.Progress(done, total)
				}
			}
		}
	}
	if _, err := bw.WriteString("# EOF\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// omFamilyName is the OpenMetrics family name: counters drop their _total suffix.
func omFamilyName(f Family) string {
	if f.Type == CounterType {
		return strings.TrimSuffix(f.Name, "_total")
	}
	return f.Name
}

// sampleLine is one sample of a series: its "name{labels} " prefix and which value it shows.
type sampleLine struct {
	prefix []byte
	value  func(Point) float64
}

func sampleLines(f Family, labels []Label) []sampleLine {
	switch f.Type {
	case HistogramType:
		out := make([]sampleLine, 0, len(f.Bounds)+3)
		le := f.FormatLe
		if le == nil {
			le = FormatBound
		}
		for i, b := range f.Bounds {
			i := i
			out = append(out, sampleLine{seriesPrefix(f.Name+"_bucket", labels, &Label{"le", le(b)}),
				func(p Point) float64 { return p.Buckets[i] }})
		}
		out = append(out,
			sampleLine{seriesPrefix(f.Name+"_bucket", labels, &Label{"le", "+Inf"}), func(p Point) float64 { return p.Count }},
			sampleLine{seriesPrefix(f.Name+"_count", labels, nil), func(p Point) float64 { return p.Count }},
			sampleLine{seriesPrefix(f.Name+"_sum", labels, nil), func(p Point) float64 { return p.Sum }})
		return out
	case SummaryType:
		out := make([]sampleLine, 0, len(f.Objectives)+2)
		for i, q := range f.Objectives {
			i := i
			out = append(out, sampleLine{seriesPrefix(f.Name, labels, &Label{"quantile", strconv.FormatFloat(q, 'g', -1, 64)}),
				func(p Point) float64 { return p.Quantiles[i] }})
		}
		return append(out,
			sampleLine{seriesPrefix(f.Name+"_count", labels, nil), func(p Point) float64 { return p.Count }},
			sampleLine{seriesPrefix(f.Name+"_sum", labels, nil), func(p Point) float64 { return p.Sum }})
	}
	return []sampleLine{{seriesPrefix(f.Name, labels, nil), func(p Point) float64 { return p.Value }}}
}

func seriesPrefix(name string, labels []Label, last *Label) []byte {
	b := []byte(name)
	all := labels
	if last != nil {
		all = append(append([]Label(nil), labels...), *last)
	}
	if len(all) > 0 {
		b = append(b, '{')
		for i, l := range all {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.Name...)
			b = append(b, '=', '"')
			b = append(b, escapeLabel(l.Value)...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// FormatBound writes a bucket bound the way Python's prometheus_client does ("1.0", "0.005"),
// so live scrapes and written history give the same le label.
func FormatBound(b float64) string {
	switch {
	case math.IsInf(b, 1):
		return "+Inf"
	case math.IsInf(b, -1):
		return "-Inf"
	case b == math.Trunc(b) && math.Abs(b) < 1e15:
		return strconv.FormatFloat(b, 'f', 1, 64)
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == 0:
		return append(b, '0')
	case math.Abs(v) >= 1e-4 && math.Abs(v) < 1e15:
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func appendTimestamp(b []byte, t time.Time) []byte {
	if t.Nanosecond() == 0 {
		return strconv.AppendInt(b, t.Unix(), 10)
	}
	return strconv.AppendFloat(b, float64(t.UnixNano())/1e9, 'f', 3, 64)
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
