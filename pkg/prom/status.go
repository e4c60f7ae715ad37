package prom

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v2"
)

// StoreSetup is what a Prometheus says of its own set-up through the status API: how long it
// keeps samples and how often each job is scraped.
type StoreSetup struct {
	// Retention is how long samples are kept; 0 with RetentionKnown means no time limit (only a
	// size limit is set).
	Retention      time.Duration
	RetentionKnown bool
	RetentionWhy   string // why it is unknown, for messages
	// Global is the default scrape interval; Jobs the interval of each scrape job (job_name).
	Global         time.Duration
	Jobs           map[string]time.Duration
	IntervalsKnown bool
	IntervalsWhy   string
}

// prometheusDefaultRetention and prometheusDefaultScrape are Prometheus' own defaults, which
// apply when the flags and the configuration leave them unset.
const (
	prometheusDefaultRetention = 15 * 24 * time.Hour
	prometheusDefaultScrape    = time.Minute
)

// Setup reads /api/v1/status/flags and /api/v1/status/config. A store without those endpoints
// (VictoriaMetrics, most Thanos and Mimir front ends) gives a StoreSetup that says so; only a
// cancelled or failed connection is an error.
func (c *Client) Setup(ctx context.Context) (StoreSetup, error) {
	var s StoreSetup
	flags, err := c.api.Flags(ctx)
	switch {
	case err == nil:
		s.Retention, s.RetentionKnown, s.RetentionWhy = retentionFrom(flags)
	case unreachable(c.wrap(err)):
		return s, c.wrap(err)
	default:
		s.RetentionWhy = "the store does not serve Prometheus' /api/v1/status/flags (" + c.wrap(err).Error() + ")"
	}
	cfg, err := c.api.Config(ctx)
	switch {
	case err == nil:
		s.Global, s.Jobs, err = intervalsFrom(cfg.YAML)
		s.IntervalsKnown = err == nil
		if err != nil {
			s.IntervalsWhy = err.Error()
		}
	case unreachable(c.wrap(err)):
		return s, c.wrap(err)
	default:
		s.IntervalsWhy = "the store does not serve Prometheus' /api/v1/status/config (" + c.wrap(err).Error() + ")"
	}
	return s, nil
}

func unreachable(err error) bool {
	switch KindOf(err) {
	case KindUnreachable, KindTLS, KindAuth, KindTimeout, KindCanceled:
		return true
	}
	return false
}

// retentionFrom applies Prometheus' rules: storage.tsdb.retention.time (or the deprecated
// storage.tsdb.retention) when set; unset with a size limit means no time limit; both unset
// means the 15-day default.
func retentionFrom(flags map[string]string) (time.Duration, bool, string) {
	raw, ok := flags["storage.tsdb.retention.time"]
	if !ok {
		return 0, false, "the store's flags have no storage.tsdb.retention.time (not a Prometheus server)"
	}
	parse := func(v string) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := model.ParseDuration(v)
		return time.Duration(d), err
	}
	d, err := parse(raw)
	if err != nil {
		return 0, false, fmt.Sprintf("storage.tsdb.retention.time %q does not parse: %v", raw, err)
	}
	if d == 0 {
		if old, err := parse(flags["storage.tsdb.retention"]); err == nil && old > 0 {
			d = old
		}
	}
	if d > 0 {
		return d, true, ""
	}
	if size := flags["storage.tsdb.retention.size"]; size != "" && size != "0" && size != "0B" {
		return 0, true, ""
	}
	return prometheusDefaultRetention, true, ""
}

// intervalsFrom reads the global and per-job scrape intervals of a Prometheus configuration.
func intervalsFrom(text string) (time.Duration, map[string]time.Duration, error) {
	var cfg struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName        string `yaml:"job_name"`
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		return 0, nil, fmt.Errorf("the store's configuration does not parse as YAML: %w", err)
	}
	global := prometheusDefaultScrape
	if cfg.Global.ScrapeInterval != "" {
		d, err := model.ParseDuration(cfg.Global.ScrapeInterval)
		if err != nil {
			return 0, nil, fmt.Errorf("global scrape_interval %q does not parse: %w", cfg.Global.ScrapeInterval, err)
		}
		global = time.Duration(d)
	}
	jobs := make(map[string]time.Duration, len(cfg.ScrapeConfigs))
	for _, sc := range cfg.ScrapeConfigs {
		jobs[sc.JobName] = global
		if sc.ScrapeInterval != "" {
			d, err := model.ParseDuration(sc.ScrapeInterval)
			if err != nil {
				return 0, nil, fmt.Errorf("job %s: scrape_interval %q does not parse: %w", sc.JobName, sc.ScrapeInterval, err)
			}
			jobs[sc.JobName] = time.Duration(d)
		}
	}
	return global, jobs, nil
}
