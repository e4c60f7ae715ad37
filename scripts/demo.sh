#!/usr/bin/env bash
# The Inferscope demo.
#
# With a Docker engine: `docker compose up` starts Grafana 12 with the plugin, Prometheus, the
# synthetic inference service (loadgen) and mock GPU probes, everything provisioned.
# Without one: the same stack minus Grafana as local processes (Prometheus from PATH, the loadgen
# with 8 days of history, three mock GPU probes), and instructions to point an existing Grafana at
# it. Stays in the foreground; Ctrl-C stops everything it started.
#
# Ports (override with environment variables): DEMO_PROMETHEUS_PORT=9090, DEMO_LOADGEN_PORT=9400,
# DEMO_PROBE_PORT=9835 (three probes on this port and the next two); DEMO_WORK=.demo holds the
# binaries, the TSDB and the logs.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

log() { printf '==> %s\n' "$*" >&2; }

if [ "${DEMO_NO_DOCKER:-}" != 1 ] && command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  log "Docker engine found: building the plugin, then docker compose up (Grafana on http://localhost:3000)"
  bash scripts/deps.sh all
  npm run --silent build
  go tool mage -v build:linux
  exec docker compose up --build
fi

prom_port=${DEMO_PROMETHEUS_PORT:-9090}
loadgen_port=${DEMO_LOADGEN_PORT:-9400}
probe_port=${DEMO_PROBE_PORT:-9835}
work=${DEMO_WORK:-$root/.demo}
bin=$work/bin

log "no Docker engine here: running Prometheus, the loadgen and three mock GPU probes as local processes"
bash scripts/deps.sh go

for p in "$prom_port" "$loadgen_port" "$probe_port" $((probe_port + 1)) $((probe_port + 2)); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p on 127.0.0.1 is already in use: stop what holds it or set DEMO_*_PORT (see the top of $0)" >&2
    exit 1
  fi
done

log "building inferscope, inferscope-loadgen and inferscope-probe into $bin"
mkdir -p "$bin"
go build -o "$bin/inferscope" ./pkg/cmd/inferscope
go build -o "$bin/inferscope-loadgen" ./pkg/cmd/inferscope-loadgen
CGO_ENABLED=1 go build -o "$bin/inferscope-probe" ./pkg/cmd/inferscope-probe

