// Package prom is the project's only door to Prometheus: HTTP API access through client_golang,
// and the one place where values are turned into PromQL (Quote, MatchAny, Selector).
//
// Results come back as plain Go types (Series, Sample) so the engine never sees Prometheus'
// model types, and every failure is an *Error whose message names what failed.
package prom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Labels is a series' label set.
type Labels map[string]string

// String renders labels as `{a="x", b="y"}` in name order, with values quoted by Quote.
func (l Labels) String() string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + Quote(l[n])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// Point is one sample of a series.
type Point struct {
	T time.Time
	V float64
}

// Series is one series of a range query.
type Series struct {
	Labels Labels
	Points []Point
}

// Sample is one element of an instant query's result.
type Sample struct {
	Labels Labels
	Point
}

// BuildInfo is what /api/v1/status/buildinfo reports, and the store it identifies.
type BuildInfo struct {
	Version  string // "" when the server reports none (VictoriaMetrics, an unstamped build)
	Revision string
	Store    Store
}

// Client talks to one Prometheus (or a server with the same HTTP API: Thanos, Mimir,
// VictoriaMetrics). It is safe for concurrent use.
type Client struct {
	api  v1.API
	raw  checkedClient
	http *http.Client
	url  string // redacted, for messages
	path string // the URL's path, which names some stores' clusters
}

