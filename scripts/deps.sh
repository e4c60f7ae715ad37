#!/usr/bin/env bash
# Installs what the demo and the tests need and that a fresh machine may lack:
# Prometheus, Alertmanager and VictoriaMetrics (Debian packages), Prometheus 3 and golangci-lint
# (pinned versions, built once into the user cache dir; `deps.sh lint` prints golangci-lint's
# path), the npm packages (npm ci) and the Go modules. `deps.sh go` is what the demo needs: the
# Debian packages and the Go modules, nothing built.
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }

apt_install() {
  local missing=()
  command -v prometheus >/dev/null || missing+=(prometheus)
  command -v amtool >/dev/null || missing+=(prometheus-alertmanager)
  command -v victoria-metrics >/dev/null || missing+=(victoria-metrics)
  if ! command -v aarch64-linux-gnu-gcc >/dev/null && [ "${INFERSCOPE_CROSS_CC:-1}" = 1 ]; then
    missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
  fi
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
      log "missing ${missing[*]}: install them with your package manager (apt-get install ${missing[*]})"
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    log "missing ${missing[*]} and no apt-get here: install them with your package manager"
    return 1
  fi
  log "installing Debian packages: ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # Installing the packages must not leave their services running: they would hold the
  # default ports the demo uses. policy-rc.d keeps the maintainer scripts from starting them.
  local policy=/usr/sbin/policy-rc.d created=0
  if [ ! -e "$policy" ] && [ -z "$sudo" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ "$created" = 1 ] && rm -f "$policy"
  return 0
}

npm_install() {
  # npm ci only when the lock file changed since the last install.
  local stamp=node_modules/.inferscope-lock
  if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then return 0; fi
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
}

# Prometheus 3 for the integration tests (pkg/testbed/promtest.Prometheus3Binary): built from
# source once (about 10 minutes on 2 cores, at the lowest priority) and reused. The version is
# stamped in, or its build info answers an empty version.
PROMETHEUS3_MODULE=v0.316.0
PROMETHEUS3_VERSION=3.16.0
prometheus3_install() {
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/inferscope/prometheus3"
  if [ -x "$dir/prometheus" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$PROMETHEUS3_VERSION" ]; then return 0; fi
  log "building Prometheus $PROMETHEUS3_VERSION into $dir (once)"
  mkdir -p "$dir"
  rm -f "$dir/version"
  GOBIN="$dir" nice -n 19 go install \
    -ldflags "-X github.com/prometheus/common/version.Version=$PROMETHEUS3_VERSION" \
    "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS3_MODULE"
  echo "$PROMETHEUS3_VERSION" >"$dir/version"
}

go_install() {
  log "go mod download"
  go mod download
}

# golangci-lint is built from source through the Go module proxy, outside this module (the main
# go.mod stays lean), into a cache keyed by its version: minutes the first time, then nothing.
GOLANGCI_LINT_VERSION=v2.15.0
golangci_lint="${INFERSCOPE_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-tools}/golangci-lint-$GOLANGCI_LINT_VERSION/bin/golangci-lint"

lint_install() {
  [ -x "$golangci_lint" ] && return 0
  log "building golangci-lint $GOLANGCI_LINT_VERSION into $(dirname "$golangci_lint") (once; a few minutes)"
  (cd / && GOBIN="$(dirname "$golangci_lint")" GOFLAGS= go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION")
}

what="${1:-all}"
case "$what" in
  all) apt_install; go_install; prometheus3_install; lint_install; npm_install ;;
  go) apt_install; go_install ;;
  lint) lint_install; printf '%s\n' "$golangci_lint" ;;
  prometheus3) prometheus3_install ;;
  *) echo "usage: $0 [all|go|lint|prometheus3]" >&2; exit 2 ;;
esac
