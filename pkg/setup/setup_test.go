package setup

import (
	"strings"
	"testing"
	"time"
)

const day = 24 * time.Hour

func TestRetention(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Store
		level Level
		want  []string
	}{
		{"the brief's 30 days", Store{Retention: 30 * day, RetentionKnown: true}, OK, []string{"30d of samples kept"}},
		{"Prometheus' default 15 days", Store{Retention: 15 * day, RetentionKnown: true}, Warn, []string{"15d of samples kept, under the 30d", "--storage.tsdb.retention.time=30d"}},
		{"7 days: the baseline loses a day", Store{Retention: 7 * day, RetentionKnown: true}, Warn, []string{"reads 7 previous days, so it has at most 6"}},
		{"36 hours", Store{Retention: 36 * time.Hour, RetentionKnown: true}, Warn, []string{"36h0m0s of samples kept", "at most 0"}},
		{"size limit only", Store{RetentionKnown: true}, OK, []string{"no time limit"}},
		{"VictoriaMetrics", Store{RetentionWhy: "no flags endpoint"}, Unchecked, []string{"could not be checked: no flags endpoint"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := retentionFinding(tc.s)
			if f.Level != tc.level {
				t.Errorf("level %s, want %s (%s)", f.Level, tc.level, f.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(f.Message+" | "+f.Fix, w) {
					t.Errorf("%q lacks %q", f.Message+" | "+f.Fix, w)
				}
			}
			if (f.Level == Warn) != (f.Fix != "") {
				t.Errorf("a warning comes with its fix, and only a warning: %+v", f)
			}
		})
	}
}

func TestScrapeInterval(t *testing.T) {
	jobs := map[string]time.Duration{"inference": 15 * time.Second, "gpu": time.Minute, "node": 30 * time.Second}
	for _, tc := range []struct {
		name    string
		s       Store
		watched []string
		level   Level
		want    []string
		not     []string
	}{
		{"the watched GPU job is slow", Store{Jobs: jobs, IntervalsKnown: true}, []string{"inference", "gpu"}, Warn,
			[]string{"gpu every 1m0s", "scrape_interval: 15s"}, []string{"node", "inference every"}},
		{"only fast jobs watched", Store{Jobs: jobs, IntervalsKnown: true}, []string{"inference"}, OK, []string{"inference"}, []string{"gpu"}},
		{"nothing watched: every job", Store{Jobs: jobs, IntervalsKnown: true}, nil, Warn, []string{"gpu every 1m0s", "node every 30s"}, nil},
		{"a watched job the config lacks", Store{Jobs: jobs, IntervalsKnown: true}, []string{"inference", "federated"}, OK,
			[]string{"not checked: federated"}, nil},
		{"no config endpoint", Store{IntervalsWhy: "404"}, []string{"inference"}, Unchecked, []string{"could not be checked: 404"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := scrapeFinding(tc.s, tc.watched)
			text := f.Message + " | " + f.Fix
			if f.Level != tc.level {
				t.Errorf("level %s, want %s (%s)", f.Level, tc.level, text)
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q lacks %q", text, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(text, n) {
					t.Errorf("%q names %q", text, n)
				}
			}
		})
	}
}
