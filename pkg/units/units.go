// Package units writes numbers for people, one way everywhere (the command's tables, triage's
// sentences): times under a second in ms, under a minute in s, longer ones as a duration;
// ratios as percentages; rates per second; counts without a unit. Not measured reads "-".
package units

import (
	"fmt"
	"math"
	"time"
)

// NotMeasured is what a value that was not measured reads.
const NotMeasured = "-"

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Seconds writes a time given in seconds: 4.2 ms, 850 ms, 12.3 s, 2m0s.
func Seconds(s float64) string {
	switch a := math.Abs(s); {
	case !finite(s):
		return NotMeasured
	case a < 0.01:
		return fmt.Sprintf("%.2f ms", s*1000)
	case a < 1:
		return fmt.Sprintf("%.1f ms", s*1000)
	case a < 60:
		return fmt.Sprintf("%.2f s", s)
	}
	return time.Duration(math.Round(s) * float64(time.Second)).String()
}

// Percent writes a ratio (0..1) as a percentage: 12.5 %.
func Percent(r float64) string {
	if !finite(r) {
		return NotMeasured
	}
	return fmt.Sprintf("%.1f %%", r*100)
}

// PerSecond writes a rate with its unit: 132.4 req/s.
func PerSecond(v float64, unit string) string {
	if !finite(v) {
		return NotMeasured
	}
	return fmt.Sprintf("%.1f %s/s", v, unit)
}

// Count writes a count without a unit: whole numbers as such, others with four digits.
func Count(v float64) string {
	if !finite(v) {
		return NotMeasured
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}

// Value writes v in the unit the engine and the reports name (Grafana's unit ids: "s",
// "percentunit", "percent", "reqps", "celsius", "watt", "bytes"; anything else, "none" and ""
// included, is a plain number); nil is not measured.
func Value(v *float64, unit string) string {
	if v == nil {
		return NotMeasured
	}
	switch unit {
	case "s":
		return Seconds(*v)
	case "percentunit":
		return Percent(*v)
	case "reqps":
		return PerSecond(*v, "req")
	case "percent":
		return Percent(*v / 100)
	case "celsius":
		if finite(*v) {
			return fmt.Sprintf("%.1f °C", *v)
		}
	case "watt":
		if finite(*v) {
			return fmt.Sprintf("%.1f W", *v)
		}
	case "bytes":
		if finite(*v) {
			return fmt.Sprintf("%.2f GiB", *v/(1<<30))
		}
	}
	return Count(*v)
}
