package engine

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope/pkg/gateway"
	"github.com/inferscope/inferscope/pkg/profile"
	"github.com/inferscope/inferscope/pkg/prom"
)

// Config is everything an engine is built from: the data source's settings, the CLI's flags,
// a test's choices. New is the one way to turn it into an Engine.
type Config struct {
	// Prom is the Prometheus client; without one, New connects to URL through HTTP (nil =
	// http.DefaultClient), whose transport carries authentication and timeouts.
	Prom *prom.Client
	URL  string
	HTTP *http.Client
	// MaxAnswerBytes bounds one Prometheus answer when New connects (0 = prom's default).
	MaxAnswerBytes int64
	// Profile is "auto" (or "") to find the profile of each model, or a profile name that
	// every model is read with.
	Profile string
	// Labels renames the model, version and instance labels of every profile; PerProfile, keyed
	// by profile name, renames those of one profile over Labels.
	Labels     profile.Labels
	PerProfile map[string]profile.Labels
	// Gateway, when its Preset is set, gives the network segment: the gateway's upstream time
	// minus the service's own (the zero value: no gateway).
	Gateway gateway.Config
	// WarmupWindow is 0 for derive.DefaultWarmupWindow.
	WarmupWindow time.Duration
	Limits       Limits
	History      *HistoryCache
	ProbeURLs    []string
	ProbeHTTP    *http.Client
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// Catalog caches the metric names and the fleet across engines (nil = read them afresh).
	Catalog *Catalog
	// NoProfile builds an engine for GPU series and probes only: nothing is read from
	// Prometheus to build it.
	NoProfile bool
}

// ParseSize reads a size setting such as "64MiB" or "1GiB" (MaxAnswerBytes' form).
func ParseSize(s string) (int64, error) { return prom.ParseBytes(s) }

// ConfigError is a configuration that cannot be built (an unknown profile, a bad label name, a
// malformed URL, a gateway mapping that does not compile). Setting names the Config field at
// fault when it is the URL ("URL") or the gateway ("Gateway"), so a front end can name its own
// flag or setting.
type ConfigError struct {
	Msg     string
	Setting string
}

func (e *ConfigError) Error() string { return e.Msg }

// Profiles returns the built-in profiles with the configured label renames, in priority order:
// all of them for "auto", the named one otherwise.
func (c Config) Profiles() ([]profile.Profile, error) {
	var ps []profile.Profile
	switch c.Profile {
	case "", "auto":
		ps = profile.All()
	default:
		p, err := profile.ByName(c.Profile)
		if err != nil {
			return nil, &ConfigError{Msg: err.Error()}
		}
		ps = []profile.Profile{p}
	}
	for name := range c.PerProfile {
		if _, err := profile.ByName(name); err != nil {
			return nil, &ConfigError{Msg: fmt.Sprintf("label renames for %s", err)}
		}
	}
	for i, p := range ps {
		l := c.PerProfile[p.Name].Over(c.Labels)
		q, err := p.WithLabelSet(l)
		if err != nil {
			return nil, &ConfigError{Msg: fmt.Sprintf("%s profile: %v", p.Name, err)}
		}
		ps[i] = q
	}
	return ps, nil
}

