// Package prom is the project's only door to Prometheus: HTTP API access through client_golang,
// and the one place where values are turned into PromQL (Quote, MatchAny, Selector).
//
// Results come back as plain Go types (Series, Sample) so the engine never sees Prometheus'
// model types, and every failure is an *Error whose message names what failed. Query answers
// are decoded in one pass from the body straight into those types (decode.go), not through
// client_golang's model.
package prom

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
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
	Values []float64 // instead of Points, for a query OnGrid
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
	raw := checkedClient{inner: base, hc: hc, where: where, timeout: hc.Timeout, params: params}
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
	// OnGrid places each series' points on the query's grid as they are decoded, instead of
	// listing them: Series.Values[i] is the value at Start + i·Step (Start, End and Step taken
	// to the millisecond), NaN where the answer has no point; a point off the grid is left out
	// and Points stays nil. One float per grid point, no timestamps: what a reader that lines
	// series up on the grid would make of Points anyway, without the copy.
	OnGrid bool
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
	// A series has at most one point per step from start to end; one more for stores that align
	// start and end to the step (Mimir's query-frontend, VictoriaMetrics).
	points := int(min(q.End.Sub(q.Start)/q.Step, 1<<30)) + 2
	var on *grid
	if q.OnGrid {
		g, err := gridOf(q)
		if err != nil {
			return Result{}, &Error{Kind: KindBadQuery, URL: c.url, Msg: err.Error()}
		}
		on = &g
	}
	a, err := c.query(ctx, "query_range", q.MaxSeries, max(points, 2), on, map[string]string{
		"query": q.Expr,
		"start": formatTime(q.Start),
		"end":   formatTime(q.End),
		"step":  strconv.FormatFloat(q.Step.Seconds(), 'f', -1, 64),
	})
	if err != nil {
		return Result{}, err
	}
	if a.resultType != "matrix" {
		return Result{}, c.unexpected("query_range", a.resultType)
	}
	return Result{Series: a.series, Warnings: a.warnings, Infos: a.infos}, nil
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
	args := map[string]string{"query": expr}
	if !ts.IsZero() {
		args["time"] = formatTime(ts)
	}
	a, err := c.query(ctx, "query", maxSeries, 0, nil, args)
	if err != nil {
		return InstantResult{}, err
	}
	if a.resultType != "vector" && a.resultType != "scalar" {
		return InstantResult{}, c.unexpected("query", a.resultType)
	}
	return InstantResult{Samples: a.samples, Warnings: a.warnings, Infos: a.infos}, nil
}

// query sends a query or query_range call and decodes its answer as it arrives (decodeAnswer):
// one pass over the body, never held whole.
func (c *Client) query(ctx context.Context, endpoint string, maxSeries, maxPoints int, g *grid, args map[string]string) (answer, error) {
	body, err := c.raw.open(ctx, "/api/v1/"+endpoint, args)
	if err != nil {
		return answer{}, c.wrap(err)
	}
	defer body.Close()
	a, err := decodeAnswerOn(body, endpoint, c.url, maxSeries, maxPoints, g)
	if body.err != nil {
		// The body failed while it was read: its bound, the context, the connection.
		return answer{}, c.raw.transportError(ctx, body.err)
	}
	return a, err
}

// formatTime writes a time as Prometheus' API takes it, seconds with a fraction, as
// client_golang does.
func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64)
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

// seriesLimitError refuses an answer of n series, more than limit.
func seriesLimitError(where string, n, limit int) *Error {
	return &Error{Kind: KindLimit, URL: where, Msg: fmt.Sprintf(
		"the query returned %d series, more than the limit of %d: aggregate it (for example sum by (model_name) (...)) or narrow the selector", n, limit)}
}

func (c *Client) unexpected(endpoint, typ string) error {
	if typ == "" {
		typ = "nothing"
	}
	return &Error{Kind: KindNotPrometheus, URL: c.url, Msg: fmt.Sprintf("the server at %s answered %s with an unexpected result type (%s)", c.url, endpoint, Snippet([]byte(typ), 40))}
}

// wrap converts what client_golang returns into an *Error.
func (c *Client) wrap(err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	var ae *v1.Error
	if errors.As(err, &ae) {
		e := apiFailure(ae, c.url)
		e.Err = err
		return e
	}
	return classifyTransport(err, c.url, c.http.Timeout)
}

// apiFailure is Prometheus' error envelope (its errorType and error) as an *Error.
func apiFailure(ae *v1.Error, where string) *Error {
	switch ae.Type {
	case v1.ErrBadResponse:
		return &Error{Kind: KindNotPrometheus, URL: where, Err: ae,
			Msg: "the server at " + where + " did not answer like a Prometheus HTTP API: " + ae.Msg}
	case v1.ErrCanceled:
		return &Error{Kind: KindCanceled, URL: where, Err: ae, Msg: "the query was cancelled: " + ae.Msg}
	case v1.ErrTimeout:
		return &Error{Kind: KindTimeout, URL: where, Err: ae, Msg: "the query timed out in Prometheus: " + ae.Msg + timeoutHint}
	case v1.ErrBadData:
		l := storeLimitOf(ae.Msg)
		return &Error{Kind: KindBadQuery, Limit: l, URL: where, Err: ae, Msg: "Prometheus rejected the query: " + ae.Msg + storeLimitHint(l)}
	default:
		l := storeLimitOf(ae.Msg)
		return &Error{Kind: KindExecution, Limit: l, URL: where, Err: ae, Msg: "Prometheus could not run the query: " + ae.Msg + storeLimitHint(l)}
	}
}

