package prom

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestFormatBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{900, "900 B"}, {1024, "1 KiB"}, {1536, "1.5 KiB"}, {64 << 20, "64 MiB"}, {3 << 19, "1.5 MiB"}, {2 << 30, "2 GiB"}, {3 << 29, "1536 MiB"},
	} {
		if got := FormatBytes(tc.n); got != tc.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// matrixAnswer streams a valid query_range answer of about size bytes without holding it: one
// series whose points are written as Prometheus writes them (milliseconds, a few digits), so
// that decoded they weigh about what their text does.
func matrixAnswer(size int64, withLength bool) http.HandlerFunc {
	const head, tail = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"x"},"values":[`, `[1,"1"]]}]}}`
	const point = `[1700000000.123,"0.123456"],`
	n := max(0, (size-int64(len(head)+len(tail)))/int64(len(point)))
	total := int64(len(head)+len(tail)) + n*int64(len(point))
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if withLength {
			w.Header().Set("Content-Length", strconv.FormatInt(total, 10))
		}
		io.WriteString(w, head)
		chunk := strings.Repeat(point, 8192)
		for left := n; left > 0; {
			k := min(left, 8192)
			if _, err := io.WriteString(w, chunk[:k*int64(len(point))]); err != nil {
				return // the client stopped reading
			}
			left -= k
		}
		io.WriteString(w, tail)
	}
}

// rangeQuery asks for a range whose grid holds every point matrixAnswer writes (4 million).
func rangeQuery(c *Client) error {
	_, err := c.QueryRange(context.Background(), RangeQuery{Expr: "x", Start: time.Unix(0, 0), End: time.Unix(4e6, 0), Step: time.Second})
	return err
}

func TestAnswerLargerThanTheLimitIsALimitError(t *testing.T) {
	for _, withLength := range []bool{false, true} {
		srv := httptest.NewServer(matrixAnswer(8<<20, withLength))
		c, err := New(srv.URL, nil, MaxAnswerBytes(1<<20))
		if err != nil {
			t.Fatal(err)
		}
		err = rangeQuery(c)
		if KindOf(err) != KindLimit || !strings.Contains(err.Error(), "larger than the limit of 1 MiB") || !strings.Contains(err.Error(), "narrow the query") {
			t.Errorf("Content-Length %v: err = %v (kind %d)", withLength, err, KindOf(err))
		}
		srv.Close()
	}
}

func TestAnswerWithinTheLimitIsRead(t *testing.T) {
	srv := httptest.NewServer(matrixAnswer(1<<20, false))
	defer srv.Close()
	// The bound is inclusive: an answer of exactly the bound is read.
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, limit := range []int64{int64(len(body)), int64(len(body)) + 1, 0} {
		c, err := New(srv.URL, nil, MaxAnswerBytes(limit))
		if err != nil {
			t.Fatal(err)
		}
		if err := rangeQuery(c); err != nil {
			t.Errorf("limit %d for a %d-byte answer: %v", limit, len(body), err)
		}
	}
	c, _ := New(srv.URL, nil, MaxAnswerBytes(int64(len(body))-1))
	if err := rangeQuery(c); KindOf(err) != KindLimit {
		t.Errorf("limit one byte under the answer: err = %v", err)
	}
}

// The caller's http.Client keeps its own transport: the bound is the Prometheus client's alone.
func TestCallerClientIsNotChanged(t *testing.T) {
	hc := &http.Client{Timeout: time.Second}
	if _, err := New("http://127.0.0.1:1", hc); err != nil {
		t.Fatal(err)
	}
	if hc.Transport != nil {
		t.Errorf("the caller's transport became %T", hc.Transport)
	}
}

const memChildEnv = "INFERSCOPE_PROM_MEM_CHILD"

// TestOversizedAnswerKeepsMemoryBounded asks a child process to query a 256 MiB answer and reads
// the child's peak resident memory from the kernel: with an 8 MiB bound it stays far below the
// answer's size; without a bound (the control, so the measurement can fail) it does not.
func TestOversizedAnswerKeepsMemoryBounded(t *testing.T) {
	if os.Getenv(memChildEnv) != "" {
		t.Skip("runs in the parent only")
	}
	if raceEnabled {
		t.Skip("the race detector's shadow memory distorts resident memory; scripts/test.sh runs this test without -race")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads ru_maxrss in KiB, as Linux reports it")
	}
	const answer = 96 << 20
	srv := httptest.NewServer(matrixAnswer(answer, false))
	defer srv.Close()
	peak := func(limit int64) (int64, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMemChild$", "-test.v")
		cmd.Env = append(os.Environ(), memChildEnv+"="+srv.URL, "INFERSCOPE_PROM_MEM_LIMIT="+strconv.FormatInt(limit, 10))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child (limit %d): %v\n%s", limit, err, out)
		}
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10, string(out)
	}
	bounded, out := peak(8 << 20)
	if !strings.Contains(out, "larger than the limit of 8 MiB") {
		t.Fatalf("the bounded child did not report the limit:\n%s", out)
	}
	unbounded, _ := peak(1 << 40)
	t.Logf("peak RSS for a %s answer: %s with an 8 MiB bound, %s without", FormatBytes(answer), FormatBytes(bounded), FormatBytes(unbounded))
	if bounded > 80<<20 {
		t.Errorf("peak RSS %s with an 8 MiB bound, want under 80 MiB", FormatBytes(bounded))
	}
	if unbounded < answer {
		t.Errorf("the unbounded control peaked at %s, under the answer's %s: the measurement proves nothing", FormatBytes(unbounded), FormatBytes(answer))
	}
}

// TestMemChild is the child of TestOversizedAnswerKeepsMemoryBounded.
func TestMemChild(t *testing.T) {
	url := os.Getenv(memChildEnv)
	if url == "" {
		t.Skip("run by TestOversizedAnswerKeepsMemoryBounded")
	}
	limit, _ := strconv.ParseInt(os.Getenv("INFERSCOPE_PROM_MEM_LIMIT"), 10, 64)
	c, err := New(url, nil, MaxAnswerBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("child:", rangeQuery(c))
}

func TestSnippetOfHTMLIsText(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"<!DOCTYPE html><html><head><title>404 Not Found</title><style>h1{}</style></head><body><h1>Not Found</h1></body></html>", "(HTML page) 404 Not Found"},
		{"<html><body><script>var x=1;</script><h1>Bad &amp; gateway</h1>\n<p>nginx</p></body></html>", "(HTML page) Bad & gateway nginx"},
		{"404 page not found\n", "404 page not found"},
		{`{"status":"error"}`, `{"status":"error"}`},
		{"<b>not a page</b>", "<b>not a page</b>"},
	} {
		if got := Snippet([]byte(tc.body), 120); got != tc.want {
			t.Errorf("Snippet(%.40q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"64MiB", 64 << 20}, {"512 KiB", 512 << 10}, {"1GiB", 1 << 30}, {"100MB", 100e6}, {"2048", 2048}, {"1.5MiB", 3 << 19}, {"8m", 8 << 20}} {
		if got, err := ParseBytes(tc.in); err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "MiB", "-1MiB", "0", "64 parsecs", "1e400", "NaNMiB", "9999999999GiB"} {
		if _, err := ParseBytes(bad); err == nil || !strings.Contains(err.Error(), "is not a size") {
			t.Errorf("ParseBytes(%q): err = %v", bad, err)
		}
	}
}
