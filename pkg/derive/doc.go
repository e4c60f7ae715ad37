// Package derive holds the math of the Inferscope engine: histogram
// quantiles from summed bucket rates, the queue/compute/network latency
// split, the P99/P50 jitter ratio, the same-time-of-day latency baseline,
// the warm-up mask, counter rates, GPU memory forecasting and the GPU
// idle-under-traffic condition.
//
// Everything here is pure computation on plain Go values: no I/O, no
// Prometheus or Grafana types. Series live on a shared time grid of Unix
// milliseconds; NaN in a value slice means "no sample at this timestamp".
// Functions never return ±Inf for "no data": they return NaN and, where the
// reason matters to an on-call engineer, a reason code next to it.
//
// Work is linear in the number of points wherever a window slides over a
// series (prefix sums or moving pointers), so a 30-day range at a 15 s step
// costs the same per point as a 1-hour range.
package derive