// New returns a client for the Prometheus at address that sends its requests through hc, whose
// transport carries authentication, TLS and timeouts. hc nil means http.DefaultClient. Every
// answer's body is bounded (DefaultMaxAnswerBytes unless an Option says otherwise).
func New(address string, hc *http.Client, opts ...Option) (*Client, error) {
	u, err := url.Parse(address)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("Prometheus URL %q is malformed: it needs http:// or https:// and a host", RedactURL(address))
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	if err := CheckStoreURL(address); err != nil {
		return nil, err
	}
	o := options{maxAnswer: DefaultMaxAnswerBytes}
	for _, opt := range opts {
		opt(&o)
	}
	// A copy, so the caller's client (shared with other uses) keeps its own transport.
	bounded := *hc
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	bounded.Transport = boundedTransport{next: next, limit: o.maxAnswer}
	hc = &bounded
	base, err := api.NewClient(api.Config{Address: address, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("Prometheus URL %s: %w", RedactURL(address), err)
	}
	where := RedactURL(address)
	var params *storeParams // nil: no store parameters configured, nothing to identify
	if len(o.thanos.values()) > 0 {
		params = &storeParams{thanos: o.thanos}
	}
	raw := checkedClient{inner: base, where: where, timeout: hc.Timeout, params: params}
	c := &Client{
		api:  v1.NewAPI(raw),
		raw:  raw,
		http: hc,
		url:  where,
		path: u.Path,
	}
	if params != nil {
		params.identify = func(ctx context.Context) (Store, error) {
			bi, err := c.BuildInfo(ctx)
			var e *Error
			if errors.As(err, &e) && e.Kind == KindHTTP && e.Status == http.StatusNotFound {
				return c.Store(), nil // no build info: not a Thanos querier
			}
			return bi.Store, err
		}
	}
	return c, nil
}

// URL is the server's address without credentials, as it appears in messages.
func (c *Client) URL() string { return c.url }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// RangeQuery is one query_range call.
type RangeQuery struct {
	Expr       string
	Start, End time.Time
	Step       time.Duration
	// MaxSeries refuses results with more series (0 = no limit), before they are converted.
	MaxSeries int
}

// Result is what a query returned, with the warnings and infos Prometheus attached.
type Result struct {
	Series   []Series
	Warnings []string
	Infos    []string // Prometheus 3's info annotations ("PromQL info: ...")
}

// QueryRange runs a range query.
func (c *Client) QueryRange(ctx context.Context, q RangeQuery) (Result, error) {
	if strings.TrimSpace(q.Expr) == "" {
		return Result{}, &Error{Kind: KindBadQuery, URL: c.url, Msg: "the query expression is empty"}
	}
	if q.Step <= 0 {
		return Result{}, &Error{Kind: KindBadQuery, URL: c.url, Msg: "the query step must be positive"}
	}
	v, warnings, infos, err := c.api.QueryRange(ctx, q.Expr, v1.Range{Start: q.Start, End: q.End, Step: q.Step})
	if err != nil {
		return Result{}, c.wrap(err)
	}
	var matrix model.Matrix
	switch val := v.(type) {
	case model.Matrix:
		matrix = val
	default:
		return Result{}, c.unexpected("query_range", v)
	}
	if err := c.checkLimit(len(matrix), q.MaxSeries); err != nil {
		return Result{}, err
	}
	out := Result{Series: make([]Series, len(matrix)), Warnings: warnings, Infos: infos}
	for i, ss := range matrix {
		points := make([]Point, len(ss.Values))
		for j, p := range ss.Values {
			points[j] = Point{T: p.Timestamp.Time(), V: float64(p.Value)}
		}
		out.Series[i] = Series{Labels: toLabels(ss.Metric), Points: points}
	}
	return out, nil
}

// InstantResult is what an instant query returned.
type InstantResult struct {
	Samples  []Sample
	Warnings []string
	Infos    []string
}

// Query runs an instant query at ts. A scalar result becomes one sample without labels.
func (c *Client) Query(ctx context.Context, expr string, ts time.Time, maxSeries int) (InstantResult, error) {
	if strings.TrimSpace(expr) == "" {
		return InstantResult{}, &Error{Kind: KindBadQuery, URL: c.url, Msg: "the query expression is empty"}
	}
	v, warnings, infos, err := c.api.Query(ctx, expr, ts)
	if err != nil {
		return InstantResult{}, c.wrap(err)
	}
	out := InstantResult{Warnings: warnings, Infos: infos}
	switch val := v.(type) {
	case model.Vector:
		if err := c.checkLimit(len(val), maxSeries); err != nil {
			return InstantResult{}, err
		}
		out.Samples = make([]Sample, len(val))
		for i, s := range val {
			out.Samples[i] = Sample{Labels: toLabels(s.Metric), Point: Point{T: s.Timestamp.Time(), V: float64(s.Value)}}
		}
	case *model.Scalar:
		out.Samples = []Sample{{Labels: Labels{}, Point: Point{T: val.Timestamp.Time(), V: float64(val.Value)}}}
	default:
		return InstantResult{}, c.unexpected("query", v)
	}
	return out, nil
}

// BuildInfo asks for the server's version and identifies the store (IdentifyStore). Servers
// that do not implement the endpoint answer an *Error of KindHTTP with Status 404; an answer
// without a version is not an error (VictoriaMetrics has none, nor an unstamped Prometheus).
func (c *Client) BuildInfo(ctx context.Context) (BuildInfo, error) {
	u := c.raw.URL("/api/v1/status/buildinfo", nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return BuildInfo{}, c.wrap(err)
	}
	resp, body, err := c.raw.Do(ctx, req)
	if err != nil {
		return BuildInfo{}, c.wrap(err)
	}
	var env struct {
		Status string         `json:"status"`
		Data   map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Status != "success" {
		return BuildInfo{}, &Error{Kind: KindNotPrometheus, URL: c.url,
			Msg: "the server at " + c.url + " answered /api/v1/status/buildinfo with something else than a Prometheus API answer: " + Snippet(body, 120)}
	}
	fields := make(map[string]string, len(env.Data))
	for k, v := range env.Data {
		if s, ok := v.(string); ok {
			fields[k] = s
		}
	}
	return BuildInfo{
		Version:  fields["version"],
		Revision: fields["revision"],
		Store:    IdentifyStore(StoreEvidence{Found: true, Fields: fields, Header: resp.Header, Path: c.path}),
	}, nil
}

// Store identifies the store behind a URL whose buildinfo endpoint is missing (HTTP 404), from
// the URL alone.
func (c *Client) Store() Store { return IdentifyStore(StoreEvidence{Path: c.path}) }

// LabelValues lists the values of label over [start, end], optionally restricted to series
// matching the given selectors.
func (c *Client) LabelValues(ctx context.Context, label string, selectors []string, start, end time.Time) ([]string, error) {
	if !ValidLabelName(label) {
		return nil, fmt.Errorf("invalid label name %s", Quote(label))
	}
	vals, _, _, err := c.api.LabelValues(ctx, label, selectors, start, end)
	if err != nil {
		return nil, c.wrap(err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out, nil
}

func (c *Client) checkLimit(n, limit int) error {
	if limit > 0 && n > limit {
		return &Error{Kind: KindLimit, URL: c.url, Msg: fmt.Sprintf(
			"the query returned %d series, more than the limit of %d: aggregate it (for example sum by (model_name) (...)) or narrow the selector", n, limit)}
	}
	return nil
}

func (c *Client) unexpected(endpoint string, v model.Value) error {
	typ := "nothing"
	if v != nil {
		typ = v.Type().String()
	}
	return &Error{Kind: KindNotPrometheus, URL: c.url, Msg: fmt.Sprintf("the server at %s answered %s with an unexpected result type (%s)", c.url, endpoint, typ)}
}

// wrap converts what client_golang returns into an *Error.
func (c *Client) wrap(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var ae *v1.Error
	if errors.As(err, &ae) {
		switch ae.Type {
		case v1.ErrBadResponse:
			return &Error{Kind: KindNotPrometheus, URL: c.url, Err: err,
				Msg: "the server at " + c.url + " did not answer like a Prometheus HTTP API: " + ae.Msg}
		case v1.ErrCanceled:
			return &Error{Kind: KindCanceled, URL: c.url, Err: err, Msg: "the query was cancelled: " + ae.Msg}
		case v1.ErrTimeout:
			return &Error{Kind: KindTimeout, URL: c.url, Err: err, Msg: "the query timed out in Prometheus: " + ae.Msg + timeoutHint}
		case v1.ErrBadData:
			l := storeLimitOf(ae.Msg)
			return &Error{Kind: KindBadQuery, Limit: l, URL: c.url, Err: err, Msg: "Prometheus rejected the query: " + ae.Msg + storeLimitHint(l)}
		default:
			l := storeLimitOf(ae.Msg)
			return &Error{Kind: KindExecution, Limit: l, URL: c.url, Err: err, Msg: "Prometheus could not run the query: " + ae.Msg + storeLimitHint(l)}
		}
	}
	return classifyTransport(err, c.url, c.http.Timeout)
}

func toLabels(m model.Metric) Labels {
	l := make(Labels, len(m))
	for k, v := range m {
		l[string(k)] = string(v)
	}
	return l
}

// checkedClient sits between client_golang's v1 API and the HTTP client. It turns transport
// failures, non-success statuses and non-API answers into *Error values that name the cause,
// which v1 would otherwise flatten into "client error: 401".
type checkedClient struct {
	inner   api.Client
	where   string
	timeout time.Duration
	params  *storeParams
}

func (c checkedClient) URL(ep string, args map[string]string) *url.URL { return c.inner.URL(ep, args) }

func (c checkedClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	c.params.add(ctx, req)
	resp, body, err := c.inner.Do(ctx, req)
	if err != nil {
		if big := limitError(err, c.where); big != nil {
			return resp, body, big
		}
		if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %v", ctxErr, err)
		}
		return resp, body, classifyTransport(err, c.where, c.timeout)
	}
	if resp.StatusCode/100 != 2 {
		if apiErr := decodeAPIError(body); apiErr != nil {
			return resp, body, apiErr
		}
		e := statusError(resp.StatusCode, body, c.where)
		if resp.StatusCode == http.StatusNotFound && e.Kind == KindHTTP && paramPaths.MatchString(req.URL.Path) {
			e.Msg += notFoundHint(req.URL.Path)
		}
		return resp, body, e
	}
	if resp.StatusCode != http.StatusNoContent && !startsWithObject(body) {
		return resp, body, &Error{Kind: KindNotPrometheus, URL: c.where, Status: resp.StatusCode, Msg: fmt.Sprintf(
			"the server at %s is not a Prometheus HTTP API (HTTP %d, Content-Type %q): %s",
			c.where, resp.StatusCode, resp.Header.Get("Content-Type"), Snippet(body, 120))}
	}
	return resp, body, nil
}

// decodeAPIError reads Prometheus' error envelope, which comes with 400, 422, 500 and 503.
func decodeAPIError(body []byte) error {
	var env struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if !startsWithObject(body) || json.Unmarshal(body, &env) != nil || env.Status != "error" || env.ErrorType == "" {
		return nil
	}
	return &v1.Error{Type: v1.ErrorType(env.ErrorType), Msg: env.Error}
}

func startsWithObject(body []byte) bool {
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// StepFor returns the step for a range query over [start, end]: at least minStep and 1 s, and
// coarse enough that the query stays within maxPoints points (Prometheus refuses more than
// 11,000), rounded up to whole milliseconds.
func StepFor(start, end time.Time, minStep time.Duration, maxPoints int) time.Duration {
	step := max(minStep, time.Second)
	if maxPoints > 0 {
		span := end.Sub(start)
		if need := time.Duration(math.Ceil(float64(span) / float64(maxPoints))); need > step {
			step = need
		}
	}
	if rem := step % time.Millisecond; rem != 0 {
		step += time.Millisecond - rem
	}
	return step
}
