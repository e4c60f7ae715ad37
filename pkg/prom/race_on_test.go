//go:build race

package prom

// raceEnabled: the race detector's shadow memory multiplies a process's resident memory.
const raceEnabled = true