pids=() names=() sleeper=
# nap SECONDS: sleeps in the background and waits for it, so a signal is handled at once; the
# sleep itself is ended by cleanup, so nothing of the demo outlives it.
nap() {
  sleep "$1" &
  sleeper=$!
  wait "$sleeper" || true
  sleeper=
}
# cleanup stops what the demo started, saying what: on Ctrl-C, SIGTERM, an error or the end.
cleanup() {
  trap - INT TERM EXIT
  if [ -n "$sleeper" ]; then kill "$sleeper" 2>/dev/null || true; wait "$sleeper" 2>/dev/null || true; fi
  local alive=() what=() i
  for i in "${!pids[@]}"; do
    if kill -0 "${pids[$i]}" 2>/dev/null; then alive+=("${pids[$i]}"); what+=("${names[$i]}"); fi
  done
  [ ${#alive[@]} -eq 0 ] && return 0
  kill "${alive[@]}" 2>/dev/null || true
  wait "${alive[@]}" 2>/dev/null || true
  local list
  list=$(printf ', %s' "${what[@]}")
  log "stopped: ${list:2}"
}
trap cleanup EXIT
trap 'printf "\n" >&2; log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

# start NAME CMD...: runs CMD in the background as one of the demo's processes.
start() {
  local name=$1
  shift
  "$@" &
  pids+=($!) names+=("$name")
}

# await WHAT: waits for the last started process and returns its status, printing how long WHAT
# has taken every 10 s. A background process plus `wait` keeps Ctrl-C and SIGTERM working at once: bash runs a
# trap only when its foreground command ends, and `wait` ends as soon as a signal arrives.
await() {
  local what=$1 pid=${pids[-1]} began=$SECONDS status=0
  while kill -0 "$pid" 2>/dev/null; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$pid" 2>/dev/null || break
      nap 1
    done
    kill -0 "$pid" 2>/dev/null && log "$what: $((SECONDS - began)) s so far"
  done
  wait "$pid" || status=$?
  unset 'pids[-1]' 'names[-1]'
  return "$status"
}

# A fresh TSDB each run: the history ends now, so "same time yesterday" is always there.
rm -rf "$work/prometheus"
# History and live serving share one scenario clock: the same --end for both.
end=$(date -u +%Y-%m-%dT%H:%M:%SZ)
start "the history import" "$bin/inferscope-loadgen" --end="$end" --tsdb-out="$work/prometheus" --history-days=8
log "writing 8 days of history ending now and importing it into a TSDB (about a minute)"
await "writing and importing the history" || { echo "the history import failed with status $?" >&2; exit 1; }

log "starting the loadgen on 127.0.0.1:$loadgen_port"
start "the loadgen" "$bin/inferscope-loadgen" --end="$end" --listen="127.0.0.1:$loadgen_port" >"$work/loadgen.log" 2>&1

nodes=(node-a node-b node-c)
for i in 0 1 2; do
  port=$((probe_port + i))
  log "starting a mock GPU probe (8 A100s) for ${nodes[$i]} on 127.0.0.1:$port"
  start "the ${nodes[$i]} probe" "$bin/inferscope-probe" --mock=dgxa100 --mock.instance="${nodes[$i]}:8000" \
    --mock.clock="http://127.0.0.1:$loadgen_port" --web.listen-address="127.0.0.1:$port" >"$work/probe-${nodes[$i]}.log" 2>&1
done

sed -e "s/loadgen:9400/127.0.0.1:$loadgen_port/" \
  -e "s/probe-a:9835/127.0.0.1:$probe_port/" \
  -e "s/probe-b:9835/127.0.0.1:$((probe_port + 1))/" \
  -e "s/probe-c:9835/127.0.0.1:$((probe_port + 2))/" \
  provisioning/prometheus/prometheus.yml >"$work/prometheus.yml"

log "starting Prometheus on 127.0.0.1:$prom_port (30 days retention)"
start "Prometheus" prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus" \
  --storage.tsdb.retention.time=30d --web.listen-address="127.0.0.1:$prom_port" \
  --log.level=warn >"$work/prometheus.log" 2>&1

# Prometheus replays its TSDB before it answers: say how long that has taken every 10 s.
began=$SECONDS next=10
until curl -fsS "http://127.0.0.1:$prom_port/-/ready" >/dev/null 2>&1; do
  kill -0 "${pids[-1]}" 2>/dev/null || { echo "Prometheus exited; see $work/prometheus.log" >&2; exit 1; }
  if [ $((SECONDS - began)) -ge "$next" ]; then
    log "waiting for Prometheus to load the history: $((SECONDS - began)) s so far"
    next=$((next + 10))
  fi
  nap 0.2
done

prom=http://127.0.0.1:$prom_port
# The scenario's incidents, each with the triage question that finds it (from the loadgen: one
# scenario model), pointed at this Prometheus.
# The printed commands run as printed: they name the built binary by its path.
cli=$bin/inferscope
incidents=$("$bin/inferscope-loadgen" --incidents --end="$end" | sed "s|inferscope triage |$cli triage --prometheus $prom |; /./s|^|  |")
log "the layered health of recsys-ranker now (inferscope report; the first answer reads 8 days of history):"
start "inferscope report" "$cli" report --prometheus="$prom" --model=recsys-ranker --quiet
await "waiting for the first answer" ||
  log "inferscope report answered with status $? (see its help for what the status means)"

cat <<MSG

Inferscope demo is running.
  Prometheus   http://127.0.0.1:$prom_port   (8 days of history + live scrapes every 15 s)
  loadgen      http://127.0.0.1:$loadgen_port/metrics?instance=node-a:8000
  GPU probes   http://127.0.0.1:$probe_port/api/v1/gpus  (and :$((probe_port + 1)), :$((probe_port + 2)))

Point an existing Grafana at it:
  1. Build and install the plugin:  npm run build && go tool mage -v buildAll
     then copy dist/ to <grafana plugins dir>/inferscope-monitor-app and set
     [plugins] allow_loading_unsigned_plugins = inferscope-monitor-app,inferscope-monitor-datasource
  2. Add a data source of type "Inferscope" with URL http://127.0.0.1:$prom_port and probe URLs
     http://127.0.0.1:$probe_port, http://127.0.0.1:$((probe_port + 1)), http://127.0.0.1:$((probe_port + 2))
  3. Open Apps -> Inferscope.

Try the engine from the command line (or: go run ./pkg/cmd/inferscope):
  $cli report   --prometheus $prom --model text-embedder
  $cli gate     --prometheus $prom --model recsys-ranker --baseline v1.4.0 --canary v1.5.0
  $cli backtest --prometheus $prom --last 7d
Or Prometheus itself:
  curl -sG $prom/api/v1/query --data-urlencode 'query=sum by (model_name) (rate(inference_requests_total[5m]))'

$incidents

Logs: $work/*.log      Ctrl-C stops everything.
MSG

# Stay in the foreground until Ctrl-C, SIGTERM, or until one of the processes dies.
status=0
wait -n "${pids[@]}" || status=$?
# Ctrl-C reaches the processes too (they stop cleanly: status 0 or 130) and may end the wait
# before the INT trap runs; anything else is a process that died on its own.
if [ "$status" -ne 0 ] && [ "$status" -ne 130 ]; then
  for i in "${!pids[@]}"; do
    kill -0 "${pids[$i]}" 2>/dev/null || echo "${names[$i]} exited with status $status; see the logs in $work" >&2
  done
  exit 1
fi
exit 130
