package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Scales the cost measurements use (docs/benchmarks.md): 1× is Default's three instances and 24
// GPUs; 100× is 300 instances, 2,400 GPUs and 24 models.
var Scales = []int{1, 10, 100}

// MaxScale is the largest factor Scaled takes.
const MaxScale = 100

// scaledModelCopies is how many copies of the two models a scaled fleet serves at most: at 10×
// each group serves its own pair (20 models), at 100× 12 pairs (24 models) are each served by
// 8 or 9 groups — dozens of models on hundreds of instances, as large fleets run them.
const scaledModelCopies = 12

// Scaled returns a fleet factor times the size of Default(end): factor groups, each a copy of
// the default scenario on its own three nodes (8 GPUs each) serving its own copy of the two
// models, with the same truth model and the same incidents at the same times on its nodes.
// Group 0 is Default(end) itself, byte for byte; group g ≥ 1 names its nodes "node-a-07" (g=7)
// and its models "recsys-ranker-03" (copy g mod 12; copy 0 keeps the names), so a model copy
// is served by every group that shares it. Each group answers its own truth accessors.
func Scaled(end time.Time, factor int) ([]*Scenario, error) {
	if factor < 1 || factor > MaxScale {
		return nil, fmt.Errorf("a fleet scale of %d: want 1-%d", factor, MaxScale)
	}
	copies := min(factor, scaledModelCopies)
	groups := make([]*Scenario, factor)
	for g := range groups {
		s := Default(end)
		if g > 0 {
			s.rename(fmt.Sprintf("-%02d", g), modelSuffix(g%copies))
		}
		groups[g] = s
	}
	return groups, nil
}

// baseModel is the default model a model copy copies ("recsys-ranker-03" → "recsys-ranker"):
// the few per-model constants keyed by name are looked up by it.
func baseModel(name string) string {
	if n := len(name); n > 3 && name[n-3] == '-' && isDigit(name[n-2]) && isDigit(name[n-1]) {
		return name[:n-3]
	}
	return name
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func modelSuffix(c int) string {
	if c == 0 {
		return ""
	}
	return fmt.Sprintf("-%02d", c)
}

// groupName is an instance name of the default fleet ("node-b:8000") as this scenario's group
// names it ("node-b-07:8000").
func (s *Scenario) groupName(instance string) string {
	if s.group == "" {
		return instance
	}
	node := Node(instance)
	return node + s.group + instance[len(node):]
}

// rename moves the scenario to its group's nodes and model copies, then rebuilds its streams.
func (s *Scenario) rename(group, model string) {
	s.group = group
	for i := range s.instances {
		s.instances[i].name = s.groupName(s.instances[i].name)
	}
	models := map[string]string{}
	for _, m := range s.models {
		models[m.name] = m.name + model
		m.name += model
		m.canaryInstance = s.groupName(m.canaryInstance)
	}
	for i := range s.incidents {
		in := &s.incidents[i]
		in.Instance = s.groupName(in.Instance)
		if in.Model != "" {
			in.Model = models[in.Model]
		}
	}
	s.regimes = map[regimeKey]*regime{}
	s.buildStreams()
}

// GroupRelabel maps the label values of Default's history to those of a scaled group's: its
// instances (every port of a node), nodes, models and GPU UUIDs. Values it does not know stay.
type GroupRelabel map[string]string

// Relabel returns how Default(end)'s label values read in group g of a scaled fleet.
func Relabel(def, group *Scenario) GroupRelabel {
	m := GroupRelabel{}
	di, gi := def.Instances(), group.Instances()
	for i := range di {
		m[di[i]] = gi[i]
		m[Node(di[i])] = Node(gi[i])
		for gpu := range def.GPUsPerInstance() {
			m[GPUUUID(di[i], gpu)] = GPUUUID(gi[i], gpu)
		}
	}
	dm, gm := def.Models(), group.Models()
	for i := range dm {
		m[dm[i]] = gm[i]
	}
	return m
}

// Value is v as the group names it: a known value, or "<node>:<port>" of a known node.
func (r GroupRelabel) Value(v string) string {
	if n, ok := r[v]; ok {
		return n
	}
	if i := strings.LastIndexByte(v, ':'); i > 0 {
		if n, ok := r[v[:i]]; ok {
			return n + v[i:]
		}
	}
	return v
}

// CachedDir returns the directory key under the test bed's cache (see doc.go, "TSDB for
// tests"), calling build on a fresh directory when it holds no complete TSDB block: once per
// key across processes (a lock file makes the others wait), renamed into place when complete.
func CachedDir(ctx context.Context, key string, build func(ctx context.Context, dir string) error) (string, error) {
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	final := filepath.Join(root, key)
	if validTSDB(final) {
		return final, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(root, key+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if validTSDB(final) { // another process built it while we waited
		return final, nil
	}
	tmp, err := os.MkdirTemp(root, key+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	built := filepath.Join(tmp, "tsdb")
	if err := build(ctx, built); err != nil {
		return "", err
	}
	_ = os.RemoveAll(final) // an invalid leftover
	return final, os.Rename(built, final)
}

// LinkTree recreates src under dst with hard links (copies across file systems), as the
// private copies of cached TSDBs are made.
func LinkTree(src, dst string) error { return linkTree(src, dst) }
