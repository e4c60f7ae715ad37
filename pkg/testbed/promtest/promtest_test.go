package promtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

func TestImportedHistoryIsQueryable(t *testing.T) {
	RequireBinary(t, "promtool")
	dir := t.TempDir()
	om := filepath.Join(dir, "in.om")
	// Two samples an hour apart, far in the past: retention must keep them.
	content := "# TYPE promtest_probe gauge\npromtest_probe{k=\"v\"} 7 1600000000\npromtest_probe{k=\"v\"} 9 1600003600\n# EOF\n"
	if err := os.WriteFile(om, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := CreateBlocks(context.Background(), om, data); err != nil {
		t.Fatal(err)
	}
	srv := Start(t, Options{DataDir: data})

	wantInstant(t, srv.URL, "promtest_probe", "9")
}

// wantInstant asks a server's query API for expr at the history's test instant and wants one
// sample of value want.
func wantInstant(t *testing.T, base, expr, want string) {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(expr) + "&time=1600003600")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.Status != "success" || len(body.Data.Result) != 1 || body.Data.Result[0].Value[1] != want {
		t.Fatalf("%s: unexpected answer: %+v", expr, body)
	}
}

func TestCreateBlocksReportsBadInput(t *testing.T) {
	RequireBinary(t, "promtool")
	om := filepath.Join(t.TempDir(), "bad.om")
	if err := os.WriteFile(om, []byte("this is not openmetrics\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CreateBlocks(context.Background(), om, t.TempDir()); err == nil {
		t.Fatal("expected an error for malformed input")
	}
}

func TestImportTSDBIntoVictoria(t *testing.T) {
	RequireBinary(t, "promtool")
	VictoriaBinary(t)
	dir := t.TempDir()
	om := filepath.Join(dir, "in.om")
	// Two series, far in the past (the retention must keep them), one with a label value
	// holding a quote and a comma, which the dump's rewriting must carry through.
	content := "# TYPE promtest_probe gauge\n" +
		"promtest_probe{k=\"v\"} 7 1600000000\npromtest_probe{k=\"v\"} 9 1600003600\n" +
		"promtest_probe{k=\"a\\\"b, c\"} 3 1600003600\n# EOF\n"
	if err := os.WriteFile(om, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if err := CreateBlocks(context.Background(), om, data); err != nil {
		t.Fatal(err)
	}
	vm := StartVictoria(t, VictoriaOptions{})
	n, err := ImportTSDB(context.Background(), data, vm.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Fatalf("imported %d samples, want 3", n)
	}
	wantInstant(t, vm.URL, "sum(promtest_probe)", "12")
}
