package prom

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// ThanosOptions are the query parameters a Thanos querier takes beyond Prometheus' API. When any
// is set, the client asks the server's build info once and, if it is a Thanos querier, sends
// them on every query, series and label call; never to another store. Unset (nil), nothing is
// sent or asked and the querier's own defaults hold: deduplication on, and partial responses as
// its --query.partial-response says (on by default: an answer missing a store comes with a
// warning, shown as a notice).
type ThanosOptions struct {
	// Dedup merges the replicas of an HA pair. Off, every replica's series come back and sums
	// count them twice.
	Dedup *bool
	// PartialResponse false makes a query fail, naming the store, when a store Thanos fans out
	// to fails, instead of answering from the others: a baseline or verdict computed on part of
	// the fleet is then never shown.
	PartialResponse *bool
}

// Thanos sets the parameters sent to a Thanos querier.
func Thanos(o ThanosOptions) Option { return func(opts *options) { opts.thanos = o } }

// values renders the options set as query parameters.
func (o ThanosOptions) values() url.Values {
	v := url.Values{}
	if o.Dedup != nil {
		v.Set("dedup", strconv.FormatBool(*o.Dedup))
	}
	if o.PartialResponse != nil {
		v.Set("partial_response", strconv.FormatBool(*o.PartialResponse))
	}
	return v
}

// storeParams adds a store's own query parameters to the calls that take them, once the store
// is known. It is shared by the copies of checkedClient.
type storeParams struct {
	thanos   ThanosOptions
	identify func(context.Context) (Store, error)

	mu     sync.Mutex
	known  bool
	values url.Values
}

// paramPaths are the API calls Thanos' parameters apply to.
var paramPaths = regexp.MustCompile(`/api/v1/(query|query_range|series|labels|label/[^/]+/values)$`)

// add puts the store's parameters on req when it is one of those calls. The store is asked once
// (a failed identification is retried on the next call, and adds nothing meanwhile).
func (p *storeParams) add(ctx context.Context, req *http.Request) {
	if p == nil || !paramPaths.MatchString(req.URL.Path) {
		return
	}
	p.mu.Lock()
	if !p.known {
		if s, err := p.identify(ctx); err == nil {
			p.known = true
			if s == StoreThanos {
				p.values = p.thanos.values()
			}
		}
	}
	v := p.values
	p.mu.Unlock()
	if len(v) == 0 {
		return
	}
	q := req.URL.Query()
	for k, vs := range v {
		q[k] = vs
	}
	req.URL.RawQuery = q.Encode()
}

var (
	vmSelectNoPrefix = regexp.MustCompile(`^/select/[^/]+/?$`)
	vmSelectNoTenant = regexp.MustCompile(`^/select/prometheus/?$`)
	apiSuffix        = regexp.MustCompile(`/api/v1(/[a-z_]*)?/?$`)
)

// CheckStoreURL refuses the URL forms that name a cluster's path incompletely, saying which form
// the store needs. The prefix is the user's to give (a cluster's tenant and routing are theirs);
// the client never adds one.
func CheckStoreURL(address string) error {
	u, err := url.Parse(address)
	if err != nil {
		return err
	}
	p := u.Path
	switch {
	case apiSuffix.MatchString(p):
		return fmt.Errorf("the Prometheus URL %s ends in the API path %q: give the server's base URL (e.g. http://prometheus:9090, http://mimir:8080/prometheus), the client adds /api/v1/…",
			RedactURL(address), p[apiSuffix.FindStringIndex(p)[0]:])
	case vmSelectNoTenant.MatchString(p):
		return fmt.Errorf("the Prometheus URL %s has no tenant: a VictoriaMetrics cluster's vmselect answers under /select/<accountID>/prometheus (e.g. /select/0/prometheus)", RedactURL(address))
	case vmSelectNoPrefix.MatchString(p):
		return fmt.Errorf("the Prometheus URL %s stops before /prometheus: a VictoriaMetrics cluster's vmselect answers under %s/prometheus", RedactURL(address), strings.TrimSuffix(p, "/"))
	}
	return nil
}

