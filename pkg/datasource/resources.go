package datasource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/clip"
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
// resource's, for the error. A parameter outside known is refused, the known ones listed: a
// misspelt one would otherwise be ignored and its default used without a word.
func resourceQuery(rawURL, name string, known ...string) (url.Values, error) {
	i := strings.IndexByte(rawURL, '?')
	if i < 0 {
		return url.Values{}, nil
	}
	q, err := url.ParseQuery(rawURL[i+1:])
	if err != nil {
		return nil, fmt.Errorf("the %s request's query string is malformed: %w", name, err)
	}
	var unknown []string
	for k := range q {
		if !slices.Contains(known, k) {
			unknown = append(unknown, strconv.Quote(clip.Text(k, 40)))
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, fmt.Errorf("the %s request has unknown parameters %s: it takes %s", name, strings.Join(unknown, ", "), strings.Join(known, ", "))
	}
	return q, nil
}

// decodeBody reads a resource's JSON body into dst, refusing fields dst does not have (listing
// the ones it has) and anything after the object; shape is the body's form, for messages.
func decodeBody(body []byte, dst any, name, shape string) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		return nil
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return fmt.Errorf("the %s request has an unknown field %s: it takes %s", name, clip.Text(field, 60), strings.Join(jsonFields(dst), ", "))
	}
	return fmt.Errorf("the body must be JSON: %s: %w", shape, err)
}

// jsonFields lists the JSON names of a struct's fields (dst is a pointer to it).
func jsonFields(dst any) []string {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// failure answers a resource whose work failed, with statusOf's status; badOptions are errors
// that are the caller's mistake.
func failure(err error, badOptions ...error) (int, any) {
	status, _ := statusOf(err, badOptions...)
	return status, errorBody{err.Error()}
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
