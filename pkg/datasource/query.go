package datasource

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/engine"
)

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

// runQuery checks the settings, decodes the query once, parses it through the engine's registry
// and turns a panic into an error answer for this query alone.
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
	// The query JSON is decoded here, once; the engine parses the decoded fields.
	f, err := engine.ParseFields(q.JSON)
	if err != nil {
		return badRequest(err.Error())
	}
	qt := q.QueryType
	if qt == "" {
		if qt, err = f.String("queryType", ""); err != nil {
			return badRequest(err.Error())
		}
	}
	if qt == "" {
		qt = engine.DefaultType
	}
	spec, ok := engine.Spec(qt)
	if !ok {
		return badRequest(fmt.Sprintf("unknown query type %q: known types are %s", clip.Text(qt, 40), strings.Join(engine.Types(), ", ")))
	}
	if q.TimeRange.To.Before(q.TimeRange.From) {
		return badRequest(fmt.Sprintf("the time range ends (%s) before it starts (%s)", q.TimeRange.To.UTC().Format("2006-01-02T15:04:05Z"), q.TimeRange.From.UTC().Format("2006-01-02T15:04:05Z")))
	}
	if q.TimeRange.From.IsZero() || q.TimeRange.To.IsZero() {
		return badRequest("the query has no time range")
	}
	query, err := engine.ParseFieldsOf(spec.Name, f)
	if err != nil {
		return badRequest(err.Error())
	}
	return d.run(ctx, q, spec, query, f)
}

func badRequest(msg string) backend.DataResponse {
	return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, msg)
}
