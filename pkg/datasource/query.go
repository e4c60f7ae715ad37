package datasource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/prom"
)

// queryHandler answers one query of a request. It receives the raw query; it must honour ctx
// and report failures in the DataResponse, never by panicking.
type queryHandler func(ctx context.Context, d *Datasource, q backend.DataQuery) backend.DataResponse

// queryTypes is the public list of query types (dashboards and alert rules store these names).
// A new type is one entry here.
var queryTypes = map[string]queryHandler{
	"promql": runPromQL,

	// Derived series of the engine (pkg/engine).
	"latency":    runEngine,
	"split":      runEngine,
	"jitter":     runEngine,
	"baseline":   runEngine,
	"throughput": runEngine,
	"errors":     runEngine,

	// GPU types.
	"gpu":                    runGPU,
	"gpumem_forecast":        runGPU,
	"gpu_idle_under_traffic": runGPU,
	"gpu_live":               runGPU,
}

// QueryTypes lists the known query types in name order.
func QueryTypes() []string {
	names := make([]string, 0, len(queryTypes))
	for n := range queryTypes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// commonQuery holds the fields every query type shares.
type commonQuery struct {
	RefID     string `json:"refId"`
	QueryType string `json:"queryType"`
}

// QueryData runs the request's queries concurrently (bounded); each gets its own answer, so one
// bad query never fails its neighbours.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	if req == nil {
		return resp, nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, d.limits.MaxConcurrency))
	for _, q := range req.Queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r backend.DataResponse
			select {
			case sem <- struct{}{}:
				r = d.runQuery(ctx, q)
				<-sem
			case <-ctx.Done():
				r = backend.ErrDataResponseWithSource(backend.StatusTimeout, backend.ErrorSourceDownstream,
					"the request was cancelled before this query ran")
			}
			mu.Lock()
			resp.Responses[q.RefID] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return resp, nil
}

// runQuery checks the settings, decodes the common fields, dispatches by type and turns a panic
// into an error answer for this query alone.
func (d *Datasource) runQuery(ctx context.Context, q backend.DataQuery) (r backend.DataResponse) {
	defer func() {
		if p := recover(); p != nil {
			d.logger.Error("Query panicked", "refId", q.RefID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			r = backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin,
				"internal error while running this query; the data source log has the details")
		}
	}()
	if d.settingsErr != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, d.settingsErr.Error())
	}
	var common commonQuery
	if err := json.Unmarshal(q.JSON, &common); err != nil {
		return badRequest("the query JSON is malformed: " + jsonProblem(err))
	}
	qt := q.QueryType
	if qt == "" {
		qt = common.QueryType
	}
	if qt == "" {
		qt = "promql"
	}
	h, ok := queryTypes[qt]
	if !ok {
		return badRequest(fmt.Sprintf("unknown query type %q: known types are %s", clip.Text(qt, 40), strings.Join(QueryTypes(), ", ")))
	}
	if q.TimeRange.To.Before(q.TimeRange.From) {
		return badRequest(fmt.Sprintf("the time range ends (%s) before it starts (%s)", q.TimeRange.To.UTC().Format("2006-01-02T15:04:05Z"), q.TimeRange.From.UTC().Format("2006-01-02T15:04:05Z")))
	}
	if q.TimeRange.From.IsZero() || q.TimeRange.To.IsZero() {
		return badRequest("the query has no time range")
	}
	return h(ctx, d, q)
}

func badRequest(msg string) backend.DataResponse {
	return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, msg)
}

// promErrorResponse maps a Prometheus failure to a per-query answer with a fitting status.
func promErrorResponse(err error) backend.DataResponse {
	status := backend.StatusBadGateway
	switch prom.KindOf(err) {
	case prom.KindBadQuery, prom.KindExecution, prom.KindLimit:
		status = backend.StatusBadRequest
	case prom.KindAuth:
		status = backend.StatusUnauthorized
	case prom.KindTimeout, prom.KindCanceled:
		status = backend.StatusTimeout
	}
	src := backend.ErrorSourceDownstream
	if prom.KindOf(err) == 0 && !errors.Is(err, context.Canceled) {
		src = backend.ErrorSourcePlugin
	}
	return backend.ErrDataResponseWithSource(status, src, err.Error())
}

// jsonProblem describes a JSON decoding error without echoing the whole input.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %s must be %s, got %s", typ.Field, typ.Type, typ.Value)
		}
		return fmt.Sprintf("expected %s, got %s", typ.Type, typ.Value)
	}
	return err.Error()
}
