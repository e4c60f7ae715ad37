// Package setup checks the two Prometheus settings the brief names as the most overlooked: a
// 15-second scrape interval for the inference and GPU targets (the default minute misses
// jitter that lasts seconds) and at least 30 days of retention ("did this happen yesterday at
// this time?"; the 7-day baseline needs 8). It is pure: the caller reads the store's status API.
package setup

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// What the brief asks for.
const (
	WantScrapeInterval = 15 * time.Second
	WantRetention      = 30 * 24 * time.Hour
	// BaselineSpan is what the same-time-of-day baseline reads: the previous 7 days and today.
	BaselineSpan = 8 * 24 * time.Hour
)

// Level is a finding's verdict.
type Level string

// Levels.
const (
	OK        Level = "ok"
	Warn      Level = "warn"
	Unchecked Level = "unchecked" // the store does not say (not a Prometheus, or no status API)
)

// Finding is one check's verdict, with the fix when it warns.
type Finding struct {
	Check   string `json:"check"` // "scrape interval", "retention"
	Level   Level  `json:"level"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Store is what the store's status API said.
type Store struct {
	Retention      time.Duration // 0 with RetentionKnown: no time limit
	RetentionKnown bool
	RetentionWhy   string
	Jobs           map[string]time.Duration // scrape interval per job
	IntervalsKnown bool
	IntervalsWhy   string
}

// Check judges the store's retention and the scrape interval of the watched jobs (the jobs of
// the inference and GPU series; none = every configured job).
func Check(s Store, watched []string) []Finding {
	return []Finding{scrapeFinding(s, watched), retentionFinding(s)}
}

func scrapeFinding(s Store, watched []string) Finding {
	f := Finding{Check: "scrape interval"}
	if !s.IntervalsKnown {
		f.Level, f.Message = Unchecked, "the scrape intervals could not be checked: "+s.IntervalsWhy
		return f
	}
	jobs := watched
	if len(jobs) == 0 {
		for j := range s.Jobs {
			jobs = append(jobs, j)
		}
	}
	slices.Sort(jobs)
	jobs = slices.Compact(jobs)
	var slow, unknown, fine []string
	for _, j := range jobs {
		d, ok := s.Jobs[j]
		switch {
		case !ok:
			unknown = append(unknown, j) // federated, remote-written or renamed by relabelling
		case d > WantScrapeInterval:
			slow = append(slow, fmt.Sprintf("%s every %s", j, d))
		default:
			fine = append(fine, j)
		}
	}
	switch {
	case len(slow) > 0:
		f.Level = Warn
		f.Message = fmt.Sprintf("scraped less often than every %s: %s; jitter that lasts seconds falls between scrapes and rates smooth it away",
			WantScrapeInterval, strings.Join(slow, ", "))
		f.Fix = fmt.Sprintf("set scrape_interval: %s on these jobs (or in global:) in prometheus.yml", WantScrapeInterval)
	case len(fine) > 0:
		f.Level, f.Message = OK, fmt.Sprintf("every %s or faster: %s", WantScrapeInterval, strings.Join(fine, ", "))
	case len(jobs) == 0:
		f.Level, f.Message = Unchecked, "the store has no scrape jobs to check"
	default:
		f.Level = Unchecked
	}
	if len(unknown) > 0 {
		note := fmt.Sprintf("not in the store's scrape configuration, so not checked: %s", strings.Join(unknown, ", "))
		f.Message = strings.TrimPrefix(f.Message+"; "+note, "; ")
	}
	return f
}

func retentionFinding(s Store) Finding {
	f := Finding{Check: "retention"}
	switch {
	case !s.RetentionKnown:
		f.Level, f.Message = Unchecked, "the retention could not be checked: "+s.RetentionWhy
	case s.Retention == 0:
		f.Level, f.Message = OK, "no time limit (a size limit may still cut the history)"
	case s.Retention >= WantRetention:
		f.Level, f.Message = OK, fmt.Sprintf("%s of samples kept", days(s.Retention))
	default:
		f.Level = Warn
		f.Message = fmt.Sprintf("%s of samples kept, under the %s that answer \"did this happen at this time on an earlier day?\"", days(s.Retention), days(WantRetention))
		if s.Retention < BaselineSpan {
			f.Message += fmt.Sprintf("; the same-time-of-day baseline reads %d previous days, so it has at most %d",
				int(BaselineSpan/(24*time.Hour))-1, max(0, int(s.Retention/(24*time.Hour))-1))
		}
		f.Fix = fmt.Sprintf("start Prometheus with --storage.tsdb.retention.time=%s", days(WantRetention))
	}
	return f
}

// days renders a retention as Prometheus flags write it (30d, 36h).
func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.Round(time.Minute).String()
}
