// Package promtest starts a real Prometheus server on a loopback port for tests.
//
// Tests in this project assert behaviour against the real thing: the binary comes from PATH
// (Debian's prometheus package in CI), serves a TSDB built by promtool, and is stopped when the
// test ends.
package promtest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Options describes the Prometheus server a test needs.
type Options struct {
	// DataDir is an existing TSDB directory to serve; "" means an empty temporary directory.
	// Prometheus writes into it (WAL, lock file), so hand it a copy the test owns.
	DataDir string
	// ConfigYAML is the content of prometheus.yml; "" means a config without scrape jobs.
	ConfigYAML string
	// WebConfigYAML is the content of --web.config.file (TLS, basic auth); "" means none.
	WebConfigYAML string
	// ReadyUser and ReadyPassword are the basic-auth credentials /-/ready is polled with when
	// WebConfigYAML requires them: without them a 401 only proves the server is up, and its first
	// answers may still be 503 while it loads the TSDB.
	ReadyUser, ReadyPassword string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// Retention is --storage.tsdb.retention.time; "" keeps every sample (100y), so imported
	// history is never cut.
	Retention string
	// Binary is the prometheus binary to run (e.g. Prometheus3Binary's); "" means
	// $INFERSCOPE_PROMETHEUS, else prometheus on PATH.
	Binary string
}

// PrometheusEnv names the prometheus binary every test runs unless its Options say otherwise,
// so the whole suite can run on another Prometheus.
const PrometheusEnv = "INFERSCOPE_PROMETHEUS"

// Prometheus3Env names a Prometheus 3 binary; by default Prometheus3Binary looks where
// scripts/deps.sh builds it.
const Prometheus3Env = "INFERSCOPE_PROMETHEUS3"

// Prometheus3Binary returns the Prometheus 3 binary: $INFERSCOPE_PROMETHEUS3, or
// <user cache dir>/inferscope/prometheus3/prometheus (scripts/deps.sh builds it there). Missing
// is a skip, or a failure when CI=true.
func Prometheus3Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(Prometheus3Env)
	if bin == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Fatalf("user cache dir: %v", err)
		}
		bin = filepath.Join(base, "inferscope", "prometheus3", "prometheus")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		msg := fmt.Sprintf("Prometheus 3 not found at %s (scripts/deps.sh prometheus3 builds it; %s names another)", bin, Prometheus3Env)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true, so this is a failure)")
		}
		t.Skip(msg)
	}
	return bin
}

// Server is a running Prometheus.
type Server struct {
	URL     string // e.g. http://127.0.0.1:40123 (https when the web config enables TLS)
	DataDir string
}

const defaultConfig = "global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n"

// RequireBinary returns the path of name on PATH. When it is missing the test fails if CI=true
// (a CI that silently skips its integration tests proves nothing) and is skipped otherwise.
func RequireBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found on PATH (CI=true, so this is a failure): %v", name, err)
	}
	t.Skipf("%s not found on PATH: %v", name, err)
	return ""
}

// CreateBlocks imports an OpenMetrics file into TSDB blocks under dir with promtool.
func CreateBlocks(ctx context.Context, openMetricsFile, dir string) error {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		return fmt.Errorf("promtool not found on PATH: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", openMetricsFile, dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("promtool tsdb create-blocks-from openmetrics %s: %w\n%s", openMetricsFile, err, tail(out.Bytes(), 4096))
	}
	return nil
}

// StartWithHistory imports history (OpenMetrics text ending in "# EOF") into blocks with promtool
// and runs Prometheus on them for the duration of the test; opts.DataDir is set here.
func StartWithHistory(t testing.TB, history string, opts Options) *Server {
	t.Helper()
	RequireBinary(t, "promtool")
	dir := t.TempDir()
	om := filepath.Join(dir, "history.om")
	mustWrite(t, om, history)
	opts.DataDir = filepath.Join(dir, "data")
	if err := CreateBlocks(t.Context(), om, opts.DataDir); err != nil {
		t.Fatal(err)
	}
	return Start(t, opts)
}

