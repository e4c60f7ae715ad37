package datasource

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/inferscope/inferscope/pkg/gate"
	"github.com/inferscope/inferscope/pkg/testbed/promtest"
	"github.com/inferscope/inferscope/pkg/testbed/tbtest"
)

// TestGateRecordedAnswersAreCurrent keeps the Release gate page's recorded answers
// (src/pages/Gate/testdata) equal to what the data source answers on the test bed: the
// 15 %-slower recsys canary (fail) and the embedder canary (pass), asked as the page asks
// (statusCodes=false). INFERSCOPE_UPDATE_FIXTURES=1 rewrites them.
func TestGateRecordedAnswersAreCurrent(t *testing.T) {
	dir, _ := tbtest.TSDB(t)
	srv := promtest.Start(t, promtest.Options{DataDir: dir})
	d := newTestDS(t, instanceSettings(t, srv.URL, nil, nil))
	page := url.Values{"window": {"2h"}, "latencyThreshold": {"10%"}, "memoryThreshold": {"5%"}, "statusCodes": {"false"}}
	for _, tc := range []struct {
		file                    string
		model, baseline, canary string
		verdict                 gate.Verdict
	}{
		{"gate-fail.json", "recsys-ranker", "v1.4.0", "v1.5.0", gate.Fail},
		{"gate-pass.json", "text-embedder", "v2.1.0", "v2.2.0", gate.Pass},
	} {
		status, r, body := callGate(t, d, gateQuery(tc.model, tc.baseline, tc.canary, page))
		if status != http.StatusOK || r.Verdict != tc.verdict {
			t.Fatalf("%s: %d %s", tc.file, status, body)
		}
		// The answer as sent, not as decoded into gate.Report.
		checkRecorded(t, filepath.Join("..", "..", "src", "pages", "Gate", "testdata", tc.file), json.RawMessage(body))
	}
}
