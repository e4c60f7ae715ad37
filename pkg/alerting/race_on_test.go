//go:build race

package alerting

// raceEnabled: the fleet equality test inlines every recording; under the race detector it runs
// several times slower, so scripts/test.sh runs it in a step of its own without it.
const raceEnabled = true
