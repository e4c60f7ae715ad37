package engine

// Subjects that exist: a model, version, instance, node or GPU named in a question must be one
// Prometheus has series of, or the answer would be an empty "healthy". The names known are read
// from the label values API (the index only, no sample decoded) and cached by the Catalog.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Subject is what a question names; each field is a set of values (empty: not named).
type Subject struct {
	Model, Version, Instance, Node, GPU []string
	// InstanceMayBeNode: an instance value may name a node (the GPU types read an instance
	// filter as its node, so "node-a" and "node-a:8000" select the same GPUs).
	InstanceMayBeNode bool
}

// SubjectOf is the subject of a parsed query: the selection fields its type reads (its spec's
// Filters). A type that reads GPUs takes a node name as an instance value.
func SubjectOf(q Query) Subject {
	spec, ok := Spec(q.Type)
	if !ok {
		return Subject{}
	}
	var s Subject
	for _, f := range spec.Filters {
		switch f {
		case "model":
			s.Model = q.Model
		case "version":
			s.Version = q.Version
		case "instance":
			s.Instance = q.Instance
		case "gpu":
			s.GPU, s.InstanceMayBeNode = q.GPU, true
		}
	}
	return s
}

// CheckSubject returns an *UnknownError for the first value of s that Prometheus has no series
// of, listing the names it has: a model no server carries, a version or instance no series of
// the subject's models carries, a node that is neither an inference instance's host nor a GPU
// series' node, a GPU index no GPU series of the subject's nodes carries. Where the names cannot
// be listed (a profile without the label, no request counter) the value is not judged.
func (e *Engine) CheckSubject(ctx context.Context, s Subject) error {
	if known := e.Fleet.Models(); len(known) > 0 {
		if err := mustKnow("model", "", s.Model, known); err != nil {
			return err
		}
	}
	k := knownNames{e: e}
	if len(s.Version) > 0 {
		known, listed, err := k.inference(ctx, s.Model, func(p profile.Profile) string { return p.VersionLabel })
		if err != nil {
			return err
		}
		if err := listed.and(mustKnow("version", ofModels(s.Model), s.Version, known)); err != nil {
			return err
		}
	}
	for _, in := range s.Instance {
		known, listed, err := k.inference(ctx, s.Model, func(p profile.Profile) string { return instanceLabelOf(p) })
		if err != nil {
			return err
		}
		if !bool(listed) || slices.Contains(known, in) {
			continue
		}
		if s.InstanceMayBeNode || len(s.Model) == 0 {
			nodes, err := k.nodes(ctx)
			if err != nil {
				return err
			}
			if slices.Contains(nodes, InstanceNode(in)) {
				continue
			}
		}
		return &UnknownError{What: "instance", Of: ofModels(s.Model), Name: in, Known: known}
	}
	if len(s.Node) > 0 {
		nodes, err := k.nodes(ctx)
		if err != nil {
			return err
		}
		if err := mustKnow("node", "", s.Node, nodes); err != nil {
			return err
		}
	}
	if len(s.GPU) > 0 {
		nodes := slices.Clone(s.Node)
		for _, n := range (GPUFilter{Instances: s.Instance}).Nodes() {
			if !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
		known, err := k.gpus(ctx, nodes)
		if err != nil {
			return err
		}
		of := ""
		if len(nodes) > 0 {
			of = "on node " + strings.Join(nodes, ", ")
		}
		if err := mustKnow("GPU", of, s.GPU, known); err != nil {
			return err
		}
	}
	return nil
}

func mustKnow(what, of string, values, known []string) error {
	for _, v := range values {
		if !slices.Contains(known, v) {
			return &UnknownError{What: what, Of: of, Name: v, Known: known}
		}
	}
	return nil
}

func ofModels(models []string) string {
	if len(models) == 0 {
		return ""
	}
	return "of " + strings.Join(models, ", ")
}

func instanceLabelOf(p profile.Profile) string {
	if p.InstanceLabel == "" {
		return "instance"
	}
	return p.InstanceLabel
}

// knownNames reads the names a subject is checked against.
type knownNames struct{ e *Engine }

// servers are the profiles serving models (every server when none is named), each with its
// share of the models.
func (k knownNames) servers(models []string) []group {
	e := k.e
	if e.Fleet == nil || len(e.Fleet.Servers) == 0 {
		if e.Profile.Name == "" {
			return nil // an engine for GPU series only
		}
		return []group{{prof: e.Profile, models: models}}
	}
	var out []group
	for _, s := range e.Fleet.Servers {
		g := group{prof: s.Profile}
		for _, m := range models {
			if slices.Contains(s.Models, m) {
				g.models = append(g.models, m)
			}
		}
		if len(models) == 0 || len(g.models) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// listing says whether the names could be listed at all; an error is kept only when they were.
type listing bool

func (l listing) and(err error) error {
	if !l {
		return nil
	}
	return err
}

// inference lists the values of a label (label(p) per server; "" = the server has none) on the
// request series of the models' servers, narrowed to the models; listed is false when no server
// could list them.
func (k knownNames) inference(ctx context.Context, models []string, label func(profile.Profile) string) ([]string, listing, error) {
	var out []string
	var ok listing
	for _, g := range k.servers(models) {
		l := label(g.prof)
		if l == "" {
			continue
		}
		sels, err := RequestSelectors(g.prof, k.e.Present, g.models)
		if err != nil {
			continue // the server cannot list its requests: its names are not known
		}
		vals, err := k.e.labelValues(ctx, l, sels)
		if err != nil {
			return nil, false, err
		}
		ok = true
		out = append(out, vals...)
	}
	slices.Sort(out)
	return slices.Compact(out), ok, nil
}

// nodes are the inference instances' hosts and the GPU series' nodes (engine.GPUNode's labels).
func (k knownNames) nodes(ctx context.Context) ([]string, error) {
	instances, _, err := k.inference(ctx, nil, func(p profile.Profile) string { return instanceLabelOf(p) })
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range instances {
		out = append(out, InstanceNode(in))
	}
	sels, err := GPUSeriesSelectors(k.e.Present, nil)
	if err != nil {
		return nil, err
	}
	for _, l := range []string{"node", "Hostname", "hostname", "instance"} {
		vals, err := k.e.labelValues(ctx, l, sels)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			out = append(out, InstanceNode(v))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// gpus are the GPU indexes (or, on Triton's nv_gpu_* series, UUIDs) the nodes' GPU series carry.
func (k knownNames) gpus(ctx context.Context, nodes []string) ([]string, error) {
	sels, err := GPUSeriesSelectors(k.e.Present, nodes)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range []string{"gpu", "gpu_uuid"} {
		vals, err := k.e.labelValues(ctx, l, sels)
		if err != nil {
			return nil, err
		}
		out = append(out, vals...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// labelValues reads a label's values over the whole history through the catalog's cache.
func (e *Engine) labelValues(ctx context.Context, label string, selectors []string) ([]string, error) {
	if e.catalog != nil {
		return e.catalog.labelValues(ctx, e.Prom, label, selectors)
	}
	return e.Prom.LabelValues(ctx, label, selectors, time.Time{}, time.Time{})
}

// RequestSelectors select the series of the profile's request counter (every model, version and
// instance the server serves appears there), narrowed to models.
func RequestSelectors(p profile.Profile, present map[string]bool, models []string) ([]string, error) {
	m, ok, why := p.Resolve(profile.Requests, present)
	if !ok {
		return nil, &ConfigError{Msg: "the " + p.Name + " profile cannot list requests: " + why}
	}
	var ms []prom.Matcher
	if len(models) > 0 && p.ModelLabel != "" && !m.PerInstance {
		ms = append(ms, prom.In(p.ModelLabel, models...))
	}
	ms = append(ms, prom.EqAll(m.Matchers)...)
	metrics := m.Metrics
	if m.Kind == profile.Histogram || m.Kind == profile.Summary {
		metrics = make([]string, len(m.Metrics))
		for i, name := range m.Metrics {
			metrics[i] = name + "_count"
		}
	}
	out := make([]string, 0, len(metrics))
	for _, name := range metrics {
		sel, err := prom.Selector(name, ms...)
		if err != nil {
			return nil, err
		}
		out = append(out, sel)
	}
	return out, nil
}

// GPUSeriesSelectors select the GPU utilisation and memory series (every naming Prometheus has)
// of the instances' nodes: one selector per label a node may come from (GPUNode's rule);
// Prometheus answers their union.
func GPUSeriesSelectors(present map[string]bool, instances []string) ([]string, error) {
	var names []string
	for _, m := range []GPUMetric{GPUUtil, GPUMemory} {
		for _, s := range (&Engine{Present: present}).presentSources(m) {
			names = append(names, s.metric)
		}
	}
	slices.Sort(names)
	return gpuSelectorArms(sourcesNamed(slices.Compact(names)), GPUFilter{Instances: instances})
}

func sourcesNamed(names []string) []gpuSource {
	out := make([]gpuSource, len(names))
	for i, n := range names {
		out[i] = gpuSource{metric: n}
	}
	return out
}
