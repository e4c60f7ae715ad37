package datasource

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// getVariables calls the resource as Grafana does: the path alone in Path, the query string in URL.
func getVariables(t *testing.T, d *Datasource, query string) (int, variablesAnswer, string) {
	t.Helper()
	var got *backend.CallResourceResponse
	err := d.CallResource(context.Background(), &backend.CallResourceRequest{Method: http.MethodGet, Path: "variables", URL: "variables?" + query},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			got = r
			return nil
		}))
	if err != nil || got == nil {
		t.Fatalf("variables?%s: %v", query, err)
	}
	var ans variablesAnswer
	if got.Status == http.StatusOK {
		if err := json.Unmarshal(got.Body, &ans); err != nil {
			t.Fatalf("variables?%s: %v in %s", query, err, got.Body)
		}
	}
	return got.Status, ans, string(got.Body)
}

// TestVariablesResource lists the test bed's models, versions, instances and GPUs from a real
// Prometheus and checks them against the scenario's fleet, chained filters included.
func TestVariablesResource(t *testing.T) {
	dir, s := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{}, nil))
	window := fmt.Sprintf("&from=%d&to=%d", s.End().Add(-24*time.Hour).UnixMilli(), s.End().UnixMilli())

	want := func(query string, expected []string) {
		t.Helper()
		status, ans, body := getVariables(t, d, query)
		if status != http.StatusOK || !slices.Equal(ans.Values, expected) {
			t.Errorf("variables?%s: %d %s, want %v", query, status, body, expected)
		}
	}
	models := s.Models()
	slices.Sort(models)
	want("kind=model"+window, models)
	for _, m := range models {
		versions := s.Versions(m)
		slices.Sort(versions)
		want("kind=version&model="+m+window, versions)
	}
	var all []string
	for _, m := range models {
		all = append(all, s.Versions(m)...)
	}
	slices.Sort(all)
	want("kind=version&model="+models[0]+"|"+models[1]+window, all)
	want("kind=version&model=$__all"+window, all)
	want("kind=instance"+window, s.Instances())

	gpus := make([]string, s.GPUsPerInstance())
	for i := range gpus {
		gpus[i] = strconv.Itoa(i) // natural order: 0..7
	}
	want("kind=gpu&instance=node-b:8000"+window, gpus)
	want("kind=gpu&instance=node-a:8000|node-c:8000"+window, gpus)
	want("kind=gpu&instance=no-such-node:8000"+window, []string{})

	for _, bad := range []string{"kind=host", "kind=model&from=yesterday", "kind=model&from=2000&to=1000", "", "kind=version&modle=recsys-ranker"} {
		if status, _, body := getVariables(t, d, bad); status != http.StatusBadRequest {
			t.Errorf("variables?%s: %d %s, want 400", bad, status, body)
		}
	}

	// A Prometheus that does not answer: a 502 that names it, not an empty list.
	down := newTestDS(t, instanceSettings(t, promtest.ClosedURL(t), map[string]any{"profile": "custom"}, nil))
	if status, _, body := getVariables(t, down, "kind=model"); status != http.StatusBadGateway {
		t.Errorf("Prometheus down: %d %s", status, body)
	}
}

// TestVariablesResourceWithoutVersionLabel: vLLM has no version label, so the list is empty and
// says why.
func TestVariablesResourceWithoutVersionLabel(t *testing.T) {
	srv := promtest.Start(t, promtest.Options{})
	d := newTestDS(t, instanceSettings(t, srv.URL, map[string]any{"profile": "vllm"}, nil))
	status, ans, body := getVariables(t, d, "kind=version")
	if status != http.StatusOK || len(ans.Values) != 0 || ans.Note == "" {
		t.Errorf("vllm versions: %d %s", status, body)
	}
}
