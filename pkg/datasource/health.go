package datasource

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
	"github.com/inferscope/inferscope/pkg/setup"
)

// SetupStatus is the `setup` resource and the health check's JSON details.
type SetupStatus struct {
	Prometheus   PromStatus    `json:"prometheus"`
	Profile      ProfileStatus `json:"profile"`
	Probes       []ProbeStatus `json:"probes"`
	WarmupWindow string        `json:"warmupWindow"`
	// Checks are the brief's set-up checks: the scrape interval of the inference and GPU jobs
	// and the retention (pkg/setup).
	Checks []setup.Finding `json:"checks,omitempty"`
}

// PromStatus is the state of the Prometheus connection.
type PromStatus struct {
	URL     string `json:"url"`
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	Store   string `json:"store"` // the kind of server found: Prometheus, VictoriaMetrics, Thanos, Mimir/Cortex
	Error   string `json:"error"`
}

// ProfileStatus says which metric profile is in use and whether it was detected.
type ProfileStatus struct {
	Name     string `json:"name"`
	Detected bool   `json:"detected"`
	Reason   string `json:"reason,omitempty"` // why detection chose this profile, or found none
	// Servers are the inference servers found, each with the number of models it serves (a
	// profile per model: one data source reads a mixed fleet).
	Servers []ServerStatus `json:"servers,omitempty"`
	// Warning: a forced profile whose metrics Prometheus does not have, naming them.
	Warning string `json:"warning,omitempty"`
}

// ProbeStatus is the state of one configured probe.
type ProbeStatus struct {
	URL    string `json:"url"`
	OK     bool   `json:"ok"`
	GPUs   int    `json:"gpus"`
	GPUsUp int    `json:"gpusUp"`
	// Status is the probe's own word: ok, degraded (serving, but NVML is unavailable or a GPU is
	// not up), stale, or unreachable.
	Status string `json:"status"`
	Error  string `json:"error"`
}

// Setup checks Prometheus and every probe concurrently and detects the metric profile.
func (d *Datasource) Setup(ctx context.Context) SetupStatus {
	st := SetupStatus{
		Prometheus:   PromStatus{URL: prom.RedactURL(d.settings.PrometheusURL)},
		Profile:      ProfileStatus{Name: d.settings.Profile},
		Probes:       make([]ProbeStatus, len(d.settings.ProbeURLs)),
		WarmupWindow: d.settings.WarmupWindowText(),
	}
	if d.settingsErr != nil {
		st.Prometheus.Error = d.settingsErr.Error()
		if d.settings.PrometheusURL == "" {
			st.Prometheus.URL = ""
		}
		return st
	}
	var wg sync.WaitGroup
	for i, u := range d.settings.ProbeURLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st.Probes[i] = d.checkProbe(ctx, u)
		}()
	}
	st.Prometheus = d.checkPrometheus(ctx)
	if st.Prometheus.OK {
		st.Profile = d.detectProfile(ctx)
		st.Checks = d.setupChecks(ctx)
	}
	wg.Wait()
	return st
}

// setupChecks runs the engine's set-up checks on the servers found (the catalog has them
// cached by detectProfile), or on the GPU series alone when no server was found.
func (d *Datasource) setupChecks(ctx context.Context) []setup.Finding {
	e, err := engine.New(ctx, d.engineConfig())
	if err != nil {
		e = d.gpuEngine(ctx)
	}
	findings, err := e.SetupChecks(ctx)
	if err != nil {
		d.logger.Warn("Set-up checks failed", "error", err.Error())
		return []setup.Finding{{Check: "set-up", Level: setup.Unchecked, Message: "the set-up checks could not run: " + err.Error()}}
	}
	return findings
}

func (d *Datasource) checkPrometheus(ctx context.Context) PromStatus {
	ps := PromStatus{URL: d.prom.URL()}
	bi, err := d.prom.BuildInfo(ctx)
	if err == nil {
		ps.OK, ps.Version, ps.Store = true, bi.Version, string(bi.Store)
		return ps
	}
	var pe *prom.Error
	if errors.As(err, &pe) && pe.Kind == prom.KindHTTP && pe.Status == 404 {
		// Some servers with the Prometheus query API lack buildinfo; a trivial query proves the API.
		if _, qerr := d.prom.Query(ctx, "1", d.now(), 1); qerr != nil {
			ps.Error = qerr.Error()
			return ps
		}
		ps.OK, ps.Store = true, string(d.prom.Store())
		return ps
	}
	ps.Error = err.Error()
	return ps
}

// CheckHealth names exactly what failed. Only a Prometheus failure makes the status ERROR;
// probe problems are reported alongside.
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	st := d.Setup(ctx)
	details, err := json.Marshal(st)
	if err != nil {
		details = nil
	}
	res := &backend.CheckHealthResult{Status: backend.HealthStatusOk, JSONDetails: details}
	var parts []string
	if !st.Prometheus.OK {
		res.Status = backend.HealthStatusError
		parts = append(parts, st.Prometheus.Error)
	} else {
		store := cmp.Or(st.Prometheus.Store, string(prom.StoreUnknown))
		if st.Prometheus.Version != "" {
			parts = append(parts, fmt.Sprintf("%s %s at %s is reachable", store, st.Prometheus.Version, st.Prometheus.URL))
		} else {
			parts = append(parts, fmt.Sprintf("%s at %s is reachable (it reports no version)", store, st.Prometheus.URL))
		}
		switch {
		case st.Profile.Detected && len(st.Profile.Servers) > 1:
			parts = append(parts, "a profile per model: servers found: "+serversText(st.Profile))
		case st.Profile.Detected:
			parts = append(parts, fmt.Sprintf("metric profile %s detected: %s", st.Profile.Name, serversText(st.Profile)))
		case st.Profile.Name == "auto" || st.Profile.Name == "":
			parts = append(parts, "metric profile not detected: "+st.Profile.Reason)
		case st.Profile.Warning != "":
			parts = append(parts, "warning: "+st.Profile.Warning)
		case len(st.Profile.Servers) > 0:
			parts = append(parts, fmt.Sprintf("metric profile %s: %s", st.Profile.Name, serversText(st.Profile)))
		default:
			parts = append(parts, "metric profile "+st.Profile.Name)
		}
	}
	for _, f := range st.Checks {
		switch f.Level {
		case setup.Warn:
			parts = append(parts, fmt.Sprintf("warning: %s: %s; fix: %s", f.Check, f.Message, f.Fix))
		case setup.Unchecked:
			// A store without the status API is worth a word; a store with nothing to check is not.
			if strings.Contains(f.Message, "could not be checked") {
				parts = append(parts, f.Check+": "+f.Message)
			}
		}
	}
	for _, p := range st.Probes {
		switch {
		case !p.OK:
			parts = append(parts, p.Error)
		case p.Error != "":
			parts = append(parts, fmt.Sprintf("probe %s: %d GPUs, %d up (%s)", p.URL, p.GPUs, p.GPUsUp, p.Error))
		default:
			parts = append(parts, fmt.Sprintf("probe %s: %d GPUs", p.URL, p.GPUs))
		}
	}
	res.Message = strings.Join(parts, ". ")
	return res, nil
}
