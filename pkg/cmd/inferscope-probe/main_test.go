package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/inferscope/inferscope/pkg/probe/probeclient"
	"github.com/inferscope/inferscope/pkg/probe/server"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/gpuclock"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
)

type running struct {
	addr   string
	log    *promtest.LogBuffer
	cancel context.CancelFunc
	done   chan int
}

// start runs the probe in-process on a free loopback port and waits until it listens.
func start(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{log: &promtest.LogBuffer{}, cancel: cancel, done: make(chan int, 1)}
	ready := make(chan []net.Addr, 1)
	args = append([]string{"--web.listen-address=127.0.0.1:0"}, args...)
	go func() { r.done <- run(ctx, args, r.log, func(a []net.Addr) { ready <- a }) }()
	select {
	case addrs := <-ready:
		r.addr = addrs[0].String()
	case code := <-r.done:
		cancel()
		t.Fatalf("probe exited with %d before listening:\n%s", code, r.log)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("probe did not start:\n%s", r.log)
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t *testing.T) {
	r.cancel()
	select {
	case code := <-r.done:
		if code != 0 {
			t.Errorf("probe exited with %d:\n%s", code, r.log)
		}
		r.done <- code // let a second stop see it
	case <-time.After(30 * time.Second):
		t.Errorf("probe did not stop")
	}
}

func httpGet(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// scenarioClock serves the test bed's scenario clock (anchored at end), as the loadgen does,
// and returns the --mock.clock flag that points at it.
func scenarioClock(t *testing.T, end time.Time) string {
	t.Helper()
	srv := httptest.NewServer(gpuclock.Handler(testbed.Default(end)))
	t.Cleanup(srv.Close)
	return "--mock.clock=" + srv.URL
}

func TestMockServesEightGPUs(t *testing.T) {
	clock := scenarioClock(t, time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	for _, system := range []string{"dgxa100", "dgxh100"} {
		t.Run(system, func(t *testing.T) {
			r := start(t, "--mock="+system, "--mock.instance=node-b:8000", clock, "--hostname=gpu-node-7")
			s, err := probeclient.Get(context.Background(), "http://"+r.addr)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.GPUs) != 8 || s.Mock != system || s.Hostname != "gpu-node-7" || !s.NVML.OK {
				t.Fatalf("snapshot: mock %q host %q gpus %d nvml %+v", s.Mock, s.Hostname, len(s.GPUs), s.NVML)
			}
			wantName := map[string]string{"dgxa100": "NVIDIA A100-SXM4-40GB", "dgxh100": "NVIDIA H100 80GB HBM3"}[system]
			for _, g := range s.GPUs {
				if g.State != "up" || g.Name != wantName || g.MemUsedBytes == nil || len(g.Processes) != 1 {
					t.Errorf("gpu %d: %+v", g.Index, g)
				}
			}
			code, body := httpGet(t, http.DefaultClient, "http://"+r.addr+"/metrics")
			if code != 200 || !strings.Contains(body, `inferscope_probe_info{mock="`+system+`",naming="inferscope",version="dev"} 1`) {
				t.Errorf("/metrics: HTTP %d, no probe info for %s", code, system)
			}
		})
	}
}

func TestDCGMNamingFlag(t *testing.T) {
	t.Setenv("NODE_NAME", "")
	r := start(t, "--mock=dgxa100", "--mock.instance=node-c:8000", scenarioClock(t, time.Now()), "--naming=dcgm", "--web.telemetry-path=/gpu-metrics")
	code, body := httpGet(t, http.DefaultClient, "http://"+r.addr+"/gpu-metrics")
	if code != 200 || strings.Count(body, "\nDCGM_FI_DEV_GPU_UTIL{") != 8 {
		t.Errorf("/gpu-metrics: HTTP %d with %d DCGM_FI_DEV_GPU_UTIL series", code, strings.Count(body, "\nDCGM_FI_DEV_GPU_UTIL{"))
	}
	// Without --hostname the mock names the scenario's node, in today's dcgm-exporter's lower
	// case hostname label (Hostname before 4.8.3: --naming=dcgm-4.5), with the PCI bus id, the
	// driver label and the XID field's err_code.
	for _, want := range []string{`hostname="node-c"`, `pci_bus_id="00000000:`, `DCGM_FI_DRIVER_VERSION="`, `err_code="0"`} {
		if !strings.Contains(body, want) {
			t.Errorf("dcgm naming lacks %s", want)
		}
	}
	if strings.Contains(body, `Hostname=`) || strings.Contains(body, "DCGM_EXP_XID_ERRORS_COUNT") {
		t.Error("dcgm naming has the old Hostname label or the window count without --dcgm.xid-errors-count")
	}
	if code, _ := httpGet(t, http.DefaultClient, "http://"+r.addr+"/metrics"); code == 200 {
		t.Error("/metrics still serves metrics with --web.telemetry-path=/gpu-metrics")
	}
}

// --naming=dcgm-4.9 writes the base-unit names and the renamed driver label;
// --dcgm.xid-errors-count adds the window count.
func TestDCGM49NamingAndXIDCountFlags(t *testing.T) {
	r := start(t, "--mock=dgxa100", "--mock.instance=node-c:8000", scenarioClock(t, time.Now()), "--naming=dcgm-4.9", "--dcgm.xid-errors-count")
	code, body := httpGet(t, http.DefaultClient, "http://"+r.addr+"/metrics")
	for _, want := range []string{"\nDCGM_FI_DEV_GPU_UTIL_RATIO{", "\nDCGM_FI_DEV_FB_CAPACITY_BYTES{", `DCGM_FI_SYSTEM_DRIVER_VERSION="`,
		"\nDCGM_FI_DEV_XID_ERROR{", `window_size_in_ms="300000"`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (HTTP %d) lacks %q", code, want)
		}
	}
	if strings.Contains(body, "\nDCGM_FI_DEV_GPU_UTIL{") {
		t.Error("dcgm-4.9 writes the old DCGM_FI_DEV_GPU_UTIL")
	}
}

// Without an NVML library the probe starts, says so plainly, serves the reason on /healthz
// and keeps running.
func TestStartsWithoutNVML(t *testing.T) {
	lib := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	r := start(t, "--nvml.library="+lib)
	code, body := httpGet(t, http.DefaultClient, "http://"+r.addr+server.HealthPath)
	var h server.Health
	if err := json.Unmarshal([]byte(body), &h); err != nil {
		t.Fatalf("healthz: %q", body)
	}
	if code != 200 || h.Status != "degraded" || h.NVML.OK || !strings.Contains(h.Reason, "libnvidia-ml.so.1") || !strings.Contains(h.Reason, "not found") {
		t.Errorf("healthz: HTTP %d %+v", code, h)
	}
	if !strings.Contains(r.log.String(), "no NVML library found") {
		t.Errorf("log does not say plainly that NVML is missing:\n%s", r.log)
	}
	s, err := probeclient.Get(context.Background(), "http://"+r.addr)
	if err != nil || len(s.GPUs) != 0 || s.NVML.OK || s.NVML.Error == "" {
		t.Errorf("snapshot without NVML: %+v, %v", s, err)
	}
	code, body = httpGet(t, http.DefaultClient, "http://"+r.addr+"/metrics")
	if code != 200 || !strings.Contains(body, "inferscope_probe_nvml_up 0") {
		t.Errorf("/metrics without NVML: HTTP %d", code)
	}
}

func TestFailWithoutNVML(t *testing.T) {
	var log promtest.LogBuffer
	lib := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	code := run(context.Background(), []string{"--fail-without-nvml", "--nvml.library=" + lib, "--web.listen-address=127.0.0.1:0"}, &log, func([]net.Addr) {
		t.Error("probe listened although told to fail without NVML")
	})
	if code != 1 || !strings.Contains(log.String(), "no NVML library found") {
		t.Errorf("exit %d, log:\n%s", code, log.String())
	}
}

// The mock shows the scenario's truth at the time of its reading, read from the clock the
// loadgen serves; with the default instance, the clock's first.
func TestMockFollowsTheScenarioClock(t *testing.T) {
	s := testbed.Default(time.Now().Add(-2 * time.Hour))
	srv := httptest.NewServer(gpuclock.Handler(s))
	defer srv.Close()
	r := start(t, "--mock=dgxa100", "--mock.clock="+srv.URL)
	snap, err := probeclient.Get(context.Background(), "http://"+r.addr)
	if err != nil {
		t.Fatal(err)
	}
	inst := s.Instances()[0]
	if snap.Hostname != testbed.Node(inst) || len(snap.GPUs) != 8 {
		t.Fatalf("host %q (want %q), %d GPUs", snap.Hostname, testbed.Node(inst), len(snap.GPUs))
	}
	at := snap.CollectedAt.Truncate(time.Second)
	for _, g := range snap.GPUs {
		truth := s.GPU(inst, g.Index, at)
		if g.MemUsedBytes == nil || g.MemTotalBytes == nil || g.UtilRatio == nil {
			t.Fatalf("gpu %d: missing readings %+v", g.Index, g)
		}
		// One reading can fall a second from the snapshot's stamp: allow a percent point.
		if mem := float64(*g.MemUsedBytes) / float64(*g.MemTotalBytes); math.Abs(mem-truth.MemUsedRatio) > 0.01 {
			t.Errorf("gpu %d: memory %.4f, scenario %.4f", g.Index, mem, truth.MemUsedRatio)
		}
		if math.Abs(*g.UtilRatio-truth.UtilRatio) > 0.015 {
			t.Errorf("gpu %d: utilisation %.3f, scenario %.3f", g.Index, *g.UtilRatio, truth.UtilRatio)
		}
	}
}

// A clock that does not answer: with the instance named the probe serves lost GPUs (the
// loadgen may start later); without it, it cannot know what to play and exits.
func TestMockClockDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	down := "--mock.clock=" + srv.URL
	srv.Close()
	var log promtest.LogBuffer
	if code := run(context.Background(), []string{"--mock=dgxa100", down}, &log, nil); code != 1 || !strings.Contains(log.String(), "--mock.instance") {
		t.Errorf("no instance, clock down: exit %d, message %q", code, log.String())
	}
	r := start(t, "--mock=dgxa100", "--mock.instance=node-a:8000", down)
	snap, err := probeclient.Get(context.Background(), "http://"+r.addr)
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, g := range snap.GPUs {
		if g.State == "lost" {
			lost++
		}
	}
	if lost != 8 || snap.Hostname == "" {
		t.Errorf("clock down: %d of %d GPUs lost, host %q", lost, len(snap.GPUs), snap.Hostname)
	}
	if !strings.Contains(r.log.String(), "does not answer") {
		t.Errorf("no warning about the clock:\n%s", r.log)
	}
}

