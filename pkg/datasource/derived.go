package datasource

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// runEngine answers the engine's query types (latency, split, jitter, baseline, throughput,
// errors): it resolves the metric profile, runs the engine and turns its series into frames.
func runEngine(ctx context.Context, d *Datasource, q backend.DataQuery) backend.DataResponse {
	var (
		query engine.Query
		err   error
	)
	if q.QueryType != "" {
		query, err = engine.ParseAs(q.QueryType, q.JSON)
	} else {
		query, err = engine.Parse(q.JSON)
	}
	if err != nil {
		return badRequest(err.Error())
	}
	e, err := d.engineFor(ctx)
	if err != nil {
		return engineErrorResponse(err)
	}
	interval := q.Interval
	if interval <= 0 {
		if f, err := engine.ParseFields(q.JSON); err == nil {
			if v, err := f.Number("intervalMs", 0); err == nil && v > 0 && v < 1e12 {
				interval = time.Duration(v) * time.Millisecond
			}
		}
	}
	maxPoints := int(q.MaxDataPoints)
	if maxPoints <= 0 {
		if f, err := engine.ParseFields(q.JSON); err == nil {
			if v, err := f.Number("maxDataPoints", 0); err == nil && v > 0 && v < 1e9 {
				maxPoints = int(v)
			}
		}
	}
	res, err := e.Run(ctx, query, engine.Range{Start: q.TimeRange.From, End: q.TimeRange.To, MinStep: interval, MaxPoints: maxPoints})
	if err != nil {
		return engineErrorResponse(err)
	}
	return backend.DataResponse{Frames: engineFrames(q.RefID, query.LegendFormat, res)}
}

// engineErrorResponse maps an engine failure to a per-query answer.
func engineErrorResponse(err error) backend.DataResponse {
	var le *engine.LimitError
	var fe *engine.FieldError
	var pe *profileError
	switch {
	case errors.As(err, &le), errors.As(err, &fe), errors.As(err, &pe):
		return badRequest(err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		if prom.KindOf(err) == 0 {
			return backend.ErrDataResponseWithSource(backend.StatusTimeout, backend.ErrorSourceDownstream, "the query was cancelled: "+err.Error())
		}
	}
	return promErrorResponse(err)
}

// profileError is a metric profile that cannot be resolved.
type profileError struct{ msg string }

func (e *profileError) Error() string { return e.msg }

// engineConfig is the engine configuration of the data source's settings.
func (d *Datasource) engineConfig() engine.Config {
	return engine.Config{
		Prom: d.prom, Profile: d.settings.Profile, Labels: d.settings.Labels(), PerProfile: d.settings.ProfileLabels,
		WarmupWindow: d.settings.WarmupWindow,
		Limits:       engine.Limits{MaxSeries: d.limits.MaxSeries, MaxPoints: d.limits.MaxPoints},
		ProbeURLs:    d.settings.ProbeURLs, ProbeHTTP: d.probeHTTP, History: d.history, Now: d.now,
		Catalog: d.catalog,
	}
}

// engineFor builds the engine of a request: the server of each model detected from what
// Prometheus has (cached by the catalog for engine.CatalogTTL), or the profile the settings
// force, with the settings' label renames.
func (d *Datasource) engineFor(ctx context.Context) (*engine.Engine, error) {
	e, err := engine.New(ctx, d.engineConfig())
	var ce *engine.ConfigError
	var nd *profile.NotDetectedError
	if errors.As(err, &ce) || errors.As(err, &nd) {
		return nil, &profileError{err.Error()}
	}
	return e, err
}

// engineFrames makes one wide frame per series, typed as a dataplane time-series-multi response
// (so panels and Grafana-managed alerting accept it), with units, display names, thresholds and
// value mappings in the field config. Notices and the warm-up intervals go on the first frame;
// an empty result is one typed frame without fields.
func engineFrames(refID, legend string, res *engine.Result) data.Frames {
	executed := strings.Join(res.Queries, "\n") + "\nStep: " + res.Step.String()
	meta := func() *data.FrameMeta {
		return &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}, ExecutedQueryString: executed}
	}
	frames := make(data.Frames, 0, max(1, len(res.Series)))
	for _, s := range res.Series {
		times := make([]time.Time, len(s.T))
		values := make([]*float64, len(s.V))
		for i, ts := range s.T {
			times[i] = time.UnixMilli(ts).UTC()
			if v := s.V[i]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				values[i] = &v
			}
		}
		field := data.NewField(s.Name, data.Labels(s.Labels), values)
		field.Config = fieldConfig(s, legend)
		f := data.NewFrame("", data.NewField(data.TimeSeriesTimeFieldName, nil, times), field)
		f.RefID = refID
		f.Meta = meta()
		frames = append(frames, f)
	}
	if len(frames) == 0 {
		f := data.NewFrame("")
		f.RefID = refID
		f.Meta = meta()
		frames = append(frames, f)
	}
	first := frames[0].Meta
	for _, n := range res.Notices {
		first.Notices = append(first.Notices, data.Notice{Severity: noticeSeverity(n.Severity), Text: n.Text})
	}
	if len(res.Warmup) > 0 {
		first.Notices = append(first.Notices, data.Notice{Severity: data.NoticeSeverityInfo, Text: warmupText(res.Warmup)})
		first.Custom = map[string]any{"warmup": warmupJSON(res.Warmup)}
	}
	return frames
}

