//go:build !race

package alerting

const raceEnabled = false
