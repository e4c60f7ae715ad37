package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// ServerLabel names, on every series of an answer that spans more than one server, the metric
// profile the series was read with.
const ServerLabel = "server"

// Fleet is what the engine knows of the servers behind one Prometheus: which profile serves
// each model.
type Fleet struct {
	// Servers are the profiles found (label renames applied), in detection-priority order.
	Servers []Server
	// Ambiguous lists the models several profiles claim equally well.
	Ambiguous []profile.Ambiguity
	byModel   map[string]int
}

// Server is one profile found and the models it serves.
type Server struct {
	Profile profile.Profile
	Models  []string
	// Unlabelled: its signature is present but no series carries its model label.
	Unlabelled bool
	// Matched are its signature names present.
	Matched []string
}

// newFleet resolves a detected assignment against the profiles it was detected with.
func newFleet(det profile.Fleet, profiles []profile.Profile) *Fleet {
	byName := map[string]profile.Profile{}
	for _, p := range profiles {
		byName[p.Name] = p
	}
	f := &Fleet{Ambiguous: det.Ambiguous, byModel: map[string]int{}}
	for _, s := range det.Servers {
		i := len(f.Servers)
		f.Servers = append(f.Servers, Server{Profile: byName[s.Profile], Models: s.Models, Unlabelled: s.Unlabelled, Matched: s.Matched})
		for _, m := range s.Models {
			f.byModel[m] = i
		}
	}
	return f
}

// ServerOf returns the server of model.
func (f *Fleet) ServerOf(model string) (*Server, bool) {
	if f == nil {
		return nil, false
	}
	i, ok := f.byModel[model]
	if !ok {
		return nil, false
	}
	return &f.Servers[i], true
}

// Primary is the server an answer that cannot be split by model is read with: the one serving
// the most models, the earlier in priority order on a tie.
func (f *Fleet) Primary() (profile.Profile, bool) {
	if f == nil || len(f.Servers) == 0 {
		return profile.Profile{}, false
	}
	best := 0
	for i, s := range f.Servers {
		if len(s.Models) > len(f.Servers[best].Models) {
			best = i
		}
	}
	return f.Servers[best].Profile, true
}

// Assignment is the fleet in pkg/profile's terms (profile names, no label renames).
func (f *Fleet) Assignment() profile.Fleet {
	var out profile.Fleet
	if f == nil {
		return out
	}
	out.Ambiguous = f.Ambiguous
	for _, s := range f.Servers {
		out.Servers = append(out.Servers, profile.Server{Profile: s.Profile.Name, Models: s.Models, Unlabelled: s.Unlabelled, Matched: s.Matched})
	}
	return out
}

// detectParallel bounds the concurrent label-value calls of one detection.
const detectParallel = 8

// DetectFleet finds which of the profiles serves each model. It asks Prometheus' label values
// API for the profile's model label, matched on one signature name at a time
// (/api/v1/label/<modelLabel>/values?match[]={__name__="<name>"}), for each signature name
// present in names. That reads only the index (no sample is decoded, unlike an instant
// count by (__name__, model) over every bucket series), covers the same time span as the list of
// metric names the measures are chosen from (so a history that ended hours ago still shows its
// models), and answers one line per model. The number of calls is the number of signature
// names present (at most the sum of the profiles' signature sizes, 33 for the built-in ones, plus
// one per profile whose backends' names are present: Triton's vLLM backend),
// whatever the fleet's size; they run in parallel, detectParallel at a time. A profile without
// a model label only needs the names list.
func DetectFleet(ctx context.Context, c *prom.Client, names map[string]bool, profiles []profile.Profile) (*Fleet, int, error) {
	type job struct{ prof, name string }
	seen := map[string]profile.Seen{}
	var jobs []job
	for _, p := range profiles {
		var present []string
		for _, n := range p.Signature {
			if names[n] {
				present = append(present, n)
			}
		}
		if len(present) == 0 {
			continue
		}
		seen[p.Name] = profile.Seen{Names: present, Models: map[string][]string{}}
		if p.ModelLabel == "" || len(present) < 2 {
			continue
		}
		for _, n := range present {
			jobs = append(jobs, job{p.Name, n})
		}
		for _, n := range p.Backends { // a backend's names carried with this server's labels: one tells
			if names[n] {
				jobs = append(jobs, job{p.Name, n})
				break
			}
		}
	}
	labels := map[string]string{}
	for _, p := range profiles {
		labels[p.Name] = p.ModelLabel
	}
	var mu sync.Mutex
	sem := make(chan struct{}, detectParallel)
	err := parallel(ctx, len(jobs), func(ctx context.Context, i int) error {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-sem }()
		j := jobs[i]
		sel, err := selector([]string{j.name}, nil)
		if err != nil {
			return err
		}
		vals, err := c.LabelValues(ctx, labels[j.prof], []string{sel}, time.Time{}, time.Time{})
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, v := range vals {
			s := seen[j.prof]
			s.Models[v] = append(s.Models[v], j.name)
		}
		return nil
	})
	if err != nil {
		return nil, len(jobs), err
	}
	return newFleet(profile.DetectFleet(profiles, seen), profiles), len(jobs), nil
}

// perGPU lists the query types that read GPU series, not a model's: they run once, with the
// primary profile, whatever the fleet.
var perGPU = map[string]bool{"gpu": true, "gpu_live": true, "gpumem_forecast": true}

