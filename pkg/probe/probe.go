// Package probe assembles inferscope-probe: a background NVML collector, its Prometheus
// exporter and the HTTP endpoints. The NVML binding (real or mock) is chosen by the caller
// through Config.Open, so this package and its users need no cgo themselves.
package probe

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/inferscope/inferscope/pkg/probe/collector"
	"github.com/inferscope/inferscope/pkg/probe/gpu"
	"github.com/inferscope/inferscope/pkg/probe/promexport"
	"github.com/inferscope/inferscope/pkg/probe/server"
)

// DefaultListenAddress is where the probe listens unless told otherwise.
const DefaultListenAddress = ":9835"

// Config configures a Probe.
type Config struct {
	Open      func() (gpu.Library, error)
	Interval  time.Duration
	RetryInit time.Duration
	Naming    promexport.Naming
	// XIDCount adds DCGM_EXP_XID_ERRORS_COUNT in the dcgm namings (promexport.Options.XIDCount).
	XIDCount    bool
	Hostname    string
	Version     string
	Mock        string
	Owners      collector.Owners
	MetricsPath string
	Logger      *slog.Logger
	Now         func() time.Time
	// NoRuntimeMetrics leaves out the Go and process collectors (for benchmarks).
	NoRuntimeMetrics bool
}

// Probe is an assembled probe.
type Probe struct {
	Collector *collector.Collector
	// Registry holds the per-scrape metrics (runtime, snapshot age); the GPU metrics are
	// gathered once per snapshot beside it.
	Registry *prometheus.Registry
	handler  http.Handler
}

// New assembles a probe; call Start to begin collecting.
func New(cfg Config) (*Probe, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := collector.New(collector.Config{
		Open: cfg.Open, Interval: cfg.Interval, RetryInit: cfg.RetryInit, Hostname: cfg.Hostname,
		Mock: cfg.Mock, Owners: cfg.Owners, Now: cfg.Now, Logger: cfg.Logger,
	})
	reg := prometheus.NewRegistry()
	if !cfg.NoRuntimeMetrics {
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	gatherer, err := promexport.NewGatherer(c, promexport.Options{Naming: cfg.Naming, XIDCount: cfg.XIDCount, Version: cfg.Version, Now: cfg.Now}, reg)
	if err != nil {
		return nil, err
	}
	h, err := server.Handler(server.Options{
		MetricsPath: cfg.MetricsPath, Gatherer: gatherer, Source: c, Version: cfg.Version, Now: cfg.Now, Logger: cfg.Logger,
	})
	if err != nil {
		return nil, err
	}
	return &Probe{Collector: c, Registry: reg, handler: h}, nil
}

// Start begins collection; the error is NVML's initialisation error (the probe keeps
// serving and retrying either way).
func (p *Probe) Start(ctx context.Context) error { return p.Collector.Start(ctx) }

// Handler serves /metrics, /api/v1/gpus, /healthz and the landing page.
func (p *Probe) Handler() http.Handler { return p.handler }

// Close stops collection and shuts NVML down.
func (p *Probe) Close() { p.Collector.Close() }
