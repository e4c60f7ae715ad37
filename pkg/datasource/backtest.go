package datasource

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/backtest"
	"github.com/inferscope/inferscope/pkg/gate"
)

// The `backtest` resource replays the alert-rule catalog over Prometheus history (docs/backtest.md):
//
//	POST backtest {"params":{…as the rules resource…}, "from":"RFC3339|unix", "to":"…", "rules":["latency-p0", …]}
//	    → backtest.Report
//
// from/to default to the 7 days ending now, rules to the whole catalog. The parameters are read
// as the rules resource reads them (the data source's profile, labels and warm-up window win).

// maxBacktestBody bounds a request: parameters and a rule list.
const maxBacktestBody = 1 << 20

type backtestRequest struct {
	Params map[string]json.RawMessage `json:"params"`
	From   string                     `json:"from"`
	To     string                     `json:"to"`
	Rules  []string                   `json:"rules"`
}

// serveBacktest answers the backtest: 400 for bad settings, body or options, 401 when Prometheus
// refuses the credentials, 502 when it cannot be read, 200 with the report otherwise (a rule
// whose own replay failed carries its error).
func serveBacktest(ctx context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any) {
	if d.settingsErr != nil {
		return http.StatusBadRequest, errorBody{d.settingsErr.Error()}
	}
	if len(req.Body) > maxBacktestBody {
		return http.StatusRequestEntityTooLarge, errorBody{fmt.Sprintf("the request is larger than %d bytes", maxBacktestBody)}
	}
	var r backtestRequest
	if len(strings.TrimSpace(string(req.Body))) > 0 {
		if err := decodeBody(req.Body, &r, "backtest", `{"params": {…}, "from": "…", "to": "…", "rules": ["…"]}`); err != nil {
			return http.StatusBadRequest, errorBody{err.Error()}
		}
	}
	var o backtest.Options
	for _, f := range []struct {
		name string
		text string
		dst  *time.Time
	}{{"from", r.From, &o.From}, {"to", r.To, &o.To}} {
		if strings.TrimSpace(f.text) == "" {
			continue
		}
		t, err := gate.ParseTime(f.text)
		if err != nil {
			return http.StatusBadRequest, errorBody{f.name + ": " + err.Error()}
		}
		*f.dst = t
	}
	o.Rules = r.Rules
	if r.Params == nil {
		r.Params = map[string]json.RawMessage{}
	}
	p, _, err := d.rulesParams(ctx, req, r.Params)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	o.Params = p
	e, err := d.engineFor(ctx)
	if err == nil {
		var rep *backtest.Report
		if rep, err = backtest.Run(ctx, e, o, nil); err == nil {
			return http.StatusOK, rep
		}
	}
	return failure(err, backtest.ErrOptions)
}
