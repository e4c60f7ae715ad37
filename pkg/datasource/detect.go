package datasource

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
)

// ServerStatus is one inference server (metric profile) found in Prometheus.
type ServerStatus struct {
	Profile string `json:"profile"`
	Title   string `json:"title"`
	Models  int    `json:"models"`
	// Unlabelled: its metrics are there but none carries its model label.
	Unlabelled bool `json:"unlabelled,omitempty"`
}

// detectProfile finds the servers behind Prometheus the way queries do (engine.New, through the
// shared catalog). A failure leaves the profile undetected; it never fails the health check,
// which has already proven the connection. A forced profile that finds none of its metrics
// answers a warning naming them.
func (d *Datasource) detectProfile(ctx context.Context) ProfileStatus {
	forced := d.settings.Profile != "auto" && d.settings.Profile != ""
	st := ProfileStatus{Name: d.settings.Profile}
	e, err := engine.New(ctx, d.engineConfig())
	var nd *profile.NotDetectedError
	switch {
	case errors.As(err, &nd):
		st.Reason = nd.Reason + "; " + chooseProfileAdvice
		return st
	case err != nil:
		d.logger.Warn("Metric profile detection failed", "error", err.Error())
		st.Reason = "cannot list metric names: " + err.Error()
		return st
	}
	for _, s := range e.Fleet.Servers {
		st.Servers = append(st.Servers, ServerStatus{Profile: s.Profile.Name, Title: s.Profile.Title, Models: len(s.Models), Unlabelled: s.Unlabelled})
	}
	if forced {
		if len(st.Servers) == 0 {
			st.Warning = fmt.Sprintf("the %s profile is set but Prometheus has none of its metrics (missing: %s): its panels will be empty; choose auto or the profile of your server",
				e.Profile.Name, strings.Join(e.Profile.MissingSignature(e.Present), ", "))
			if e.Profile.Enable != "" {
				st.Warning += fmt.Sprintf("; %s serves them only with %s", e.Profile.Title, e.Profile.Enable)
			}
		}
		st.Reason = e.Fleet.Assignment().Summary()
		return st
	}
	st.Name, st.Detected = e.Profile.Name, true
	st.Reason = e.Fleet.Assignment().Summary()
	return st
}

// serversText is the health message's part on the servers found.
func serversText(st ProfileStatus) string {
	parts := make([]string, 0, len(st.Servers))
	for _, s := range st.Servers {
		switch {
		case s.Unlabelled:
			parts = append(parts, s.Profile+" (no series carries its model label)")
		case s.Models == 1:
			parts = append(parts, s.Profile+" (1 model)")
		default:
			parts = append(parts, fmt.Sprintf("%s (%d models)", s.Profile, s.Models))
		}
	}
	return strings.Join(parts, ", ")
}
