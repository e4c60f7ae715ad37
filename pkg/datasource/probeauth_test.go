package datasource

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/inferscope/inferscope/pkg/probe/server"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

// startSecuredProbe serves the probe's real handler behind exporter-toolkit's web config (TLS
// and basic auth), as `inferscope-probe --web.config.file` does.
func startSecuredProbe(t *testing.T, webYAML string, now time.Time) string {
	t.Helper()
	h, err := server.Handler(server.Options{Gatherer: prometheus.NewRegistry(), Version: "test", Now: func() time.Time { return now },
		Source: fixedSource{&snapshot.Snapshot{Hostname: "gpu-1", CollectedAt: now, NVML: snapshot.NVMLStatus{OK: true},
			GPUs: []snapshot.GPU{{Index: 0, UUID: "GPU-1", State: "up"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfg, []byte(webYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := promtest.FreeAddr(t)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		done <- web.ListenAndServe(srv, &web.FlagConfig{WebListenAddresses: &[]string{addr}, WebConfigFile: &cfg}, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("probe server: %v", err)
		}
	})
	for range 100 { // until it listens
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "https://" + addr
}

func TestProbeCredentials(t *testing.T) {
	pki := makePKI(t)
	prom := promtest.Start(t, promtest.Options{})
	now := time.Now()
	probe := startSecuredProbe(t, webConfig(t, "grafana", "s3cret", &pki), now)

	for _, tc := range []struct {
		name     string
		jsonData map[string]any
		secure   map[string]string
		ok       bool
		status   string
		want     string
	}{
		{"no credentials", map[string]any{}, map[string]string{"probeTlsCACert": pki.CAPEM}, false, "unauthorized",
			"refused the credentials (HTTP 401): set the probes' basic-auth user and password or bearer token"},
		{"wrong password", map[string]any{"probeBasicAuthUser": "grafana"}, map[string]string{"probeTlsCACert": pki.CAPEM, "probeBasicAuthPassword": "nope"},
			false, "unauthorized", "refused the credentials (HTTP 401)"},
		{"unknown CA", map[string]any{"probeBasicAuthUser": "grafana"}, map[string]string{"probeTlsCACert": pki.OtherCAPEM, "probeBasicAuthPassword": "s3cret"},
			false, "unreachable", "certificate"},
		{"password without user", map[string]any{}, map[string]string{"probeBasicAuthPassword": "s3cret"}, false, "misconfigured",
			"the probes' basic-auth password is set without probeBasicAuthUser"},
		{"broken CA", map[string]any{"probeBasicAuthUser": "grafana"}, map[string]string{"probeTlsCACert": "-----BEGIN CERTIFICATE-----\nnope", "probeBasicAuthPassword": "s3cret"},
			false, "misconfigured", "paste whole PEM blocks"},
		{"right credentials", map[string]any{"probeBasicAuthUser": "grafana"}, map[string]string{"probeTlsCACert": pki.CAPEM, "probeBasicAuthPassword": "s3cret"},
			true, "ok", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.jsonData["probeUrls"] = []string{probe}
			d := newTestDS(t, instanceSettings(t, prom.URL, tc.jsonData, tc.secure))
			res, st := checkHealth(t, d)
			if len(st.Probes) != 1 {
				t.Fatalf("probes %+v", st.Probes)
			}
			p := st.Probes[0]
			if p.OK != tc.ok || p.Status != tc.status || !strings.Contains(p.Error, tc.want) || (tc.ok && p.GPUs != 1) {
				t.Errorf("probe %+v, want ok %v status %s with %q", p, tc.ok, tc.status, tc.want)
			}
			if !tc.ok && !strings.Contains(res.Message, p.Error) {
				t.Errorf("the health message does not carry the probe's problem: %q", res.Message)
			}
			if strings.Contains(res.Message, "s3cret") || strings.Contains(string(res.JSONDetails), "s3cret") {
				t.Error("the probe password is echoed")
			}
		})
	}
}
