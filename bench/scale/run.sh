#!/usr/bin/env bash
# The scaling benchmark of issue #21 in one run: createHold throughput on
# one Redis and on the 3-primary Redis Cluster (bench/holds, same machine,
# same Postgres, back to back), then search and event-page latency with the
# primary up and with it stopped (bench/reads: the streaming replica
# serves). Starts the private primary/replica and the cluster as
# scripts/test.sh does (reused when running).
#
#   bench/scale/run.sh                       # 8 s per holds run, 2,000 events, 10 s per read phase
#   DURATION=4s EVENTS=500 READ_FOR=5s bench/scale/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/lib.sh
ensure_go
ensure_pg_replica
ensure_redis_cluster
export TEST_DATABASE_URL=${TEST_DATABASE_URL:-"postgres:///postgres?host=$PG_SOCKET_DIR&user=postgres"}
export TEST_REDIS_URL=${TEST_REDIS_URL:-"redis://127.0.0.1:6379/15"}
out=${BENCH_OUT:-/tmp/scale-bench}
mkdir -p "$out"
go build -o "$out/holdsbench" ./bench/holds
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== createHold, one Redis ($TEST_REDIS_URL)"
"$out/holdsbench" -duration "${DURATION:-8s}" -clients 64 -baselines=false -ga-capacities "" -redis "$TEST_REDIS_URL"
echo "== createHold, Redis Cluster ($TEST_REDIS_CLUSTER_ADDRS)"
"$out/holdsbench" -duration "${DURATION:-8s}" -clients 64 -baselines=false -ga-capacities "" -redis-cluster "$TEST_REDIS_CLUSTER_ADDRS"
echo "== browsing, primary up and down"
READS_BENCH_EVENTS=${EVENTS:-2000} READS_BENCH_DURATION=${READ_FOR:-10s} \
	go test -count=1 ./bench/reads -run TestReadsBenchmark -v -timeout 30m | grep -E 'reads_bench_test|^(ok|FAIL|---)'
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
