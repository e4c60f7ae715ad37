package prom

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// ErrorKind says what went wrong talking to Prometheus, so callers can pick a status without
// parsing messages.
type ErrorKind int

// Kinds of failure, from the network up to the query.
const (
	KindUnreachable   ErrorKind = iota + 1 // no TCP connection (refused, DNS, routing)
	KindTLS                                // TLS handshake or certificate verification failed
	KindAuth                               // HTTP 401 or 403
	KindHTTP                               // any other non-success HTTP status without an API error body
	KindNotPrometheus                      // the answer is not a Prometheus HTTP API response
	KindBadQuery                           // Prometheus rejected the query (errorType bad_data)
	KindExecution                          // Prometheus accepted but could not evaluate the query
	KindTimeout                            // the client timeout or Prometheus' query timeout expired
	KindCanceled                           // the caller's context was cancelled
	KindLimit                              // a result exceeded a limit of ours
)

// Error is a failure of a Prometheus call, with a message written for the person who configured
// the data source. URL never carries user info or query parameters.
type Error struct {
	Kind   ErrorKind
	URL    string
	Status int // HTTP status when there was one
	// Limit is the store's own per-query limit that refused the query (KindBadQuery or
	// KindExecution), 0 when none was named; the status stays the Kind's.
	Limit StoreLimit
	Msg   string // the complete human message
	Err   error  // underlying error, if any
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of a Prometheus error, or 0 when err is not one.
func KindOf(err error) ErrorKind {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return 0
}

var userInfoRE = regexp.MustCompile(`^([^:/?#]*://)?[^/?#]*@`)

// RedactURL returns scheme://host/path of raw: no user info, query or fragment, so that a URL
// can go into messages and logs. A string that does not parse loses the same parts by text.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.Host != "" {
		clean := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
		return clean.String()
	}
	s := userInfoRE.ReplaceAllString(raw, "$1")
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

// classifyTransport turns an error from http.Client.Do into an *Error.
func classifyTransport(err error, where string, timeout time.Duration) *Error {
	e := &Error{URL: where, Err: err}
	switch {
	case errors.Is(err, context.Canceled):
		e.Kind = KindCanceled
		e.Msg = "the request was cancelled before Prometheus at " + where + " answered"
		return e
	case isTimeout(err):
		e.Kind = KindTimeout
		if timeout > 0 {
			e.Msg = fmt.Sprintf("Prometheus at %s did not answer within %s", where, timeout)
		} else {
			e.Msg = "Prometheus at " + where + " did not answer in time"
		}
		return e
	}
	if msg, ok := tlsMessage(err, where); ok {
		e.Kind = KindTLS
		e.Msg = msg
		return e
	}
	e.Kind = KindUnreachable
	e.Msg = "cannot reach Prometheus at " + where + ": " + networkReason(err)
	return e
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func tlsMessage(err error, where string) (string, bool) {
	prefix := "TLS handshake with " + where + " failed: "
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var notTLS tls.RecordHeaderError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	switch {
	case errors.As(err, &unknownCA):
		return prefix + "certificate signed by unknown authority — add the CA certificate or enable Skip TLS verify", true
	case errors.As(err, &hostErr):
		return prefix + hostErr.Error() + " — fix the host in the URL or the certificate's names", true
	case errors.As(err, &invalid):
		return prefix + invalid.Error(), true
	case errors.As(err, &notTLS), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return prefix + "the server does not speak TLS — use http:// in the URL", true
	case errors.As(err, &verify):
		return prefix + verify.Err.Error(), true
	case errors.As(err, &alert):
		return prefix + "the server refused the handshake (" + alert.Error() + ")", true
	}
	if strings.Contains(err.Error(), "tls: ") {
		return prefix + innermost(err).Error(), true
	}
	return "", false
}

func networkReason(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by peer"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return "host " + dnsErr.Name + " not found"
		}
		return "cannot resolve host " + dnsErr.Name + ": " + dnsErr.Err
	}
	return innermost(err).Error()
}

// innermost strips *url.Error and *net.OpError wrappers, whose text repeats the URL and the
// method, leaving the reason.
func innermost(err error) error {
	for {
		switch e := err.(type) { //nolint:errorlint // peels the outermost wrappers one at a time, on purpose
		case *url.Error:
			err = e.Err
		case *net.OpError:
			err = e.Err
		default:
			return err
		}
	}
}

// statusError describes a non-success HTTP answer that carries no Prometheus API error body.
func statusError(status int, body []byte, where string) *Error {
	e := &Error{URL: where, Status: status}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = KindAuth
		e.Msg = fmt.Sprintf("Prometheus at %s rejected the credentials (HTTP %d): check the basic-auth user and password or the bearer token", where, status)
	case status == http.StatusBadRequest && strings.Contains(string(body), "HTTP request to an HTTPS server"):
		e.Kind = KindHTTP
		e.Msg = "Prometheus at " + where + " only accepts HTTPS: change the URL to https://"
	default:
		e.Kind = KindHTTP
		e.Msg = fmt.Sprintf("Prometheus at %s answered HTTP %d %s", where, status, http.StatusText(status))
		if snippet := Snippet(body, 200); snippet != "" {
			e.Msg += ": " + snippet
		}
	}
	return e
}

var (
	htmlTitleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	htmlDropRE  = regexp.MustCompile(`(?is)<(script|style|head)[^>]*>.*?</(script|style|head)>`)
	htmlTagRE   = regexp.MustCompile(`(?s)<[^>]*>`)
	spacesRE    = regexp.MustCompile(`\s+`)
)

// bodyText is what a person would read in an answer's body: an HTML page's title, or its text
// without markup, scripts and styles; any other body as it is.
func bodyText(body []byte) string {
	s := strings.TrimSpace(string(body))
	lower := strings.ToLower(s[:min(len(s), 512)])
	if !strings.HasPrefix(lower, "<") || !(strings.Contains(lower, "<html") || strings.Contains(lower, "<!doctype") || strings.Contains(lower, "<body") || strings.Contains(lower, "<title")) {
		return s
	}
	if m := htmlTitleRE.FindStringSubmatch(s); m != nil && strings.TrimSpace(m[1]) != "" {
		return "(HTML page) " + strings.TrimSpace(spacesRE.ReplaceAllString(html.UnescapeString(m[1]), " "))
	}
	s = htmlDropRE.ReplaceAllString(s, " ")
	s = htmlTagRE.ReplaceAllString(s, " ")
	return "(HTML page) " + strings.TrimSpace(spacesRE.ReplaceAllString(html.UnescapeString(s), " "))
}

// Snippet returns at most n bytes of body as printable text on one line, for error messages; an
// HTML page is reduced to its title or text, never pasted as markup.
func Snippet(body []byte, n int) string {
	s := bodyText(body)
	if len(s) > n {
		s = s[:n]
		for !utf8.ValidString(s) && len(s) > 0 {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return strings.Map(func(r rune) rune {
		if r == utf8.RuneError || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// TransportReason is the short cause of a failed HTTP request, for messages about servers other
// than Prometheus (probes): "connection refused", "timed out", a certificate problem.
func TransportReason(err error) string {
	if isTimeout(err) {
		return "timed out"
	}
	if msg, ok := tlsMessage(err, ""); ok {
		msg = strings.TrimPrefix(msg, "TLS handshake with  failed: ")
		if i := strings.Index(msg, " — "); i >= 0 {
			msg = msg[:i] // the hints name Prometheus settings
		}
		return "TLS: " + msg
	}
	return networkReason(err)
}
