package datasource

import (
	"context"
	"errors"
	"net/http"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
)

// statusOf is the one mapping from a failure to the HTTP status that query answers and
// resources report, and whose side the failure is on:
//
//	the caller's input (fields, limits, options, a profile that cannot be resolved) → 400
//	a model Prometheus has no series of → 404
//	credentials Prometheus refused → 401, or 403 when it answered 403
//	Prometheus or the network failed (unreachable, TLS, not Prometheus, HTTP errors, a query
//	  Prometheus could not evaluate) → 502
//	Prometheus or the caller ran out of time, or cancelled → 504
//	anything else is the plugin's own failure → 500
func statusOf(err error, badInput ...error) (int, backend.ErrorSource) {
	var (
		le *engine.LimitError
		fe *engine.FieldError
		ce *engine.ConfigError
		pe *profileError
		pr *prom.Error
		ue *engine.UnknownError
	)
	if errors.As(err, &ue) {
		return http.StatusNotFound, backend.ErrorSourceDownstream
	}
	switch {
	case errors.As(err, &le), errors.As(err, &fe), errors.As(err, &ce), errors.As(err, &pe):
		return http.StatusBadRequest, backend.ErrorSourceDownstream
	}
	for _, target := range badInput {
		if errors.Is(err, target) {
			return http.StatusBadRequest, backend.ErrorSourceDownstream
		}
	}
	if errors.As(err, &pr) {
		switch pr.Kind {
		case prom.KindBadQuery, prom.KindLimit:
			return http.StatusBadRequest, backend.ErrorSourceDownstream
		case prom.KindAuth:
			if pr.Status == http.StatusForbidden {
				return http.StatusForbidden, backend.ErrorSourceDownstream
			}
			return http.StatusUnauthorized, backend.ErrorSourceDownstream
		case prom.KindTimeout, prom.KindCanceled:
			return http.StatusGatewayTimeout, backend.ErrorSourceDownstream
		default: // unreachable, TLS, HTTP, not Prometheus, execution
			return http.StatusBadGateway, backend.ErrorSourceDownstream
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout, backend.ErrorSourceDownstream
	}
	return http.StatusInternalServerError, backend.ErrorSourcePlugin
}

// errorResponse is a query's answer to a failure, with statusOf's status.
func errorResponse(err error) backend.DataResponse {
	status, src := statusOf(err)
	msg := err.Error()
	if status == http.StatusGatewayTimeout && prom.KindOf(err) == 0 {
		msg = "the query was cancelled: " + msg
	}
	return backend.ErrDataResponseWithSource(backend.Status(status), src, msg)
}
