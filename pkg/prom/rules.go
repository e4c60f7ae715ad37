package prom

import (
	"context"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// RecordingRules returns the recording rules the server has loaded (/api/v1/rules), each name
// with the expressions recorded under it (one per group that records it).
func (c *Client) RecordingRules(ctx context.Context) (map[string][]string, error) {
	res, err := c.api.Rules(ctx, nil)
	if err != nil {
		return nil, c.wrap(err)
	}
	out := map[string][]string{}
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			if rr, ok := r.(v1.RecordingRule); ok {
				out[rr.Name] = append(out[rr.Name], rr.Query)
			}
		}
	}
	return out, nil
}
