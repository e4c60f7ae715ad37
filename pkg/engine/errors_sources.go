package engine

import (
	"context"
	"math"

	"github.com/inferscope/inferscope/pkg/derive"
	"github.com/inferscope/inferscope/pkg/profile"
)

// serverFailures adds the failures a server counts outside its request counter: requests refused
// at admission (vLLM's admission_rejections_total, over the requests that reached the engine
// plus the refused ones) and the HTTP 5xx answers of its inference routes (over every answer of
// those routes, per instance: the HTTP counter has no model label). Each is its own ratio: a
// refused request is a 503 too, so adding them to the engine's errors would count it twice.
func serverFailures(ctx context.Context, x *Exec, req profile.Measure, by, hostBy []string) error {
	rej, okR, _ := x.resolve(profile.Rejections)
	h5, okE, _ := x.resolve(profile.HTTPErrors)
	hAll, okA, _ := x.resolve(profile.HTTPRequests)
	okH := okE && okA
	if !okR && !okH {
		return nil
	}
	var reqs []rateReq
	if okR {
		x.measureNotice(rej)
		reqs = append(reqs, rateReq{rej, by}, rateReq{req, by})
	}
	if okH {
		x.measureNotice(h5)
		reqs = append(reqs, rateReq{h5, hostBy}, rateReq{hAll, hostBy})
	}
	read, err := x.rates(ctx, reqs...)
	if err != nil {
		return err
	}
	if okR {
		if err := addRejections(x, read[0], read[1], by); err != nil {
			return err
		}
		read = read[2:]
	}
	if okH {
		for _, all := range read[1] {
			num := matching(read[0], all, hostBy)
			if err := x.addFailure("http_error", "HTTP 5xx", num, all); err != nil {
				return err
			}
		}
	}
	return nil
}

// addRejections: rejections over the requests that reached the engine plus the rejected ones.
func addRejections(x *Exec, rejected, finished []derive.Series, by []string) error {
	for _, f := range finished {
		num := matching(rejected, f, by)
		arrived := derive.Series{Labels: f.Labels, T: f.T, V: make([]float64, len(f.V))}
		for i, v := range f.V {
			arrived.V[i] = v
			if r := num.V[i]; !math.IsNaN(r) && !math.IsNaN(v) {
				arrived.V[i] = v + r
			}
		}
		if err := x.addFailure("rejection", "rejected at admission", num, arrived); err != nil {
			return err
		}
	}
	return nil
}

// matching is the series of ss in the same group as like, or NaNs on like's grid.
func matching(ss []derive.Series, like derive.Series, by []string) derive.Series {
	key := groupKey(like.Labels, by)
	for _, s := range ss {
		if groupKey(s.Labels, by) == key {
			return s
		}
	}
	return derive.Series{Labels: like.Labels, T: like.T, V: nanValues(len(like.T))}
}