// New builds the engine of a configuration: it reads the metric names Prometheus has (cached by
// Catalog) and finds the server of each model. With "auto" and no server found the error is a
// *profile.NotDetectedError; a forced profile that finds nothing still builds (its queries
// answer empty, the health check says what is missing). Prometheus failures come back as they
// are (prom.KindOf tells them apart), configuration errors as *ConfigError.
func New(ctx context.Context, c Config) (*Engine, error) {
	if c.Prom == nil && c.URL != "" {
		client, err := prom.New(c.URL, c.HTTP, prom.MaxAnswerBytes(c.MaxAnswerBytes))
		if err != nil {
			return nil, &ConfigError{Msg: err.Error(), Setting: "URL"}
		}
		c.Prom = client
	}
	e := &Engine{
		Prom: c.Prom, WarmupWindow: c.WarmupWindow, Limits: c.Limits, History: c.History,
		ProbeURLs: c.ProbeURLs, ProbeHTTP: c.ProbeHTTP, Now: c.Now, catalog: c.Catalog,
	}
	gw, err := gateway.New(c.Gateway)
	if err != nil {
		return nil, &ConfigError{Msg: err.Error(), Setting: "Gateway"}
	}
	e.Gateway = gw
	if c.NoProfile {
		return e, nil
	}
	if c.Prom == nil {
		return nil, &ConfigError{Msg: "no Prometheus is configured"}
	}
	profiles, err := c.Profiles()
	if err != nil {
		return nil, err
	}
	cat := c.Catalog
	if cat == nil {
		cat = &Catalog{}
	}
	st, err := cat.get(ctx, c.Prom, c.Profile, profiles)
	if err != nil {
		return nil, err
	}
	e.Present, e.Fleet, e.catalog = st.present, st.fleet, cat
	if len(profiles) == 1 {
		e.Profile = profiles[0]
		return e, nil
	}
	p, ok := st.fleet.Primary()
	if !ok {
		_, det := profile.Detect(st.names)
		return nil, &profile.NotDetectedError{Reason: det.Reason}
	}
	e.Profile = p
	return e, nil
}

// CatalogTTL is how long a Catalog reuses what it read: measure choice and detection need it on
// every query, and alert rules query every minute.
const CatalogTTL = 2 * time.Minute

// Catalog caches, for one Prometheus, the metric names it has and the fleet detected on them.
// It is safe for concurrent use.
type Catalog struct {
	// Now is the clock of the expiry (nil = time.Now).
	Now func() time.Time

	mu      sync.Mutex
	at      time.Time
	names   []string
	present map[string]bool
	fleets  map[string]*Fleet // by profile setting and label renames
	values  map[string][]string
	calls   int // Prometheus calls made
}

type catalogState struct {
	names   []string
	present map[string]bool
	fleet   *Fleet
}

func (c *Catalog) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Calls reports how many Prometheus calls the catalog has made.
func (c *Catalog) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Names returns the metric names Prometheus has (cached).
func (c *Catalog) Names(ctx context.Context, client *prom.Client) ([]string, map[string]bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refreshNames(ctx, client); err != nil {
		return nil, nil, err
	}
	return c.names, c.present, nil
}

func (c *Catalog) refreshNames(ctx context.Context, client *prom.Client) error {
	if c.present != nil && c.now().Sub(c.at) < CatalogTTL {
		return nil
	}
	list, err := client.LabelValues(ctx, "__name__", nil, time.Time{}, time.Time{})
	c.calls++
	if err != nil {
		return err
	}
	set := make(map[string]bool, len(list))
	for _, n := range list {
		set[n] = true
	}
	c.names, c.present, c.at, c.fleets, c.values = list, set, c.now(), map[string]*Fleet{}, map[string][]string{}
	return nil
}

// labelValues lists a label's values on the series of selectors over the whole history
// (the label values API: the index only), cached with the names.
func (c *Catalog) labelValues(ctx context.Context, client *prom.Client, label string, selectors []string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refreshNames(ctx, client); err != nil {
		return nil, err
	}
	key := label + "\x00" + strings.Join(selectors, "\x00")
	if v, ok := c.values[key]; ok {
		return v, nil
	}
	v, err := client.LabelValues(ctx, label, selectors, time.Time{}, time.Time{})
	c.calls++
	if err != nil {
		return nil, err
	}
	c.values[key] = v
	return v, nil
}

func (c *Catalog) get(ctx context.Context, client *prom.Client, setting string, profiles []profile.Profile) (catalogState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refreshNames(ctx, client); err != nil {
		return catalogState{}, err
	}
	key := setting
	for _, p := range profiles {
		key += "|" + p.Name + "," + p.ModelLabel
	}
	f, ok := c.fleets[key]
	if !ok {
		var n int
		var err error
		f, n, err = DetectFleet(ctx, client, c.present, profiles)
		c.calls += n
		if err != nil {
			return catalogState{}, err
		}
		c.fleets[key] = f
	}
	return catalogState{names: c.names, present: c.present, fleet: f}, nil
}
