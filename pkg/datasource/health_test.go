package datasource

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/probe/server"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

func checkHealth(t *testing.T, d *Datasource) (*backend.CheckHealthResult, SetupStatus) {
	t.Helper()
	res, err := d.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatalf("CheckHealth returned an error instead of a result: %v", err)
	}
	var st SetupStatus
	if err := json.Unmarshal(res.JSONDetails, &st); err != nil {
		t.Fatalf("JSONDetails %s: %v", res.JSONDetails, err)
	}
	return res, st
}

func wantHealth(t *testing.T, name string, d *Datasource, status backend.HealthStatus, message string) {
	t.Helper()
	res, _ := checkHealth(t, d)
	if res.Status != status || res.Message != message {
		t.Errorf("%s: health %v %q,\n want %v %q", name, res.Status, res.Message, status, message)
	}
}

func TestHealthPlainPrometheus(t *testing.T) {
	srv := startPromWithCounters(t, promtest.Options{})
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{}, nil))
	res, st := checkHealth(t, d)
	if res.Status != backend.HealthStatusOk {
		t.Fatalf("health %v: %s", res.Status, res.Message)
	}
	// One metric name is too little to detect a profile (the test bed's full history, in
	// TestProtocol, is detected as custom).
	want := regexp.MustCompile(`^Prometheus (2\.\d+\.\d+\S*) at ` + regexp.QuoteMeta(srv.URL) + ` is reachable\. metric profile not detected: no known inference-server metrics`)
	m := want.FindStringSubmatch(res.Message)
	if m == nil {
		t.Fatalf("message %q does not match %s", res.Message, want)
	}
	if st.Prometheus.Version != m[1] || !st.Prometheus.OK || st.Prometheus.URL != srv.URL || st.Prometheus.Error != "" {
		t.Errorf("details %+v", st.Prometheus)
	}
	if st.Profile.Name != "auto" || st.Profile.Detected || st.WarmupWindow != "2m" {
		t.Errorf("details %+v", st)
	}

	// An explicit profile is reported as configured, not detected; finding none of its metrics,
	// it warns and names them.
	d = newTestDS(t, instanceSettings(t, srv.URL, map[string]any{"profile": "vllm", "warmupWindow": "90s"}, nil))
	res, st = checkHealth(t, d)
	if st.Profile.Name != "vllm" || st.Profile.Detected || len(st.Profile.Servers) != 0 || st.WarmupWindow != "1m30s" {
		t.Errorf("explicit profile: %+v", st)
	}
	if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "warning: the vllm profile is set but Prometheus has none of its metrics (missing: vllm:e2e_request_latency_seconds_bucket, vllm:request_queue_time_seconds_bucket,") {
		t.Errorf("explicit absent profile: %v %q", res.Status, res.Message)
	}
}

func TestHealthSettingsErrors(t *testing.T) {
	wantHealth(t, "empty URL", newTestDS(t, instanceSettings(t, "", nil, nil)), backend.HealthStatusError,
		"Prometheus URL is empty: set it in the data source's HTTP section")
	wantHealth(t, "no scheme", newTestDS(t, instanceSettings(t, "localhost:9090", nil, nil)), backend.HealthStatusError,
		`Prometheus URL "localhost:9090" is malformed: it must start with http:// or https://`)
	wantHealth(t, "bad host", newTestDS(t, instanceSettings(t, "http://admin:s3cret@[::1", nil, nil)), backend.HealthStatusError,
		`Prometheus URL "http://[::1" is malformed: missing ']' in host`)
	wantHealth(t, "warm-up", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"warmupWindow": "two minutes"}, nil)), backend.HealthStatusError,
		`warmupWindow "two minutes" is not a duration: use a value like "2m" or "90s"`)
	wantHealth(t, "probe", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"probeUrls": []string{"gpu-node-1:9835"}}, nil)), backend.HealthStatusError,
		`probe URL "gpu-node-1:9835" is malformed: it must start with http:// or https://`)
	wantHealth(t, "profile", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"profile": "onnx"}, nil)), backend.HealthStatusError,
		`profile "onnx" is unknown: use one of auto, custom, vllm, triton, torchserve, tgi, sglang`)
	wantHealth(t, "label", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"modelLabel": "model-name"}, nil)), backend.HealthStatusError,
		`modelLabel "model-name" is not a Prometheus label name (letters, digits and _, not starting with a digit)`)
	wantHealth(t, "profile labels' profile", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"profileLabels": map[string]any{"onnx": map[string]any{"modelLabel": "m"}}}, nil)), backend.HealthStatusError,
		`profileLabels names profile "onnx", which is unknown: use one of custom, vllm, triton, torchserve, tgi, sglang`)
	wantHealth(t, "profile label", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"profileLabels": map[string]any{"tgi": map[string]any{"modelLabel": "model-name"}}}, nil)), backend.HealthStatusError,
		`profileLabels.tgi.modelLabel "model-name" is not a Prometheus label name (letters, digits and _, not starting with a digit)`)
	wantHealth(t, "profile labels' shape", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"profileLabels": []string{"tgi"}}, nil)), backend.HealthStatusError,
		`setting profileLabels must be an object of label renames per profile, e.g. {"tgi": {"modelLabel": "model_name"}}, got ["tgi"]`)
	wantHealth(t, "wrong type", newTestDS(t, instanceSettings(t, "http://127.0.0.1:9", map[string]any{"basicAuth": true, "basicAuthUser": 42}, nil)), backend.HealthStatusError,
		"setting basicAuthUser must be a string, got 42")
	wantHealth(t, "bad CA", newTestDS(t, instanceSettings(t, "https://127.0.0.1:9", map[string]any{"tlsAuthWithCACert": true}, map[string]string{"tlsCACert": "not a certificate"})), backend.HealthStatusError,
		"the TLS CA certificate cannot be parsed: paste the whole PEM text, from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----")

	res, _ := checkHealth(t, newTestDS(t, instanceSettings(t, "", map[string]any{"warmupWindow": "soon"}, nil)))
	if !strings.HasPrefix(res.Message, "the data source settings have 2 problems: Prometheus URL is empty") {
		t.Errorf("two problems: %q", res.Message)
	}
}

