package testbed

// For the external tests: the history's part cap, which a test lowers to cut a short history in
// many parts, and the cut itself.
var (
	MaxPartSamples = &maxPartSamples
	HistoryParts   = historyParts
)
