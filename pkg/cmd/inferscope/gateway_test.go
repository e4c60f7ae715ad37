package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/inferscope/inferscope/pkg/testbed"
	"github.com/inferscope/inferscope/pkg/testbed/expo"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
	"github.com/inferscope/inferscope/pkg/triage"
)

// TestTriageThroughIngressNginx: vLLM behind ingress-nginx, the gateway configured by flags; the
// network jitter on node-b (seen only in the controller's upstream histogram) is triaged network.
// Without --gateway the network is not read, and a bad mapping is a usage error.
func TestTriageThroughIngressNginx(t *testing.T) {
	dir, s := tbtest.TSDBFor(t, testbed.TSDBOptions{Profile: expo.BehindIngressNginx("vllm"), GPUNaming: testbed.GPUNamingNone})
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	in, _ := s.Incident(testbed.NetworkJitter)
	from, to := in.Start.Add(10*time.Minute), in.Start.Add(15*time.Minute)
	args := func(extra ...string) []string {
		return append([]string{"triage", "--prometheus", srv.URL, "--profile", "vllm", "--model", "recsys-ranker", "--quiet",
			"--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}, extra...)
	}
	code, out, errOut := runCLI(t, args("--json", "--gateway", "ingress-nginx", "--gateway-model-regex", "(.+)-svc")...)
	var r triage.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK {
		t.Fatalf("exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	if r.Verdict != triage.Diagnosed || r.Causes[0].ID != triage.CauseNetwork {
		t.Fatalf("%s %+v", r.Verdict, r.Causes)
	}

	code, out, _ = runCLI(t, args("--gateway", "ingress-nginx", "--gateway-map", "recsys-ranker-svc=recsys-ranker",
		"--gateway-map", "text-embedder-svc=text-embedder")...)
	if code != exitOK || !strings.Contains(out, "1  network") || !strings.Contains(out, "every instance: the gateway does not tell them apart") {
		t.Fatalf("static map: exit %d\n%s", code, out)
	}

	code, out, _ = runCLI(t, args()...)
	if strings.Contains(out, "1  network") || !strings.Contains(out, "no gateway is configured") {
		t.Fatalf("without --gateway: exit %d\n%s", code, out)
	}

	for _, bad := range [][]string{
		{"--gateway", "haproxy"},
		{"--gateway", "ingress-nginx", "--gateway-model-regex", "("},
		{"--gateway-model-label", "service"},
		{"--gateway", "custom"},
	} {
		code, _, errOut := runCLI(t, args(bad...)...)
		if code != exitUsage || !strings.Contains(errOut, "gateway") {
			t.Errorf("%v: exit %d %q", bad, code, errOut)
		}
	}
}
