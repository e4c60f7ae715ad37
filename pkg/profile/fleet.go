package profile

import (
	"fmt"
	"sort"
	"strings"
)

// Labels are the label names of one profile that a user may rename (the data source's
// modelLabel / versionLabel / instanceLabel settings); "" keeps the profile's own.
type Labels struct{ Model, Version, Instance string }

// WithLabelSet is WithLabels taking a Labels.
func (p Profile) WithLabelSet(l Labels) (Profile, error) {
	return p.WithLabels(l.Model, l.Version, l.Instance)
}

// Over lays l over base: l's non-empty names win (a per-profile rename over the flat one).
func (l Labels) Over(base Labels) Labels {
	if l.Model == "" {
		l.Model = base.Model
	}
	if l.Version == "" {
		l.Version = base.Version
	}
	if l.Instance == "" {
		l.Instance = base.Instance
	}
	return l
}

// Seen is what Prometheus reports for one profile: its signature names present at all, and,
// per value of the profile's model label, the signature names whose series carry that value.
type Seen struct {
	Names  []string
	Models map[string][]string
}

// Fleet is the assignment of models to the servers (profiles) that serve them.
type Fleet struct {
	// Servers are the profiles found, in the priority order DetectFleet was given.
	Servers []Server
	// Ambiguous lists the models two or more profiles claim equally well; each went to the
	// first of them in priority order.
	Ambiguous []Ambiguity
}

// Server is one profile found in Prometheus and the models it serves.
type Server struct {
	Profile string
	Models  []string // sorted
	// Unlabelled: the profile's signature is present but no series carries its model label
	// (TGI without a relabelled model label, or a wrong label rename): its models cannot be
	// told apart, and only a query without a model filter reaches them.
	Unlabelled bool
	// Matched are the signature names present, sorted.
	Matched []string
}

// Ambiguity is a model that several profiles match equally well.
type Ambiguity struct {
	Model    string
	Profiles []string // the tied profiles, in priority order
	Chosen   string
}

// ServerOf returns the profile serving model.
func (f Fleet) ServerOf(model string) (string, bool) {
	for _, s := range f.Servers {
		i := sort.SearchStrings(s.Models, model)
		if i < len(s.Models) && s.Models[i] == model {
			return s.Profile, true
		}
	}
	return "", false
}

// Models counts the models assigned.
func (f Fleet) Models() int {
	n := 0
	for _, s := range f.Servers {
		n += len(s.Models)
	}
	return n
}

// Summary is one sentence for the health check: the servers and how many models each serves.
func (f Fleet) Summary() string {
	if len(f.Servers) == 0 {
		return "no inference server found"
	}
	parts := make([]string, 0, len(f.Servers))
	for _, s := range f.Servers {
		title := s.Profile
		if p, err := ByName(s.Profile); err == nil {
			title = p.Title
		}
		switch {
		case s.Unlabelled:
			parts = append(parts, fmt.Sprintf("%s (models not labelled: set its model label)", title))
		case len(s.Models) == 1:
			parts = append(parts, fmt.Sprintf("%s (1 model)", title))
		default:
			parts = append(parts, fmt.Sprintf("%s (%d models)", title, len(s.Models)))
		}
	}
	out := "servers found: " + strings.Join(parts, ", ")
	for _, a := range f.Ambiguous {
		out += fmt.Sprintf("; model %s matches %s equally well, read as %s (force a profile to choose)", a.Model, strings.Join(a.Profiles, " and "), a.Chosen)
	}
	return out
}