// RunRuleTests runs `promtool test rules` on the test file in dir (rule_files resolve from
// dir) and fails the test with the end of promtool's report when a case fails.
func RunRuleTests(t testing.TB, dir, file string) {
	t.Helper()
	promtool := RequireBinary(t, "promtool")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, promtool, "test", "rules", file)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", file, err, tail(out, 12000))
	}
}

// Start runs Prometheus for the duration of the test and returns once /-/ready answers.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := cmp.Or(opts.Binary, os.Getenv(PrometheusEnv))
	if bin == "" {
		bin = RequireBinary(t, "prometheus")
	}

	work := t.TempDir()
	dataDir := opts.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(work, "data")
	}
	cfg := opts.ConfigYAML
	if cfg == "" {
		cfg = defaultConfig
	}
	cfgFile := filepath.Join(work, "prometheus.yml")
	mustWrite(t, cfgFile, cfg)

	addr := FreeAddr(t)
	args := []string{
		"--config.file=" + cfgFile,
		"--storage.tsdb.path=" + dataDir,
		"--storage.tsdb.retention.time=" + cmp.Or(opts.Retention, "100y"),
		"--web.listen-address=" + addr,
		"--web.enable-lifecycle",
		"--log.level=warn",
	}
	scheme := "http"
	if opts.WebConfigYAML != "" {
		webFile := filepath.Join(work, "web.yml")
		mustWrite(t, webFile, opts.WebConfigYAML)
		args = append(args, "--web.config.file="+webFile)
		if bytes.Contains([]byte(opts.WebConfigYAML), []byte("tls_server_config")) {
			scheme = "https"
		}
	}
	args = append(args, opts.ExtraArgs...)

	proc := StartProcess(t, bin, args...)

	srv := &Server{URL: scheme + "://" + addr, DataDir: dataDir}
	if err := waitReady(srv.URL, opts, proc.Exited); err != nil {
		t.Fatalf("prometheus did not become ready at %s: %v\n--- prometheus log ---\n%s", srv.URL, err, tail(proc.Logs.Bytes(), 8192))
	}
	return srv
}

// waitReady polls /-/ready, with the basic-auth credentials of opts when it has them. With a web
// config and no credentials any HTTP answer proves the server is up, since the test's own client
// does not carry them.
func waitReady(url string, opts Options, exited <-chan error) error {
	anyAnswer := opts.WebConfigYAML != "" && opts.ReadyUser == ""
	client := &http.Client{Timeout: 2 * time.Second, Transport: insecureTransport()}
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("prometheus exited: %w", err)
		default:
		}
		req, err := http.NewRequest(http.MethodGet, url+"/-/ready", nil)
		if err != nil {
			return err
		}
		if opts.ReadyUser != "" {
			req.SetBasicAuth(opts.ReadyUser, opts.ReadyPassword)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || anyAnswer {
				return nil
			}
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last == nil {
		last = errors.New("timed out")
	}
	return last
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// CheckMetrics runs promtool check metrics on an exposition. A parse error (or promtool
// missing, see RequireBinary) fails the test; the linter's findings are returned, one a line.
func CheckMetrics(t testing.TB, exposition []byte) []string {
	t.Helper()
	promtool := RequireBinary(t, "promtool")
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(exposition)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	// promtool exits 3 when the exposition parses but the linter has findings.
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 3) {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
	var findings []string
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(line) > 0 {
			findings = append(findings, string(line))
		}
	}
	if err == nil && len(findings) > 0 {
		t.Fatalf("promtool check metrics exited 0 with output:\n%s", out)
	}
	return findings
}

// DCGMCompatible reports whether a promtool finding is one that dcgm-exporter's own output
// causes, so an exposition in its names has it too: camelCase labels (UUID, modelName,
// Hostname, GPU_I_ID), counters named without _total (its counters file types
// DCGM_FI_DEV_PCIE_REPLAY_COUNTER, the ECC and remapped-row fields as counters), and
// "COUNTER" in a name.
func DCGMCompatible(finding string) bool {
	return strings.HasSuffix(finding, "label names should be written in 'snake_case' not 'camelCase'") ||
		(strings.HasPrefix(finding, "DCGM_") && strings.HasSuffix(finding, `counter metrics should have "_total" suffix`)) ||
		strings.HasSuffix(finding, "metric name should not include type 'counter'")
}
