#!/usr/bin/env bash
# createHold benchmark: the app in-process on a loopback listener, a fresh
# database on the local Postgres, load through the GraphQL HTTP endpoint at
# 8 and 64 clients (spread over 100 events, and one hot event), then pgbench
# of the bare conditional UPDATE + outbox INSERT (and the GA unit-rows vs
# counter-row comparison) on the same server. Prints a CPU profile summary
# of the hot-event run with 64 clients.
#
#   bench/holds/run.sh [-duration 10s] [-clients 8,64] [-pool 16]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${BENCH_OUT:-/tmp/holds-bench}
mkdir -p "$out"
go build -o "$out/holdsbench" ./bench/holds
"$out/holdsbench" -cpuprofile "$out/hot64.pprof" "$@" | tee "$out/result.txt"
echo
echo "CPU profile of the hot-event run (in-process server + load generator):"
go tool pprof -top -nodecount=25 "$out/holdsbench" "$out/hot64.pprof" 2>/dev/null | head -35