// checkedClient sits between client_golang's v1 API and the HTTP client. It turns transport
// failures, non-success statuses and non-API answers into *Error values that name the cause,
// which v1 would otherwise flatten into "client error: 401". Queries go around v1 (open) with
// the same checks, so that their answers are decoded as they arrive.
type checkedClient struct {
	inner   api.Client
	hc      *http.Client // inner's, for the calls whose body is streamed
	where   string
	timeout time.Duration
	params  *storeParams
}

func (c checkedClient) URL(ep string, args map[string]string) *url.URL { return c.inner.URL(ep, args) }

func (c checkedClient) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	c.params.add(ctx, req)
	resp, body, err := c.inner.Do(ctx, req)
	if err != nil {
		return resp, body, c.transportError(ctx, err)
	}
	if err := c.check(req, resp, body); err != nil {
		return resp, body, err
	}
	if resp.StatusCode != http.StatusNoContent && !startsWithObject(body) {
		return resp, body, c.notAPI(resp, body)
	}
	return resp, body, nil
}

// transportError names a failed request or body read: the answer's bound, the context, the
// network.
func (c checkedClient) transportError(ctx context.Context, err error) error {
	if big := limitError(err, c.where); big != nil {
		return big
	}
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w: %v", ctxErr, err)
	}
	return classifyTransport(err, c.where, c.timeout)
}

// check refuses a non-success status: Prometheus' error envelope, or the status named.
func (c checkedClient) check(req *http.Request, resp *http.Response, body []byte) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	if apiErr := decodeAPIError(body); apiErr != nil {
		return apiErr
	}
	e := statusError(resp.StatusCode, body, c.where)
	if resp.StatusCode == http.StatusNotFound && e.Kind == KindHTTP && paramPaths.MatchString(req.URL.Path) {
		e.Msg += notFoundHint(req.URL.Path)
	}
	return e
}

func (c checkedClient) notAPI(resp *http.Response, body []byte) *Error {
	return &Error{Kind: KindNotPrometheus, URL: c.where, Status: resp.StatusCode, Msg: fmt.Sprintf(
		"the server at %s is not a Prometheus HTTP API (HTTP %d, Content-Type %q): %s",
		c.where, resp.StatusCode, resp.Header.Get("Content-Type"), Snippet(body, 120))}
}

// open sends a query API call as client_golang's v1 does (a form POST of the URL's own
// parameters and args, sent again as a GET when the server refuses the method with 403, 405 or
// 501) and returns the answer's body, unread past its first bytes, after Do's checks.
func (c checkedClient) open(ctx context.Context, ep string, args map[string]string) (*answerBody, error) {
	u := c.URL(ep, nil)
	form := u.Query()
	for k, v := range args {
		form.Set(k, v)
	}
	encoded := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(encoded))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header["Idempotency-Key"] = nil // retried on a network error like a GET, as v1 does
	resp, err := c.send(ctx, req)
	if s := statusOf(resp); s == http.StatusForbidden || s == http.StatusMethodNotAllowed || s == http.StatusNotImplemented {
		u.RawQuery = encoded
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil); err != nil {
			return nil, err
		}
		resp, err = c.send(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	return c.firstBytes(ctx, resp)
}

func statusOf(resp *http.Response) int {
	if resp == nil {
		return 0
	}
	return resp.StatusCode
}

// send makes one request. A non-success answer is read whole (error bodies are small, and the
// bound holds) and closed; a success is returned unread.
func (c checkedClient) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	c.params.add(ctx, req)
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, c.transportError(ctx, err)
	}
	return resp, c.check(req, resp, body)
}

// firstBytes reads the body up to its first character that is not white space, which must open
// a JSON object (as Do requires), and returns the body with those bytes put back.
func (c checkedClient) firstBytes(ctx context.Context, resp *http.Response) (*answerBody, error) {
	var head []byte
	buf := make([]byte, 512)
	for resp.StatusCode != http.StatusNoContent && len(bytes.TrimLeft(head, " \t\r\n")) == 0 {
		n, err := resp.Body.Read(buf)
		head = append(head, buf[:n]...)
		if err == io.EOF { //nolint:errorlint // Read returns io.EOF itself
			break
		}
		if err != nil {
			resp.Body.Close()
			return nil, c.transportError(ctx, err)
		}
	}
	if resp.StatusCode != http.StatusNoContent && !startsWithObject(head) {
		defer resp.Body.Close()
		rest, err := io.ReadAll(resp.Body) // what a person would read of it: a login page, a proxy's error
		if err != nil && limitError(err, c.where) == nil {
			return nil, c.transportError(ctx, err)
		}
		return nil, c.notAPI(resp, append(head, rest...))
	}
	return &answerBody{r: io.MultiReader(bytes.NewReader(head), resp.Body), c: resp.Body}, nil
}

// answerBody is an answer's body being decoded. err keeps the first failure of the read itself,
// which the decoder sees only as the JSON ending early.
type answerBody struct {
	r   io.Reader
	c   io.Closer
	err error
}

func (b *answerBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil { //nolint:errorlint // Read returns io.EOF itself
		b.err = err
	}
	return n, err
}

func (b *answerBody) Close() error { return b.c.Close() }

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