func TestHealthUnreachable(t *testing.T) {
	u := promtest.ClosedURL(t)
	wantHealth(t, "closed port", newTestDS(t, instanceSettings(t, u, nil, nil)), backend.HealthStatusError,
		"cannot reach Prometheus at "+u+": connection refused")
}

func TestHealthNotPrometheus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><title>Grafana</title>")
	}))
	defer srv.Close()
	wantHealth(t, "garbage", newTestDS(t, instanceSettings(t, srv.URL, nil, nil)), backend.HealthStatusError,
		`the server at `+srv.URL+` is not a Prometheus HTTP API (HTTP 200, Content-Type "text/html; charset=utf-8"): (HTML page) Grafana`)
}

func TestHealthAuthAndTLS(t *testing.T) {
	p := makePKI(t)
	const user, password = "grafana", "correct horse battery staple"
	srv := promtest.Start(t, promtest.Options{WebConfigYAML: webConfig(t, user, password, &p), ReadyUser: user, ReadyPassword: password})
	if !strings.HasPrefix(srv.URL, "https://") {
		t.Fatalf("TLS Prometheus at %s", srv.URL)
	}
	withCA := map[string]any{"basicAuth": true, "basicAuthUser": user, "tlsAuthWithCACert": true}
	secure := func(pw string) map[string]string {
		return map[string]string{"basicAuthPassword": pw, "tlsCACert": p.CAPEM}
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	rejected := func(code int) string {
		return fmt.Sprintf("Prometheus at %s rejected the credentials (HTTP %d): check the basic-auth user and password or the bearer token", srv.URL, code)
	}

	cases := []struct {
		name    string
		url     string
		json    map[string]any
		secure  map[string]string
		status  backend.HealthStatus
		message string // exact, or a regexp when it starts with ^
	}{
		{"CA and password", srv.URL, withCA, secure(password), backend.HealthStatusOk, `^Prometheus 2\.\S+ at ` + regexp.QuoteMeta(srv.URL) + ` is reachable\.`},
		{"wrong password", srv.URL, withCA, secure("hunter2"), backend.HealthStatusError, rejected(401)},
		{"no credentials", srv.URL, map[string]any{"tlsAuthWithCACert": true}, map[string]string{"tlsCACert": p.CAPEM}, backend.HealthStatusError, rejected(401)},
		{"header credentials", srv.URL, map[string]any{"tlsAuthWithCACert": true, "httpHeaderName1": "Authorization"},
			map[string]string{"tlsCACert": p.CAPEM, "httpHeaderValue1": basic}, backend.HealthStatusOk, `^Prometheus 2\.\S+ at `},
		{"wrong bearer token", srv.URL, map[string]any{"tlsAuthWithCACert": true, "httpHeaderName1": "Authorization"},
			map[string]string{"tlsCACert": p.CAPEM, "httpHeaderValue1": "Bearer not-a-valid-token"}, backend.HealthStatusError, rejected(401)},
		{"unknown CA", srv.URL, map[string]any{"basicAuth": true, "basicAuthUser": user}, map[string]string{"basicAuthPassword": password}, backend.HealthStatusError,
			"TLS handshake with " + srv.URL + " failed: certificate signed by unknown authority — add the CA certificate or enable Skip TLS verify"},
		{"other CA", srv.URL, withCA, map[string]string{"basicAuthPassword": password, "tlsCACert": p.OtherCAPEM}, backend.HealthStatusError,
			"TLS handshake with " + srv.URL + " failed: certificate signed by unknown authority — add the CA certificate or enable Skip TLS verify"},
		{"skip verify", srv.URL, map[string]any{"basicAuth": true, "basicAuthUser": user, "tlsSkipVerify": true}, map[string]string{"basicAuthPassword": password}, backend.HealthStatusOk, `^Prometheus 2\.\S+ at `},
		{"http to https", strings.Replace(srv.URL, "https://", "http://", 1), withCA, secure(password), backend.HealthStatusError,
			"Prometheus at " + strings.Replace(srv.URL, "https://", "http://", 1) + " only accepts HTTPS: change the URL to https://"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := newTestDS(t, instanceSettings(t, c.url, c.json, c.secure))
			res, st := checkHealth(t, d)
			ok := res.Message == c.message
			if strings.HasPrefix(c.message, "^") {
				ok = regexp.MustCompile(c.message).MatchString(res.Message)
			}
			if res.Status != c.status || !ok {
				t.Errorf("health %v %q,\n want %v %q", res.Status, res.Message, c.status, c.message)
			}
			// Secrets never come back in the answer.
			for _, secret := range []string{password, "hunter2", "not-a-valid-token", base64.StdEncoding.EncodeToString([]byte(user + ":" + password))} {
				if strings.Contains(res.Message, secret) || strings.Contains(string(res.JSONDetails), secret) {
					t.Errorf("the health answer echoes a secret: %s %s", res.Message, res.JSONDetails)
				}
			}
			if c.status == backend.HealthStatusError && st.Prometheus.Error != res.Message {
				t.Errorf("setup error %q differs from the health message", st.Prometheus.Error)
			}
		})
	}

	// https:// to a server without TLS.
	plain := promtest.Start(t, promtest.Options{})
	httpsURL := strings.Replace(plain.URL, "http://", "https://", 1)
	wantHealth(t, "https to http", newTestDS(t, instanceSettings(t, httpsURL, nil, nil)), backend.HealthStatusError,
		"TLS handshake with "+httpsURL+" failed: the server does not speak TLS — use http:// in the URL")
}

