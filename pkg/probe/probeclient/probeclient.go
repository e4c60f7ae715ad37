// Package probeclient reads a probe's live JSON snapshot (GET /api/v1/gpus).
// It is pure Go: the data source imports it without cgo or NVML.
package probeclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/inferscope/inferscope/pkg/clip"
	"github.com/inferscope/inferscope/pkg/probe/snapshot"
)

// Types of the JSON contract, shared with the probe.
type (
	Snapshot   = snapshot.Snapshot
	GPU        = snapshot.GPU
	MIGDevice  = snapshot.MIGDevice
	Process    = snapshot.Process
	NVMLStatus = snapshot.NVMLStatus
)

// Path is the snapshot endpoint on a probe.
const Path = "/api/v1/gpus"

// maxBody bounds what a probe may send (a node with 16 GPUs and many processes is ~100 KiB).
const maxBody = 16 << 20

// Client fetches snapshots. The zero value uses http.DefaultClient.
type Client struct {
	HTTP *http.Client
	// Header is added to every request (e.g. Authorization for a probe behind basic auth).
	Header http.Header
}

// Get fetches the snapshot of the probe at probeURL (its base URL, or the full
// /api/v1/gpus URL) with http.DefaultClient.
func Get(ctx context.Context, probeURL string) (Snapshot, error) {
	return (&Client{}).Get(ctx, probeURL)
}

// Get fetches the snapshot of the probe at probeURL.
func (c *Client) Get(ctx context.Context, probeURL string) (Snapshot, error) {
	u, err := SnapshotURL(probeURL)
	if err != nil {
		return Snapshot{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Snapshot{}, fmt.Errorf("probe %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Snapshot{}, fmt.Errorf("probe %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return Snapshot{}, fmt.Errorf("probe %s: reading response: %w", u, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return Snapshot{}, fmt.Errorf("probe %s: %w (HTTP %d): set the probes' credentials in the data source settings", u, ErrUnauthorized, resp.StatusCode)
	}
	if resp.StatusCode != http.StatusOK {
		return Snapshot{}, fmt.Errorf("probe %s: HTTP %d: %s", u, resp.StatusCode, snippet(body))
	}
	if len(body) > maxBody {
		return Snapshot{}, fmt.Errorf("probe %s: response larger than %d bytes", u, maxBody)
	}
	var s Snapshot
	if err := json.Unmarshal(body, &s); err != nil {
		return Snapshot{}, fmt.Errorf("probe %s: not a probe snapshot: %w", u, err)
	}
	if s.GPUs == nil {
		return Snapshot{}, fmt.Errorf("probe %s: not a probe snapshot: no \"gpus\" field", u)
	}
	return s, nil
}

// ErrUnauthorized: the probe refused the credentials (its --web.config.file asks for others).
var ErrUnauthorized = errors.New("the probe refused the credentials")

// SnapshotURL turns a probe's base URL into its snapshot URL.
func SnapshotURL(probeURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(probeURL))
	if err != nil {
		return "", fmt.Errorf("probe URL %q: %w", probeURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("probe URL %q: scheme must be http or https", probeURL)
	}
	if u.Host == "" {
		return "", errors.New("probe URL " + fmt.Sprintf("%q", probeURL) + ": no host")
	}
	if !strings.HasSuffix(u.Path, Path) {
		u.Path = strings.TrimSuffix(u.Path, "/") + Path
	}
	return u.String(), nil
}

func snippet(b []byte) string {
	return clip.Text(strings.TrimSpace(string(b)), 200)
}
