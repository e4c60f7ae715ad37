#!/usr/bin/env bash
# Runs every test of the project, the way CI does:
#   frontend type-check, lint, Jest and build; the plugin's binaries and the release zip;
#   go vet and golangci-lint (.golangci.yml: layering, error wrapping, function length); all Go tests with the race detector (unit, integration against a real Prometheus and
#   Alertmanager, the gRPC plugin-protocol test, the zip checks); short fuzzing runs.
#   The engine, triage, gate, backtest and report tests also run on Prometheus 3 and VictoriaMetrics.
# Installs what is missing first (scripts/deps.sh). Exits non-zero on the first failing step.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
# As in CI: integration tests fail, rather than skip, when a server binary they need is missing.
export CI=true

bash scripts/deps.sh all

step "frontend: type-check, lint, unit tests, build"
npm run --silent typecheck
npm run --silent lint
npm run --silent test:ci
npm run --silent build

step "backend: build the data source for every platform, the companion binaries, the zip"
go tool mage -v buildAll loadgen cli probe package verifyPackage
zip_file=$(ls -t inferscope-monitor-app-*.zip | head -n1)

step "go vet"
go vet ./pkg/...

step "golangci-lint (.golangci.yml: the layering rules, errorlint, funlen)"
"$(bash scripts/deps.sh lint)" run ./pkg/...

step "fuzzing (short runs; the seed corpus also runs in the tests below)"
# Budgets are counts of executions, about 10-15 s each here, not durations: with a duration,
# Go's fuzzing coordinator before 1.27 can report its own deadline as a failure ("context
# deadline exceeded", no failing input) when a worker is mid-call as the time runs out (Go
# issue 75804); a count has no deadline to race.
fuzz() { go test -run '^$' -fuzz "^$1\$" -fuzztime "$2" "$3"; }
fuzz FuzzQuote 100000x ./pkg/prom
fuzz FuzzMatchAny 60000x ./pkg/prom
fuzz FuzzDecodeAnswer 120000x ./pkg/prom
fuzz FuzzParseShortDecimal 60000x ./pkg/prom
fuzz FuzzDecodeOnGrid 60000x ./pkg/prom
for target in FuzzResourceBodies FuzzResourceQueries FuzzQueryJSON FuzzSettings; do
  fuzz "$target" 25000x ./pkg/datasource
done
fuzz FuzzFlagValues 50000x ./pkg/cmd/inferscope
fuzz FuzzRulesListFlags 12000x ./pkg/cmd/inferscope

step "memory bounds (without the race detector, whose shadow memory distorts resident memory)"
go test -count=1 -run '^TestOversizedAnswerKeepsMemoryBounded$' ./pkg/prom

step "incident corpus: the fixed-seed subset replayed (without the race detector: hundreds of triage questions)"
go test -count=1 -timeout 40m -run '^TestCorpusSubset$' ./pkg/corpus

step "test bed: build (or reuse) the 8-day history TSDB the integration tests share"
go run ./pkg/cmd/inferscope-loadgen --warm-test-cache

step "Go tests (race detector; integration and protocol tests on real servers)"
INFERSCOPE_ZIP="$PWD/$zip_file" INFERSCOPE_EXPECT_ZIP=true INFERSCOPE_DIST="$PWD/dist" \
  go tool gotestsum --format pkgname-and-test-fails -- -race -count=1 -timeout 60m ./pkg/...

step "all checks passed"
