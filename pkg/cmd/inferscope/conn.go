package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/inferscope/inferscope/pkg/engine"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// exitUnavailable: the command could not read what it needs (Prometheus unreachable or
// refusing, no metric profile detected).
const exitUnavailable = 4

// promConn holds the flags that reach Prometheus, shared by every command that reads it.
type promConn struct {
	url, user, passwordFile, tokenFile, profile string
	timeout                                     time.Duration
}

func (c *promConn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "prometheus", "", "Prometheus (or compatible) base URL")
	fs.StringVar(&c.user, "basic-auth-user", "", "basic-auth user")
	fs.StringVar(&c.passwordFile, "basic-auth-password-file", "", "file holding the basic-auth password")
	fs.StringVar(&c.tokenFile, "bearer-token-file", "", "file holding a bearer token")
	fs.StringVar(&c.profile, "profile", "auto", "metric profile: auto, "+strings.Join(profile.Names(), ", "))
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "timeout of each Prometheus request")
}

// connFlagsHelp lists the connection's flags for a command's help.
func connFlagsHelp() string {
	return fmt.Sprintf(`  --prometheus URL             Prometheus (or compatible) base URL (required)
  --basic-auth-user USER       basic auth; the password from --basic-auth-password-file FILE
  --bearer-token-file FILE     send "Authorization: Bearer <file contents>"
  --profile NAME               metric profile: auto (default), %s
  --timeout DURATION           per Prometheus request (default 1m)`, strings.Join(profile.Names(), ", "))
}

// engine connects to Prometheus and builds the engine the data source would: the profile
// detected from the metric names (or the named one), warm-up filter at its default window.
func (c *promConn) engine(ctx context.Context) (*engine.Engine, error) {
	if c.url == "" {
		return nil, usagef("--prometheus is required")
	}
	if c.passwordFile != "" && c.user == "" {
		return nil, usagef("--basic-auth-password-file needs --basic-auth-user")
	}
	if c.tokenFile != "" && c.user != "" {
		return nil, usagef("use either basic auth or a bearer token, not both")
	}
	if c.timeout <= 0 {
		return nil, usagef("--timeout must be positive")
	}
	header := http.Header{}
	if c.user != "" {
		pw := ""
		if c.passwordFile != "" {
			b, err := os.ReadFile(c.passwordFile)
			if err != nil {
				return nil, usagef("--basic-auth-password-file: %v", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		r, _ := http.NewRequest(http.MethodGet, "http://x", nil)
		r.SetBasicAuth(c.user, pw)
		header.Set("Authorization", r.Header.Get("Authorization"))
	}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, usagef("--bearer-token-file: %v", err)
		}
		header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	}
	client, err := prom.New(c.url, &http.Client{Timeout: c.timeout, Transport: headerTransport{header: header, next: http.DefaultTransport}})
	if err != nil {
		return nil, usagef("--prometheus: %v", err)
	}
	names, err := client.LabelValues(ctx, "__name__", nil, time.Time{}, time.Time{})
	if err != nil {
		return nil, exitStatus{exitUnavailable, err.Error()}
	}
	present := make(map[string]bool, len(names))
	for _, n := range names {
		present[n] = true
	}
	p, err := profile.Choose(c.profile, names)
	var undetected *profile.NotDetectedError
	switch {
	case errors.As(err, &undetected):
		return nil, exitStatus{exitUnavailable, err.Error()}
	case err != nil:
		return nil, usagef("--profile: %v", err)
	}
	return &engine.Engine{Prom: client, Profile: p, Present: present}, nil
}

// headerTransport adds fixed headers (authentication) to every request.
type headerTransport struct {
	header http.Header
	next   http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.header) == 0 {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range t.header {
		r.Header[k] = v
	}
	return t.next.RoundTrip(r)
}
