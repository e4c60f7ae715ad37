package datasource

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/prom"
)

// promqlFrames makes one wide frame (time + value with the series' labels) per series of a
// PromQL passthrough, typed as a dataplane time-series-multi response so panels and Grafana
// alerting accept it, named as Grafana's Prometheus data source names them. An empty result is
// one typed frame without fields.
func promqlFrames(refID, legend string, res *engine.Result) data.Frames {
	expr := strings.Join(res.Queries, "\n")
	executed := fmt.Sprintf("Expr: %s\nStep: %s", expr, res.Step)
	meta := func() *data.FrameMeta {
		m := &data.FrameMeta{
			Type:                data.FrameTypeTimeSeriesMulti,
			TypeVersion:         data.FrameTypeVersion{0, 1},
			ExecutedQueryString: executed,
		}
		for _, n := range res.Notices {
			m.Notices = append(m.Notices, data.Notice{Severity: noticeSeverity(n.Severity), Text: n.Text})
		}
		return m
	}
	if len(res.Series) == 0 {
		f := data.NewFrame("")
		f.RefID = refID
		f.Meta = meta()
		return data.Frames{f}
	}
	sorted := make([]engine.Series, len(res.Series))
	copy(sorted, res.Series)
	sort.SliceStable(sorted, func(i, j int) bool {
		return prom.Labels(sorted[i].Labels).String() < prom.Labels(sorted[j].Labels).String()
	})

	frames := make(data.Frames, 0, len(sorted))
	for _, s := range sorted {
		times := make([]time.Time, len(s.T))
		for i, t := range s.T {
			times[i] = time.UnixMilli(t).UTC()
		}
		values := make([]float64, len(s.V))
		copy(values, s.V)
		valueField := data.NewField(data.TimeSeriesValueFieldName, data.Labels(s.Labels), values)
		valueField.Config = &data.FieldConfig{DisplayNameFromDS: displayName(legend, prom.Labels(s.Labels), expr)}
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