func fieldConfig(s engine.Series, legend string) *data.FieldConfig {
	fc := &data.FieldConfig{DisplayNameFromDS: s.DisplayName, Unit: s.Unit}
	if legend != "" && legend != "__auto" {
		fc.DisplayNameFromDS = displayName(legend, s.Labels, s.DisplayName)
	}
	if s.Min != nil {
		v := data.ConfFloat64(*s.Min)
		fc.Min = &v
	}
	if s.Max != nil {
		v := data.ConfFloat64(*s.Max)
		fc.Max = &v
	}
	if len(s.Thresholds) > 0 {
		steps := []data.Threshold{data.NewThreshold(math.Inf(-1), "green", "")}
		for _, t := range s.Thresholds {
			color := "orange"
			if t.Severity == engine.Critical {
				color = "red"
			}
			steps = append(steps, data.NewThreshold(t.Value, color, string(t.Severity)))
		}
		fc.Thresholds = &data.ThresholdsConfig{Mode: data.ThresholdsModeAbsolute, Steps: steps}
		fc.Custom = map[string]any{"thresholdsStyle": map[string]any{"mode": "line+area"}}
	}
	if len(s.Mappings) > 0 {
		vm := data.ValueMapper{}
		for i, m := range s.Mappings {
			vm[formatValue(m.Value)] = data.ValueMappingResult{Text: m.Text, Color: m.Color, Index: i}
		}
		fc.Mappings = data.ValueMappings{vm}
	}
	return fc
}

func formatValue(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%g", v)
}

func noticeSeverity(s engine.Severity) data.NoticeSeverity {
	switch s {
	case engine.Warning, engine.Critical:
		return data.NoticeSeverityWarning
	}
	return data.NoticeSeverityInfo
}

// maxListedWarmups bounds the warm-up intervals named in the notice; Meta.Custom has them all.
const maxListedWarmups = 5

func warmupText(ws []engine.WarmupInterval) string {
	parts := make([]string, 0, min(len(ws), maxListedWarmups))
	for i, w := range ws {
		if i == maxListedWarmups {
			break
		}
		who := w.Instance
		if w.Model != "" {
			who += " " + w.Model
		}
		parts = append(parts, fmt.Sprintf("%s %s–%s (%s)", who, w.Start.Format("2006-01-02 15:04:05"), w.End.Format("15:04:05"), w.Reason))
	}
	text := "warm-up samples dropped (recorded, not alerted on): " + strings.Join(parts, "; ")
	if n := len(ws) - maxListedWarmups; n > 0 {
		text += fmt.Sprintf("; and %d more", n)
	}
	return text
}

func warmupJSON(ws []engine.WarmupInterval) []map[string]any {
	out := make([]map[string]any, len(ws))
	for i, w := range ws {
		out[i] = map[string]any{"instance": w.Instance, "model": w.Model, "start": w.Start.UnixMilli(), "end": w.End.UnixMilli(), "reason": w.Reason}
	}
	return out
}
