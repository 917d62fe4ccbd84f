#!/usr/bin/env bash
# Chaos suite: each scenario is a flash sale (bench/flashsale) with one
# failure injected once a tenth of the buyers have orders, and it must end
# with a clean audit (audit.Run, `ticketing audit --event`) and a
# linearizable per-seat history. Exit status: 0 when every scenario is clean.
#
#   bench/chaos/run.sh                    # every scenario, documented defaults
#   bench/chaos/run.sh redis relay        # some of them
#   CHAOS_FOR=10s bench/chaos/run.sh      # shorter outages for a quick run
#   BUYERS=600 bench/chaos/run.sh kill-api
#   TICKETING_BIN=/path/to/ticketing bench/chaos/run.sh   # skip building it
#
# Scenarios (outage default in brackets):
#   kill-api   kill -9 of one of two API instances (behind HAProxy) mid-checkout, restart [5 s]
#   redis      the private redis-server stopped, restarted empty [30 s]
#   relay      the only worker instance (relay) stopped, restarted [60 s];
#              ticketing_projection_lag_seconds rises and recovers
#   webhooks   paysim drops every webhook, then reset [60 s]
#   postgres   a private Postgres cluster (initdb, own port) restarted [10 s]
#   two-apis   two API instances behind HAProxy, no failure
#
# Never touches the shared Redis (6379) or the shared Postgres server except
# to create and drop its own databases. Reports: bench/out/flashsale-*-<scenario>.{txt,html}.
set -uo pipefail
cd "$(dirname "$0")/../.."
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
scenarios=("$@")
[ ${#scenarios[@]} -eq 0 ] && scenarios=(kill-api redis relay webhooks postgres two-apis)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# TICKETING_BIN: use an already built binary instead of building one.
if [ -n "${TICKETING_BIN:-}" ]; then cp "$TICKETING_BIN" "$tmp/ticketing"; else go build -o "$tmp/ticketing" . || exit 2; fi
go build -o "$tmp/flashsale" ./bench/flashsale || exit 2
mkdir -p bench/out
summary=bench/out/chaos-summary.txt
: >"$summary"
status=0
for s in "${scenarios[@]}"; do
  echo "=== scenario $s" | tee -a "$summary"
  args=(-bin "$tmp/ticketing" -scenario "$s" -buyers "${BUYERS:-1500}" -seats "${SEATS:-1000}" -ga "${GA:-1000}"
    -hold "${HOLD:-40}" -ramp "${RAMP:-90s}" -admit-rate "${ADMIT_RATE:-40}" -settle "${SETTLE:-5m}" -progress=false)
  [ -n "${CHAOS_FOR:-}" ] && args+=(-chaos-for "$CHAOS_FOR")
  start=$(date +%s)
  "$tmp/flashsale" "${args[@]}" >"$tmp/$s.txt" 2>"$tmp/$s.err"
  rc=$?
  grep -E '^(sold|audit|ticketing audit|linearizability|verdict|client-side)|CHAOS|signals|projection_lag|outbox lag|report:' "$tmp/$s.txt" | tee -a "$summary"
  [ $rc -ne 0 ] && { status=1; tail -5 "$tmp/$s.err" | tee -a "$summary"; }
  echo "--- $s: exit $rc in $(($(date +%s) - start)) s" | tee -a "$summary"
done
exit $status
