package datasource

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/gate"
)

// GateStatus maps a verdict to the resource's HTTP status, so that deployment tools that only
// look at the status (Flagger webhooks: non-2xx halts) stop on anything but a pass.
// docs/gate.md documents it.
var GateStatus = map[gate.Verdict]int{
	gate.Pass:             http.StatusOK,
	gate.Fail:             http.StatusPreconditionFailed, // 412
	gate.InsufficientData: http.StatusConflict,           // 409: not decidable yet, ask again later
}

// serveGate answers GET gate?model=&baseline=&canary=&window=&at=&latencyThreshold=&memoryThreshold=
// &minRequests=&minPoints=&statusCodes= with the gate's report. statusCodes=false answers 200 for
// every verdict (Argo Rollouts' web provider counts a non-2xx answer as an error, not a failure,
// so it reads the verdict from the JSON instead).
func serveGate(ctx context.Context, d *Datasource, req *backend.CallResourceRequest) (int, any) {
	if d.settingsErr != nil {
		return http.StatusBadRequest, errorBody{d.settingsErr.Error()}
	}
	q, err := resourceQuery(req.URL, "gate", append([]string{"statusCodes"}, gate.QueryKeys...)...)
	if err != nil {
		return http.StatusBadRequest, errorBody{err.Error()}
	}
	codes := true
	if s := q.Get("statusCodes"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return http.StatusBadRequest, errorBody{fmt.Sprintf("statusCodes: %q is not true or false", s)}
		}
		codes = b
	}
	o, err := gate.OptionsFromQuery(q)
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
		var r *gate.Report
		if r, err = gate.Evaluate(ctx, e, o); err == nil {
			if !codes {
				return http.StatusOK, r
			}
			return GateStatus[r.Verdict], r
		}
	}
	return failure(err, gate.ErrOptions)
}
