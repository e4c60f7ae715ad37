//go:build race

package corpus

// raceEnabled: under the race detector the replay's hundreds of triage questions run several
// times slower; scripts/test.sh replays the subset without it.
const raceEnabled = true
