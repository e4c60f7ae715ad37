// Package server serves the probe's HTTP endpoints: the Prometheus metrics, the live JSON
// snapshot (/api/v1/gpus), /healthz and a landing page. Every handler reads the last
// snapshot and never waits on NVML.
package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// Paths of the fixed endpoints.
const (
	GPUsPath   = "/api/v1/gpus"
	HealthPath = "/healthz"
)

// Source is what the handlers read.
type Source interface {
	Snapshot() *snapshot.Snapshot
	Interval() time.Duration
}

// Options configures the handler.
type Options struct {
	MetricsPath string // default /metrics
	Gatherer    prometheus.Gatherer
	Source      Source
	Version     string
	Now         func() time.Time
	Logger      *slog.Logger
}

// Handler returns the probe's HTTP handler.
func Handler(o Options) (http.Handler, error) {
	if o.MetricsPath == "" {
		o.MetricsPath = "/metrics"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(o.MetricsPath, promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(o.Logger.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 16,
	}))
	mux.HandleFunc(GPUsPath, func(w http.ResponseWriter, r *http.Request) { serveGPUs(w, r, o) })
	mux.HandleFunc(HealthPath, func(w http.ResponseWriter, r *http.Request) { serveHealth(w, r, o) })
	if o.MetricsPath != "/" {
		landing, err := web.NewLandingPage(web.LandingConfig{
			Name:        "inferscope-probe",
			Description: "GPU metrics from NVML for Inferscope",
			Version:     o.Version,
			Links: []web.LandingLinks{
				{Address: o.MetricsPath, Text: "Metrics"},
				{Address: GPUsPath, Text: "GPU snapshot (JSON)"},
				{Address: HealthPath, Text: "Health"},
			},
		})
		if err != nil {
			return nil, err
		}
		mux.Handle("/", landing)
	}
	return mux, nil
}

func readOnly(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

func serveGPUs(w http.ResponseWriter, r *http.Request, o Options) {
	if !readOnly(w, r) {
		return
	}
	s := o.Source.Snapshot()
	if s == nil {
		http.Error(w, "no snapshot collected yet", http.StatusServiceUnavailable)
		return
	}
	out := *s // shallow copy: the snapshot itself is shared and immutable
	out.AgeSeconds = o.Now().Sub(s.CollectedAt).Seconds()
	writeJSON(w, http.StatusOK, &out)
}

// Health is the /healthz body.
type Health struct {
	// Status is "ok", "degraded" (serving, but NVML is unavailable or a GPU is not up) or
	// "stale" (collection has stopped advancing; answered with 503).
	Status     string              `json:"status"`
	Reason     string              `json:"reason"`
	NVML       snapshot.NVMLStatus `json:"nvml"`
	AgeSeconds float64             `json:"ageSeconds"`
	GPUs       int                 `json:"gpus"`
	GPUsUp     int                 `json:"gpusUp"`
}

// StaleAfter is how old a snapshot may get before /healthz fails: three missed cycles.
func StaleAfter(interval time.Duration) time.Duration { return 3*interval + 10*time.Second }

func serveHealth(w http.ResponseWriter, r *http.Request, o Options) {
	if !readOnly(w, r) {
		return
	}
	s := o.Source.Snapshot()
	if s == nil {
		writeJSON(w, http.StatusServiceUnavailable, &Health{Status: "stale", Reason: "no snapshot collected yet"})
		return
	}
	age := o.Now().Sub(s.CollectedAt)
	h := Health{Status: "ok", NVML: s.NVML, AgeSeconds: age.Seconds(), GPUs: len(s.GPUs)}
	for _, g := range s.GPUs {
		if g.State == snapshot.StateUp {
			h.GPUsUp++
		}
	}
	code := http.StatusOK
	switch {
	case age > StaleAfter(o.Source.Interval()):
		h.Status, h.Reason = "stale", "the last collection is "+age.Round(time.Second).String()+" old; NVML may be hung"
		code = http.StatusServiceUnavailable
	case !s.NVML.OK:
		h.Status, h.Reason = "degraded", s.NVML.Error
	case h.GPUsUp < h.GPUs:
		h.Status, h.Reason = "degraded", "some GPUs are lost or failing; see "+GPUsPath
	}
	writeJSON(w, code, &h)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
