#!/usr/bin/env bash
# Runs the whole test suite: makes sure Postgres and Redis are running
# (installing them from Debian's packages when absent), plus a private
# Postgres primary with its streaming replica and a Redis Cluster, checks formatting,
# vet and generated code, then runs every Go test with the race detector
# against the real servers, and the browser tests when the web app exists.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

ensure_go
ensure_postgres
ensure_redis
# A private primary with a streaming replica (the outage test stops that
# primary) and a 3-primary Redis Cluster: reused when already running.
ensure_pg_replica
ensure_redis_cluster

export TEST_DATABASE_URL=${TEST_DATABASE_URL:-"postgres:///postgres?host=$PG_SOCKET_DIR&user=$PG_USER"}
export TEST_REDIS_URL=${TEST_REDIS_URL:-"redis://127.0.0.1:6379/15"}

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './web/*'))
[ -z "$unformatted" ] || die "not gofmt-formatted: $unformatted"

log "go vet"
go vet ./...

if [ -x scripts/check-generated.sh ]; then
	log "generated code is up to date"
	scripts/check-generated.sh
fi

if [ -f web/package.json ]; then
	log "building the web app"
	# npm install, not npm ci: npm 11 rejects vite 8's lock file over an
	# optional Windows-only dependency it never records.
	(cd web && { [ -d node_modules ] || npm install --no-audit --no-fund --loglevel=error; } && npm run --silent build)
fi

log "go test -race ./..."
# The log stays in this clone (tmp/ is ignored by git), not in a /tmp file
# that every clone on the machine would share.
mkdir -p tmp
go test -race -count=1 -timeout 15m ./... 2>&1 | tee tmp/go-test.log
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || die "go test failed (log: tmp/go-test.log)"

log "go test -race on the Redis Cluster: leases, holds, queue, seat map, orders"
# The same tests with every Redis client a cluster client over the three
# primaries (testdb.RedisCluster; the Apps get REDIS_CLUSTER_ADDRS): a
# script or pipeline touching keys of two slots would fail with CROSSSLOT.
TEST_REDIS_MODE=cluster go test -race -count=1 -timeout 15m ./redisstore ./holds ./queue ./seatmap ./orders 2>&1 | tee tmp/go-test-cluster.log
status=${PIPESTATUS[0]}
[ "$status" = 0 ] || die "go test on the Redis Cluster failed (log: tmp/go-test-cluster.log)"

if [ -x e2e/run.sh ]; then
	log "browser tests"
	e2e/run.sh
fi
log "all tests passed"