// DetectFleet assigns each model to the profile whose signature it carries best, with Detect's
// rule applied per model: a profile needs at least two signature names carrying the model; the
// larger share of the signature wins, then the larger count; ties are reported as ambiguous and
// go to the earlier profile of profiles (the priority order). A profile whose signature is
// present (two names or more) but that no model label value carries is an Unlabelled server.
// seen is keyed by profile name; profiles missing from it were not found.
func DetectFleet(profiles []Profile, seen map[string]Seen) Fleet {
	type claim struct {
		prof    int
		matched int
		of      int
	}
	better := func(a, b claim) bool {
		// a.matched/a.of > b.matched/b.of without floating point.
		if l, r := a.matched*b.of, b.matched*a.of; l != r {
			return l > r
		}
		return a.matched > b.matched
	}
	claims := map[string][]claim{}
	for i, p := range profiles {
		s, ok := seen[p.Name]
		if !ok || len(p.Signature) == 0 {
			continue
		}
		sig := map[string]bool{}
		for _, n := range p.Signature {
			sig[n] = true
		}
		for model, names := range s.Models {
			if model == "" {
				continue
			}
			c := claim{prof: i, of: len(p.Signature), matched: countIn(names, sig)}
			if c.matched >= minMatches {
				claims[model] = append(claims[model], c)
			}
		}
	}
	var f Fleet
	won := make([][]string, len(profiles))
	models := make([]string, 0, len(claims))
	for m := range claims {
		models = append(models, m)
	}
	sort.Strings(models)
	for _, m := range models {
		cs := claims[m]
		sort.SliceStable(cs, func(i, j int) bool {
			if better(cs[i], cs[j]) || better(cs[j], cs[i]) {
				return better(cs[i], cs[j])
			}
			return cs[i].prof < cs[j].prof
		})
		won[cs[0].prof] = append(won[cs[0].prof], m)
		if len(cs) > 1 && !better(cs[0], cs[1]) {
			a := Ambiguity{Model: m, Chosen: profiles[cs[0].prof].Name}
			for _, c := range cs {
				if !better(cs[0], c) {
					a.Profiles = append(a.Profiles, profiles[c.prof].Name)
				}
			}
			f.Ambiguous = append(f.Ambiguous, a)
		}
	}
	hosted := hostedNames(profiles, seen)
	for i, p := range profiles {
		s, ok := seen[p.Name]
		if !ok {
			continue
		}
		sig := map[string]bool{}
		for _, n := range p.Signature {
			sig[n] = true
		}
		var matched []string
		for _, n := range s.Names {
			if sig[n] {
				matched = append(matched, n)
			}
		}
		sort.Strings(matched)
		matched = compactStrings(matched)
		srv := Server{Profile: p.Name, Models: won[i], Matched: matched}
		if len(srv.Models) == 0 {
			if countNotIn(matched, hosted) < minMatches || labelled(s) {
				continue // absent, or every model it carries went to a better match
			}
			srv.Unlabelled = true
		}
		f.Servers = append(f.Servers, srv)
	}
	return f
}

// hostedNames are the names some profile's models carry as a backend's (Triton's vLLM backend
// serves vllm:* with Triton's model label): they are that server's, and make no other server of
// their own. (A vLLM server beside such a Triton, with its own labelled series, still claims
// its models; only an unlabelled one would go unseen.)
func hostedNames(profiles []Profile, seen map[string]Seen) map[string]bool {
	out := map[string]bool{}
	for _, p := range profiles {
		s, ok := seen[p.Name]
		if !ok || len(p.Backends) == 0 {
			continue
		}
		backend := map[string]bool{}
		for _, n := range p.Backends {
			backend[n] = true
		}
		for model, names := range s.Models {
			for _, n := range names {
				if model != "" && backend[n] { // the backend serves its whole family
					for _, b := range p.Backends {
						out[b] = true
					}
				}
			}
		}
	}
	return out
}

func countNotIn(names []string, set map[string]bool) int {
	n := 0
	for _, x := range names {
		if !set[x] {
			n++
		}
	}
	return n
}

// labelled reports whether any series of the profile carried a model label value.
func labelled(s Seen) bool {
	for m, names := range s.Models {
		if m != "" && len(names) > 0 {
			return true
		}
	}
	return false
}

func countIn(names []string, set map[string]bool) int {
	seen := map[string]bool{}
	for _, n := range names {
		if set[n] {
			seen[n] = true
		}
	}
	return len(seen)
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// MissingSignature lists the signature names of p absent from present: what a forced profile that finds
// nothing is missing.
func (p Profile) MissingSignature(present map[string]bool) []string {
	var out []string
	for _, n := range p.Signature {
		if !present[n] {
			out = append(out, n)
		}
	}
	return out
}