func TestHealthURLWithCredentialsIsRedacted(t *testing.T) {
	u := promtest.ClosedURL(t)
	withUser := strings.Replace(u, "http://", "http://admin:pa55word@", 1) + "/?token=abc"
	res, _ := checkHealth(t, newTestDS(t, instanceSettings(t, withUser, nil, nil)))
	if strings.Contains(res.Message, "pa55word") || strings.Contains(string(res.JSONDetails), "pa55word") || strings.Contains(res.Message, "token=abc") {
		t.Errorf("health echoes URL credentials: %s %s", res.Message, res.JSONDetails)
	}
	if res.Message != "cannot reach Prometheus at "+u+"/: connection refused" {
		t.Errorf("message %q", res.Message)
	}
}

// fixedSource serves one snapshot through the probe's real HTTP handler.
type fixedSource struct{ snap *snapshot.Snapshot }

func (f fixedSource) Snapshot() *snapshot.Snapshot { return f.snap }
func (f fixedSource) Interval() time.Duration      { return 5 * time.Second }

// startProbe serves snap as a probe whose clock reads now: a snapshot's age is exact however
// slowly the test runs.
func startProbe(t *testing.T, snap *snapshot.Snapshot, now time.Time) string {
	t.Helper()
	h, err := server.Handler(server.Options{Gatherer: prometheus.NewRegistry(), Source: fixedSource{snap}, Version: "test",
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestHealthProbes(t *testing.T) {
	prom := promtest.Start(t, promtest.Options{})
	now := time.Now()
	healthy := startProbe(t, &snapshot.Snapshot{Hostname: "gpu-1", CollectedAt: now, NVML: snapshot.NVMLStatus{OK: true},
		GPUs: []snapshot.GPU{{Index: 0, State: snapshot.StateUp}, {Index: 1, State: snapshot.StateUp}}}, now)
	degraded := startProbe(t, &snapshot.Snapshot{Hostname: "gpu-2", CollectedAt: now, NVML: snapshot.NVMLStatus{OK: true},
		GPUs: []snapshot.GPU{{Index: 0, State: snapshot.StateUp}, {Index: 1, State: snapshot.StateLost, Error: "GPU is lost"}}}, now)
	stale := startProbe(t, &snapshot.Snapshot{Hostname: "gpu-3", CollectedAt: now.Add(-10 * time.Minute), NVML: snapshot.NVMLStatus{OK: true},
		GPUs: []snapshot.GPU{{Index: 0, State: snapshot.StateUp}}}, now)
	closed := promtest.ClosedURL(t)

	d := newTestDS(t, instanceSettings(t, prom.URL, map[string]any{"probeUrls": []string{healthy, degraded, stale, closed}}, nil))
	res, st := checkHealth(t, d)
	if res.Status != backend.HealthStatusOk {
		t.Fatalf("probe failures must not fail the health check: %v %s", res.Status, res.Message)
	}
	want := []ProbeStatus{
		{URL: healthy, OK: true, GPUs: 2, GPUsUp: 2, Status: "ok"},
		{URL: degraded, OK: true, GPUs: 2, GPUsUp: 1, Status: "degraded", Error: "some GPUs are lost or failing; see /api/v1/gpus"},
		{URL: stale, Status: "stale", Error: "probe at " + stale + " is stale: the last collection is 10m0s old; NVML may be hung"},
		{URL: closed, Status: "unreachable", Error: "cannot reach probe at " + closed + ": connection refused"},
	}
	if len(st.Probes) != len(want) {
		t.Fatalf("probes %+v", st.Probes)
	}
	for i := range want {
		if st.Probes[i] != want[i] {
			t.Errorf("probe %d: %+v,\n want %+v", i, st.Probes[i], want[i])
		}
	}
	for _, part := range []string{
		"probe " + healthy + ": 2 GPUs",
		"probe " + degraded + ": 2 GPUs, 1 up (some GPUs are lost or failing; see /api/v1/gpus)",
		"probe at " + stale + " is stale",
		"cannot reach probe at " + closed + ": connection refused",
	} {
		if !strings.Contains(res.Message, part) {
			t.Errorf("message %q lacks %q", res.Message, part)
		}
	}

	// A server that is not a probe.
	notProbe := httptest.NewServer(http.NotFoundHandler())
	defer notProbe.Close()
	d = newTestDS(t, instanceSettings(t, prom.URL, map[string]any{"probeUrls": []string{notProbe.URL}}, nil))
	_, st = checkHealth(t, d)
	if st.Probes[0].OK || st.Probes[0].Error != "probe at "+notProbe.URL+" has no /healthz: is it an Inferscope probe?" {
		t.Errorf("not a probe: %+v", st.Probes[0])
	}
}

func TestSettingsProfileLabels(t *testing.T) {
	s, err := ParseSettings(instanceSettings(t, "http://127.0.0.1:9", map[string]any{
		"modelLabel":    "svc",
		"profileLabels": map[string]any{"tgi": map[string]any{"modelLabel": "model_name"}, "triton": map[string]any{"instanceLabel": "pod"}},
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]profile.Labels{"tgi": {Model: "model_name"}, "triton": {Instance: "pod"}}
	if !reflect.DeepEqual(s.ProfileLabels, want) || s.Labels() != (profile.Labels{Model: "svc"}) {
		t.Errorf("parsed %+v %+v", s.ProfileLabels, s.Labels())
	}
	// The flat renames apply to every profile, a profile's own over them.
	ps, err := (engine.Config{Labels: s.Labels(), PerProfile: s.ProfileLabels}).Profiles()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Name] = p.ModelLabel + "/" + p.InstanceLabel
	}
	if fmt.Sprint(got) != "map[custom:svc/instance sglang:svc/instance tgi:model_name/instance torchserve:svc/instance triton:svc/pod vllm:svc/instance]" {
		t.Errorf("labels per profile: %v", got)
	}
}

// VictoriaMetrics reports no version in its build info: the health check names it instead of
// refusing it.
func TestHealthVictoriaMetrics(t *testing.T) {
	vm := promtest.StartVictoria(t, promtest.VictoriaOptions{})
	d := newTestDS(t, instanceSettings(t, vm.URL, map[string]any{}, nil))
	res, st := checkHealth(t, d)
	want := "VictoriaMetrics at " + vm.URL + " is reachable (it reports no version). metric profile not detected: "
	if res.Status != backend.HealthStatusOk || !strings.HasPrefix(res.Message, want) {
		t.Fatalf("health %v %q, want OK %q…", res.Status, res.Message, want)
	}
	if !st.Prometheus.OK || st.Prometheus.Store != "VictoriaMetrics" || st.Prometheus.Version != "" {
		t.Errorf("details %+v", st.Prometheus)
	}
}