func TestBadFlags(t *testing.T) {
	clock := scenarioClock(t, time.Now())
	for _, args := range [][]string{
		{"--naming=prometheus"},
		{"--mock=dgx1"},
		{"--collect.interval=1ms"},
		{"--mock=dgxa100", "--mock.instance=node-z:1", clock},
		{"--mock=dgxa100", "--mock.clock=yesterday"},
		{"--web.telemetry-path=metrics"},
		{"--web.config.file=/nonexistent/web.yml"},
		{"--mock=dgxa100", "--mock.gpus=0", clock},
	} {
		var log promtest.LogBuffer
		if code := run(context.Background(), args, &log, nil); code != 2 || log.String() == "" {
			t.Errorf("%v: exit %d, message %q", args, code, log.String())
		}
	}
	var log promtest.LogBuffer
	if code := run(context.Background(), []string{"--help"}, &log, nil); code != 0 || !strings.Contains(log.String(), "--collect.interval") {
		t.Errorf("--help: exit %d", code)
	}
}

// TLS and basic auth through exporter-toolkit's web config, scraped by a real Prometheus.
func TestTLSBasicAuthScrapedByPrometheus(t *testing.T) {
	promtest.RequireBinary(t, "prometheus")
	dir := t.TempDir()
	certFile, keyFile := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	writeFile(t, webConfig, fmt.Sprintf("tls_server_config:\n  cert_file: %s\n  key_file: %s\nbasic_auth_users:\n  prom: %s\n", certFile, keyFile, hash))
	r := start(t, "--mock=dgxa100", scenarioClock(t, time.Now()), "--web.config.file="+webConfig, "--collect.interval=1s")

	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if code, _ := httpGet(t, client, "https://"+r.addr+"/metrics"); code != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d; want 401", code)
	}
	req, _ := http.NewRequest(http.MethodGet, "https://"+r.addr+"/api/v1/gpus", nil)
	req.SetBasicAuth("prom", "s3cret")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with credentials: HTTP %d", resp.StatusCode)
	}
	if code, _ := httpGet(t, http.DefaultClient, "http://"+r.addr+"/metrics"); code == 200 {
		t.Error("plain HTTP served although TLS is configured")
	}

	prom := promtest.Start(t, promtest.Options{ConfigYAML: fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: inferscope-probe
    scheme: https
    tls_config:
      ca_file: %s
    basic_auth:
      username: prom
      password: s3cret
    static_configs:
      - targets: ["%s"]
`, certFile, r.addr)})
	deadline := time.Now().Add(60 * time.Second)
	for {
		n, err := queryScalar(prom.URL, `count(inferscope_gpu_up == 1)`)
		if err == nil && n == 8 {
			break
		}
		if time.Now().After(deadline) {
			up, _ := queryScalar(prom.URL, `up{job="inferscope-probe"}`)
			t.Fatalf("Prometheus never saw 8 GPUs up (last: %v, %v; up=%v)", n, err, up)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func queryScalar(promURL, q string) (float64, error) {
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, err
	}
	if len(out.Data.Result) != 1 {
		return 0, fmt.Errorf("%d results", len(out.Data.Result))
	}
	var v float64
	_, err = fmt.Sscan(fmt.Sprint(out.Data.Result[0].Value[1]), &v)
	return v, err
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return certFile, keyFile
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
