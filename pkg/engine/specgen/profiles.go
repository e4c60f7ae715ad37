package specgen

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/inferscope/inferscope/pkg/profile"
)

// The per-server tables of docs/queries.md, between
//
//	<!-- profiles -->
//	…generated from pkg/profile…
//	<!-- /profiles -->
const (
	profilesMarker    = "<!-- profiles -->"
	profilesMarkerEnd = "<!-- /profiles -->"
)

var profilesRE = regexp.MustCompile(`(?s)<!-- profiles -->\n.*?<!-- /profiles -->`)

// ProfileTables writes, for every built-in profile, the names each role is read from (in the
// order they are tried) and why each other role is not measured.
func ProfileTables() string {
	var b strings.Builder
	for _, p := range profile.All() {
		fmt.Fprintf(&b, "#### %s (`%s`)\n\n", p.Title, p.Name)
		fmt.Fprintf(&b, "Labels: model `%s`, version `%s`, instance `%s`. %s.", orNone(p.ModelLabel), orNone(p.VersionLabel), orNone(p.InstanceLabel), p.LabelNote)
		if p.Enable != "" {
			fmt.Fprintf(&b, " **Needs** %s.", p.Enable)
		}
		b.WriteString("\n\n| role | read from (first found wins) | notes |\n|---|---|---|\n")
		for _, r := range profile.AllRoles {
			ms, why := p.Measures(r)
			if len(ms) == 0 {
				fmt.Fprintf(&b, "| %s | not measured | %s |\n", r, cell(why))
				continue
			}
			var reads, notes []string
			for _, m := range ms {
				reads = append(reads, measureText(m))
				if m.Note != "" {
					notes = append(notes, m.Note)
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", r, cell(strings.Join(reads, "; then ")), cell(strings.Join(notes, "; ")))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// measureText says how one measure is read: its kind and its names, matchers and scale.
func measureText(m profile.Measure) string {
	names := func(ns []string) string { return "`" + strings.Join(ns, "` + `") + "`" }
	kind := m.Kind.String()
	if m.Kind == profile.MicrosecondCounter && m.Scale == 1 {
		kind = "duration counter (seconds)"
	}
	s := kind + " " + names(m.Metrics)
	if len(m.Minus) > 0 {
		s += " − " + names(m.Minus)
	}
	if len(m.Count) > 0 {
		s += " over " + names(m.Count)
	}
	if len(m.Matchers) > 0 {
		var ms []string
		for k, v := range m.Matchers {
			ms = append(ms, fmt.Sprintf("%s=%q", k, v))
		}
		sort.Strings(ms)
		s += " {" + strings.Join(ms, ",") + "}"
	}
	if m.Scale != 1 {
		s += fmt.Sprintf(" × %g", m.Scale)
	}
	if m.PerInstance {
		s += " (per instance)"
	}
	return s
}

func orNone(l string) string {
	if l == "" {
		return "(none)"
	}
	return l
}

// profileDocs rewrites the per-server tables of a document between their markers, if it has them.
func profileDocs(doc []byte) ([]byte, error) {
	if n := strings.Count(string(doc), profilesMarker); n != len(profilesRE.FindAll(doc, -1)) {
		return nil, fmt.Errorf("a %s marker has no %s after it", profilesMarker, profilesMarkerEnd)
	}
	return profilesRE.ReplaceAll(doc, []byte(profilesMarker+"\n"+strings.ReplaceAll(ProfileTables(), "$", "$$")+profilesMarkerEnd)), nil
}
