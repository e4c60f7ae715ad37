package datasource

import (
	"context"
	"time"

	"github.com/inferscope/inferscope/pkg/profile"
)

// detectProfile lists the metric names Prometheus has and lets pkg/profile choose. A failure
// leaves the profile undetected; it never fails the health check, which has already proven the
// connection.
func (d *Datasource) detectProfile(ctx context.Context) ProfileStatus {
	names, err := d.prom.LabelValues(ctx, "__name__", nil, time.Time{}, time.Time{})
	if err != nil {
		d.logger.Warn("Metric profile detection failed", "error", err.Error())
		return ProfileStatus{Name: "auto", Reason: "cannot list metric names: " + err.Error()}
	}
	p, det := profile.Detect(names)
	if !det.Found {
		return ProfileStatus{Name: "auto", Reason: det.Reason}
	}
	return ProfileStatus{Name: p.Name, Detected: true, Reason: det.Reason}
}
