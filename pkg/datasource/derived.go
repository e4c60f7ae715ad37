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
)

// run answers one parsed query of any type: one path, so every type gets the same step and
// point bounds. The engine is chosen by the type's use of the metric profile; the frames by
// the kind of result.
func (d *Datasource) run(ctx context.Context, q backend.DataQuery, spec engine.TypeSpec, query engine.Query, f engine.Fields) backend.DataResponse {
	var (
		e   *engine.Engine
		err error
	)
	switch spec.Profile {
	case engine.ProfileUnused:
		e = d.gpuEngine(ctx)
	case engine.ProfileOptional:
		e, err = d.engineFor(ctx)
		var pe *profileError
		if errors.As(err, &pe) {
			e, err = d.gpuEngine(ctx), nil // no inference server: the GPU series still answer
		}
	default:
		e, err = d.engineFor(ctx)
	}
	if err == nil && spec.Profile != engine.ProfileUnused {
		// A name Prometheus has no series of is an error on the panel, not an empty answer.
		err = e.CheckSubject(ctx, engine.SubjectOf(query))
	}
	if err != nil {
		return errorResponse(err)
	}
	// Grafana sends the interval and the point budget with the request; older callers and
	// alerting put them in the JSON only.
	minStep, maxPoints := engine.RangeHints(f)
	if q.Interval > 0 {
		minStep = q.Interval
	}
	if q.MaxDataPoints > 0 {
		maxPoints = int(q.MaxDataPoints)
	}
	res, err := e.Run(ctx, query, engine.Range{Start: q.TimeRange.From, End: q.TimeRange.To, MinStep: minStep, MaxPoints: maxPoints})
	if err != nil {
		return errorResponse(err)
	}
	switch {
	case spec.Name == engine.TypePromQL:
		return backend.DataResponse{Frames: promqlFrames(q.RefID, query.LegendFormat, res)}
	case len(res.Tables) > 0 && len(res.Series) == 0:
		return backend.DataResponse{Frames: gpuTableFrames(q.RefID, res)}
	}
	return backend.DataResponse{Frames: engineFrames(q.RefID, query.LegendFormat, res)}
}

// chooseProfileAdvice is where a data source's user names the profile detection did not find.
const chooseProfileAdvice = "choose a profile in the data source settings"

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
		Catalog: d.catalog, Gateway: d.settings.Gateway,
	}
}

// engineFor builds the engine of a request: the server of each model detected from what
// Prometheus has (cached by the catalog for engine.CatalogTTL), or the profile the settings
// force, with the settings' label renames.
func (d *Datasource) engineFor(ctx context.Context) (*engine.Engine, error) {
	e, err := engine.New(ctx, d.engineConfig())
	var ce *engine.ConfigError
	var nd *profile.NotDetectedError
	switch {
	case errors.As(err, &nd):
		return nil, &profileError{err.Error() + "; " + chooseProfileAdvice}
	case errors.As(err, &ce):
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
