package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// The test bed's canaries (pkg/testbed doc): recsys-ranker v1.5.0 on node-c is 15 % slower
// (queue and compute ×1.15) from end−4h on; text-embedder v2.2.0 is 2 % faster all along.
// The mean latency over the window is exact (histogram sum/count): ±0.001.

func gateArgs(url, model, baseline, canary string, extra ...string) []string {
	return append([]string{"gate", "--prometheus", url, "--model", model, "--baseline", baseline, "--canary", canary,
		"--at", testbed.DefaultEnd.Format(time.RFC3339)}, extra...)
}

func meanChange(t *testing.T, out string) (gate.Report, float64) {
	t.Helper()
	var r gate.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, c := range r.Checks {
		if c.Name == gate.CheckMeanLatency && c.Change != nil {
			return r, *c.Change
		}
	}
	t.Fatalf("no mean latency change: %s", out)
	return r, 0
}

func TestGateCommand(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})

	code, out, errOut := runCLI(t, gateArgs(srv.URL, "recsys-ranker", "v1.4.0", "v1.5.0", "--json")...)
	if r, ch := meanChange(t, out); code != gateExitFail || r.Verdict != gate.Fail || math.Abs(ch-0.15) > 0.001 || !strings.Contains(errOut, "gate: fail") {
		t.Fatalf("slow canary: exit %d, change %.4f, %s", code, ch, errOut)
	}
	code, out, errOut = runCLI(t, gateArgs(srv.URL, "text-embedder", "v2.1.0", "v2.2.0", "--json", "--quiet")...)
	if r, ch := meanChange(t, out); code != exitOK || r.Verdict != gate.Pass || math.Abs(ch+0.02) > 0.001 || errOut != "" {
		t.Fatalf("good canary: exit %d, change %.4f, %s", code, ch, errOut)
	}
	// Without --quiet a passing gate says only what it compared, on standard error.
	if _, _, errOut = runCLI(t, gateArgs(srv.URL, "text-embedder", "v2.1.0", "v2.2.0", "--json")...); !strings.HasPrefix(errOut, "gate: [1/1] comparing text-embedder v2.2.0 with v2.1.0") {
		t.Errorf("progress: %q", errOut)
	}
	// Before the canary was deployed it has no traffic: insufficient data, exit 3.
	code, out, errOut = runCLI(t, "gate", "--prometheus", srv.URL, "--model", "recsys-ranker", "--baseline", "v1.4.0", "--canary", "v1.5.0",
		"--at", testbed.DefaultEnd.Add(-4*time.Hour).Format(time.RFC3339), "--window", "1h")
	if code != gateExitInsufficient || !strings.Contains(out, "INSUFFICIENT DATA") || !strings.Contains(out, "v1.5.0 served 0") {
		t.Fatalf("before the canary: exit %d\n%s%s", code, out, errOut)
	}
	// Human output: the table with the verdict per check.
	code, out, _ = runCLI(t, gateArgs(srv.URL, "recsys-ranker", "v1.4.0", "v1.5.0", "--latency-threshold", "12%")...)
	if code != gateExitFail || !strings.Contains(out, ": FAIL") || !strings.Contains(out, "+15.0 %") || !strings.Contains(out, "+12 %") {
		t.Fatalf("human output: exit %d\n%s", code, out)
	}

	for _, bad := range [][]string{
		{"gate", "--model", "m", "--baseline", "a", "--canary", "b"},                               // no --prometheus
		gateArgs(srv.URL, "recsys-ranker", "v1.4.0", "v1.4.0"),                                     // same version
		gateArgs(srv.URL, "recsys-ranker", "v1.4.0", "v1.5.0", "--window", "soon"),                 // bad duration
		gateArgs(srv.URL, "recsys-ranker", "v1.4.0", "v1.5.0", "--latency-threshold", "fast"),      // bad ratio
		gateArgs("ftp://x", "recsys-ranker", "v1.4.0", "v1.5.0"),                                   // bad URL
		gateArgs(srv.URL, "recsys-ranker", "v1.4.0", "v1.5.0", "--bearer-token-file", "/nonexist"), // unreadable file
	} {
		if code, _, errOut := runCLI(t, bad...); code != exitUsage || errOut == "" {
			t.Errorf("%v: exit %d, %q", bad, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, gateArgs(promtest.ClosedURL(t), "recsys-ranker", "v1.4.0", "v1.5.0")...); code != exitUnavailable || errOut == "" {
		t.Errorf("closed port: exit %d, %q", code, errOut)
	}
}

// TestGateCommandBasicAuth: the password file reaches a Prometheus that requires basic auth; a
// wrong password is "could not evaluate" (4), never a verdict.
func TestGateCommandBasicAuth(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	srv := promtest.Start(t, promtest.Options{DataDir: dir, WebConfigYAML: fmt.Sprintf("basic_auth_users:\n  gate: %s\n", hash),
		ReadyUser: "gate", ReadyPassword: "s3cret"})
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, gateArgs(srv.URL, "text-embedder", "v2.1.0", "v2.2.0", "--basic-auth-user", "gate", "--basic-auth-password-file", pw)...)
	if code != exitOK {
		t.Fatalf("with auth: exit %d %s", code, errOut)
	}
	if err := os.WriteFile(pw, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, gateArgs(srv.URL, "text-embedder", "v2.1.0", "v2.2.0", "--basic-auth-user", "gate", "--basic-auth-password-file", pw)...)
	if code != exitUnavailable || errOut == "" {
		t.Fatalf("wrong password: exit %d %s", code, errOut)
	}
}

func TestChangeText(t *testing.T) {
	ptr := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		change *float64
		want   string
	}{
		{nil, "-"},
		{ptr(0.15), "+15.0 %"},
		{ptr(-0.0232), "-2.3 %"},
		{ptr(-1), "-100.0 %"},
		{ptr(8.99), "+899.0 %"},
		{ptr(9), "×10.0"},
		{ptr(11.5), "×12.5"},
		{ptr(447.882), "×449"},
	} {
		if got := changeText(c.change); got != c.want {
			t.Errorf("changeText = %q, want %q", got, c.want)
		}
	}
}
