package promtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// VictoriaEnv names a victoria-metrics binary to use instead of the one on PATH.
const VictoriaEnv = "INFERSCOPE_VICTORIA_METRICS"

// VictoriaOptions describes the single-node VictoriaMetrics a test needs.
type VictoriaOptions struct {
	// StorageDir is an existing -storageDataPath to serve; "" means an empty temporary one.
	// VictoriaMetrics merges parts in it, so hand it a copy the test owns.
	StorageDir string
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// Victoria is a running single-node VictoriaMetrics.
type Victoria struct {
	URL        string // e.g. http://127.0.0.1:40123; the Prometheus query API is under it
	StorageDir string
	proc       *Process
}

// VictoriaBinary returns the victoria-metrics binary: $INFERSCOPE_VICTORIA_METRICS, or the one
// on PATH (Debian's victoria-metrics package). Missing is a skip, or a failure when CI=true.
func VictoriaBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(VictoriaEnv); bin != "" {
		return bin
	}
	return RequireBinary(t, "victoria-metrics")
}

// StartVictoria runs VictoriaMetrics on a loopback port for the rest of the test, with a
// retention that keeps any imported history (100y), and returns once it answers /health.
func StartVictoria(t testing.TB, opts VictoriaOptions) *Victoria {
	t.Helper()
	bin := VictoriaBinary(t)
	dir := opts.StorageDir
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "vm")
	}
	addr := FreeAddr(t)
	args := append([]string{
		"-storageDataPath=" + dir,
		"-retentionPeriod=100y",
		"-httpListenAddr=" + addr,
		"-loggerLevel=ERROR",
		// The history ends in the past; nothing in it is too recent to answer.
		"-search.latencyOffset=0s",
	}, opts.ExtraArgs...)
	proc := StartProcess(t, bin, args...)
	v := &Victoria{URL: "http://" + addr, StorageDir: dir, proc: proc}
	if err := waitHealthy(v.URL+"/health", proc.Exited); err != nil {
		t.Fatalf("victoria-metrics did not become ready at %s: %v\n--- log ---\n%s", v.URL, err, tail(proc.Logs.Bytes(), 8192))
	}
	return v
}

// Stop ends the server and waits for it, so that its storage is complete on disk (it flushes
// on SIGINT) and can be copied.
func (v *Victoria) Stop() error {
	// StartProcess's cleanup signals again; a second interrupt to an ended process is harmless.
	select {
	case err := <-v.proc.Exited:
		return fmt.Errorf("victoria-metrics had already exited: %w", err)
	default:
	}
	return stopProcess(v.proc)
}

func waitHealthy(url string, exited <-chan error) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	var last error = errors.New("timed out")
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %w", err)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// ImportTSDB copies every sample of a Prometheus TSDB directory (promtool tsdb dump) into
// VictoriaMetrics at url through /api/v1/import/prometheus, then flushes its buffers and waits
// until it counts as many series as it was sent: VictoriaMetrics buffers ingestion, and a test
// that queries too early sees a partial history. It returns the number of samples sent.
func ImportTSDB(ctx context.Context, tsdbDir, url string) (int, error) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		return 0, fmt.Errorf("promtool not found on PATH: %w", err)
	}
	// promtool 2.42's dump opens the head too, and refuses a directory without a WAL.
	if err := os.MkdirAll(filepath.Join(tsdbDir, "wal"), 0o755); err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, promtool, "tsdb", "dump", tsdbDir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pr, pw := io.Pipe()
	series := map[string]struct{}{}
	samples := 0
	go func() {
		n, err := convertDump(out, pw, series)
		samples = n
		_ = pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/api/v1/import/prometheus", pr)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return 0, err
	}
	resp, postErr := http.DefaultClient.Do(req)
	if postErr == nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			postErr = fmt.Errorf("import: HTTP %d: %s", resp.StatusCode, body)
		}
	}
	_ = pr.Close()
	waitErr := cmd.Wait()
	if postErr != nil {
		return 0, postErr
	}
	if waitErr != nil {
		return 0, fmt.Errorf("promtool tsdb dump: %w: %s", waitErr, tail(stderr.Bytes(), 2000))
	}
	if err := waitSeries(ctx, url, len(series)); err != nil {
		return samples, err
	}
	return samples, nil
}

// convertDump rewrites promtool's dump lines, `{__name__="m", a="b"} value ms`, into the text
// exposition VictoriaMetrics imports, `m{a="b"} value ms` (both carry milliseconds), and
// records each series it saw.
func convertDump(r io.Reader, w io.Writer, series map[string]struct{}) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	bw := bufio.NewWriterSize(w, 1<<20)
	n := 0
	const prefix = `{__name__="`
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if !strings.HasPrefix(line, prefix) || end < 0 {
			return n, fmt.Errorf("unexpected dump line %.200q", line)
		}
		rest := line[len(prefix):]
		q := strings.IndexByte(rest, '"')
		if q < 0 {
			return n, fmt.Errorf("unexpected dump line %.200q", line)
		}
		name, after := rest[:q], rest[q+1:]
		var labelsAndSample string
		switch {
		case strings.HasPrefix(after, ", "):
			labelsAndSample = "{" + after[2:]
		case strings.HasPrefix(after, "}"):
			labelsAndSample = after[1:]
		default:
			return n, fmt.Errorf("unexpected dump line %.200q", line)
		}
		series[line[:end+1]] = struct{}{}
		if _, err := bw.WriteString(name); err != nil {
			return n, err
		}
		if _, err := bw.WriteString(labelsAndSample); err != nil {
			return n, err
		}
		if err := bw.WriteByte('\n'); err != nil {
			return n, err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// waitSeries flushes VictoriaMetrics' ingestion buffers until its index counts want series.
func waitSeries(ctx context.Context, url string, want int) error {
	client := &http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(2 * time.Minute)
	got := -1
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if resp, err := client.Get(url + "/internal/force_flush"); err == nil {
			resp.Body.Close()
		}
		n, err := countSeries(client, url)
		if err != nil {
			return err
		}
		got = n
		if got >= want {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("victoria-metrics counts %d series after the import, want %d", got, want)
}

func countSeries(client *http.Client, url string) (int, error) {
	resp, err := client.Get(url + "/api/v1/series/count")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   []json.Number
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, fmt.Errorf("series count: %w", err)
	}
	if body.Status != "success" || len(body.Data) != 1 {
		return 0, fmt.Errorf("series count: unexpected answer %+v", body)
	}
	n, err := strconv.Atoi(body.Data[0].String())
	return n, err
}
