package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/prom"
)

// resource is one path under /api/datasources/uid/<uid>/resources/.
type resource struct {
	method string
	handle func(ctx context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any)
}

// resources is the list of resource paths. A new resource is one entry here.
var resources = map[string]resource{
	"setup": {http.MethodGet, func(ctx context.Context, d *Datasource, _ *backend.CallResourceRequest) (int, any) {
		return http.StatusOK, d.Setup(ctx)
	}},
	"ping": {http.MethodGet, func(_ context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any) {
		v := d.version
		if v == "" {
			v = req.PluginContext.PluginVersion
		}
		return http.StatusOK, map[string]string{"status": "ok", "plugin": PluginID, "version": v}
	}},
	"variables": {http.MethodGet, serveVariables},   // template-variable values (variables.go)
	"rules":     {http.MethodPost, serveAlertRules}, // alert-rule catalog, renderings and diff (alerting.go)
	"gate":      {http.MethodGet, serveGate},        // release gate: canary vs current version (gate.go)
	"triage":    {http.MethodGet, serveTriage},      // ranked diagnosis of a latency problem (triage.go)
	"backtest":  {http.MethodPost, serveBacktest},   // alert rules replayed over history (backtest.go)
}

type errorBody struct {
	Error string `json:"error"`
}

// CallResource routes a resource call; unknown paths and wrong methods answer a JSON error.
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	path := strings.Trim(req.Path, "/")
	r, ok := resources[path]
	if !ok {
		names := make([]string, 0, len(resources))
		for n := range resources {
			names = append(names, n)
		}
		slices.Sort(names)
		return sendJSON(sender, http.StatusNotFound, errorBody{fmt.Sprintf("unknown resource %q: known resources are %s", clip.Text(path, 80), strings.Join(names, ", "))}, nil)
	}
	if req.Method != r.method {
		return sendJSON(sender, http.StatusMethodNotAllowed, errorBody{fmt.Sprintf("resource %s accepts %s, not %s", path, r.method, clip.Text(req.Method, 20))},
			map[string][]string{"Allow": {r.method}})
	}
	status, body := r.handle(ctx, d, req)
	return sendJSON(sender, status, body, nil)
}

// resourceQuery is the query string of a GET resource's URL (empty without one); name is the
// resource's, for the error.
func resourceQuery(rawURL, name string) (url.Values, error) {
	i := strings.IndexByte(rawURL, '?')
	if i < 0 {
		return url.Values{}, nil
	}
	q, err := url.ParseQuery(rawURL[i+1:])
	if err != nil {
		return nil, fmt.Errorf("the %s request's query string is malformed: %w", name, err)
	}
	return q, nil
}

// failure answers a resource whose work failed: 400 when the metric profile cannot be resolved
// or err is one of badOptions (the caller's mistake), 401 when Prometheus refused the
// credentials, 502 when Prometheus failed otherwise.
func failure(err error, badOptions ...error) (int, any) {
	var pe *profileError
	bad := errors.As(err, &pe)
	for _, target := range badOptions {
		bad = bad || errors.Is(err, target)
	}
	switch {
	case bad:
		return http.StatusBadRequest, errorBody{err.Error()}
	case prom.KindOf(err) == prom.KindAuth:
		return http.StatusUnauthorized, errorBody{err.Error()}
	}
	return http.StatusBadGateway, errorBody{err.Error()}
}

func sendJSON(sender backend.CallResourceResponseSender, status int, body any, extra map[string][]string) error {
	b, err := json.Marshal(body)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{"cannot encode the answer: " + err.Error()})
	}
	headers := map[string][]string{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	for k, v := range extra {
		headers[k] = v
	}
	return sender.Send(&backend.CallResourceResponse{Status: status, Headers: headers, Body: b})
}
