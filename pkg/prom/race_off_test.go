//go:build !race

package prom

const raceEnabled = false
