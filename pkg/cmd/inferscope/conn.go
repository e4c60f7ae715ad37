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
)

// exitUnavailable: the command could not read what it needs (Prometheus unreachable or
// refusing, no metric profile detected).
const exitUnavailable = 4

// promConn holds the flags that reach Prometheus, shared by every command that reads it.
type promConn struct {
	url, user, passwordFile, tokenFile, profile string
	timeout                                     time.Duration
	labels                                      profile.Labels
	perProfile                                  profileLabelsFlag
	warmup                                      time.Duration
	maxAnswer                                   string
	gateway                                     gatewayFlags
}

func (c *promConn) register(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "prometheus", "", "Prometheus (or compatible) base URL")
	fs.StringVar(&c.user, "basic-auth-user", "", "basic-auth user")
	fs.StringVar(&c.passwordFile, "basic-auth-password-file", "", "file holding the basic-auth password")
	fs.StringVar(&c.tokenFile, "bearer-token-file", "", "file holding a bearer token")
	fs.StringVar(&c.profile, "profile", "auto", "metric profile: auto, "+strings.Join(profile.Names(), ", "))
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "timeout of each Prometheus request")
	fs.StringVar(&c.labels.Model, "model-label", "", "model label name of every profile (empty: each profile's own)")
	fs.StringVar(&c.labels.Version, "version-label", "", "version label name of every profile (empty: each profile's own)")
	fs.StringVar(&c.labels.Instance, "instance-label", "", "instance label name of every profile (empty: each profile's own)")
	c.perProfile = profileLabelsFlag{}
	fs.Var(c.perProfile, "profile-label", "one profile's label name, PROFILE.KIND=LABEL with KIND model, version or instance (repeatable), e.g. tgi.model=model_name")
	fs.DurationVar(&c.warmup, "warmup-window", 2*time.Minute, "how long after an instance (re)starts its samples count as warm-up")
	fs.StringVar(&c.maxAnswer, "max-answer-size", "64MiB", "the largest Prometheus answer read")
	c.gateway.register(fs)
}

// registerReach registers only the flags that reach Prometheus (address, credentials, timeout,
// per-profile label renames, answer size), for `rules export`, whose catalog parameters already
// name the profile, the flat label renames and the warm-up window.
func (c *promConn) registerReach(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "prometheus", "", "Prometheus (or compatible) base URL")
	fs.StringVar(&c.user, "basic-auth-user", "", "basic-auth user")
	fs.StringVar(&c.passwordFile, "basic-auth-password-file", "", "file holding the basic-auth password")
	fs.StringVar(&c.tokenFile, "bearer-token-file", "", "file holding a bearer token")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "timeout of each Prometheus request")
	c.perProfile = profileLabelsFlag{}
	fs.Var(c.perProfile, "profile-label", "one profile's label name, PROFILE.KIND=LABEL with KIND model, version or instance (repeatable), e.g. tgi.model=model_name")
	fs.StringVar(&c.maxAnswer, "max-answer-size", "64MiB", "the largest Prometheus answer read")
	c.profile = "auto"
}

// profileLabelsFlag collects --profile-label PROFILE.KIND=LABEL.
type profileLabelsFlag map[string]profile.Labels

func (f profileLabelsFlag) String() string {
	var parts []string
	for name, l := range f {
		for _, kv := range [][2]string{{"model", l.Model}, {"version", l.Version}, {"instance", l.Instance}} {
			if kv[1] != "" {
				parts = append(parts, name+"."+kv[0]+"="+kv[1])
			}
		}
	}
	return strings.Join(parts, ",")
}

func (f profileLabelsFlag) Set(s string) error {
	key, label, ok := strings.Cut(s, "=")
	name, kind, ok2 := strings.Cut(key, ".")
	if !ok || !ok2 || label == "" {
		return fmt.Errorf("want PROFILE.KIND=LABEL, e.g. tgi.model=model_name, got %q", s)
	}
	if _, err := profile.ByName(name); err != nil {
		return err
	}
	if !profile.ValidLabelName(label) {
		return fmt.Errorf("%q is not a Prometheus label name", label)
	}
	l := f[name]
	switch kind {
	case "model":
		l.Model = label
	case "version":
		l.Version = label
	case "instance":
		l.Instance = label
	default:
		return fmt.Errorf("label kind %q: want model, version or instance", kind)
	}
	f[name] = l
	return nil
}

// connFlagsHelp lists the connection's flags for a command's help.
func connFlagsHelp() string {
	return fmt.Sprintf(`  --prometheus URL             Prometheus (or compatible) base URL (required)
  --basic-auth-user USER       basic auth; the password from --basic-auth-password-file FILE
  --bearer-token-file FILE     send "Authorization: Bearer <file contents>"
  --profile NAME               metric profile: auto (default), %s
  --timeout DURATION           per Prometheus request (default 1m)
  --model-label, --version-label, --instance-label NAME
                               rename a label for every profile (default: each profile's own)
  --profile-label PROFILE.KIND=LABEL
                               rename one profile's label, e.g. tgi.model=model_name (repeatable)
  --warmup-window DURATION     warm-up after an instance (re)starts (default 2m)
  --max-answer-size SIZE       the largest Prometheus answer read, e.g. 256MiB (default 64MiB)
%s`, strings.Join(profile.Names(), ", "), gatewayFlagsHelp())
}

// engine connects to Prometheus and builds the engine the data source would (engine.New): the
// server of each model detected (or the named profile), the label renames, the warm-up window,
// the default limits and a history cache.
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
	if c.warmup < 0 || c.warmup > time.Hour {
		return nil, usagef("--warmup-window must be between 0 and 1h")
	}
	maxAnswer, err := engine.ParseSize(c.maxAnswer)
	if err != nil {
		return nil, usagef("--max-answer-size: %v", err)
	}
	gw, err := c.gateway.config()
	if err != nil {
		return nil, usagef("%v", err)
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
	e, err := engine.New(ctx, engine.Config{
		URL: c.url, HTTP: &http.Client{Timeout: c.timeout, Transport: headerTransport{header: header, next: http.DefaultTransport}},
		MaxAnswerBytes: maxAnswer, Profile: c.profile, Labels: c.labels, PerProfile: c.perProfile,
		WarmupWindow: c.warmup, Limits: engine.DefaultLimits, History: engine.NewHistoryCache(0), Gateway: gw,
	})
	var undetected *profile.NotDetectedError
	var bad *engine.ConfigError
	switch {
	case errors.As(err, &bad) && bad.Setting == "URL":
		return nil, usagef("--prometheus: %v", err)
	case errors.As(err, &bad) && bad.Setting == "Gateway":
		return nil, usagef("--gateway: %v", err)
	case errors.As(err, &bad):
		return nil, usagef("%v", err)
	case errors.As(err, &undetected):
		return nil, exitStatus{exitUnavailable, err.Error() + "; name one with --profile (" + strings.Join(profile.Names(), ", ") + ")"}
	case err != nil:
		return nil, exitStatus{exitUnavailable, err.Error()}
	}
	return e, nil
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
