package datasource

import (
	"context"
	"net/http"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/triage"
)

// serveTriage answers GET triage?model=&version=&instance=&node=&gpu=&from=&to=&before= with the
// ranked diagnosis (triage.Report); node (and gpu) without a model triage every model served on
// the node (a GPU alert's link). The verdict is in the JSON; the status says only whether the
// triage ran: 400 bad options or settings, 401 Prometheus refused the credentials, 502
// Prometheus failed.
func serveTriage(ctx context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any) {
	if d.settingsErr != nil {
		return http.StatusBadRequest, errorBody{d.settingsErr.Error()}
	}
	q, err := resourceQuery(req.URL, "triage", triage.QueryKeys...)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	o, err := triage.OptionsFromQuery(q)
	if err == nil {
		err = o.WithDefaults(time.Now()).Validate() // a wrong question before its subject is looked up
	}
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	e, err := d.engineFor(ctx)
	if err == nil {
		e, err = e.ForSubject(ctx, o.WithDefaults(e.Clock()).Subject()) // in a fleet, the model's own server
	}
	if err == nil {
		var r *triage.Report
		if r, err = triage.Diagnose(ctx, e, o); err == nil {
			return http.StatusOK, r
		}
	}
	return failure(err, triage.ErrOptions)
}