// group is one server's share of a query.
type group struct {
	prof   profile.Profile
	models []string // the model filter for this server
}

// plan splits the query's models by server. One group with the query's own filter is the
// single-server answer, unchanged.
func (e *Engine) plan(c Common) []group {
	single := []group{{prof: e.Profile, models: c.Model}}
	if e.Fleet == nil || len(e.Fleet.Servers) < 2 || perGPU[c.Type] {
		return single
	}
	idx := map[string]int{}
	var out []group
	add := func(p profile.Profile, models ...string) {
		i, ok := idx[p.Name]
		if !ok {
			i = len(out)
			idx[p.Name] = i
			out = append(out, group{prof: p})
		}
		out[i].models = append(out[i].models, models...)
	}
	if len(c.Model) == 0 {
		for _, s := range e.Fleet.Servers {
			add(s.Profile, s.Models...) // an unlabelled server keeps an empty filter: all its series
		}
		return out
	}
	for _, m := range c.Model {
		if s, ok := e.Fleet.ServerOf(m); ok {
			add(s.Profile, m)
		} else {
			add(e.Profile, m) // no server carries it: read as a single server would (nothing)
		}
	}
	return out
}

// merge joins the answers of several servers: each series carries ServerLabel, each notice
// names its server.
func merge(groups []group, results []*Result) *Result {
	out := &Result{}
	noticed := map[string]bool{}
	for i, r := range results {
		p := groups[i].prof
		for _, s := range r.Series {
			l := make(map[string]string, len(s.Labels)+1)
			for k, v := range s.Labels {
				l[k] = v
			}
			l[ServerLabel] = p.Name
			s.Labels = l
			out.Series = append(out.Series, s)
		}
		for _, t := range r.Tables {
			t.Name = joinNonEmpty(" ", t.Name, "("+p.Name+")")
			out.Tables = append(out.Tables, t)
		}
		for _, n := range r.Notices {
			n.Text = serverTitle(p) + ": " + strings.TrimPrefix(n.Text, p.Title+": ")
			if !noticed[n.Text] {
				noticed[n.Text] = true
				out.Notices = append(out.Notices, n)
			}
		}
		out.Warmup = append(out.Warmup, r.Warmup...)
		out.Queries = append(out.Queries, r.Queries...)
		out.Step = max(out.Step, r.Step)
	}
	sortSeries(out.Series)
	sort.SliceStable(out.Warmup, func(i, j int) bool {
		a, b := out.Warmup[i], out.Warmup[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		return a.Instance+"\xff"+a.Model < b.Instance+"\xff"+b.Model
	})
	return out
}

func serverTitle(p profile.Profile) string {
	if p.Title == "" {
		return p.Name
	}
	return fmt.Sprintf("%s (%s)", p.Title, p.Name)
}

// ForModel is the engine narrowed to the server of model: a copy whose Profile is that server's
// and which holds no fleet, for the answers built on the engine that read one model (triage,
// gate, report). An engine of one server, or model "", gives e itself. A model no server
// carries, where the servers' models are known, is an *UnknownError listing them: a mistyped
// name must not read as a healthy model.
func (e *Engine) ForModel(model string) (*Engine, error) {
	if model == "" {
		return e, nil
	}
	s, ok := e.Fleet.ServerOf(model)
	if !ok {
		if known := e.Fleet.Models(); len(known) > 0 {
			return nil, &UnknownError{What: "model", Name: model, Known: known}
		}
		return e, nil
	}
	if len(e.Fleet.Servers) < 2 {
		return e, nil
	}
	c := *e
	c.Profile, c.Fleet = s.Profile, nil
	return &c, nil
}

// ForSubject is ForModel for a question that names its subject: every value of s must exist
// (CheckSubject: an *UnknownError otherwise), and an engine narrowed to the server of its model
// when s names one.
func (e *Engine) ForSubject(ctx context.Context, s Subject) (*Engine, error) {
	if err := e.CheckSubject(ctx, s); err != nil {
		return nil, err
	}
	if len(s.Model) == 1 {
		return e.ForModel(s.Model[0])
	}
	return e, nil
}

// Models lists every model of every server, sorted.
func (f *Fleet) Models() []string {
	if f == nil {
		return nil
	}
	var out []string
	for _, s := range f.Servers {
		out = append(out, s.Models...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// UnknownError is a subject (a model, version, instance, node or GPU) that Prometheus has no
// series of, with the names it has.
type UnknownError struct {
	What, Name string
	// Of narrows where the names were looked for ("of recsys-ranker", "on node node-a").
	Of    string
	Known []string
}

func (e *UnknownError) Error() string {
	what := e.What
	if e.Of != "" {
		what += " " + e.Of
	}
	head := fmt.Sprintf("unknown %s %s", e.What, strconv.Quote(clip.Text(e.Name, 80)))
	if e.Of != "" {
		head += " " + e.Of
	}
	if len(e.Known) == 0 {
		return fmt.Sprintf("%s: Prometheus has no series of any %s", head, what)
	}
	known := e.Known
	more := ""
	if len(known) > 20 {
		known, more = known[:20], fmt.Sprintf(" and %d more", len(e.Known)-20)
	}
	return fmt.Sprintf("%s: Prometheus has series of %s%s", head, strings.Join(known, ", "), more)
}