// notFoundHint explains a 404 on the query API by the URL forms of the stores that need a
// prefix.
func notFoundHint(path string) string {
	if strings.Contains(path, "/prometheus") {
		return ""
	}
	return " (a Mimir or Cortex URL needs its /prometheus prefix, e.g. http://mimir:8080/prometheus; a VictoriaMetrics cluster's vmselect /select/<accountID>/prometheus; see docs/stores.md)"
}

// StoreLimit is the store's own per-query limit behind a refusal, told from the store's message:
// Prometheus and Thanos ("query processing would load too many samples into memory"),
// VictoriaMetrics (-search.maxSamplesPerQuery, -search.maxUniqueTimeseries,
// -search.maxPointsPerTimeseries), Mimir (max-fetched-series / -chunks-bytes / samples).
type StoreLimit int

// The store limits told apart; 0 is none.
const (
	// StoreLimitSamples is the limit on samples loaded at once (Prometheus and Thanos
	// --query.max-samples, Mimir -querier.max-samples).
	StoreLimitSamples StoreLimit = iota + 1
	// StoreLimitVictoriaSamples is VictoriaMetrics' -search.maxSamplesPerQuery.
	StoreLimitVictoriaSamples
	// StoreLimitVictoria is another VictoriaMetrics -search.max* limit (series, points).
	StoreLimitVictoria
	// StoreLimitMimir is a Mimir/Cortex per-query limit on series or chunks.
	StoreLimitMimir
)

// InTime says whether the same query over a shorter range loads less against the limit: the
// sample limits count samples over the whole range, so reading the range in parts stays
// under them; the series limits do not shrink with the range.
func (l StoreLimit) InTime() bool { return l == StoreLimitSamples || l == StoreLimitVictoriaSamples }

// String names the limit for messages.
func (l StoreLimit) String() string {
	switch l {
	case StoreLimitSamples:
		return "the store's limit on samples loaded at once (Prometheus and Thanos --query.max-samples, 50,000,000 by default; Mimir -querier.max-samples)"
	case StoreLimitVictoriaSamples:
		return "the store's limit on samples per query (VictoriaMetrics -search.maxSamplesPerQuery)"
	case StoreLimitVictoria:
		return "a VictoriaMetrics -search.max* limit, named above"
	case StoreLimitMimir:
		return "a Mimir/Cortex per-query limit, named above"
	}
	return ""
}

// storeLimitOf tells which store limit a refusal's message names (0: none).
func storeLimitOf(msg string) StoreLimit {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "too many samples"):
		return StoreLimitSamples
	case strings.Contains(m, "maxsamplesperquery"):
		return StoreLimitVictoriaSamples
	case strings.Contains(m, "maxuniquetimeseries"), strings.Contains(m, "maxpointspertimeseries"):
		return StoreLimitVictoria
	case strings.Contains(m, "max-fetched-series"), strings.Contains(m, "max-series-per-query"), strings.Contains(m, "max-fetched-chunk"),
		strings.Contains(m, "maximum number of series"), strings.Contains(m, "max_fetched"):
		return StoreLimitMimir
	}
	return 0
}

// storeLimitHint names the store's own limit behind a refusal, and how to stay under it.
func storeLimitHint(l StoreLimit) string {
	if l == 0 {
		return ""
	}
	return " — " + l.String() + ": narrow the query (a model, version or instance filter, a shorter range or a coarser step) or raise that limit (docs/stores.md)"
}

// StoreLimitOf returns the store's own limit that refused a query, or 0 when err is not such a
// refusal.
func StoreLimitOf(err error) StoreLimit {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Limit
	}
	return 0
}

// timeoutHint names the store's query timeout and how to stay under it.
const timeoutHint = " — the store's query timeout (Prometheus and Thanos --query.timeout, 2m by default; Mimir -querier.timeout; VictoriaMetrics -search.maxQueryDuration, 30s): " +
	"narrow the query (a model, version or instance filter, a shorter range or a coarser step), load the rule file's recordings on a large fleet, or raise that timeout (docs/stores.md)"
