package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferscope/inferscope/pkg/probe/probeclient"
	"github.com/inferscope/inferscope/pkg/prom"
)

// probeHealth is the part of the probe's /healthz answer we read.
type probeHealth struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
	GPUs   int    `json:"gpus"`
	GPUsUp int    `json:"gpusUp"`
}

// checkProbe asks a probe for /healthz and its live snapshot. Probe credentials are not
// Prometheus' credentials: nothing from the Prometheus settings is sent to a probe.
func (d *Datasource) checkProbe(ctx context.Context, rawURL string) ProbeStatus {
	where := prom.RedactURL(rawURL)
	ps := ProbeStatus{URL: where}
	fail := func(status, msg string) ProbeStatus {
		ps.OK, ps.Status, ps.Error = false, status, msg
		return ps
	}

	if d.probeErr != nil {
		return fail("misconfigured", fmt.Sprintf("probe at %s: %v", where, d.probeErr))
	}
	h, code, err := d.getProbeHealth(ctx, rawURL)
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return fail("unauthorized", fmt.Sprintf("probe at %s refused the credentials (HTTP %d): set the probes' basic-auth user and password or bearer token in the data source settings (probeBasicAuthUser, secure probeBasicAuthPassword or probeBearerToken)", where, code))
	case err != nil:
		return fail("unreachable", fmt.Sprintf("cannot reach probe at %s: %s", where, transportReason(err)))
	case code == http.StatusServiceUnavailable && h.Status != "":
		return fail(h.Status, fmt.Sprintf("probe at %s is %s: %s", where, h.Status, h.Reason))
	case code == http.StatusNotFound:
		return fail("unreachable", fmt.Sprintf("probe at %s has no /healthz: is it an Inferscope probe?", where))
	case code != http.StatusOK || h.Status == "":
		return fail("unreachable", fmt.Sprintf("probe at %s answered /healthz with HTTP %d: it does not look like an Inferscope probe", where, code))
	}

	snap, err := (&probeclient.Client{HTTP: d.probeHTTP}).Get(ctx, rawURL)
	if err != nil {
		if isTransport(err) {
			return fail("unreachable", fmt.Sprintf("cannot reach probe at %s: %s", where, transportReason(err)))
		}
		return fail("unreachable", fmt.Sprintf("probe at %s: %s", where, probeClientReason(err)))
	}
	ps.OK, ps.Status = true, h.Status
	ps.GPUs = len(snap.GPUs)
	for _, g := range snap.GPUs {
		if g.State == "up" {
			ps.GPUsUp++
		}
	}
	if h.Status != "ok" {
		ps.Error = h.Reason
	}
	return ps
}

func (d *Datasource) getProbeHealth(ctx context.Context, rawURL string) (probeHealth, int, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return probeHealth{}, 0, err
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), probeclient.Path) + "/healthz"
	u.RawQuery = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return probeHealth{}, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := d.probeHTTP.Do(req)
	if err != nil {
		return probeHealth{}, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return probeHealth{}, 0, err
	}
	var h probeHealth
	_ = json.Unmarshal(body, &h) // a non-JSON answer leaves Status empty, which the caller reports
	return h, resp.StatusCode, nil
}

func isTransport(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue)
}

// transportReason is the short cause of a failed HTTP request: "connection refused", a TLS
// problem, a timeout.
func transportReason(err error) string {
	if errors.Is(err, context.Canceled) {
		return "the request was cancelled"
	}
	return prom.TransportReason(err)
}

// probeClientReason drops probeclient's "probe <url>:" prefix, since the caller names the probe.
func probeClientReason(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "probe ") {
		return msg[i+2:]
	}
	return msg
}
