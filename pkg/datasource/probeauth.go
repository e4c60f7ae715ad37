package datasource

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/httpclient"
)

// Probe credentials are the probes' own (their --web.config.file: basic auth, TLS), never the
// Prometheus connection's. Settings, all optional:
//
//	jsonData:        probeBasicAuthUser, probeTlsSkipVerify, probeTlsServerName
//	secureJsonData:  probeBasicAuthPassword, probeBearerToken, probeTlsCACert,
//	                 probeTlsClientCert, probeTlsClientKey
type probeAuthJSON struct {
	BasicAuthUser string `json:"probeBasicAuthUser"`
	TLSSkipVerify bool   `json:"probeTlsSkipVerify"`
	TLSServerName string `json:"probeTlsServerName"`
}

// probeHTTPClient builds the client every probe request goes through (health check and live
// snapshot) from the probe credentials in the settings.
func probeHTTPClient(s backend.DataSourceInstanceSettings, timeout time.Duration) (*http.Client, error) {
	var j probeAuthJSON
	if len(s.JSONData) > 0 {
		if err := json.Unmarshal(s.JSONData, &j); err != nil {
			return nil, fmt.Errorf("the probe credentials in jsonData cannot be read: %w", err)
		}
	}
	secret := s.DecryptedSecureJSONData
	opts := httpclient.Options{
		Timeouts: &httpclient.TimeoutOptions{Timeout: timeout, DialTimeout: timeout, KeepAlive: 30 * time.Second,
			TLSHandshakeTimeout: timeout, IdleConnTimeout: 90 * time.Second, MaxIdleConns: 16, MaxIdleConnsPerHost: 2},
	}
	var problems []string
	password, token := secret["probeBasicAuthPassword"], strings.TrimSpace(secret["probeBearerToken"])
	switch {
	case j.BasicAuthUser != "" && token != "":
		problems = append(problems, "set either the probes' basic-auth user or their bearer token, not both")
	case j.BasicAuthUser != "":
		opts.BasicAuth = &httpclient.BasicAuthOptions{User: j.BasicAuthUser, Password: password}
	case password != "":
		problems = append(problems, "the probes' basic-auth password is set without probeBasicAuthUser")
	case token != "":
		opts.Header = http.Header{"Authorization": {"Bearer " + token}}
	}
	ca, cert, key := secret["probeTlsCACert"], secret["probeTlsClientCert"], secret["probeTlsClientKey"]
	if (cert == "") != (key == "") {
		problems = append(problems, "the probes' TLS client certificate and key go together: set both or neither")
	}
	if ca != "" || cert != "" || j.TLSSkipVerify || j.TLSServerName != "" {
		opts.TLS = &httpclient.TLSOptions{CACertificate: ca, ClientCertificate: cert, ClientKey: key,
			InsecureSkipVerify: j.TLSSkipVerify, ServerName: j.TLSServerName}
	}
	if len(problems) > 0 {
		return nil, errors.New("probe credentials: " + strings.Join(problems, "; "))
	}
	hc, err := httpclient.New(opts)
	if err != nil {
		if strings.Contains(err.Error(), "PEM") || strings.Contains(err.Error(), "tls") || strings.Contains(err.Error(), "certificate") {
			return nil, fmt.Errorf("probe credentials: the TLS CA or client certificate cannot be used (paste whole PEM blocks): %w", err)
		}
		return nil, fmt.Errorf("probe credentials: %w", err)
	}
	return hc, nil
}
