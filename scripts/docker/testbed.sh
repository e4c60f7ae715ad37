#!/bin/sh
# Entry point of the demo's test-bed image. The history, the live loadgen and the mock probes share
# one scenario clock: the end time written next to the TSDB by the first step.
set -eu
data=/prometheus
endfile=$data/.inferscope-end
case "${1:-}" in
  history)
    if [ -f "$endfile" ]; then echo "history already imported (end $(cat "$endfile"))"; exit 0; fi
    end=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    rm -rf "$data/.import"
    inferscope-loadgen --end="$end" --history-days=8 --tsdb-out="$data/.import"
    mv "$data"/.import/* "$data"/ && rmdir "$data/.import"
    echo "$end" >"$endfile"
    ;;
  loadgen)
    exec inferscope-loadgen --end="$(cat "$endfile")" --listen=0.0.0.0:9400
    ;;
  probe)
    exec inferscope-probe --mock=dgxa100 --mock.instance="$2" --mock.clock=http://loadgen:9400 \
      --web.listen-address=:9835
    ;;
  report)
    # The layered health of a model once Prometheus answers (the demo's first look).
    url=${2:-http://prometheus:9090}
    i=0
    until inferscope report --prometheus="$url" --model="${3:-recsys-ranker}" --quiet; do
      i=$((i + 1)); [ "$i" -lt 30 ] || exit 1
      sleep 2
    done
    ;;
  *)
    echo "usage: testbed.sh history | loadgen | probe <instance> | report [prometheus-url [model]]" >&2
    exit 2
    ;;
esac
