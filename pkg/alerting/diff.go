package alerting

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Comparing the rendered group with the one Grafana holds: the app writes only when they
// differ (a second click changes nothing and says so), and never replaces a group it did not
// create.

// Diff statuses.
const (
	DiffMissing   = "missing"   // no such group: writing creates it
	DiffUnchanged = "unchanged" // the group holds exactly the rendering: nothing to write
	DiffChanged   = "changed"   // ours, and different: writing replaces it
	DiffForeign   = "foreign"   // a group of that name that Inferscope did not make: never touched
)

// GroupDiff says what writing the rendered group would do.
type GroupDiff struct {
	Status string       `json:"status"`
	Reason string       `json:"reason,omitempty"` // for foreign groups: why
	Rules  []RuleChange `json:"rules,omitempty"`
	// Interval is set when the evaluation interval changes ("1m → 30s").
	Interval string `json:"interval,omitempty"`
}

// RuleChange is one rule added, removed or changed.
type RuleChange struct {
	UID    string   `json:"uid"`
	Title  string   `json:"title"`
	Change string   `json:"change"` // added, removed, changed
	Fields []string `json:"fields,omitempty"`
}

// Diff compares the rendered group with what GET …/rule-groups/{group} returned (nil or "null"
// when it answered 404). Grafana adds fields of its own (ids, provenance, update times, query
// defaults); only what the rendering sets is compared.
func Diff(want GrafanaGroup, existing []byte) (GroupDiff, error) {
	existing = bytes.TrimSpace(existing)
	if len(existing) == 0 || string(existing) == "null" {
		d := GroupDiff{Status: DiffMissing}
		for _, r := range want.Rules {
			d.Rules = append(d.Rules, RuleChange{UID: r.UID, Title: r.Title, Change: "added"})
		}
		return d, nil
	}
	var have struct {
		Title    string            `json:"title"`
		Interval int64             `json:"interval"`
		Rules    []json.RawMessage `json:"rules"`
	}
	if err := json.Unmarshal(existing, &have); err != nil {
		return GroupDiff{}, fmt.Errorf("the existing rule group is not the provisioning API's JSON: %w", err)
	}
	byUID := map[string]map[string]any{}
	var order []string
	for i, raw := range have.Rules {
		var r map[string]any
		if err := json.Unmarshal(raw, &r); err != nil {
			return GroupDiff{}, fmt.Errorf("rule %d of the existing group: %w", i, err)
		}
		labels, _ := r["labels"].(map[string]any)
		if labels[ManagedLabel] != "true" {
			title, _ := r["title"].(string)
			return GroupDiff{Status: DiffForeign, Reason: fmt.Sprintf(
				"the group %q already exists and its rule %q lacks the label %s=\"true\": Inferscope did not create it and will not replace it; choose another group name",
				want.Title, title, ManagedLabel)}, nil
		}
		uid, _ := r["uid"].(string)
		byUID[uid] = r
		order = append(order, uid)
	}
	d := GroupDiff{Status: DiffUnchanged}
	if have.Interval != want.Interval {
		d.Interval = fmt.Sprintf("%s → %s", promDuration(time.Duration(have.Interval)*time.Second), promDuration(time.Duration(want.Interval)*time.Second))
	}
	seen := map[string]bool{}
	for _, w := range want.Rules {
		seen[w.UID] = true
		h, ok := byUID[w.UID]
		if !ok {
			d.Rules = append(d.Rules, RuleChange{UID: w.UID, Title: w.Title, Change: "added"})
			continue
		}
		var wm map[string]any
		raw, _ := json.Marshal(w)
		_ = json.Unmarshal(raw, &wm)
		if fields := changedFields(wm, h); len(fields) > 0 {
			d.Rules = append(d.Rules, RuleChange{UID: w.UID, Title: w.Title, Change: "changed", Fields: fields})
		}
	}
	for _, uid := range order {
		if !seen[uid] {
			title, _ := byUID[uid]["title"].(string)
			d.Rules = append(d.Rules, RuleChange{UID: uid, Title: title, Change: "removed"})
		}
	}
	if len(d.Rules) > 0 || d.Interval != "" {
		d.Status = DiffChanged
	}
	return d, nil
}

// changedFields lists the top-level fields of the rendered rule whose value the existing rule
// does not hold. Durations compare by value ("3m" equals "3m0s"); objects compare on the keys
// the rendering sets; empty values equal missing ones.
func changedFields(want, have map[string]any) []string {
	var out []string
	for k, w := range want {
		switch k {
		case "orgID", "folderUID", "ruleGroup":
			continue // fixed by the request path
		}
		if !covers(k, w, have[k]) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// covers reports whether have holds everything want sets.
func covers(key string, want, have any) bool {
	if isEmpty(want) {
		return isEmpty(have)
	}
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		if key == "labels" || key == "annotations" || key == "notification_settings" {
			// Compared whole: an extra label, annotation or mute timing changes the alerts.
			if len(nonEmptyKeys(w)) != len(nonEmptyKeys(h)) {
				return false
			}
		}
		for k, v := range w {
			if !covers(k, v, h[k]) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !covers(key, w[i], h[i]) {
				return false
			}
		}
		return true
	case string:
		h, ok := have.(string)
		if !ok {
			return false
		}
		if isDurationKey(key) {
			a, errA := model.ParseDuration(w)
			b, errB := model.ParseDuration(h)
			if errA == nil && errB == nil {
				return a == b
			}
			da, errA := time.ParseDuration(w)
			db, errB := time.ParseDuration(h)
			if errA == nil && errB == nil {
				return da == db
			}
		}
		return w == h
	}
	return reflect.DeepEqual(want, have)
}

func isDurationKey(k string) bool {
	return slices.Contains([]string{"for", "group_wait", "group_interval", "repeat_interval", "window", "idleFor", "rateInterval"}, k) ||
		strings.HasSuffix(k, "_interval")
}

func nonEmptyKeys(m map[string]any) []string {
	var out []string
	for k, v := range m {
		if !isEmpty(v) {
			out = append(out, k)
		}
	}
	return out
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case float64:
		return x == 0
	}
	return false
}
