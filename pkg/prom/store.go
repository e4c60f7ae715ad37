package prom

import (
	"net/http"
	"regexp"
	"strings"
)

// Store is the kind of server behind the Prometheus HTTP API. The stores differ in what matters
// to the engine (MetricsQL's rates, the lookback of a bare selector, the URL prefix of a
// cluster), so the health check names the one it found.
type Store string

const (
	StorePrometheus Store = "Prometheus"
	StoreVictoria   Store = "VictoriaMetrics"
	StoreThanos     Store = "Thanos"
	StoreMimir      Store = "Mimir/Cortex"
	// StoreUnknown answers the query API but nothing tells which server it is.
	StoreUnknown Store = "Prometheus-compatible"
)

// StoreEvidence is what an answer of /api/v1/status/buildinfo says about the server.
type StoreEvidence struct {
	// Found is false when the server has no buildinfo endpoint (HTTP 404).
	Found bool
	// Fields are the answer's data object, e.g. version, revision, branch, goVersion, and
	// application (Mimir's).
	Fields map[string]string
	Header http.Header
	// Path is the path of the data source's URL, e.g. /prometheus (Mimir) or
	// /select/0/prometheus (VictoriaMetrics cluster).
	Path string
}

var (
	vmClusterPath = regexp.MustCompile(`/select/[^/]+/prometheus/?$`)
	mimirPath     = regexp.MustCompile(`/prometheus/?$`)
)

// IdentifyStore names the store from its buildinfo answer, headers and URL path.
//
//   - VictoriaMetrics answers buildinfo with an empty data object (single node and cluster) and
//     sends X-Server-Hostname; a cluster's select path is /select/<tenant>/prometheus.
//   - Mimir names itself in "application"; Cortex (and Mimir) serve under /prometheus.
//   - Thanos reports its own version, 0.x, where Prometheus reports 2.x or 3.x.
//   - Prometheus reports version, revision and branch; a build without its version stamped in
//     reports an empty version and is still Prometheus.
func IdentifyStore(e StoreEvidence) Store {
	app := strings.ToLower(e.Fields["application"])
	switch {
	case strings.Contains(app, "mimir") || strings.Contains(app, "cortex"):
		return StoreMimir
	case strings.Contains(app, "thanos"):
		return StoreThanos
	case vmClusterPath.MatchString(e.Path):
		return StoreVictoria
	case e.Found && len(e.Fields) == 0, e.Header.Get("X-Server-Hostname") != "" && e.Fields["revision"] == "":
		return StoreVictoria
	case mimirPath.MatchString(e.Path):
		return StoreMimir
	case !e.Found:
		return StoreUnknown
	case strings.HasPrefix(e.Fields["version"], "0."):
		return StoreThanos
	}
	return StorePrometheus
}
