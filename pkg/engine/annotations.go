package engine

import (
	"fmt"
	"regexp"
	"strings"
)

// Prometheus 3 annotates queries with "PromQL info:" messages (in the answer's infos, or among
// its warnings behind Thanos), one per expression position: a query type that sends dozens of
// expressions would carry hundreds of near-identical notices. They become one Info notice per
// query, with each distinct message once and its position dropped.

const promInfoPrefix = "PromQL info:"

// maxPromInfos bounds the messages the one notice lists.
const maxPromInfos = 5

var annotationPosition = regexp.MustCompile(`\s*\(\d+:\d+\)$`)

type promInfos struct {
	index int             // of the notice in the result
	seen  map[string]bool // messages, positions dropped
	order []string
}

// promAnnotations records what Prometheus attached to one answer: warnings as Warning notices
// (repeats dropped by Notice), infos folded into the query's one info notice.
func (x *Exec) promAnnotations(prefix string, warnings, infos []string) {
	for _, w := range warnings {
		if strings.HasPrefix(w, promInfoPrefix) {
			infos = append(infos, w)
			continue
		}
		x.Notice(Warning, prefix+w)
	}
	if len(infos) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	pi := x.promInfo
	if pi == nil {
		pi = &promInfos{index: len(x.res.Notices), seen: map[string]bool{}}
		x.promInfo = pi
		x.res.Notices = append(x.res.Notices, Notice{Severity: Info})
	}
	for _, in := range infos {
		msg := strings.TrimSpace(strings.TrimPrefix(annotationPosition.ReplaceAllString(in, ""), promInfoPrefix))
		if !pi.seen[msg] {
			pi.seen[msg] = true
			pi.order = append(pi.order, msg)
		}
	}
	shown := pi.order[:min(len(pi.order), maxPromInfos)]
	text := prefix + promInfoPrefix + " " + strings.Join(shown, "; ")
	if more := len(pi.order) - len(shown); more > 0 {
		text += fmt.Sprintf("; and %d more", more)
	}
	x.res.Notices[pi.index].Text = text
}
