// Package datasource is the Grafana edge of Inferscope: the backend data source Grafana runs
// (queries, health check, resources). It turns Grafana requests into calls on pkg/prom and
// the probes, and results into data frames; no math lives here.
package datasource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
)

// PluginID is the data source's plugin id.
const PluginID = "inferscope-monitor-datasource"

// Limits bound what one request may cost.
type Limits struct {
	MaxSeries      int           // series per query
	MaxPoints      int           // points per series (Prometheus refuses more than 11,000)
	MaxConcurrency int           // queries of one request run at the same time
	ProbeTimeout   time.Duration // per probe request
}

// DefaultLimits are the limits of a data source instance.
var DefaultLimits = Limits{MaxSeries: 1000, MaxPoints: 11000, MaxConcurrency: 8, ProbeTimeout: 3 * time.Second}

// Datasource is one configured data-source instance. Invalid settings do not prevent it from
// existing: every handler then answers the settings error, so the user sees what to fix instead
// of a generic plugin failure.
type Datasource struct {
	settings    Settings
	settingsErr error
	prom        *prom.Client
	probeHTTP   *http.Client
	probeErr    error // probe credentials that cannot be used, reported on every probe
	limits      Limits
	version     string
	logger      log.Logger
	now         func() time.Time
	catalog     *engine.Catalog      // metric names and servers Prometheus has, for profile detection
	history     *engine.HistoryCache // previous days read by baseline queries
}

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ backend.CallResourceHandler   = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// NewFactory returns the instance factory for datasource.Manage. version is the plugin's
// version, reported by the ping resource.
func NewFactory(version string) func(context.Context, backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	return func(ctx context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
		return New(ctx, s, version, DefaultLimits), nil
	}
}

// New builds an instance from Grafana's settings. It never fails: a configuration problem is
// kept and reported by each handler.
func New(ctx context.Context, s backend.DataSourceInstanceSettings, version string, limits Limits) *Datasource {
	d := &Datasource{
		limits:    limits,
		version:   version,
		logger:    backend.Logger,
		now:       time.Now,
		probeHTTP: &http.Client{Timeout: limits.ProbeTimeout},
		history:   engine.NewHistoryCache(0),
	}
	d.catalog = &engine.Catalog{}
	d.settings, d.settingsErr = ParseSettings(s)
	// Probe credentials that cannot be used fail the probes alone, never the Prometheus queries.
	if hc, err := probeHTTPClient(s, limits.ProbeTimeout); err != nil {
		d.probeErr = err
	} else {
		d.probeHTTP = hc
	}
	if d.settingsErr != nil {
		d.logger.Warn("Data source settings are invalid", "uid", s.UID, "problem", d.settingsErr.Error())
		return d
	}
	client, err := newPromClient(ctx, s, d.settings.PrometheusURL, d.settings.MaxAnswerBytes, prom.Thanos(d.settings.Thanos))
	if err != nil {
		d.settingsErr = err
		d.logger.Warn("Data source HTTP settings are invalid", "uid", s.UID, "problem", err.Error())
		return d
	}
	d.prom = client
	return d
}

// newPromClient builds the one Prometheus client of an instance from Grafana's standard HTTP
// settings, so basic auth, custom headers (bearer tokens), TLS and the timeout apply.
func newPromClient(ctx context.Context, s backend.DataSourceInstanceSettings, address string, maxAnswer int64, opts ...prom.Option) (*prom.Client, error) {
	hopts, err := s.HTTPClientOptions(ctx)
	if err != nil {
		return nil, fmt.Errorf("the data source's HTTP settings cannot be read: %w", err)
	}
	hc, err := httpclient.New(hopts)
	if err != nil {
		if strings.Contains(err.Error(), "CA PEM") {
			return nil, errors.New("the TLS CA certificate cannot be parsed: paste the whole PEM text, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----")
		}
		if strings.Contains(err.Error(), "tls") || strings.Contains(err.Error(), "PEM") {
			return nil, fmt.Errorf("the TLS client certificate or key cannot be used: %w", err)
		}
		return nil, fmt.Errorf("cannot build the HTTP client for Prometheus: %w", err)
	}
	return prom.New(address, hc, append([]prom.Option{prom.MaxAnswerBytes(maxAnswer)}, opts...)...)
}

// Dispose releases the instance's connections when Grafana replaces or drops it.
func (d *Datasource) Dispose() {
	if d.prom != nil {
		d.prom.Close()
	}
	d.probeHTTP.CloseIdleConnections()
}

// Settings returns the validated settings and the settings error, if any.
func (d *Datasource) Settings() (Settings, error) { return d.settings, d.settingsErr }
