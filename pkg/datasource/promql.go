package datasource

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/prom"
)

// promqlQuery is the `promql` query model.
type promqlQuery struct {
	Expr          string `json:"expr"`
	LegendFormat  string `json:"legendFormat"`
	IntervalMs    int64  `json:"intervalMs"`
	MaxDataPoints int64  `json:"maxDataPoints"`
}

// runPromQL runs the expression as a range query over the request's time range and answers one
// wide time-series frame per series.
func runPromQL(ctx context.Context, d *Datasource, q backend.DataQuery) backend.DataResponse {
	var m promqlQuery
	if err := json.Unmarshal(q.JSON, &m); err != nil {
		return badRequest("the query JSON is malformed: " + jsonProblem(err))
	}
	expr := strings.TrimSpace(m.Expr)
	if expr == "" {
		return badRequest("the PromQL expression (expr) is empty")
	}
	interval := q.Interval
	if interval <= 0 && m.IntervalMs > 0 {
		interval = time.Duration(m.IntervalMs) * time.Millisecond
	}
	from, to := q.TimeRange.From, q.TimeRange.To
	step := prom.StepFor(from, to, interval, d.limits.MaxPoints)
	maxDataPoints := q.MaxDataPoints
	if maxDataPoints <= 0 {
		maxDataPoints = m.MaxDataPoints
	}
	if maxDataPoints > 0 {
		step = max(step, prom.StepFor(from, to, 0, int(maxDataPoints)))
	}
	// Aligning to the step keeps the sample times stable as the dashboard refreshes.
	start, end := alignToStep(from, step), alignToStep(to, step)

	res, err := d.prom.QueryRange(ctx, prom.RangeQuery{Expr: expr, Start: start, End: end, Step: step, MaxSeries: d.limits.MaxSeries})
	if err != nil {
		return promErrorResponse(err)
	}
	executed := fmt.Sprintf("Expr: %s\nStep: %s", expr, step)
	return backend.DataResponse{Frames: seriesFrames(q.RefID, res, m.LegendFormat, expr, executed)}
}

func alignToStep(t time.Time, step time.Duration) time.Time {
	ms := t.UnixMilli()
	s := step.Milliseconds()
	if s <= 0 {
		return t
	}
	return time.UnixMilli(ms - ms%s).UTC()
}

// seriesFrames makes one wide frame (time + value with the series' labels) per series, typed
// as a dataplane time-series-multi response so panels and Grafana alerting accept it. An empty
// result is one typed frame without fields.
func seriesFrames(refID string, res prom.Result, legend, expr, executed string) data.Frames {
	meta := func() *data.FrameMeta {
		m := &data.FrameMeta{
			Type:                data.FrameTypeTimeSeriesMulti,
			TypeVersion:         data.FrameTypeVersion{0, 1},
			ExecutedQueryString: executed,
		}
		for _, w := range res.Warnings {
			m.Notices = append(m.Notices, data.Notice{Severity: data.NoticeSeverityWarning, Text: w})
		}
		return m
	}
	if len(res.Series) == 0 {
		f := data.NewFrame("")
		f.RefID = refID
		f.Meta = meta()
		return data.Frames{f}
	}
	sorted := make([]prom.Series, len(res.Series))
	copy(sorted, res.Series)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Labels.String() < sorted[j].Labels.String() })

	frames := make(data.Frames, 0, len(sorted))
	for _, s := range sorted {
		times := make([]time.Time, len(s.Points))
		values := make([]float64, len(s.Points))
		for i, p := range s.Points {
			times[i] = p.T
			values[i] = p.V
		}
		valueField := data.NewField(data.TimeSeriesValueFieldName, data.Labels(s.Labels), values)
		valueField.Config = &data.FieldConfig{DisplayNameFromDS: displayName(legend, s.Labels, expr)}
		f := data.NewFrame("", data.NewField(data.TimeSeriesTimeFieldName, nil, times), valueField)
		f.RefID = refID
		f.Meta = meta()
		frames = append(frames, f)
	}
	return frames
}

var legendRE = regexp.MustCompile(`\{\{\s*(.+?)\s*\}\}`)

// displayName renders a series' name as Grafana's Prometheus data source does: legendFormat
// with {{label}} replaced by the label's value (missing labels become empty); without a
// legend, metric{label="value", ...}, or the expression for a series without labels.
func displayName(legend string, labels prom.Labels, expr string) string {
	if legend != "" && legend != "__auto" {
		return legendRE.ReplaceAllStringFunc(legend, func(m string) string {
			name := legendRE.FindStringSubmatch(m)[1]
			return labels[name]
		})
	}
	name := labels["__name__"]
	rest := make(prom.Labels, len(labels))
	for k, v := range labels {
		if k != "__name__" {
			rest[k] = v
		}
	}
	switch {
	case name == "" && len(rest) == 0:
		return expr
	case len(rest) == 0:
		return name
	default:
		return name + rest.String()
	}
}
